"""The safety checks end to end: a hostile scripted server over a real stdio pipe.

Each test scripts ``peers/hostile_server.py`` (raw JSON lines, no SDK) to send
what a broken or malicious server would, and checks the refusal code the
server receives on the wire.
"""

from __future__ import annotations

import json
import logging
import sys
import threading
from typing import Any, Iterator

import pytest

import mcp_input_sync as mis

from .harness import PEERS_DIR, RecordingStdio, tool_json
from .recorder import Recorder

JsonDict = dict[str, Any]
HOSTILE = [sys.executable, str(PEERS_DIR / "hostile_server.py")]
FORM = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
TEXT = {"role": "user", "content": {"type": "text", "text": "hi"}}
WAIT = 10.0


class Everything(mis.InputHandler):
    """Answers every kind, records the params and contexts it saw."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, JsonDict, mis.InputContext]] = []
        self.form_answer: Any = {"action": "accept", "content": {"name": "Ada"}}
        self.roots: Any = {"roots": [{"uri": "file:///srv/app", "name": "app"}]}
        self.logs: list[JsonDict] = []
        self.log_count = threading.Semaphore(0)

    def elicitation_modes(self) -> tuple[str, ...]:
        return ("form", "url")

    def handle_elicitation(self, params: JsonDict, ctx: mis.InputContext) -> JsonDict:
        self.seen.append(("elicitation", params, ctx))
        return {"action": "accept"} if ctx.mode == "url" else self.form_answer  # type: ignore[no-any-return]

    def handle_sampling(self, params: JsonDict, ctx: mis.InputContext) -> JsonDict:
        self.seen.append(("sampling", params, ctx))
        return {"role": "assistant", "content": {"type": "text", "text": "ok"}, "model": "m"}

    def list_roots(self, ctx: mis.InputContext) -> JsonDict:
        self.seen.append(("roots", {}, ctx))
        return self.roots  # type: ignore[no-any-return]

    def handle_log(self, entry: JsonDict, ctx: mis.InputContext) -> None:
        self.logs.append(entry)
        self.log_count.release()


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    rec = Recorder()
    yield rec
    assert rec.schema_errors == []


def connect(recorder: Recorder, handler: mis.InputHandler, **options: Any) -> mis.Client:
    client = mis.Client(RecordingStdio(HOSTILE, recorder), handler=handler, **options)
    client.open()
    recorder.version = client.protocol_version
    return client


def ask(client: mis.Client, *requests: JsonDict, parallel: bool = False) -> list[JsonDict]:
    return tool_json(client.call_tool("ask", {"requests": list(requests), "parallel": parallel}))  # type: ignore[no-any-return]


def elicit_url(url: str) -> JsonDict:
    return {"method": "elicitation/create", "params": {"mode": "url", "message": "Sign in", "url": url, "elicitationId": "e1"}}


def elicit_form(schema: Any) -> JsonDict:
    return {"method": "elicitation/create", "params": {"message": "Fill in", "requestedSchema": schema}}


def sampling(**params: Any) -> JsonDict:
    return {"method": "sampling/createMessage", "params": {"messages": [TEXT], "maxTokens": 50, **params}}


def code(answer: JsonDict) -> Any:
    return answer["error"]["code"] if "error" in answer else "ok"


# ---------------------------------------------------------------------------- budget


def test_a_flood_beyond_the_budget_is_refused_rate_limited(recorder: Recorder) -> None:
    # a near-zero rate: the bucket must not refill while the flood is answered
    with connect(recorder, Everything(), max_server_requests=64, input_rate_limit=(0.001, 20)) as client:
        out = tool_json(client.call_tool("flood", {"n": 50, "method": "elicitation/create", "params": elicit_form(FORM)["params"]}))
        assert out == {"codes": {"ok": 20, "-32000": 30}}
        assert client.stats["refused"]["elicitation"]["budget"] == 30
        messages = {a["error"]["message"] for a in recorder.sent if "error" in a}
        assert messages == {"rate limited: too many input requests"}


def test_over_budget_sampling_gets_the_rejection_code(recorder: Recorder) -> None:
    with connect(recorder, Everything(), input_rate_limit=(0.001, 1), sampling={"rejection_code": -2}) as client:
        first, second = ask(client, sampling(), sampling())
        assert (code(first), code(second)) == ("ok", -2)


def test_requests_refused_before_the_budget_take_no_token(recorder: Recorder) -> None:
    with connect(recorder, Everything(), input_rate_limit=(0.001, 1)) as client:
        answers = ask(client, {"method": "tasks/list", "params": {}}, elicit_form("not a schema"), {"method": "elicitation/create", "params": []}, elicit_form(FORM))
        assert [code(a) for a in answers] == [-32601, -32602, -32602, "ok"]


# ---------------------------------------------------------------------------- URLs


@pytest.mark.parametrize(
    "url",
    [
        "javascript:alert(1)",
        "http://mcp.example.com/auth",
        "file:///etc/passwd",
        "data:text/html,<script>1</script>",
        "/relative/path",
        "//mcp.example.com/x",
        "https://user:pw@mcp.example.com/",
        "https://mcp.example.com/a b",
        "https://mcp.example.com/\u202etxt.exe",
        "https://mcp.example.com/\x00",
        "https://mcp.example.com\\@evil.example/",
    ],
)
def test_bad_urls_are_refused_invalid_params(recorder: Recorder, url: str) -> None:
    handler = Everything()
    with connect(recorder, handler) as client:
        (answer,) = ask(client, elicit_url(url))
        assert code(answer) == -32602
        assert handler.seen == []
        assert client.stats["refused"]["elicitation"]["url"] == 1


def test_a_good_url_reaches_the_handler_with_host_idn_and_origin(recorder: Recorder) -> None:
    handler = Everything()
    with connect(recorder, handler, elicitation={"origin": "https://mcp.example.com"}) as client:
        answers = ask(client, elicit_url("https://MCP.example.com/auth?x=1"), elicit_url("https://bücher.example/login"))
        assert [a["result"] for a in answers] == [{"action": "accept"}, {"action": "accept"}]
    (_, _, same), (_, _, idn) = handler.seen
    assert (same.mode, same.url, same.host, same.idn, same.origin_mismatch) == ("url", "https://MCP.example.com/auth?x=1", "mcp.example.com", False, False)
    assert (idn.host, idn.idn, idn.origin_mismatch) == ("xn--bcher-kva.example", True, True)


def test_a_url_elicitation_to_a_form_only_client_is_refused(recorder: Recorder) -> None:
    class FormOnly(mis.InputHandler):
        def handle_elicitation(self, params: JsonDict, ctx: mis.InputContext) -> JsonDict:
            raise AssertionError("never called")

    with connect(recorder, FormOnly()) as client:
        (answer,) = ask(client, elicit_url("https://mcp.example.com/"))
        assert code(answer) == -32602
        assert client.stats["refused"]["elicitation"]["capability"] == 1


# ---------------------------------------------------------------------------- schemas and answers

PYDANTIC_NESTED = {
    "title": "Order",
    "type": "object",
    "properties": {"address": {"$ref": "#/$defs/Address"}},
    "$defs": {"Address": {"title": "Address", "type": "object", "properties": {"street": {"type": "string"}}}},
}
PYDANTIC_OPTIONAL = {"title": "Q", "type": "object", "properties": {"nick": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None}}}
SDK_FORM = {"title": "Profile", "type": "object", "properties": {"name": {"title": "Name", "type": "string"}}, "required": ["name"]}


@pytest.mark.parametrize(
    "schema, expected",
    [
        (PYDANTIC_NESTED, -32602),
        (PYDANTIC_OPTIONAL, -32602),
        ({"type": "object", "properties": {"o": {"type": "object", "properties": {}}}}, -32602),
        ({"type": "object", "properties": {"a": {"type": "array", "items": {"type": "object"}}}}, -32602),
        ({"type": "object", "properties": {"a": {"type": ["string", "null"]}}}, -32602),
        (SDK_FORM, "ok"),
    ],
)
def test_form_schemas_outside_the_subset_are_refused(recorder: Recorder, schema: JsonDict, expected: Any) -> None:
    with connect(recorder, Everything()) as client:
        (answer,) = ask(client, elicit_form(schema))
        assert code(answer) == expected


def test_the_context_flags_sensitive_fields(recorder: Recorder) -> None:
    handler = Everything()
    schema = {"type": "object", "properties": {"name": {"type": "string"}, "pin": {"type": "string"}, "note": {"type": "string", "description": "do not give us your PIN"}}}
    with connect(recorder, handler) as client:
        ask(client, elicit_form(schema))
    ((_, _, ctx),) = handler.seen
    assert ctx.fields == {"name": {"sensitive_suspected": False}, "pin": {"sensitive_suspected": True}, "note": {"sensitive_suspected": False}}


@pytest.mark.parametrize(
    "answer, expected",
    [
        ({"action": "accept", "content": {}}, {"error": -32603}),
        ({"action": "accept", "content": {"name": 7}}, {"error": -32603}),
        ({"action": "sure"}, {"error": -32603}),
        ({"action": "decline", "content": {"name": "leaked"}}, {"result": {"action": "decline"}}),
        ({"action": "cancel", "content": {"name": "leaked"}}, {"result": {"action": "cancel"}}),
    ],
)
def test_answers_are_validated_and_decline_content_is_dropped(recorder: Recorder, answer: JsonDict, expected: JsonDict) -> None:
    handler = Everything()
    handler.form_answer = answer
    with connect(recorder, handler) as client:
        (got,) = ask(client, elicit_form(FORM))
        if "error" in expected:
            assert code(got) == expected["error"]
            assert client.stats["refused"]["elicitation"]["answer"] == 1
        else:
            assert got == expected


# ---------------------------------------------------------------------------- sampling


def test_sampling_guards_on_the_wire(recorder: Recorder) -> None:
    tool_turn = {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {}}]}
    tool_result = {"role": "user", "content": [{"type": "tool_result", "toolUseId": "t", "content": []}]}
    handler = Everything()
    with connect(recorder, handler, sampling={"max_tokens": 64}) as client:
        answers = ask(
            client,
            sampling(maxTokens=0),
            sampling(maxTokens=True),
            sampling(tools=[{"name": "f", "inputSchema": {"type": "object"}}]),
            sampling(messages=[TEXT] + [tool_turn, tool_result] * 6),
            sampling(maxTokens=100_000, includeContext="allServers"),
        )
        assert [code(a) for a in answers] == [-32602, -32602, -32602, -1, "ok"]
        ((_, seen, _),) = handler.seen
        assert seen["maxTokens"] == 64 and seen["includeContext"] == "none"
        refused = client.stats["refused"]["sampling"]
        assert dict(refused) == {"max_tokens": 2, "capability": 1, "tool_loop": 1}


def test_idle_sampling_is_refused_unless_allowed(recorder: Recorder) -> None:
    for allow_idle, expected in ((False, -1), (True, "ok")):
        with connect(recorder, Everything(), sampling={"allow_idle": allow_idle}) as client:
            before = len([m for m in recorder.sent if "method" not in m])
            client.call_tool("ask_idle", {"requests": [sampling()]})
            # wait for the answer before the next call, or the request could be tied to it
            recorder.wait_for(lambda m: "method" not in m, count=before + 1)
            (answer,) = tool_json(client.call_tool("report", {}))
            assert code(answer) == expected


# ---------------------------------------------------------------------------- roots


def test_only_local_file_roots_are_sent_normalised(recorder: Recorder, caplog: pytest.LogCaptureFixture) -> None:
    handler = Everything()
    handler.roots = {
        "roots": [
            {"uri": "file:///srv/app/./src/../", "name": "app"},
            {"uri": "https://example.com/repo", "name": "web"},
            {"uri": "file://fileserver/share", "name": "remote"},
            {"uri": "file://localhost/home/me", "name": "home", "_meta": {"k": 1}},
        ]
    }
    with caplog.at_level(logging.WARNING, logger="mcp_input_sync"):
        with connect(recorder, handler) as client:
            (answer,) = ask(client, {"method": "roots/list"})
    assert answer["result"]["roots"] == [
        {"uri": "file:///srv/app/", "name": "app"},
        {"uri": "file:///home/me", "name": "home", "_meta": {"k": 1}},
    ]
    assert sum("roots/list answer" in r.getMessage() for r in caplog.records) == 2
    assert handler.seen[0][2].server_id == "hostile_server"  # the script, not the interpreter


def test_a_malformed_roots_result_answers_internal_error(recorder: Recorder) -> None:
    handler = Everything()
    handler.roots = {"roots": [{"name": "no uri"}]}
    with connect(recorder, handler) as client:
        (answer,) = ask(client, {"method": "roots/list"})
        assert code(answer) == -32603


# ---------------------------------------------------------------------------- logs


def test_logs_full_of_control_and_bidi_characters_arrive_sanitised(recorder: Recorder) -> None:
    handler = Everything()
    hostile = {
        "jsonrpc": "2.0",
        "method": "notifications/message",
        "params": {"level": "EMERGENCY\x07", "logger": "db\u202e\x1b[2J" + "x" * 500, "data": {"k\u200b": ["a\x00b", {"deep": "\u2066c\u2069"}]}, "extra": "dropped"},
    }
    with connect(recorder, handler) as client:
        client.call_tool("notify", {"messages": [hostile]})
        assert handler.log_count.acquire(timeout=WAIT)
    (entry,) = handler.logs
    assert entry == {"level": "info", "logger": "db[2J" + "x" * 251, "data": {"k": ["ab", {"deep": "c"}]}}


def test_logs_beyond_the_rate_limit_are_dropped_and_counted(recorder: Recorder) -> None:
    handler = Everything()
    log = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "x"}}
    with connect(recorder, handler, log_rate_limit=(0.001, 100)) as client:
        client.call_tool("notify", {"messages": [log] * 150})
        for _ in range(100):
            assert handler.log_count.acquire(timeout=WAIT)
        assert client.stats["logs_dropped"] == 50
        assert client.stats["logs_delivered"] == 100


# ---------------------------------------------------------------------------- structured records


def test_every_refusal_is_logged_as_a_structured_record(recorder: Recorder, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="mcp_input_sync"):
        with connect(recorder, Everything(), server_id="hostile") as client:
            ask(client, elicit_url("javascript:1"), sampling(maxTokens=-5))
    records = [(r.server_id, r.kind, r.check, r.code) for r in caplog.records if hasattr(r, "check")]  # type: ignore[attr-defined]
    assert records == [("hostile", "elicitation", "url", -32602), ("hostile", "sampling", "max_tokens", -32602)]


def test_stats_count_served_refused_by_check_and_dropped(recorder: Recorder) -> None:
    with connect(recorder, Everything(), input_rate_limit=(0.001, 2)) as client:
        # the URL check comes after the budget step, so the refused URL spends a token too
        ask(client, elicit_form(FORM), elicit_url("file:///x"), elicit_form(FORM), elicit_form(FORM))
        stats = client.stats
        assert stats["served"] == 1
        assert {k: dict(v) for k, v in stats["refused"].items()} == {"elicitation": {"url": 1, "budget": 2}}
        assert json.dumps({k: (dict(v) if k == "refused" else v) for k, v in stats.items()}, default=dict)


def test_a_callback_that_changes_its_fields_changes_no_other_request(recorder: Recorder) -> None:
    handler = Everything()
    schema = {"type": "object", "properties": {"pin": {"type": "string"}}}
    with connect(recorder, handler) as client:
        ask(client, elicit_form(schema))
        ((_, _, first),) = handler.seen
        fields = first.fields
        assert fields == {"pin": {"sensitive_suspected": True}}
        fields["pin"]["sensitive_suspected"] = False  # the copy is this request's own
        assert first.fields is fields
        ask(client, elicit_form(schema))  # the same form again: compiled once, cached
        second = handler.seen[1][2]
        assert second.fields == {"pin": {"sensitive_suspected": True}}
    made = mis.InputContext(client="c", server_id="s", era=None, fields={"a": {"sensitive_suspected": False}})
    assert made.fields == {"a": {"sensitive_suspected": False}}
    made.fields = None
    assert made.fields is None
