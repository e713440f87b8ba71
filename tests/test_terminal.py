"""The terminal handler: through a real pseudo-terminal, and with in-memory streams.

The pty tests run a small script in a subprocess whose stdin, stdout and
stderr are the slave side of ``os.openpty()``; the test types on the master
side and reads it with ``select`` and a deadline. Every wait is bounded.
"""

from __future__ import annotations

import io
import json
import os
import select
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Iterator, Optional

import pytest

from mcp_input_sync.errors import InputRefused
from mcp_input_sync.handler import CancelToken, InputContext
from mcp_input_sync.terminal import SAMPLING_REJECTION_CODE, TerminalHandler, validate_answers

REPO = Path(__file__).resolve().parents[1]
DEADLINE = 20.0

pytestmark = pytest.mark.skipif(os.name != "posix", reason="pseudo-terminals are POSIX")

SCRIPT = r"""
import json, sys
from mcp_input_sync.errors import InputRefused
from mcp_input_sync.handler import CancelToken, InputContext
from mcp_input_sync.terminal import TerminalHandler

def ctx(**kw):
    return InputContext(client="t", server_id="srv", era="legacy", token=CancelToken(), **kw)

scenario = sys.argv[1]
h = TerminalHandler()
result = None
try:
    if scenario == "secret":
        schema = {"type": "object", "properties": {
            "pin": {"type": "string", "title": "PIN"},
            "name": {"type": "string", "title": "Name"}}, "required": ["pin"]}
        fields = {"pin": {"sensitive_suspected": True}, "name": {"sensitive_suspected": False}}
        result = h.handle_elicitation({"message": "Unlock", "requestedSchema": schema}, ctx(mode="form", fields=fields))
    elif scenario == "reask":
        schema = {"type": "object", "properties": {
            "count": {"type": "integer", "title": "Count", "minimum": 1, "maximum": 10},
            "when": {"type": "string", "title": "When", "format": "date"}}, "required": ["count"]}
        result = h.handle_elicitation({"message": "How many", "requestedSchema": schema}, ctx(mode="form", fields={}))
    elif scenario == "url":
        result = h.handle_elicitation(
            {"mode": "url", "message": "Pay", "url": "https://b\u00fccher.example/pay", "elicitationId": "e1"},
            ctx(mode="url", url="https://b\u00fccher.example/pay", host="xn--bcher-kva.example", idn=True, origin_mismatch=True,
                server_origin="https://mcp.example.com"))
    elif scenario in ("approve", "refuse"):
        params = {"messages": [{"role": "user", "content": {"type": "text", "text": "Name a sight"}}],
                  "systemPrompt": "You are a guide.", "maxTokens": 42}
        result = h.handle_sampling(params, ctx())
    elif scenario == "progress":
        for n in range(1, 5):
            h.progress({"progress": n, "total": 4, "message": f"step {n}"})
        h.say("after")
        result = {}
except InputRefused as exc:
    result = {"refused": exc.code}
print("RESULT " + json.dumps(result, sort_keys=True))
"""


class Pty:
    """A subprocess running SCRIPT on a pseudo-terminal."""

    def __init__(self, scenario: str, argv: Optional[list[str]] = None) -> None:
        master, slave = os.openpty()
        self.master = master
        self.proc = subprocess.Popen(
            argv or [sys.executable, "-c", SCRIPT, scenario],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            cwd=REPO,
            close_fds=True,
            start_new_session=True,
        )
        os.close(slave)
        self.seen = b""
        self.mark = 0
        self.deadline = time.monotonic() + DEADLINE

    def _read(self, until: float) -> bool:
        """Read what is there; False at end of output."""
        remaining = until - time.monotonic()
        if remaining <= 0:
            return True
        ready, _, _ = select.select([self.master], [], [], remaining)
        if not ready:
            return True
        try:
            chunk = os.read(self.master, 4096)
        except OSError:  # EIO: the slave side is closed
            return False
        if not chunk:
            return False
        self.seen += chunk
        return True

    def expect(self, text: str) -> str:
        """Wait for ``text`` after the last mark; return what was read up to it."""
        wanted = text.encode("utf-8")
        while wanted not in self.seen[self.mark :]:
            if time.monotonic() >= self.deadline:
                pytest.fail(f"no {text!r} within {DEADLINE} s; saw {self.seen!r}")
            if not self._read(self.deadline):
                pytest.fail(f"output ended before {text!r}; saw {self.seen!r}")
        end = self.seen.index(wanted, self.mark) + len(wanted)
        part = self.seen[self.mark : end]
        self.mark = end
        return part.decode("utf-8", "replace")

    def type(self, text: str) -> None:
        os.write(self.master, text.encode("utf-8"))

    def result(self) -> Any:
        self.expect("RESULT ")
        line = self.expect("\n")
        return json.loads(line)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=DEADLINE)
        os.close(self.master)


