"""The calls every SDK has, in both eras, on the in-memory fake (docs/reference.md#completion-logs-and-other-requests):
completion/complete, set_log_level, request() for unwrapped methods, meta= on every call, one listing page at a
time, the -32020 resend, and structuredContent checked against a tool's outputSchema."""

from __future__ import annotations

import threading
from typing import Any, Iterator, Optional

import pytest

import mcp_input_sync as mis
from mcp_input_sync.testing import FakeServer, ToolCall, ToolError
from mcp_input_sync.transports.base import ANSWER, Outgoing

JsonDict = dict[str, Any]
ERAS = ["legacy", "modern"]
LOG_META = "io.modelcontextprotocol/logLevel"
WEATHER_SCHEMA: JsonDict = {
    "type": "object",
    "properties": {"temperature": {"type": "number"}, "conditions": {"type": "string"}},
    "required": ["temperature"],
}


@pytest.fixture(params=ERAS)
def fake(request: pytest.FixtureRequest) -> Iterator[FakeServer]:
    with FakeServer(era=request.param) as server:
        yield server


def last(fake: FakeServer, method: str) -> JsonDict:
    return fake.requests_seen(method)[-1]


# ---------------------------------------------------------------------------- completion/complete


def test_complete_a_prompt_argument_and_a_resource_template_argument(fake: FakeServer) -> None:
    fake.add_prompt("team", "lead", arguments=[{"name": "department"}, {"name": "name"}])
    fake.add_completion({"type": "ref/prompt", "name": "team"}, "department", ["Engineering", "Marketing", "Sales"])
    fake.add_completion(
        {"type": "ref/prompt", "name": "team"}, "name", lambda typed, chosen: {"Engineering": ["Ada", "Alan"]}.get(chosen.get("department", ""), [])
    )
    fake.add_completion({"type": "ref/resource", "uri": "file:///{path}"}, "path", ["notes.txt", "now.md"])
    assert "completions" in fake.capabilities
    with fake.client() as client:
        assert client.complete({"type": "ref/prompt", "name": "team"}, "department", "E") == {"values": ["Engineering"], "total": 1, "hasMore": False}
        chosen = client.complete({"type": "ref/prompt", "name": "team"}, "name", "", context={"department": "Engineering"})
        assert chosen["values"] == ["Ada", "Alan"]
        assert client.complete({"type": "ref/resource", "uri": "file:///{path}"}, "path", "no")["values"] == ["notes.txt", "now.md"]
    sent = fake.requests_seen("completion/complete")
    assert sent[1]["ref"] == {"type": "ref/prompt", "name": "team"} and sent[1]["argument"] == {"name": "name", "value": ""}
    assert sent[1]["context"] == {"arguments": {"department": "Engineering"}}
    assert "context" not in sent[0]


def test_complete_refuses_bad_input_before_sending_and_a_bad_answer_after(fake: FakeServer) -> None:
    with fake.client() as client:
        with pytest.raises(TypeError):
            client.complete("team", "department", "E")  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="ref/prompt"):
            client.complete({"type": "ref/tool", "name": "x"}, "a", "")
        with pytest.raises(ValueError, match="'uri'"):
            client.complete({"type": "ref/resource", "name": "x"}, "a", "")
        with pytest.raises(TypeError):
            client.complete({"type": "ref/prompt", "name": "x"}, "a", 3)  # type: ignore[arg-type]
        assert fake.requests_seen("completion/complete") == []
        fake.override("completion/complete", lambda params: {"completion": {"values": "nope"}})
        with pytest.raises(mis.ClientError) as info:
            client.complete({"type": "ref/prompt", "name": "x"}, "a", "")
        assert (info.value.kind, info.value.check) == ("protocol", "result")
        fake.override("completion/complete", lambda params: (_ for _ in ()).throw(ToolError(-32601, "Method not found")))
        with pytest.raises(mis.ClientError) as info:
            client.complete({"type": "ref/prompt", "name": "x"}, "a", "")
        assert (info.value.kind, info.value.code) == ("remote", -32601)


# ---------------------------------------------------------------------------- set_log_level


def test_set_log_level_in_the_legacy_era_sends_logging_set_level_and_keeps_it() -> None:
    with FakeServer(era="legacy") as fake, fake.client() as client:
        client.set_log_level("debug")
        assert fake.log_level == "debug"
        with client.subscribe(lambda method, params: None):  # hearing logs later does not ask for the option's level
            client.ping()
        assert [p["level"] for p in fake.requests_seen("logging/setLevel")] == ["debug"]
        with pytest.raises(ValueError):
            client.set_log_level("verbose")


