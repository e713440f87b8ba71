"""A hostile server's text never reaches a person raw (issue 21, item 2).

The server puts terminal escape codes (clear screen, window title, OSC 8
link, concealed text), C1 controls, bidi, zero-width, format and other
invisible characters in every place a person sees: form messages, titles,
descriptions, choices and defaults, URL and sampling requests, logs,
notifications, progress, tool results of every block kind,
``structuredContent``, listings and error messages. The terminal handler,
the command line (text and ``--json``), the web pages and their JSON
endpoints must carry none of them raw; the JSON stays valid and faithful.
Non-finite numbers are refused where server numbers enter, and never crash
a display.
"""

from __future__ import annotations

import io
import json
import logging
import re
import sys
import time
import unicodedata
from pathlib import Path
from typing import Any, Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mcp_input_sync as mis
from mcp_input_sync import reflect
from mcp_input_sync.__main__ import main
from mcp_input_sync._protocol import jsonrpc
from mcp_input_sync._protocol.forms import FormCache, SchemaRefused, compile_form
from mcp_input_sync.handler import InputContext
from mcp_input_sync.terminal import TerminalHandler
from mcp_input_sync.testing import FakeServer, ToolCall, ToolError
from mcp_input_sync.web import PendingInput, PendingInputBroker
from mcp_input_sync.web.forms import call_json, pending_json, render_body, render_page
from mcp_input_sync.web.pending import CallState

JsonDict = dict[str, Any]

# What a hostile server writes: ESC[2J (clear), OSC 0 (window title), OSC 8 (a link), ESC[8m (conceal),
# a C1 CSI, bidi overrides and isolates, zero-width and format characters, and the invisible ones
# that are not in the format category (variation selectors, Hangul fillers, the grapheme joiner).
ESCAPES = "\x1b[2J\x1b]0;owned\x07\x1b]8;;https://evil.example/\x1b\\link\x1b]8;;\x1b\\\x1b[8m\x9b2J\x85"
INVISIBLE = (
    "\u202e\u2066\u2069\u200b\u200d\u200f\u00ad\u061c\u180e\u2028\u2029\u2060\u2064\u206a\u206f\ufeff"
    "\ufe0f\U000e0100\u115f\u1160\u3164\uffa0\u034f\u17b4\u180b\U000e0041\U000e007f\ue000\ufdd0\ufffe"
    "\U0001d173\ud800"
)
HOSTILE = "A" + ESCAPES + "B" + INVISIBLE + "C"
CLEAN = "A[2J]0;owned]8;;https://evil.example/\\link]8;;\\[8m2JBC"

# The removed classes, from the running Python's own database (the property tests' model):
HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Zl", "Zp"})
# DerivedCoreProperties.txt, Default_Ignorable_Code_Point, the code points outside those categories.
OTHER_IGNORABLE = [(0x034F, 0x034F), (0x115F, 0x1160), (0x17B4, 0x17B5), (0x180B, 0x180F), (0x3164, 0x3164),
                   (0xFE00, 0xFE0F), (0xFFA0, 0xFFA0), (0x2065, 0x2065), (0xFFF0, 0xFFF8), (0xE0000, 0xE0FFF)]


def removed(char: str) -> bool:
    """True for a code point of the classes docs/safety.md says are removed."""
    point = ord(char)
    if unicodedata.category(char) in HIDDEN_CATEGORIES:
        return True
    if any(first <= point <= last for first, last in OTHER_IGNORABLE):
        return True
    return 0xFDD0 <= point <= 0xFDEF or (point & 0xFFFE) == 0xFFFE


def raw_hidden(text: str, allowed: str = "\n") -> list[str]:
    """The removed code points found in ``text`` (other than ``allowed``), as hex."""
    return [hex(ord(ch)) for ch in text if removed(ch) and ch not in allowed]