@pytest.fixture
def pty_run() -> Iterator[Any]:
    started: list[Pty] = []

    def start(scenario: str, argv: Optional[list[str]] = None) -> Pty:
        p = Pty(scenario, argv)
        started.append(p)
        return p

    yield start
    for p in started:
        p.close()


def test_pty_sensitive_field_is_not_echoed(pty_run: Any) -> None:
    term = pty_run("secret")
    term.expect("fill in (f)")
    term.type("\n")
    term.expect("hidden")
    term.expect("PIN: ")
    term.type("4321\n")
    term.expect("Name: ")
    term.type("Ada\n")
    result = term.result()
    assert result == {"action": "accept", "content": {"pin": "4321", "name": "Ada"}}
    out = term.seen.decode()
    assert "4321" not in out.split("RESULT")[0], out  # neither echoed nor printed
    assert "Ada" in out  # a plain field is echoed
    assert '"pin": "***"' in out


def test_pty_bad_values_are_asked_again(pty_run: Any) -> None:
    term = pty_run("reask")
    term.expect("fill in")
    term.type("f\n")
    term.expect("Count (integer, 1..10, required)")
    term.expect("Count: ")
    term.type("lots\n")
    assert "must be an integer; try again" in term.expect("Count: ")
    term.type("42\n")
    assert "above the maximum" in term.expect("Count: ")
    term.type("\n")
    assert "Count is required" in term.expect("Count: ")
    term.type("7\n")
    term.expect("When (string, date)")
    term.expect("When: ")
    term.type("2027-02-30\n")
    assert "is not a valid date" in term.expect("When: ")
    term.type("2027-02-03\n")
    assert term.result() == {"action": "accept", "content": {"count": 7, "when": "2027-02-03"}}


def test_pty_url_consent_shows_host_and_warnings(pty_run: Any) -> None:
    term = pty_run("url")
    shown = term.expect("[d] ")
    assert "https://bücher.example/pay" in shown
    assert "host: xn--bcher-kva.example" in shown
    assert "internationalised host" in shown
    assert "not on the server's own origin (https://mcp.example.com)" in shown
    assert "never opens links" in shown
    term.type("maybe\n")
    assert "answer one of" in term.expect("[d] ")
    term.type("a\n")
    assert term.result() == {"action": "accept"}


def test_pty_sampling_approved_with_a_typed_reply(pty_run: Any) -> None:
    term = pty_run("approve")
    shown = term.expect("[r] ")
    assert "maxTokens 42" in shown and "system: You are a guide." in shown and "user: Name a sight" in shown
    term.type("a\n")
    term.expect("reply: ")
    term.type("The old bridge.\n")
    result = term.result()
    assert result["content"] == {"type": "text", "text": "The old bridge."}
    assert result["role"] == "assistant" and result["model"] == "terminal"


def test_pty_sampling_refused(pty_run: Any) -> None:
    term = pty_run("refuse")
    term.expect("[r] ")
    term.type("r\n")
    assert term.result() == {"refused": SAMPLING_REJECTION_CODE}


def test_pty_progress_bar_redraws_one_line(pty_run: Any) -> None:
    term = pty_run("progress")
    assert term.result() == {}
    out = term.seen.decode()
    assert "\r  progress   [" in out
    assert "4/4 step 4" in out
    assert "1/4 step 1\x1b[K\r" in out  # redrawn in place, not a new line
    assert "4/4 step 4\x1b[K\r\n" in out  # a finished bar ends its line