def test_set_log_level_in_the_modern_era_sends_nothing_and_stamps_every_later_request() -> None:
    with FakeServer(era="modern") as fake, fake.client() as client:
        client.ping()
        assert LOG_META not in last(fake, "ping")["_meta"]  # nobody reads logs
        client.set_log_level("warning")
        assert fake.requests_seen("logging/setLevel") == []
        client.list_tools()
        assert last(fake, "tools/list")["_meta"][LOG_META] == "warning" and fake.log_level == "warning"
        client.set_log_level("error")
        client.ping()
        assert last(fake, "ping")["_meta"][LOG_META] == "error"


def test_a_legacy_server_that_refuses_set_level_raises_remote() -> None:
    with FakeServer(era="legacy") as fake, fake.client() as client:
        fake.override("logging/setLevel", lambda params: (_ for _ in ()).throw(ToolError(-32601, "Method not found")))
        with pytest.raises(mis.ClientError) as info:
            client.set_log_level("info")
        assert (info.value.kind, info.value.code) == ("remote", -32601)


# ---------------------------------------------------------------------------- request()


def test_request_sends_an_unwrapped_method_with_the_eras_meta_and_returns_its_result(fake: FakeServer) -> None:
    fake.override("vendor/stats", lambda params: {"count": 3, "seen": params})
    with fake.client() as client:
        result = client.request("vendor/stats", {"window": "1h"}, meta={"com.example/trace": "t1"})
        assert result["count"] == 3 and result["seen"]["window"] == "1h"
        assert result["seen"]["_meta"]["com.example/trace"] == "t1"
        if fake.era == "modern":  # the envelope beside the caller's key
            assert result["seen"]["_meta"]["io.modelcontextprotocol/protocolVersion"] == "2026-07-28"
        assert client.request("tools/list")["tools"] == []


@pytest.mark.parametrize(
    "method", ["initialize", "server/discover", "tools/call", "resources/read", "prompts/get", "logging/setLevel", "subscriptions/listen", "tasks/update", "notifications/initialized"]
)
def test_request_refuses_the_methods_the_library_owns_before_sending(method: str) -> None:
    with FakeServer(era="legacy") as fake, fake.client() as client:
        before = len(fake.received)
        with pytest.raises(ValueError, match="use "):
            client.request(method, {})
        assert len(fake.received) == before


def test_request_has_the_timeouts_cancellation_and_error_mapping_of_every_call(fake: FakeServer) -> None:
    fake.override("vendor/silent", lambda params: None)
    fake.override("vendor/fails", lambda params: (_ for _ in ()).throw(ToolError(-32050, "no such thing", {"why": "x"})))
    with fake.client() as client:
        with pytest.raises(mis.ClientError) as info:
            client.request("vendor/silent", timeout=0.2)
        assert info.value.kind == "timeout"
        cancelled = fake.wait_for("notifications/cancelled")[0]["params"]
        silent = [m for m in fake.received if m.get("method") == "vendor/silent"]
        assert cancelled == {"requestId": silent[0]["id"], "reason": "timeout"}
        cancel = threading.Event()
        cancel.set()
        with pytest.raises(mis.ClientError) as info:
            client.request("vendor/silent", cancel=cancel)
        assert info.value.kind == "cancelled"
        with pytest.raises(mis.ClientError) as info:
            client.request("vendor/fails")
        assert (info.value.kind, info.value.code, info.value.data) == ("remote", -32050, {"why": "x"})
        with pytest.raises(TypeError):
            client.request("vendor/x", ["not", "a", "mapping"])  # type: ignore[arg-type]
        with pytest.raises(TypeError):
            client.request(None)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------- meta=


def test_meta_rides_beside_the_librarys_keys_on_calls_reads_prompts_and_listings(fake: FakeServer) -> None:
    fake.add_tool("echo", lambda call: "ok")
    fake.add_resource("file:///a.txt", "A")
    fake.add_prompt("hello", "hi")
    meta = {"com.example/trace": "abc", "traceparent": "00-01-02-01"}
    with fake.client() as client:
        client.call_tool("echo", {}, meta=meta, progress=lambda update: None)
        client.read_resource("file:///a.txt", meta=meta)
        client.get_prompt("hello", meta=meta)
        client.list_tools(meta=meta)
        client.list_prompts_page(meta=meta)
    for method in ("tools/call", "resources/read", "prompts/get", "tools/list", "prompts/list"):
        sent = last(fake, method)["_meta"]
        assert sent["com.example/trace"] == "abc" and sent["traceparent"] == "00-01-02-01", method
    assert last(fake, "tools/call")["_meta"]["progressToken"].startswith("mis-")
    if fake.era == "modern":
        assert "io.modelcontextprotocol/clientCapabilities" in last(fake, "tools/call")["_meta"]


