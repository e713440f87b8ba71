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
* **roots**: only the paths given (``roots=``, or an answers ``_roots``); with
  none the client declares no ``roots`` capability, so a server that confines
  itself to the folders on its command line (server-filesystem) keeps them.
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

import os
import threading
from pathlib import Path
from typing import Any, Callable, Mapping, Optional, Sequence, TextIO, Union

from ._protocol import formview
from ._protocol.forms import SchemaRefused, compile_form
from ._protocol.jsonrpc import USER_REJECTED
from .errors import InputRefused
from .handler import InputContext, InputHandler
from ._terminal_parts import LABEL_LIMIT, OMIT, POLL, LineReader, clean, finite, message_text, parse, path_uri, validate_answers

__all__ = ["SAMPLING_REJECTION_CODE", "TerminalHandler", "validate_answers"]

#: The JSON-RPC code of a refused sampling request (the library's ``rejection_code`` default).
SAMPLING_REJECTION_CODE = USER_REJECTED

_SPECIAL_KEYS = ("_action", "_url", "_sampling_text", "_roots")
_INDENT = " " * 13

Model = Callable[[dict[str, Any]], str]


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
        sampler: a sampler of :mod:`mcp_input_sync.llm` (``OpenAISampler``,
            ``AnthropicSampler``): an approved request goes to the host's
            model through it, and its answer is shown for a second approval
            before it is sent (docs/llm.md#approving). It takes the place of
            ``model``. To offer the server tools in sampling, subclass with
            ``sampling_tools = True``.
        answers: scripted answers (the CLI's ``--answers`` rules): keys naming
            fields of a form fill them, every other field takes its default,
            and the form is accepted unless ``"_action"`` is ``"decline"`` or
            ``"cancel"``; a required field with neither declines the form. URL
            elicitations are declined unless ``"_url"`` is ``"accept"``.
            Sampling is refused unless ``"_sampling_text"`` is given (it is
            the reply). ``"_roots"`` (a list of paths) replaces ``roots``.
        roots: the paths offered as roots (default: none). The client declares
            the ``roots`` capability only when there are some at the handshake:
            a server's roots replace the folders it was started with.
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
        sampler: Optional[Callable[[dict[str, Any], InputContext], dict[str, Any]]] = None,
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
        self.sampler = sampler
        self.answers: Optional[dict[str, Any]] = None if answers is None else validate_answers(dict(answers))
        # No default folder: a roots answer can widen a sandboxed server's access (docs/cli.md#roots).
        self.roots: list[Union[str, Path]] = list(roots) if roots is not None else []
        self.bar_width = max(5, bar_width)
        #: One line per refused, declined, cancelled or incomplete request.
        self.refusals: list[str] = []
        self._reader = LineReader(self.stdin)
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
        while not self._prompt_lock.acquire(timeout=POLL):
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
        message = clean(params.get("message", ""))
        try:
            form = compile_form(schema)
        except SchemaRefused as exc:  # the library refuses these first; kept for direct use
            self.say(f"  form       {message!r}: cannot render ({clean(str(exc), 500)}); declined")
            self._refused("form: unusable schema")
            return {"action": "decline"}
        fields = formview.fields(schema)
        flags: Mapping[str, Any] = ctx.fields or form.fields
        secret = {f.name for f in fields if isinstance(flags.get(f.name), dict) and flags[f.name].get("sensitive_suspected") is True}
        names = ", ".join(clean(f.name, LABEL_LIMIT) for f in fields)
        if self.answers is not None:
            return self._scripted_form(message, fields, form.checks, secret, names)
        if self.assume_yes:
            content = {f.name: f.prop["default"] for f in fields if "default" in f.prop}
            missing = ", ".join(clean(f.name, LABEL_LIMIT) for f in fields if f.required and f.name not in content)
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
                return f"field {clean(name, LABEL_LIMIT)!r} {clean(problem, 500)}"
        return None

    def _shown(self, content: Mapping[str, Any], secret: set[str]) -> str:
        return clean({n: ("***" if n in secret else v) for n, v in content.items()})

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
        missing = sorted(clean(f.name, LABEL_LIMIT) for f in fields if f.required and f.name not in content)
        problem = f"required field(s) without a value or default: {', '.join(missing)}" if missing else self._first_problem(content, checks)
        if problem:
            self.say(f"  form       {message!r} with fields [{names}] -> decline ({clean(problem)})")
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
            if value is not OMIT:
                content[field.name] = value
        self.say(f"{_INDENT}-> accept {self._shown(content, secret)}")
        return {"action": "accept", "content": content}

    def _ask_field(self, field: formview.Field, check: Callable[[Any], Optional[str]], secret: bool, ctx: InputContext) -> Any:
        name, prop, required = field.name, field.prop, field.required
        label = clean(prop.get("title", name), LABEL_LIMIT)
        kind = prop.get("type")
        view = field.choices
        choices = list(view.options) if view is not None else []
        hints: list[str] = [clean(kind, 20)]
        if isinstance(prop.get("format"), str):
            hints.append(clean(prop["format"], 40))
        low, high = prop.get("minimum"), prop.get("maximum")
        if low is not None or high is not None:  # numbers once the form compiled; cleaned all the same
            hints.append(f"{'' if low is None else clean(low, 40)}..{'' if high is None else clean(high, 40)}")
        if required:
            hints.append("required")
        if secret:
            hints.append("hidden")
        self.say(f"{_INDENT}{label} ({', '.join(hints)})")
        if isinstance(prop.get("description"), str):
            self.say(f"{_INDENT}  {clean(prop['description'], 500)}")
        if choices:
            for number, (value, title) in enumerate(choices, start=1):
                shown = title if title == value else f"{title} [{value}]"
                self.say(f"{_INDENT}  {number}) {clean(shown, LABEL_LIMIT)}")
        has_default = "default" in prop
        default = prop.get("default")
        suffix = ""
        if has_default:
            suffix = " [default: ***]" if secret else f" [default: {clean(default, LABEL_LIMIT)}]"
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
                    return OMIT
                self.say(f"{_INDENT}! {label} is required")
                continue
            value, problem = parse(raw, prop, choices)
            if problem is None:
                problem = check(value)
            if problem is None:
                return value
            self.say(f"{_INDENT}! {label} {clean(problem, 500)}; try again")

    # ------------------------------------------------------------------ URLs

    def _url(self, params: dict[str, Any], ctx: InputContext) -> dict[str, Any]:
        message = clean(params.get("message", ""))
        url = clean(ctx.url if ctx.url is not None else params.get("url", ""))
        host = clean(ctx.host or "", LABEL_LIMIT)
        lines = [f"  url        {message!r}", f"{_INDENT}link: {url}", f"{_INDENT}host: {host}"]
        if ctx.idn:
            lines.append(f"{_INDENT}! internationalised host: it is {host} in ASCII; check it is the site you expect")
        if ctx.origin_mismatch and ctx.server_origin is None:  # a stdio server: nothing to compare (docs/safety.md#url-elicitation)
            lines.append(f"{_INDENT}! the server is a local program with no web origin: judge this link's host yourself")
        elif ctx.origin_mismatch:
            lines.append(f"{_INDENT}! this link is not on the server's own origin ({clean(ctx.server_origin or '', LABEL_LIMIT)})")
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
        lines = [f"  sampling   the server asks for a completion (maxTokens {clean(params.get('maxTokens'), 20)})"]
        if isinstance(params.get("systemPrompt"), str):
            lines.append(f"{_INDENT}system: {clean(params['systemPrompt'])}")
        for message in params.get("messages", []):
            if isinstance(message, dict):
                lines.append(f"{_INDENT}{clean(message.get('role', '?'), 20)}: {message_text(message.get('content'))}")
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
            if self.sampler is not None:
                return self._sampled(params, ctx, ask=False)
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
            if self.sampler is not None:
                return self._sampled(params, ctx, ask=True)
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

    def _sampled(self, params: dict[str, Any], ctx: InputContext, *, ask: bool) -> dict[str, Any]:
        """The host's model answers through the sampler; the user sees the answer and sends or refuses it (with ``ask``)."""
        assert self.sampler is not None
        result = self.sampler(params, ctx)
        self.say(f"{_INDENT}model {clean(result.get('model'), LABEL_LIMIT)} ({clean(result.get('stopReason'), 20)}): {message_text(result.get('content'))}")
        if ask:
            verdict = self._choose(f"{_INDENT}send (s) or refuse (r)? [r] ", ctx, {"s": "send", "y": "send", "yes": "send", "r": "refuse", "n": "refuse", "no": "refuse"}, "refuse")
            if verdict != "send":
                return self._refuse_sampling("the model's answer was refused by the user")
        self.say(f"{_INDENT}-> sent")
        return result

    def _sampling_reply(self, reply: str) -> dict[str, Any]:
        self.say(f"{_INDENT}-> reply {clean(reply)!r}")
        return {"role": "assistant", "content": {"type": "text", "text": reply}, "model": self.model_name, "stopReason": "endTurn"}

    def _refuse_sampling(self, why: str) -> dict[str, Any]:
        self.say(f"{_INDENT}-> refused ({why})")
        self._refused(f"sampling: {why}")
        raise InputRefused(SAMPLING_REJECTION_CODE, "the user refused the sampling request")

    # ------------------------------------------------------------------ roots, logs, progress

    def _root_paths(self) -> list[Union[str, Path]]:
        """The paths offered as roots: the answers' ``_roots`` when they have that key, else :attr:`roots`."""
        if self.answers is not None and "_roots" in self.answers:
            return list(self.answers["_roots"])
        return list(self.roots)

    def offers_roots(self) -> bool:
        """Declare ``roots`` only when the user gave some (read at each handshake)."""
        return bool(self._root_paths())

    def list_roots(self, ctx: InputContext) -> dict[str, Any]:
        """The given paths as ``file://`` roots; none when none were given (a server may ask anyway)."""
        paths = self._root_paths()
        roots = [{"uri": path_uri(p), "name": os.path.basename(os.path.abspath(os.fspath(p))) or "/"} for p in paths]
        shown = ", ".join(r["uri"] for r in roots) or "none"
        self.say(f"  roots      server {clean(ctx.server_id, LABEL_LIMIT)!r} asked which folders it may use -> {shown}")
        return {"roots": roots}

    def handle_log(self, entry: dict[str, Any], ctx: InputContext) -> None:
        """Print a server log entry as ``[level] logger: message``, sanitised."""
        level = clean(entry.get("level", "info"), 20)
        logger = clean(entry.get("logger") or "", LABEL_LIMIT)
        data = entry.get("data")
        if isinstance(data, dict):
            said = next((k for k in ("msg", "message") if isinstance(data.get(k), str)), None)
            if said is not None:  # FastMCP and logging adapters: {"msg": ..., "extra": null}
                rest = {k: v for k, v in data.items() if k != said and v is not None}
                data = data[said] + (f" {clean(rest)}" if rest else "")
        self.say(f"  log        [{level}] {logger + ': ' if logger else ''}{clean(data)}")

    def handle_notification(self, method: str, params: dict[str, Any], ctx: InputContext) -> None:
        """Print a server notification, sanitised; the same one again, right after, is counted, not printed."""
        if method == "notifications/elicitation/complete":
            self.say(f"  url        the server says the visit is complete ({clean(params.get('elicitationId', ''), LABEL_LIMIT)})")
            return
        line = f"  notice     {clean(method, LABEL_LIMIT)} {clean(params, 500) if params else ''}".rstrip()
        with self._out_lock:
            if line == self._last_notice and not self._bar_open:
                self._repeats += 1
                return
            self.say(line)
            self._last_notice = line

    def progress(self, update: Mapping[str, Any]) -> None:
        """Draw a progress bar; pass as ``call_tool(..., progress=handler.progress)``."""
        done = finite(update.get("progress"))
        total = finite(update.get("total"))
        message = clean(update.get("message", ""), LABEL_LIMIT)
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
