"""A reusable terminal :class:`~mcp_input_sync.InputHandler`: the user answers in the terminal.

::

    import mcp_input_sync as mis
    from mcp_input_sync.terminal import TerminalHandler

    handler = TerminalHandler()
    with mis.connect_stdio(["python", "server.py"], handler=handler) as client:
        client.call_tool("deploy", {}, progress=handler.progress)

What it does:

* **forms**: renders every field kind of the served subset (strings with
  ``format`` email / uri / date / date-time, numbers and integers with
  bounds, booleans, ``enum``, titled ``oneOf`` choices, legacy
  ``enumNames``, multi-selects of ``enum`` or ``anyOf``), shows defaults,
  checks each value with the library's own rules and asks again on a bad
  one. Fields flagged ``sensitive_suspected`` are read without echo when
  stdin is a terminal, and their values are never printed.
* **URL elicitation**: shows the message, the URL, its host (the A-label),
  an IDN warning and an origin warning; asks for consent; never opens it.
* **sampling**: shows the system prompt, the messages and ``maxTokens``
  for approval; an approved request is answered by ``model(params)``
  (default: the user types the reply); a refused one raises
  :class:`~mcp_input_sync.InputRefused` with code -1.
* **roots**: the configured paths (default: the current directory).
* :meth:`TerminalHandler.progress` draws a progress bar; logs and
  notifications are printed after :func:`mcp_input_sync.reflect.text`.

``assume_yes=True`` asks nothing: forms take their defaults, URL consent
is given (``yes_urls="decline"`` declines it, as the CLI's ``--yes`` does)
and sampling approval is given (sampling needs a ``model`` then, or it is
refused). ``answers`` scripts every answer by the rules of the CLI's
``--answers`` file (see :meth:`TerminalHandler.__init__`).

Logs print as ``[level] logger: message`` (a ``msg`` or ``message`` of a
dict is the message); the same notification sent again and again is
printed once, then counted (:meth:`TerminalHandler.fold_done`).

A prompt stops as soon as the library cancels the request (timeout, server
cancellation, close): when stdin has a file descriptor the handler reads it
with ``select`` in short slices and checks ``ctx.cancelled`` between them.
One prompt runs at a time.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import select
import threading
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Optional, Sequence, TextIO, Union

from . import reflect
from ._protocol import formview
from ._protocol.forms import SchemaRefused, compile_form
from ._protocol.jsonrpc import USER_REJECTED
from .errors import InputRefused
from .handler import InputContext, InputHandler

__all__ = ["SAMPLING_REJECTION_CODE", "TerminalHandler", "validate_answers"]

#: The JSON-RPC code of a refused sampling request (the library's ``rejection_code`` default).
SAMPLING_REJECTION_CODE = USER_REJECTED

_SPECIAL_KEYS = ("_action", "_url", "_sampling_text", "_roots")
_TEXT_LIMIT = 2000
_LABEL_LIMIT = 200
_POLL = 0.1
_INDENT = " " * 13

Model = Callable[[dict[str, Any]], str]


def validate_answers(answers: Any) -> dict[str, Any]:
    """Check an ``--answers`` object; return it, or raise ``ValueError`` saying why."""
    if not isinstance(answers, dict):
        raise ValueError("the answers must be a JSON object")
    action = answers.get("_action", "accept")
    if action not in ("accept", "decline", "cancel"):
        raise ValueError('"_action" must be "accept", "decline" or "cancel"')
    url = answers.get("_url", "decline")
    if url not in ("accept", "decline", "cancel"):
        raise ValueError('"_url" must be "accept", "decline" or "cancel"')
    if "_sampling_text" in answers and not isinstance(answers["_sampling_text"], str):
        raise ValueError('"_sampling_text" must be a string')
    roots = answers.get("_roots", [])
    if not isinstance(roots, list) or not all(isinstance(r, str) for r in roots):
        raise ValueError('"_roots" must be a list of paths')
    return answers


def _strings_cleaned(value: Any, depth: int = 0) -> Any:
    if isinstance(value, str):
        return reflect.text(value, _TEXT_LIMIT)
    if depth > 16:
        return "…"
    if isinstance(value, dict):
        return {reflect.text(str(k), _LABEL_LIMIT): _strings_cleaned(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_strings_cleaned(v, depth + 1) for v in value]
    return value


def _clean(value: Any, limit: int = _TEXT_LIMIT) -> str:
    """``value`` as one line of terminal-safe text (JSON for non-strings), cut to ``limit``."""
    if not isinstance(value, str):
        try:
            value = json.dumps(_strings_cleaned(value), ensure_ascii=False, sort_keys=True)
        except (TypeError, ValueError):
            value = repr(value)
    return reflect.text(value.replace("\n", " ").replace("\t", " "), limit)


def _path_uri(path: Union[str, Path]) -> str:
    return Path(os.path.abspath(os.fspath(path))).as_uri()


class _LineReader:
    """Reads lines from a stream; from its file descriptor with ``select`` when it has one."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.fd: Optional[int] = None
        if os.name == "posix":
            try:
                self.fd = stream.fileno()
            except (AttributeError, OSError, ValueError):
                self.fd = None
        self._buffer = b""
        self._eof = False

    def isatty(self) -> bool:
        try:
            return self.fd is not None and os.isatty(self.fd)
        except OSError:
            return False

    @contextlib.contextmanager
    def no_echo(self, secret: bool) -> Iterator[None]:
        """Turn the terminal's echo off while the block runs (when ``secret`` and stdin is a tty)."""
        if not (secret and self.isatty()):
            yield
            return
        import termios

        assert self.fd is not None
        saved = termios.tcgetattr(self.fd)
        quiet = termios.tcgetattr(self.fd)
        quiet[3] &= ~termios.ECHO
        termios.tcsetattr(self.fd, termios.TCSANOW, quiet)
        try:
            yield
        finally:
            termios.tcsetattr(self.fd, termios.TCSANOW, saved)

    def readline(self, cancelled: Callable[[], bool]) -> Optional[str]:
        """One line without its end, or None at end of input or when ``cancelled()`` turns True."""
        if self.fd is None:
            text = self.stream.readline()
            return text.rstrip("\r\n") if text else None
        while b"\n" not in self._buffer and not self._eof:
            if cancelled():
                return None
            ready, _, _ = select.select([self.fd], [], [], _POLL)
            if not ready:
                continue
            chunk = os.read(self.fd, 4096)
            if not chunk:
                self._eof = True
            self._buffer += chunk
        if not self._buffer:
            return None
        line, _, rest = self._buffer.partition(b"\n")
        self._buffer = rest
        return line.decode("utf-8", "replace").rstrip("\r")