@pytest.mark.parametrize("key", ["progressToken", "io.modelcontextprotocol/protocolVersion", "dev.mcp/x", "org.modelcontextprotocol.api/y"])
def test_meta_may_not_name_a_key_the_library_sets_or_mcp_reserves(fake: FakeServer, key: str) -> None:
    fake.add_tool("echo", lambda call: "ok")
    with fake.client() as client:
        with pytest.raises(ValueError, match="reserved"):
            client.call_tool("echo", meta={key: 1})
        with pytest.raises(ValueError):
            client.request("vendor/x", {"_meta": {key: 1}})
        with pytest.raises(TypeError):
            client.list_tools(meta=["x"])  # type: ignore[arg-type]
        assert fake.requests_seen("tools/call") == []
    assert mis.ClientError  # com.example.mcp/ is not reserved: the second label is "example"
    from mcp_input_sync._protocol.requestmeta import reserved

    assert not reserved("com.example.mcp/x") and not reserved("traceparent") and reserved("io.mcp/x")


def test_meta_goes_with_every_round_of_a_modern_call() -> None:
    with FakeServer(era="modern") as fake:

        @fake.tool
        def ask(call: ToolCall) -> str:
            return str(call.elicit("Name?", {"type": "object", "properties": {"n": {"type": "string"}}})["action"])

        class Decline(mis.InputHandler):
            def handle_elicitation(self, params: JsonDict, ctx: mis.InputContext) -> JsonDict:
                return {"action": "decline"}

        with fake.client(Decline()) as client:
            assert client.call_tool("ask", meta={"com.example/k": "v"})["content"][0]["text"] == "decline"
        rounds = fake.requests_seen("tools/call")
        assert len(rounds) == 2 and all(r["_meta"]["com.example/k"] == "v" for r in rounds)
        assert "inputResponses" in rounds[1]


# ---------------------------------------------------------------------------- one page at a time


def test_one_page_at_a_time_with_its_cursor(fake: FakeServer) -> None:
    pages = {None: {"tools": [{"name": "a", "inputSchema": {"type": "object"}}], "nextCursor": "p2"}, "p2": {"tools": [{"name": "b", "inputSchema": {"type": "object"}}]}}
    fake.override("tools/list", lambda params: dict(pages[params.get("cursor")], resultType="complete"))
    with fake.client() as client:
        first = client.list_tools_page()
        assert [t["name"] for t in first["tools"]] == ["a"] and first["nextCursor"] == "p2"
        second = client.list_tools_page(first["nextCursor"])
        assert [t["name"] for t in second["tools"]] == ["b"] and "nextCursor" not in second
        assert [t["name"] for t in client.list_tools()] == ["a", "b"]
        with pytest.raises(TypeError):
            client.list_tools_page(3)  # type: ignore[arg-type]
        fake.override("tools/list", lambda params: {"tools": [], "nextCursor": params.get("cursor")})
        with pytest.raises(mis.ClientError) as info:
            client.list_tools_page("same")
        assert info.value.kind == "protocol"
        fake.override("prompts/list", lambda params: {"prompts": "no"})
        with pytest.raises(mis.ClientError):
            client.list_prompts_page()
    assert [p.get("cursor") for p in fake.requests_seen("tools/list")][:2] == [None, "p2"]


def test_the_other_listings_page_too(fake: FakeServer) -> None:
    fake.add_resource("file:///a.txt", "A")
    fake.add_prompt("hello", "hi")
    with fake.client() as client:
        assert [r["uri"] for r in client.list_resources_page()["resources"]] == ["file:///a.txt"]
        assert client.list_resource_templates_page()["resourceTemplates"] == []
        assert [p["name"] for p in client.list_prompts_page()["prompts"]] == ["hello"]
        assert client.list_resource_templates() == []


# ---------------------------------------------------------------------------- the -32020 resend