def strings(value: Any) -> Iterator[str]:
    """Every string (dict keys too) in a JSON value."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def test_the_payload_is_hostile() -> None:
    # the model agrees with the library on every code point of the payload, and the payload is all bad
    assert reflect.text(HOSTILE, 1000) == CLEAN
    assert raw_hidden(HOSTILE) and not raw_hidden(CLEAN)


# ---------------------------------------------------------------------------------------- the rule


@settings(max_examples=400, deadline=None)
@given(
    st.text(alphabet=st.one_of(st.characters(), st.sampled_from(list(HOSTILE)), st.sampled_from(["\n", "\t", "é", "🙂", "日"]))),
    st.booleans(),
)
def test_reflect_text_never_returns_a_removed_code_point(value: str, lines: bool) -> None:
    out = reflect.text(value, 10_000, lines=lines)
    assert raw_hidden(out, "\n\t" if lines else "") == []
    # and nothing else is taken away
    assert out == "".join(ch for ch in value if not removed(ch) or (lines and ch in "\n\t"))


@settings(max_examples=200, deadline=None)
@given(st.recursive(st.one_of(st.none(), st.integers(), st.text(alphabet=st.sampled_from(list(HOSTILE) + ["x", "é", "\n"]))),
                    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(alphabet=st.sampled_from(list(HOSTILE) + ["k"])), inner, max_size=3)),
                    max_leaves=10))
def test_reflect_dumps_is_valid_faithful_and_shows_no_removed_code_point(value: Any) -> None:
    out = reflect.dumps(value, indent=2)
    assert json.loads(out) == value
    assert raw_hidden(out) == []


# ---------------------------------------------------------------------------------------- non-finite numbers


@pytest.mark.parametrize("line", ['{"a":NaN}', '{"a":Infinity}', '{"a":[-Infinity]}', ' {"a":NaN}'])
def test_nan_and_infinity_are_not_json(line: str) -> None:
    with pytest.raises(ValueError):
        jsonrpc.decode(line)


@pytest.mark.parametrize(
    "prop",
    [
        {"type": "number", "minimum": "\x1b[2J"},
        {"type": "integer", "maximum": "5"},
        {"type": "number", "minimum": float("nan")},
        {"type": "number", "maximum": float("inf")},
        {"type": "integer", "default": float("-inf")},
        {"type": "number", "default": "1"},
        {"type": "number", "minimum": True},
    ],
)
def test_a_number_field_with_a_bound_or_default_that_is_no_finite_number_is_refused(prop: JsonDict) -> None:
    schema = {"type": "object", "properties": {"n\u200b": prop}}
    with pytest.raises(SchemaRefused) as refused:
        compile_form(schema)
    assert "is not a finite number" in str(refused.value)
    assert str(refused.value).isascii() and "n\\u200b" in str(refused.value)  # the name quoted in ASCII
    with pytest.raises(SchemaRefused):
        FormCache().get(schema)


def test_the_server_gets_a_clean_refusal_for_a_bound_that_is_not_a_number() -> None:
    out = io.StringIO()
    with FakeServer(era="legacy") as fake:
        @fake.tool
        def ask(call: ToolCall) -> str:
            answer = call.elicit(HOSTILE, {"type": "object", "properties": {"n": {"type": "integer", "minimum": ESCAPES, "maximum": HOSTILE}}})
            return json.dumps(answer)

        handler = TerminalHandler(stdin=io.StringIO(""), stdout=out, stderr=out, answers={})
        with fake.client(handler=handler) as client:
            result = client.call_tool("ask")
        (refused,) = fake.assert_refused(-32602, "elicitation/create")
    assert "is not a finite number" in refused["message"]
    assert result["isError"] is True
    assert out.getvalue() == ""  # nothing of the form reached the terminal


def test_the_terminal_declines_a_form_it_cannot_render_without_printing_its_text() -> None:
    out = io.StringIO()
    handler = TerminalHandler(stdin=io.StringIO(""), stdout=out, stderr=out, answers={})
    ctx = InputContext(client="t", server_id="s", era="legacy")
    schema = {"type": "object", "properties": {HOSTILE: {"type": "number", "minimum": HOSTILE}}}
    assert handler.handle_elicitation({"message": HOSTILE, "requestedSchema": schema}, ctx) == {"action": "decline"}
    assert "cannot render" in out.getvalue()
    assert raw_hidden(out.getvalue()) == []


def test_the_progress_display_never_crashes_and_draws_no_number_that_is_not_finite() -> None:
    nothing: list[JsonDict] = [{"progress": float("nan")}, {"progress": float("nan"), "total": 10}, {"progress": float("inf"), "total": 10},
               {"progress": float("-inf")}, {"progress": 10**400, "total": 10**401}, {"progress": "1", "message": HOSTILE}]
    for update in nothing:
        out = io.StringIO()
        TerminalHandler(stdout=out).progress(update)
        assert out.getvalue() == "", update
    no_bar: list[JsonDict] = [{"progress": 1, "total": float("nan")}, {"progress": 1, "total": float("-inf")}, {"progress": 3, "total": 10**400}]
    for update in no_bar:
        out = io.StringIO()
        TerminalHandler(stdout=out).progress({**update, "message": HOSTILE})
        assert out.getvalue() == f"  progress   {update['progress']} {CLEAN}\n", update


def test_non_finite_progress_from_a_server_is_dropped_and_the_display_survives(caplog: pytest.LogCaptureFixture) -> None:
    out = io.StringIO()
    handler = TerminalHandler(stdin=io.StringIO(""), stdout=out, stderr=out, answers={})
    with FakeServer(era="legacy") as fake:
        @fake.tool
        def slow(call: ToolCall) -> str:
            token = json.dumps(call.progress_token)
            for numbers in ('"progress":NaN', '"progress":Infinity', '"progress":1e999', '"progress":1,"total":1e999', '"progress":1,"total":-1e999'):
                fake.send_raw('{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":%s,%s}}' % (token, numbers))
            call.progress(2, 4, HOSTILE)
            return "done"

        with caplog.at_level(logging.DEBUG, logger="mcp_input_sync"):
            with fake.client(handler=handler) as client:
                client.call_tool("slow", progress=handler.progress)
                malformed = client.stats["malformed"]
    assert malformed == 5  # NaN and Infinity are not JSON; 1e999 decodes to an infinity, refused by the router
    lines = [line for line in out.getvalue().splitlines() if "progress" in line]
    assert lines == [f"  progress   [{'#' * 15}{'-' * 15}] 2/4 {CLEAN}"]
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]  # no traceback per notification


# ---------------------------------------------------------------------------------------- the terminal


def hostile_tool(fake: FakeServer) -> None:
    """A tool that puts hostile text in every place the terminal shows."""

    @fake.tool
    def everything(call: ToolCall) -> JsonDict:
        call.log("info", {HOSTILE: [HOSTILE, {"k": HOSTILE}]}, logger=HOSTILE)
        call.notify("notifications/" + HOSTILE, {HOSTILE: HOSTILE})
        call.progress(1, 2, HOSTILE)
        schema = {
            "type": "object",
            "title": HOSTILE,
            "properties": {
                "name" + INVISIBLE: {"type": "string", "title": HOSTILE, "description": HOSTILE, "default": HOSTILE, "format": HOSTILE},
                "count": {"type": "integer", "title": HOSTILE, "minimum": 1, "maximum": 5, "default": 2},
                "pick": {"type": "string", "enum": ["a" + HOSTILE, "b"], "enumNames": [HOSTILE, "B" + HOSTILE], "default": "b"},
                "many": {"type": "array", "items": {"anyOf": [{"const": "x" + HOSTILE, "title": HOSTILE}]}},
            },
            "required": ["count"],
        }
        form = call.elicit(HOSTILE, schema)
        visit = call.elicit_url(HOSTILE, "https://calendar.example/ok")
        sampled = call.sample(
            [{"role": "user", "content": [{"type": "text", "text": HOSTILE}, {"type": "image", "data": "aGk=", "mimeType": "image/png"}]}],
            systemPrompt=HOSTILE,
        )
        return {
            "content": [
                {"type": "text", "text": HOSTILE + "\nsecond line\t" + HOSTILE},
                {"type": "image", "data": "aGk=", "mimeType": "image/png" + HOSTILE},
                {"type": "resource", "resource": {"uri": "file:///x" + HOSTILE, "text": HOSTILE}},
                {"type": "resource_link", "uri": "https://x.example/", "name": HOSTILE},
            ],
            "structuredContent": {HOSTILE: [HOSTILE, 1], "form": form, "visit": visit, "model": sampled.get("model")},
            "isError": False,
        }


def test_the_terminal_handler_shows_no_server_text_raw(caplog: pytest.LogCaptureFixture) -> None:
    out = io.StringIO()
    # fill in the form (defaults), decline the link, approve the sampling request and type a reply
    handler = TerminalHandler(stdin=io.StringIO("f\n\n\n\n\nd\na\nmy reply\n"), stdout=out, stderr=out, model_name="m" + HOSTILE)
    with FakeServer(era="legacy") as fake:
        hostile_tool(fake)
        with fake.client(handler=handler, elicitation={"origin": "https://calendar.example"}) as client:
            result = client.call_tool("everything", progress=handler.progress)
    shown = out.getvalue()
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]  # no callback failed on the text
    assert result["structuredContent"]["form"]["action"] == "accept"
    for seen in ("  log ", "  notice ", "  progress ", "  form ", "  url ", "  sampling ", "system: " + CLEAN, "1..5", "[image]"):
        assert seen in shown, seen
    assert CLEAN in shown
    assert raw_hidden(shown) == []


# ---------------------------------------------------------------------------------------- the command line


@pytest.fixture
def hostile_cli(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeServer]:
    """``-- server`` on the command line reaches this fake instead of starting a program."""
    with FakeServer(era="legacy") as fake:
        hostile_tool(fake)

        @fake.tool(description=HOSTILE)
        def fails(call: ToolCall) -> str:
            raise ToolError(-32600, HOSTILE)

        fake.add_resource("file:///r" + INVISIBLE, HOSTILE, name=HOSTILE, description=HOSTILE)
        fake.add_prompt(HOSTILE, [{"role": "user", "content": {"type": "text", "text": HOSTILE}}], description=HOSTILE)
        monkeypatch.setattr(mis.client, "connect_stdio", lambda command, **options: fake.client(handler=options.get("handler")))
        yield fake


def answers_file(tmp_path: Path) -> str:
    path = tmp_path / "answers.json"
    path.write_text(json.dumps({"_url": "decline", "_sampling_text": "reply"}), encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("stdout", ["terminal", "json"])
def test_the_command_line_prints_no_server_text_raw(
    hostile_cli: FakeServer, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, stdout: str
) -> None:
    as_json = stdout == "json"
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)  # a person reads it
    code = main(["call", *(["--json"] if as_json else []), "--answers", answers_file(tmp_path), "everything", "--", "server"])
    out, err = capsys.readouterr()
    assert code == 3, err  # the link was declined (answers file)
    assert raw_hidden(out) == [] and raw_hidden(err) == []
    assert "  form " in err and "  sampling " in err and "  log " in err
    if as_json:
        result = json.loads(out)  # valid, and faithful: the server's text comes back unchanged
        assert result["content"][0]["text"] == HOSTILE + "\nsecond line\t" + HOSTILE
        assert result["structuredContent"][HOSTILE] == [HOSTILE, 1]
        assert "\\u202e" in out and "\\u001b" in out
    else:
        assert CLEAN in out and "second line    " + CLEAN in out
        assert "\\u202e" in out  # the image and resource blocks and structuredContent are JSON, hidden code points escaped
        json_lines = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
        assert {"type": "image", "data": "aGk=", "mimeType": "image/png" + HOSTILE} in json_lines


def test_a_pipe_gets_the_tools_exact_text_and_stderr_stays_clean(hostile_cli: FakeServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # stdout is not a terminal: a program reads it, so the tool's text is written as sent (issue 22); stderr is for a person
    code = main(["call", "--answers", answers_file(tmp_path), "everything", "--", "server"])
    out, err = capsys.readouterr()
    assert code == 3, err
    assert out.startswith(HOSTILE.replace("\ud800", "\ufffd") + "\nsecond line\t")
    assert raw_hidden(err) == []


def test_an_error_message_is_printed_clean(hostile_cli: FakeServer, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["call", "fails", "--", "server"]) == 4
    out, err = capsys.readouterr()
    assert f"[remote -32600] {CLEAN}" in err
    assert raw_hidden(out) == [] and raw_hidden(err) == []


@pytest.mark.parametrize("command", ["tools", "resources", "prompts"])
@pytest.mark.parametrize("as_json", [False, True])
def test_listings_print_no_server_text_raw(hostile_cli: FakeServer, capsys: pytest.CaptureFixture[str], command: str, as_json: bool) -> None:
    assert main([command, *(["--json"] if as_json else []), "--", "server"]) == 0
    out, err = capsys.readouterr()
    assert raw_hidden(out) == [] and raw_hidden(err) == []
    if as_json:
        assert HOSTILE in list(strings(json.loads(out)))
    else:
        assert CLEAN in out


# ---------------------------------------------------------------------------------------- the web


def hostile_pending(kind: str, user: str = "alice") -> PendingInput:
    params: JsonDict
    if kind == "form":
        params = {
            "message": HOSTILE + "\n" + HOSTILE,
            "requestedSchema": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "title": HOSTILE, "description": HOSTILE, "default": HOSTILE},
                    "count": {"type": "integer", "title": HOSTILE, "minimum": 1, "default": 2},
                    "pick": {"type": "string", "oneOf": [{"const": "a", "title": HOSTILE}]},
                },
            },
        }
    else:
        params = {"messages": [{"role": "user", "content": {"type": "text", "text": HOSTILE + "\n" + HOSTILE}}], "maxTokens": 5, "systemPrompt": HOSTILE}
    return PendingInput(id=f"{kind}-{user}", kind=kind, params=params, user=user, created=time.time(), server_id="srv" + HOSTILE, draft=None)


def hostile_state(inputs: list[PendingInput]) -> CallState:
    result = {"content": [{"type": "text", "text": HOSTILE + "\nline two"}], "structuredContent": {HOSTILE: [HOSTILE, float("inf")]}, "isError": False}
    return CallState(id="call-1", status="complete", result=result, error="[remote] " + HOSTILE, inputs=inputs, rounds=1)


def test_the_json_endpoints_carry_the_same_cleaned_text_as_the_pages() -> None:
    pending = hostile_pending("form")
    items = pending_json([(pending, "/inputs/form-alice")])
    assert items[0]["message"] == CLEAN + "\n" + CLEAN and items[0]["server_id"] == "srv" + CLEAN
    state = call_json(hostile_state([pending]), [(pending, "/inputs/form-alice")])
    assert state["error"] == "[remote] " + CLEAN
    assert state["result"]["content"][0]["text"] == CLEAN + "\nline two"  # the result keeps its lines
    assert state["result"]["structuredContent"] == {CLEAN: [CLEAN, None]}
    for text in (*strings(items), *strings(state)):
        assert raw_hidden(text, "\n") == [], text


def test_a_page_shows_no_server_text_raw_and_keeps_lines() -> None:
    for kind in ("form", "sampling"):
        page = render_page(hostile_pending(kind), "/inputs/x", {"csrf": "t"})
        assert raw_hidden(page) == [], kind
    body = render_body(hostile_pending("sampling"))
    assert f"<dd>{CLEAN}<br>{CLEAN}</dd>" in body  # the message's line break is shown
    assert f'<p class="mis-message">{CLEAN}<br>{CLEAN}</p>' in render_body(hostile_pending("form"))


def test_a_multi_line_reply_keeps_its_lines_when_the_form_is_shown_again() -> None:
    body = render_body(hostile_pending("sampling"), values={"text": "first line\r\n\r\n\tsecond line\u202e"}, errors={"__all__": "choose approve or reject"})
    assert '<textarea id="mis-reply" name="text" rows="6">\nfirst line\n\n\tsecond line</textarea>' in body


class CallBroker(PendingInputBroker):
    """A broker that also knows one finished call of alice's, with a hostile result."""

    def result(self, call_id: str, user: Any) -> CallState:
        if call_id != "call-1" or user != "alice":
            return super().result(call_id, user)
        return hostile_state(self.pending("alice"))