def test_pty_interactive_demo(pty_run: Any) -> None:
    term = pty_run("demo", [sys.executable, "-m", "mcp_input_sync", "demo"])
    assert "interactive" in term.expect("fill in (f)")
    term.type("f\n")
    for prompt in ("Travellers [default: 2]: ", "Budget [default: 1500]: ", "Start date: "):
        term.expect(prompt)
        term.type("\n")
    term.expect("Pace [default: normal]: ")
    term.type("3\n")  # packed
    assert "system: You are a travel guide." in term.expect("approve (a) or refuse (r)? [r] ")
    term.type("a\n")
    assert "host: checkout.example.com" in term.expect("accept (a) or decline (d)? [d] ")
    term.type("a\n")
    term.expect("answered 4 server requests in all")
    assert term.proc.wait(timeout=DEADLINE) == 0
    out = term.seen.decode()
    assert "packed pace" in out and "\r  progress   [" in out and out.count("result (ok)") == 3


# ---------------------------------------------------------------------------- in memory


def ctx(token: Optional[CancelToken] = None, **kw: Any) -> InputContext:
    return InputContext(client="t", server_id="srv", era="legacy", token=token or CancelToken(), **kw)


def handler(typed: str = "", **kw: Any) -> tuple[TerminalHandler, io.StringIO]:
    out = io.StringIO()
    return TerminalHandler(stdin=io.StringIO(typed), stdout=out, stderr=out, **kw), out


EVERY_KIND = {
    "type": "object",
    "properties": {
        "email": {"type": "string", "format": "email", "title": "E-mail"},
        "site": {"type": "string", "format": "uri"},
        "day": {"type": "string", "format": "date"},
        "at": {"type": "string", "format": "date-time"},
        "ratio": {"type": "number", "minimum": 0, "maximum": 1, "default": 0.5},
        "n": {"type": "integer", "minimum": 1},
        "ok": {"type": "boolean", "default": False},
        "size": {"type": "string", "enum": ["s", "m", "l"], "default": "m"},
        "tier": {"type": "string", "oneOf": [{"const": "g", "title": "Gold"}, {"const": "b", "title": "Bronze"}]},
        "old": {"type": "string", "enum": ["x", "y"], "enumNames": ["Ex", "Why"]},
        "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b", "c"]}, "default": ["a"]},
        "picks": {"type": "array", "items": {"anyOf": [{"const": "p", "title": "Pears"}, {"const": "q", "title": "Quinces"}]}},
    },
    "required": ["email", "n"],
}


def test_every_field_kind_is_rendered_parsed_and_checked() -> None:
    typed = "\n".join(
        [
            "f",
            "nope", "ada@example.com",  # email: bad, then good
            "https://example.com",
            "2027-01-01",
            "2027-01-01T10:00:00Z",
            "2", "",  # ratio: above max, then default
            "3",
            "yes",
            "l",
            "2",  # tier: Bronze by number
            "Why",  # legacy enumNames by title
            "1, c",  # tags by number and value
            "Quinces",
        ]
    ) + "\n"
    h, out = handler(typed)
    result = h.handle_elicitation({"message": "All", "requestedSchema": EVERY_KIND}, ctx(mode="form"))
    assert result == {
        "action": "accept",
        "content": {
            "email": "ada@example.com", "site": "https://example.com", "day": "2027-01-01",
            "at": "2027-01-01T10:00:00Z", "ratio": 0.5, "n": 3, "ok": True, "size": "l", "tier": "b",
            "old": "y", "tags": ["a", "c"], "picks": ["q"],
        },
    }
    text = out.getvalue()
    for shown in ("E-mail (string, email, required)", "is not a valid email; try again", "ratio (number, 0..1)",
                  "[default: 0.5]", "is above the maximum 1", "2) Bronze [b]", "2) Why [y]", "1) Pears [p]",
                  "[default: m]", "(y/n)", "comma-separated"):
        assert shown in text, (shown, text)
    assert h.refusals == []


def test_form_decline_cancel_and_end_of_input() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}
    for typed, action in (("d\n", "decline"), ("c\n", "cancel"), ("f\n", "cancel"), ("", "cancel")):
        h, _ = handler(typed)
        assert h.handle_elicitation({"message": "m", "requestedSchema": schema}, ctx(mode="form")) == {"action": action}
        assert h.refusals