def header_mismatch_server(era: str, failures: int, told: Optional[list[Outgoing]] = None) -> FakeServer:
    """``told`` collects what the transport is told of each message the client sends."""
    fake = FakeServer(era=era)
    fake.transport.mirrors_tool_headers = True  # as the HTTP transport: the client mirrors x-mcp-header
    if told is not None:
        send = fake.transport.send

        def telling(data: bytes, info: Outgoing = ANSWER) -> None:
            told.append(info)
            send(data, info)

        fake.transport.send = telling  # type: ignore[method-assign]
    calls = {"n": 0}
    region = {"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}}
    fake.override("tools/list", lambda params: {"resultType": "complete", "tools": [{"name": "sql", "inputSchema": region}]})

    def call(params: JsonDict) -> JsonDict:
        calls["n"] += 1
        if calls["n"] <= failures:
            raise ToolError(-32020, "Header mismatch: Mcp-Param-Region missing")
        return {"resultType": "complete", "content": [{"type": "text", "text": "ran"}]}

    fake.override("tools/call", call)
    return fake


def test_a_header_mismatch_lists_the_tools_and_sends_the_call_once_more() -> None:
    told: list[Outgoing] = []
    with header_mismatch_server("modern", failures=1, told=told) as fake, fake.client() as client:
        assert client.call_tool("sql", {"region": "eu"})["content"][0]["text"] == "ran"
        methods = [m.get("method") for m in fake.received if m.get("method") in ("tools/call", "tools/list")]
        assert methods == ["tools/call", "tools/list", "tools/call"]
        # the listing taught the client the tool's x-mcp-header map: the call sent again mirrors the argument
        assert [info.header_args for info in told if info.method == "tools/call"] == [(), (("Region", "eu"),)]


def test_a_second_header_mismatch_is_raised_and_the_legacy_era_never_resends() -> None:
    with header_mismatch_server("modern", failures=2) as fake, fake.client() as client:
        with pytest.raises(mis.ClientError) as info:
            client.call_tool("sql", {"region": "eu"})
        assert (info.value.kind, info.value.code) == ("remote", -32020)
        assert len(fake.requests_seen("tools/call")) == 2
    with header_mismatch_server("legacy", failures=1) as fake, fake.client() as client:
        with pytest.raises(mis.ClientError):
            client.call_tool("sql", {"region": "eu"})
        assert len(fake.requests_seen("tools/call")) == 1 and fake.requests_seen("tools/list") == []


def test_without_header_mirroring_a_header_mismatch_is_not_resent() -> None:
    with FakeServer(era="modern") as fake:
        fake.override("tools/call", lambda params: (_ for _ in ()).throw(ToolError(-32020, "mismatch")))
        with fake.client() as client, pytest.raises(mis.ClientError):
            client.call_tool("sql")
        assert len(fake.requests_seen("tools/call")) == 1


# ---------------------------------------------------------------------------- outputSchema


def weather_fake(era: str, structured: Any, schema: Any = WEATHER_SCHEMA) -> FakeServer:
    fake = FakeServer(era=era)

    def weather(call: ToolCall) -> JsonDict:
        result: JsonDict = {"content": [{"type": "text", "text": "{}"}]}
        if structured is not ...:
            result["structuredContent"] = structured
        return result

    fake.add_tool("weather", weather, output_schema=schema)
    fake.add_tool("broken", lambda call: {"content": [], "isError": True}, output_schema=schema)
    return fake


@pytest.mark.parametrize("era", ERAS)
def test_structured_content_that_matches_passes_and_is_listed_for_once(era: str) -> None:
    with weather_fake(era, {"temperature": 21.5, "conditions": "sun"}) as fake, fake.client() as client:
        for _ in range(3):
            assert client.call_tool("weather")["structuredContent"]["temperature"] == 21.5
        assert client.call_tool("broken")["isError"] is True  # an error result is not checked
        assert len(fake.requests_seen("tools/list")) == 1  # learnt once, before the first check


@pytest.mark.parametrize("era", ERAS)
def test_structured_content_that_does_not_match_is_a_protocol_error(era: str) -> None:
    with weather_fake(era, {"temperature": "warm"}) as fake, fake.client() as client:
        client.list_tools()
        with pytest.raises(mis.ClientError) as info:
            client.call_tool("weather")
        error = info.value
        assert (error.kind, error.check) == ("protocol", "output")
        assert "$.temperature" in error.message and "'warm' is not of type 'number'" in error.message
        assert error.data["structuredContent"] == {"temperature": "warm"}  # the result, for a caller that wants it anyway
    with weather_fake(era, {"temperature": "warm"}) as fake, fake.client(validate_output=False) as client:
        assert client.call_tool("weather")["structuredContent"] == {"temperature": "warm"}
        assert fake.requests_seen("tools/list") == []


@pytest.mark.parametrize("era", ERAS)
def test_a_missing_structured_content_a_bad_schema_and_a_remote_ref_are_refused(era: str) -> None:
    with weather_fake(era, ...) as fake, fake.client() as client:
        client.list_tools()
        with pytest.raises(mis.ClientError, match="no structuredContent") as info:
            client.call_tool("weather")
        assert info.value.check == "output"
    with weather_fake(era, {"a": 1}, schema={"type": "nonsense"}) as fake, fake.client() as client:
        client.list_tools()
        with pytest.raises(mis.ClientError, match="not a valid JSON Schema"):
            client.call_tool("weather")
    remote = {"type": "object", "properties": {"a": {"$ref": "http://127.0.0.1:9/never-fetched.json"}}}
    with weather_fake(era, {"a": 1}, schema=remote) as fake, fake.client() as client:
        client.list_tools()
        with pytest.raises(mis.ClientError, match="does not resolve within it") as info:
            client.call_tool("weather")
        assert info.value.check == "output"


def test_a_local_ref_and_a_draft_7_schema_are_used_as_sent() -> None:
    schema = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {"t": {"$ref": "#/definitions/temp"}},
        "definitions": {"temp": {"type": "number"}},
    }
    with weather_fake("legacy", {"t": 3}, schema=schema) as fake, fake.client() as client:
        assert client.call_tool("weather")["structuredContent"] == {"t": 3}
    with weather_fake("legacy", {"t": "x"}, schema=schema) as fake, fake.client() as client:
        with pytest.raises(mis.ClientError, match=r"\$\.t"):
            client.call_tool("weather")