class _Stop(Exception):
    """End of input or cancellation while a prompt waited."""


class TerminalHandler(InputHandler):
    """Answers a server's input requests in a terminal.

    Args:
        stdin: where answers are read (default ``sys.stdin``).
        stdout: where requests, prompts, progress and logs are written (default ``sys.stdout``).
        stderr: where warnings are written (default ``sys.stderr``).
        assume_yes: ask nothing: forms take their defaults (a required field
            without one declines the form), URLs get ``yes_urls`` (never opened),
            sampling is approved and answered by ``model`` (refused without one).
        yes_urls: the answer to a URL elicitation under ``assume_yes``:
            ``"accept"`` (the default) or ``"decline"`` (the CLI's ``--yes``,
            as an answers file without ``"_url"``).
        model: ``model(params) -> str`` writes the reply of an approved
            sampling request; default: the user types it.
        model_name: the ``model`` reported in sampling results.
        answers: scripted answers (the CLI's ``--answers`` rules): keys naming
            fields of a form fill them, every other field takes its default,
            and the form is accepted unless ``"_action"`` is ``"decline"`` or
            ``"cancel"``; a required field with neither declines the form. URL
            elicitations are declined unless ``"_url"`` is ``"accept"``.
            Sampling is refused unless ``"_sampling_text"`` is given (it is
            the reply). Roots come from ``"_roots"`` (a list of paths).
        roots: the paths offered as roots (default: the current directory).
        bar_width: characters in the progress bar.

    After a run, :attr:`refusals` lists every request the user (or the
    script) refused, declined, cancelled or left incomplete.
    """

    def __init__(
        self,
        *,
        stdin: Optional[TextIO] = None,
        stdout: Optional[TextIO] = None,
        stderr: Optional[TextIO] = None,
        assume_yes: bool = False,
        model: Optional[Model] = None,
        model_name: str = "terminal",
        answers: Optional[Mapping[str, Any]] = None,
        roots: Optional[Sequence[Union[str, Path]]] = None,
        bar_width: int = 30,
        yes_urls: str = "accept",
    ) -> None:
        import sys

        self.stdin = stdin if stdin is not None else sys.stdin
        self.out = stdout if stdout is not None else sys.stdout
        self.err = stderr if stderr is not None else sys.stderr
        self.assume_yes = assume_yes
        if yes_urls not in ("accept", "decline"):
            raise ValueError('yes_urls must be "accept" or "decline"')
        self.yes_urls = yes_urls
        self.model = model
        self.model_name = model_name
        self.answers: Optional[dict[str, Any]] = None if answers is None else validate_answers(dict(answers))
        self.roots: list[Union[str, Path]] = list(roots) if roots is not None else [os.getcwd()]
        self.bar_width = max(5, bar_width)
        #: One line per refused, declined, cancelled or incomplete request.
        self.refusals: list[str] = []
        self._reader = _LineReader(self.stdin)
        self._prompt_lock = threading.Lock()
        self._out_lock = threading.RLock()
        self._bar_open = False
        self._last_notice: Optional[str] = None
        self._repeats = 0

    # ------------------------------------------------------------------ output

    def _isatty(self, stream: TextIO) -> bool:
        try:
            return stream.isatty()
        except (AttributeError, ValueError, OSError):
            return False

    def say(self, line: str) -> None:
        """Write one line to ``stdout`` (ending an open progress bar first)."""
        with self._out_lock:
            self._fold_end()
            if self._bar_open:
                self.out.write("\n")
                self._bar_open = False
            self.out.write(line + "\n")
            self.out.flush()

    def _fold_end(self) -> None:
        if self._repeats:
            self.out.write(f"{_INDENT}(the same notice {self._repeats} more time{'s' if self._repeats > 1 else ''})\n")
        self._last_notice, self._repeats = None, 0

    def fold_done(self) -> None:
        """Say how many times the last notice came again, if it did; call once the client is closed."""
        with self._out_lock:
            self._fold_end()
            self.out.flush()

    def warn(self, line: str) -> None:
        """Write one warning line to ``stderr``."""
        with self._out_lock:
            self.err.write(line + "\n")
            self.err.flush()

    def _refused(self, what: str) -> None:
        with self._out_lock:
            self.refusals.append(what)

    # ------------------------------------------------------------------ input

    def _ask(self, prompt: str, ctx: InputContext, *, secret: bool = False) -> str:
        """Show ``prompt`` and read one line; raise _Stop at end of input or cancellation."""
        with self._reader.no_echo(secret):
            with self._out_lock:
                self._fold_end()
                if self._bar_open:
                    self.out.write("\n")
                    self._bar_open = False
                self.out.write(prompt)
                self.out.flush()
            line = self._reader.readline(lambda: ctx.cancelled)
        if secret and self._reader.isatty():
            self.say("")
        if line is None:
            if not ctx.cancelled:
                self.say("")
            raise _Stop()
        return line.strip()

    def _choose(self, prompt: str, ctx: InputContext, options: dict[str, str], default: str) -> str:
        """Ask until the answer is one of ``options`` (keys and long names); empty gives ``default``."""
        while True:
            answer = self._ask(prompt, ctx).lower()
            if not answer:
                return default
            for key, word in options.items():
                if answer in (key, word):
                    return word
            self.say(f"{_INDENT}! answer one of: {', '.join(f'{k} ({w})' for k, w in options.items() if len(k) == 1)}")

    def _acquire(self, ctx: InputContext) -> bool:
        while not self._prompt_lock.acquire(timeout=_POLL):
            if ctx.cancelled:
                return False
        return True

    # ------------------------------------------------------------------ forms

    def handle_elicitation(self, params: dict[str, Any], ctx: InputContext) -> dict[str, Any]:
        """Ask for a form or for consent to visit a URL."""
        if ctx.mode == "url" or params.get("mode") == "url":
            return self._url(params, ctx)
        return self._form(params, ctx)

    def elicitation_modes(self) -> Sequence[str]:
        """Forms and URLs."""
        return ("form", "url")

    def _form(self, params: dict[str, Any], ctx: InputContext) -> dict[str, Any]:
        schema = params.get("requestedSchema")
        message = _clean(params.get("message", ""))
        try:
            form = compile_form(schema)
        except SchemaRefused as exc:  # the library refuses these first; kept for direct use
            self.say(f"  form       {message!r}: cannot render ({_clean(str(exc), 500)}); declined")
            self._refused("form: unusable schema")
            return {"action": "decline"}
        fields = formview.fields(schema)
        flags: Mapping[str, Any] = ctx.fields or form.fields
        secret = {f.name for f in fields if isinstance(flags.get(f.name), dict) and flags[f.name].get("sensitive_suspected") is True}
        names = ", ".join(_clean(f.name, _LABEL_LIMIT) for f in fields)
        if self.answers is not None:
            return self._scripted_form(message, fields, form.checks, secret, names)
        if self.assume_yes:
            content = {f.name: f.prop["default"] for f in fields if "default" in f.prop}
            missing = ", ".join(_clean(f.name, _LABEL_LIMIT) for f in fields if f.required and f.name not in content)
            if missing:
                self.say(f"  form       {message!r} with fields [{names}] -> decline (no default for {missing})")
                self._refused(f"form: required field without a default: {missing}")
                return {"action": "decline"}
            bad = self._first_problem(content, form.checks)
            if bad:
                self.say(f"  form       {message!r} -> decline ({bad})")
                self._refused(f"form: {bad}")
                return {"action": "decline"}
            self.say(f"  form       {message!r} with fields [{names}] -> accept {self._shown(content, secret)}")
            return {"action": "accept", "content": content}
        if not self._acquire(ctx):
            return {"action": "cancel"}
        try:
            return self._ask_form(message, fields, form.checks, secret, names, ctx)
        except _Stop:
            self._refused("form: no answer")
            return {"action": "cancel"}
        finally:
            self._prompt_lock.release()

    def _first_problem(self, content: Mapping[str, Any], checks: Mapping[str, Callable[[Any], Optional[str]]]) -> Optional[str]:
        for name, value in content.items():
            check = checks.get(name)
            problem = check(value) if check is not None else None
            if problem is not None:
                return f"field {_clean(name, _LABEL_LIMIT)!r} {_clean(problem, 500)}"
        return None

    def _shown(self, content: Mapping[str, Any], secret: set[str]) -> str:
        return _clean({n: ("***" if n in secret else v) for n, v in content.items()})

    def _scripted_form(
        self,
        message: str,
        fields: Sequence[formview.Field],
        checks: Mapping[str, Callable[[Any], Optional[str]]],
        secret: set[str],
        names: str,
    ) -> dict[str, Any]:
        assert self.answers is not None
        action = self.answers.get("_action", "accept")
        if action in ("decline", "cancel"):
            self.say(f"  form       {message!r} with fields [{names}] -> {action} (answers file)")
            self._refused(f"form: {action} (answers file)")
            return {"action": action}
        content: dict[str, Any] = {}
        for field in fields:
            if field.name in self.answers:
                content[field.name] = self.answers[field.name]
            elif "default" in field.prop:
                content[field.name] = field.prop["default"]
        missing = sorted(_clean(f.name, _LABEL_LIMIT) for f in fields if f.required and f.name not in content)
        problem = f"required field(s) without a value or default: {', '.join(missing)}" if missing else self._first_problem(content, checks)
        if problem:
            self.say(f"  form       {message!r} with fields [{names}] -> decline ({_clean(problem)})")
            self._refused(f"form: {problem}")
            return {"action": "decline"}
        self.say(f"  form       {message!r} with fields [{names}] -> accept {self._shown(content, secret)}")
        return {"action": "accept", "content": content}

    def _ask_form(
        self,
        message: str,
        fields: Sequence[formview.Field],
        checks: Mapping[str, Callable[[Any], Optional[str]]],
        secret: set[str],
        names: str,
        ctx: InputContext,
    ) -> dict[str, Any]:
        self.say(f"  form       {message!r} with fields [{names}]")
        choice = self._choose(f"{_INDENT}fill in (f), decline (d) or cancel (c)? [f] ", ctx, {"f": "fill", "d": "decline", "c": "cancel"}, "fill")
        if choice != "fill":
            self._refused(f"form: {choice}")
            return {"action": choice}
        content: dict[str, Any] = {}
        for field in fields:
            value = self._ask_field(field, checks[field.name], field.name in secret, ctx)
            if value is not _OMIT:
                content[field.name] = value
        self.say(f"{_INDENT}-> accept {self._shown(content, secret)}")
        return {"action": "accept", "content": content}

    def _ask_field(self, field: formview.Field, check: Callable[[Any], Optional[str]], secret: bool, ctx: InputContext) -> Any:
        name, prop, required = field.name, field.prop, field.required
        label = _clean(prop.get("title", name), _LABEL_LIMIT)
        kind = prop.get("type")
        view = field.choices
        choices = list(view.options) if view is not None else []
        hints: list[str] = [_clean(kind, 20)]
        if isinstance(prop.get("format"), str):
            hints.append(_clean(prop["format"], 40))
        low, high = prop.get("minimum"), prop.get("maximum")
        if low is not None or high is not None:  # numbers once the form compiled; cleaned all the same
            hints.append(f"{'' if low is None else _clean(low, 40)}..{'' if high is None else _clean(high, 40)}")
        if required:
            hints.append("required")
        if secret:
            hints.append("hidden")
        self.say(f"{_INDENT}{label} ({', '.join(hints)})")
        if isinstance(prop.get("description"), str):
            self.say(f"{_INDENT}  {_clean(prop['description'], 500)}")
        if choices:
            for number, (value, title) in enumerate(choices, start=1):
                shown = title if title == value else f"{title} [{value}]"
                self.say(f"{_INDENT}  {number}) {_clean(shown, _LABEL_LIMIT)}")
        has_default = "default" in prop
        default = prop.get("default")
        suffix = ""
        if has_default:
            suffix = " [default: ***]" if secret else f" [default: {_clean(default, _LABEL_LIMIT)}]"
        if kind == "array":
            suffix += " (numbers or values, comma-separated)"
        elif kind == "boolean":
            suffix += " (y/n)"
        while True:
            raw = self._ask(f"{_INDENT}{label}{suffix}: ", ctx, secret=secret)
            if raw == "":
                if has_default:
                    return default
                if not required:
                    return _OMIT
                self.say(f"{_INDENT}! {label} is required")
                continue
            value, problem = _parse(raw, prop, choices)
            if problem is None:
                problem = check(value)
            if problem is None:
                return value
            self.say(f"{_INDENT}! {label} {_clean(problem, 500)}; try again")

    # ------------------------------------------------------------------ URLs

    def _url(self, params: dict[str, Any], ctx: InputContext) -> dict[str, Any]:
        message = _clean(params.get("message", ""))
        url = _clean(ctx.url if ctx.url is not None else params.get("url", ""))
        host = _clean(ctx.host or "", _LABEL_LIMIT)
        lines = [f"  url        {message!r}", f"{_INDENT}link: {url}", f"{_INDENT}host: {host}"]
        if ctx.idn:
            lines.append(f"{_INDENT}! internationalised host: it is {host} in ASCII; check it is the site you expect")
        if ctx.origin_mismatch:
            lines.append(f"{_INDENT}! this link is not on the server's own origin")
        lines.append(f"{_INDENT}(this program never opens links: open it yourself if you agree)")
        if self.answers is not None:
            action = self.answers.get("_url", "decline")
            return self._url_done(lines, str(action), "answers file")
        if self.assume_yes:
            return self._url_done(lines, self.yes_urls, "--yes")
        if not self._acquire(ctx):
            return {"action": "cancel"}
        try:
            for line in lines:
                self.say(line)
            action = self._choose(f"{_INDENT}visit it: accept (a) or decline (d)? [d] ", ctx, {"a": "accept", "y": "accept", "yes": "accept", "d": "decline", "n": "decline", "no": "decline"}, "decline")
        except _Stop:
            action = "cancel"
        finally:
            self._prompt_lock.release()
        self.say(f"{_INDENT}-> {action}")
        if action != "accept":
            self._refused(f"url: {action}")
        return {"action": action}

    def _url_done(self, lines: list[str], action: str, why: str) -> dict[str, Any]:
        for line in lines:
            self.say(line)
        self.say(f"{_INDENT}-> {action} ({why})")
        if action != "accept":
            self._refused(f"url: {action}")
        return {"action": action}

    # ------------------------------------------------------------------ sampling

    def handle_sampling(self, params: dict[str, Any], ctx: InputContext) -> dict[str, Any]:
        """Show the request for approval; answer with the model's (or the user's) reply."""
        lines = [f"  sampling   the server asks for a completion (maxTokens {_clean(params.get('maxTokens'), 20)})"]
        if isinstance(params.get("systemPrompt"), str):
            lines.append(f"{_INDENT}system: {_clean(params['systemPrompt'])}")
        for message in params.get("messages", []):
            if isinstance(message, dict):
                lines.append(f"{_INDENT}{_clean(message.get('role', '?'), 20)}: {_message_text(message.get('content'))}")
        if self.answers is not None:
            for line in lines:
                self.say(line)
            reply = self.answers.get("_sampling_text")
            if not isinstance(reply, str):
                return self._refuse_sampling("no _sampling_text in the answers file")
            return self._sampling_reply(reply)
        if self.assume_yes:
            for line in lines:
                self.say(line)
            if self.model is None:
                return self._refuse_sampling("--yes and no model to write the reply")
            return self._sampling_reply(self.model(params))
        if not self._acquire(ctx):
            raise InputRefused(SAMPLING_REJECTION_CODE, "the request was cancelled")
        try:
            for line in lines:
                self.say(line)
            verdict = self._choose(f"{_INDENT}approve (a) or refuse (r)? [r] ", ctx, {"a": "approve", "y": "approve", "yes": "approve", "r": "refuse", "n": "refuse", "no": "refuse"}, "refuse")
            if verdict != "approve":
                return self._refuse_sampling("refused by the user")
            if self.model is not None:
                reply = self.model(params)
            else:
                reply = ""
                while not reply:
                    reply = self._ask(f"{_INDENT}reply: ", ctx)
        except _Stop:
            return self._refuse_sampling("no answer")
        finally:
            self._prompt_lock.release()
        return self._sampling_reply(reply)

    def _sampling_reply(self, reply: str) -> dict[str, Any]:
        self.say(f"{_INDENT}-> reply {_clean(reply)!r}")
        return {"role": "assistant", "content": {"type": "text", "text": reply}, "model": self.model_name, "stopReason": "endTurn"}

    def _refuse_sampling(self, why: str) -> dict[str, Any]:
        self.say(f"{_INDENT}-> refused ({why})")
        self._refused(f"sampling: {why}")
        raise InputRefused(SAMPLING_REJECTION_CODE, "the user refused the sampling request")

    # ------------------------------------------------------------------ roots, logs, progress

    def list_roots(self, ctx: InputContext) -> dict[str, Any]:
        """The configured paths (or the answers file's ``_roots``) as ``file://`` roots."""
        paths: Sequence[Union[str, Path]] = self.roots
        if self.answers is not None:
            paths = list(self.answers.get("_roots", []))
        roots = [{"uri": _path_uri(p), "name": os.path.basename(os.path.abspath(os.fspath(p))) or "/"} for p in paths]
        shown = ", ".join(r["uri"] for r in roots) or "none"
        self.say(f"  roots      server {_clean(ctx.server_id, _LABEL_LIMIT)!r} asked which folders it may use -> {shown}")
        return {"roots": roots}

    def handle_log(self, entry: dict[str, Any], ctx: InputContext) -> None:
        """Print a server log entry as ``[level] logger: message``, sanitised."""
        level = _clean(entry.get("level", "info"), 20)
        logger = _clean(entry.get("logger") or "", _LABEL_LIMIT)
        data = entry.get("data")
        if isinstance(data, dict):
            said = next((k for k in ("msg", "message") if isinstance(data.get(k), str)), None)
            if said is not None:  # FastMCP and logging adapters: {"msg": ..., "extra": null}
                rest = {k: v for k, v in data.items() if k != said and v is not None}
                data = data[said] + (f" {_clean(rest)}" if rest else "")
        self.say(f"  log        [{level}] {logger + ': ' if logger else ''}{_clean(data)}")

    def handle_notification(self, method: str, params: dict[str, Any], ctx: InputContext) -> None:
        """Print a server notification, sanitised; the same one again, right after, is counted, not printed."""
        if method == "notifications/elicitation/complete":
            self.say(f"  url        the server says the visit is complete ({_clean(params.get('elicitationId', ''), _LABEL_LIMIT)})")
            return
        line = f"  notice     {_clean(method, _LABEL_LIMIT)} {_clean(params, 500) if params else ''}".rstrip()
        with self._out_lock:
            if line == self._last_notice and not self._bar_open:
                self._repeats += 1
                return
            self.say(line)
            self._last_notice = line

    def progress(self, update: Mapping[str, Any]) -> None:
        """Draw a progress bar; pass as ``call_tool(..., progress=handler.progress)``."""
        done = _finite(update.get("progress"))
        total = _finite(update.get("total"))
        message = _clean(update.get("message", ""), _LABEL_LIMIT)
        if done is None:
            return  # no number, NaN or an infinity: nothing to draw
        if total is not None and total > 0:
            ratio = min(max(done / total, 0.0), 1.0)
            filled = int(round(ratio * self.bar_width))
            bar = "#" * filled + "-" * (self.bar_width - filled)
            line = f"  progress   [{bar}] {done:g}/{total:g} {message}".rstrip()
            finished = done >= total
        else:
            line = f"  progress   {done:g} {message}".rstrip()
            finished = False
        with self._out_lock:
            self._fold_end()
            if self._isatty(self.out):
                self.out.write("\r" + line + "\x1b[K")
                self._bar_open = not finished
                if finished:
                    self.out.write("\n")
            else:
                self.out.write(line + "\n")
            self.out.flush()