def test_assume_yes_takes_defaults_or_declines() -> None:
    h, out = handler(assume_yes=True)
    schema = {"type": "object", "properties": {"a": {"type": "integer", "default": 2}, "b": {"type": "string"}}}
    assert h.handle_elicitation({"message": "m", "requestedSchema": schema}, ctx(mode="form")) == {"action": "accept", "content": {"a": 2}}
    schema["required"] = ["b"]
    assert h.handle_elicitation({"message": "m", "requestedSchema": schema}, ctx(mode="form")) == {"action": "decline"}
    assert "no default for b" in out.getvalue() and len(h.refusals) == 1
    assert h.handle_elicitation({"mode": "url", "message": "m", "url": "https://a.example/"}, ctx(mode="url", host="a.example")) == {"action": "accept"}
    with pytest.raises(InputRefused) as err:
        h.handle_sampling({"messages": [], "maxTokens": 5}, ctx())
    assert err.value.code == -1
    with_model, _ = handler(assume_yes=True, model=lambda params: f"{params['maxTokens']} tokens", model_name="m1")
    reply = with_model.handle_sampling({"messages": [], "maxTokens": 5}, ctx())
    assert reply["content"]["text"] == "5 tokens" and reply["model"] == "m1"


def test_answers_rules() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "integer", "default": 2}, "b": {"type": "string"}, "c": {"type": "string"}}, "required": ["b"]}
    params = {"message": "m", "requestedSchema": schema}
    h, _ = handler(answers={"b": "x", "zzz": 1})
    assert h.handle_elicitation(params, ctx(mode="form")) == {"action": "accept", "content": {"a": 2, "b": "x"}}
    h, _ = handler(answers={})
    assert h.handle_elicitation(params, ctx(mode="form")) == {"action": "decline"}
    h, _ = handler(answers={"b": 5})
    assert h.handle_elicitation(params, ctx(mode="form")) == {"action": "decline"}
    h, _ = handler(answers={"b": "x", "_action": "cancel"})
    assert h.handle_elicitation(params, ctx(mode="form")) == {"action": "cancel"}
    url = {"mode": "url", "message": "m", "url": "https://a.example/"}
    assert handler(answers={})[0].handle_elicitation(url, ctx(mode="url")) == {"action": "decline"}
    assert handler(answers={"_url": "accept"})[0].handle_elicitation(url, ctx(mode="url")) == {"action": "accept"}
    with pytest.raises(InputRefused):
        handler(answers={})[0].handle_sampling({"messages": [], "maxTokens": 5}, ctx())
    reply = handler(answers={"_sampling_text": "hi"})[0].handle_sampling({"messages": [], "maxTokens": 5}, ctx())
    assert reply["content"]["text"] == "hi"
    assert handler(answers={})[0].list_roots(ctx()) == {"roots": []}
    roots = handler(answers={"_roots": ["/srv/data", "rel"]})[0].list_roots(ctx())["roots"]
    assert roots[0] == {"uri": "file:///srv/data", "name": "data"}
    assert roots[1]["uri"] == Path(os.path.abspath("rel")).as_uri()
    for bad in ([], {"_action": "later"}, {"_url": 1}, {"_sampling_text": 3}, {"_roots": "/x"}):
        with pytest.raises(ValueError):
            validate_answers(bad)


def test_no_roots_unless_given() -> None:
    h, out = handler()  # no default folder: a root can widen a sandboxed server's access (tests/test_roots_given.py)
    assert h.offers_roots() is False
    assert h.list_roots(ctx()) == {"roots": []}  # a server that asks anyway
    assert "server 'srv' asked which folders it may use -> none" in out.getvalue()
    h.roots = [Path.cwd()]  # read at the next handshake
    assert h.offers_roots() is True and h.list_roots(ctx())["roots"][0]["uri"] == Path.cwd().as_uri()
    assert handler(roots=["/srv/a"])[0].offers_roots() and handler(answers={"_roots": ["/srv/b"]})[0].offers_roots()
    assert not handler(answers={"_roots": []}, roots=["/srv/c"])[0].offers_roots()


def test_logs_and_notifications_are_sanitised() -> None:
    h, out = handler()
    h.handle_log({"level": "warning", "logger": "x\x1b[31m", "data": {"k": "v\u202e\x07"}}, ctx())
    h.handle_notification("notifications/tools/list_changed\u200b", {}, ctx())
    text = out.getvalue()
    assert "\x1b" not in text and "\u202e" not in text and "\x07" not in text and "\u200b" not in text
    assert "[warning] x[31m" in text and '"k": "v"' in text