def test_a_tool_no_listing_shows_is_not_checked_and_a_resumed_call_is() -> None:
    with FakeServer(era="modern") as fake:

        @fake.tool(output_schema=WEATHER_SCHEMA)
        def weather(call: ToolCall) -> JsonDict:
            call.elicit("City?", {"type": "object", "properties": {"city": {"type": "string"}}})
            return {"content": [], "structuredContent": {"temperature": "hot"}}

        fake.override("tools/list", lambda params: {"resultType": "complete", "tools": []})
        class Forms(mis.InputHandler):
            def handle_elicitation(self, params: JsonDict, ctx: mis.InputContext) -> JsonDict:
                return {"action": "decline"}

        with fake.client(Forms()) as client:
            pending = client.call_tool("weather", defer_input=True)
            assert isinstance(pending, mis.PendingCall)
            answers = {key: {"action": "accept", "content": {"city": "Oslo"}} for key in pending.input_requests}
            assert client.resume(pending, answers, defer_input=False)["structuredContent"] == {"temperature": "hot"}
            fake.override("tools/list", None)
            client.list_tools()
            pending = client.call_tool("weather", defer_input=True)
            assert isinstance(pending, mis.PendingCall)
            with pytest.raises(mis.ClientError) as info:
                client.resume(pending, answers, defer_input=False)
            assert info.value.check == "output"


def test_validate_output_must_be_a_bool() -> None:
    with FakeServer() as fake, pytest.raises(TypeError, match="validate_output"):
        fake.client(validate_output="no")


class Forms(mis.InputHandler):
    def handle_elicitation(self, params: JsonDict, ctx: mis.InputContext) -> JsonDict:
        return {"action": "decline"}


@pytest.mark.parametrize(
    "method, params, check",
    [
        ("tools/call", {}, "method"),  # not an input request
        ("sampling/createMessage", None, "capability"),  # a kind the handler does not answer
        ("elicitation/create", {"message": "m"}, "malformed"),  # no requestedSchema
        ("elicitation/create", None, "malformed"),
    ],
)
def test_check_input_refuses_what_the_first_steps_refuse_instead_of_raising(method: str, params: Any, check: str) -> None:
    with FakeServer(era="modern") as fake, fake.client(Forms()) as client:
        refusal = client.check_input(method, params)
    assert type(refusal).__name__ == "Refusal" and getattr(refusal, "check", None) == check


def test_check_input_gives_the_checked_request_of_a_good_form() -> None:
    with FakeServer(era="modern") as fake, fake.client(Forms()) as client:
        step = client.check_input("elicitation/create", {"message": "m", "requestedSchema": {"type": "object", "properties": {"a": {"type": "string"}}}})
    assert getattr(step, "kind", None) == "elicitation"


def test_close_ends_the_librarys_threads_even_when_the_transport_fails_to_close(caplog: pytest.LogCaptureFixture) -> None:
    with FakeServer(era="legacy") as fake:
        before = set(threading.enumerate())
        client = fake.client().open()
        started = [t for t in threading.enumerate() if t not in before and t.name.startswith("mcp-input-sync-")]
        transport = fake.transport
        real_close = transport.close

        def failing_close(timeout: float) -> None:
            real_close(timeout)
            raise RuntimeError("the transport broke while closing")

        transport.close = failing_close  # type: ignore[method-assign]
        client.close(timeout=5.0)
    assert started and not [t for t in started if t.is_alive()]
    assert "failed to close" in caplog.text