def test_flask_pages_and_json_endpoints_carry_no_server_text_raw() -> None:
    flask = pytest.importorskip("flask")
    from mcp_input_sync.web.flask import CSRF_FIELD, blueprint

    broker = CallBroker()
    for kind in ("form", "sampling"):
        broker.park(hostile_pending(kind))
    app = flask.Flask(__name__)
    app.secret_key = "test-secret"
    app.register_blueprint(blueprint(broker, lambda: flask.session.get("user")), url_prefix="/inputs")
    web = app.test_client()
    with web.session_transaction() as session:
        session["user"] = "alice"
    for path in ("/inputs/", "/inputs/form-alice", "/inputs/sampling-alice", "/inputs/calls/call-1"):
        page = web.get(path)
        assert page.status_code == 200, path
        assert raw_hidden(page.text) == [], path
    for path in ("/inputs/pending.json", "/inputs/calls/call-1.json"):
        answer = web.get(path)
        assert answer.status_code == 200, path
        found = list(strings(answer.json))
        assert CLEAN in "".join(found), path
        for text in found:
            assert raw_hidden(text) == [], (path, text)
    # a multi-line reply shown again after an error keeps its lines
    token = re.search(r'name="_mis_csrf" value="([^"]+)"', web.get("/inputs/sampling-alice").text)
    assert token is not None
    again = web.post("/inputs/sampling-alice", data={CSRF_FIELD: token.group(1), "_action": "maybe", "text": "first line\r\nsecond line"})
    assert again.status_code == 400
    assert ">\nfirst line\nsecond line</textarea>" in again.text