def test_progress_without_a_tty_prints_lines() -> None:
    h, out = handler(bar_width=10)
    h.progress({"progress": 1, "total": 4, "message": "one"})
    h.progress({"progress": 3})
    h.progress({"progress": "x"})
    assert out.getvalue().splitlines() == ["  progress   [##--------] 1/4 one", "  progress   3"]


class _Signal(io.StringIO):
    def __init__(self, marker: str) -> None:
        super().__init__()
        self.marker = marker
        self.seen = threading.Event()

    def write(self, s: str) -> int:
        n = super().write(s)
        if self.marker in self.getvalue():
            self.seen.set()
        return n


def test_a_cancelled_prompt_stops_reading() -> None:
    read_fd, write_fd = os.pipe()
    stdin = os.fdopen(read_fd, "r")
    out = _Signal("fill in")
    h = TerminalHandler(stdin=stdin, stdout=out, stderr=out)
    token = CancelToken()
    answers: list[dict[str, Any]] = []
    schema = {"type": "object", "properties": {"a": {"type": "string"}}}
    worker = threading.Thread(
        target=lambda: answers.append(h.handle_elicitation({"message": "m", "requestedSchema": schema}, ctx(token, mode="form")))
    )
    try:
        worker.start()
        assert out.seen.wait(DEADLINE)
        token.cancel("timeout")
        worker.join(DEADLINE)
        assert not worker.is_alive()
        assert answers == [{"action": "cancel"}]
    finally:
        os.close(write_fd)
        worker.join(DEADLINE)
        stdin.close()


def test_lines_from_a_pipe_are_not_lost_between_prompts() -> None:
    read_fd, write_fd = os.pipe()
    os.write(write_fd, b"f\nAda\n3\n")
    os.close(write_fd)
    with os.fdopen(read_fd, "r") as stdin:
        out = io.StringIO()
        h = TerminalHandler(stdin=stdin, stdout=out)
        schema = {"type": "object", "properties": {"name": {"type": "string"}, "n": {"type": "integer"}}}
        assert h.handle_elicitation({"message": "m", "requestedSchema": schema}, ctx(mode="form")) == {
            "action": "accept",
            "content": {"name": "Ada", "n": 3},
        }


def test_untrusted_text_is_cleaned_in_forms_and_urls() -> None:
    h, out = handler("f\n\n", assume_yes=False)
    schema = {"type": "object", "properties": {"a": {"type": "string", "title": "A\x1b[2J", "description": "d\u202e"}}}
    h.handle_elicitation({"message": "hi\x1b]0;x\x07", "requestedSchema": schema}, ctx(mode="form"))
    h2, out2 = handler(assume_yes=True)
    h2.handle_elicitation({"mode": "url", "message": "m\x1b", "url": "https://a.example/"}, ctx(mode="url", url="https://a.example/\x1b", host="a.example"))
    for text in (out.getvalue(), out2.getvalue()):
        assert "\x1b" not in text and "\u202e" not in text and "\x07" not in text


def test_a_sampler_answers_an_approved_request_and_the_user_sends_or_refuses_its_answer() -> None:
    from mcp_input_sync.errors import InputRefused

    asked: list[dict[str, Any]] = []

    def sampler(params: dict[str, Any], context: InputContext) -> dict[str, Any]:
        asked.append(params)
        return {"role": "assistant", "content": {"type": "text", "text": "The old bridge."}, "model": "gpt-test", "stopReason": "endTurn"}

    params = {"messages": [{"role": "user", "content": {"type": "text", "text": "Name a sight"}}], "maxTokens": 42}
    h, out = handler("a\ns\n", sampler=sampler)
    assert h.handle_sampling(params, ctx())["model"] == "gpt-test"
    shown = out.getvalue()
    assert "model gpt-test (endTurn): The old bridge." in shown and "send (s) or refuse (r)?" in shown
    h, out = handler("a\nr\n", sampler=sampler)
    with pytest.raises(InputRefused):
        h.handle_sampling(params, ctx())
    h, out = handler("r\n", sampler=sampler)
    with pytest.raises(InputRefused):
        h.handle_sampling(params, ctx())  # refused before the model was asked
    assert len(asked) == 2
    h, out = handler("", sampler=sampler, assume_yes=True)
    assert h.handle_sampling(params, ctx())["content"]["text"] == "The old bridge."