class _Omit:
    pass


def _finite(value: Any) -> Optional[float]:
    """``value`` as a finite float, or None (not a number, a bool, NaN, an infinity, an int too large)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


_OMIT: Any = _Omit()


def _message_text(content: Any) -> str:
    return " ".join(_clean(b.text) if b.text is not None else f"[{_clean(b.type if b.type is not None else '?', 20)}]" for b in formview.blocks(content))


def _pick(raw: str, choices: list[tuple[str, str]]) -> Optional[str]:
    if raw.isdigit() and 1 <= int(raw) <= len(choices):
        return choices[int(raw) - 1][0]
    for value, title in choices:
        if raw == value or raw.lower() == title.lower():
            return value
    return None


def _parse(raw: str, prop: Mapping[str, Any], choices: list[tuple[str, str]]) -> tuple[Any, Optional[str]]:
    """Turn typed text into a field value; ``(value, None)`` or ``(None, problem)``."""
    kind = prop.get("type")
    if kind == "boolean":
        word = raw.lower()
        if word in ("y", "yes", "true", "1"):
            return True, None
        if word in ("n", "no", "false", "0"):
            return False, None
        return None, "must be yes or no"
    if kind in ("number", "integer"):
        try:
            number: float = int(raw) if kind == "integer" else float(raw)
        except ValueError:
            return None, f"must be {'an integer' if kind == 'integer' else 'a number'}"
        if kind == "number" and number.is_integer() and "." not in raw and "e" not in raw.lower():
            number = int(number)
        return number, None
    if kind == "array":
        picked = []
        for part in (p.strip() for p in raw.split(",")):
            if not part:
                continue
            value = _pick(part, choices)
            if value is None:
                return None, f"has {part!r}, which is not one of the choices"
            picked.append(value)
        return picked, None
    if choices:
        value = _pick(raw, choices)
        if value is None:
            return None, "is not one of the choices"
        return value, None
    return raw, None
