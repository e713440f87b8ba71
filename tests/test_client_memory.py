"""Client rules that need exact control of the wire: the public kit's in-memory fake server.

Every server is built by ``harness.recorded_server``: what the client sends is
validated against the schema as it goes (``schema_errors``).
"""

from __future__ import annotations

import json
import logging
import os
import pickle
import sys
import threading
from typing import Any, Callable, Optional

import pytest

import mcp_input_sync as mis
from mcp_input_sync._era import EraCache

from mcp_input_sync.testing import FakeServer, ToolCall, text_result
from mcp_input_sync.testing.shared import ToolResult

from .harness import PEERS_DIR, recorded_server, schema_errors
from .test_legacy_requests import Recording, finish, in_thread
from .wakes import WAKE_COUNTS, comes_to_rest, watchdog_of

JsonDict = dict[str, Any]
WAIT = 10.0
FORM = {"message": "m", "requestedSchema": {"type": "object", "properties": {"answer": {"type": "string"}}}}


def open_client(server: FakeServer, handler: Any = None, **options: Any) -> mis.Client:
    return mis.Client(server.transport, handler=handler, **options).open()


def silent_handshake(server: FakeServer) -> FakeServer:
    """Make ``server`` leave ``initialize`` unanswered."""
    server.override("initialize", lambda params: None)
    return server


def fixed(answer: JsonDict) -> Callable[[JsonDict], Optional[JsonDict]]:
    """An override answering every request with ``answer``."""
    return lambda params: answer


def answers_to(server: FakeServer, request_id: Any) -> list[JsonDict]:
    """The client's responses to ``request_id`` (1 and "1" stay apart)."""
    return [m for m in server.answers if m["id"] == request_id and type(m["id"]) is type(request_id)]


def sent_method(server: FakeServer, method: str) -> list[JsonDict]:
    """Every whole message named ``method`` the client sent."""
    return [m for m in server.received if m.get("method") == method]


# ---------------------------------------------------------------------------- handshake


@pytest.mark.parametrize("answered", ["2025-11-25", "2025-06-18", "2025-03-26"])
def test_each_legacy_version_a_server_answers_is_accepted(answered: str) -> None:
    server = recorded_server(version=answered)
    with open_client(server, Recording()) as client:
        assert (client.era, client.protocol_version) == ("legacy", answered)
        assert client.server_info == {"name": "fake-server", "version": "1"}
    server.close()
    assert schema_errors(server) == []


def test_a_2025_03_26_session_refuses_elicitation() -> None:
    server = recorded_server(version="2025-03-26")
    with open_client(server, Recording()):
        answer = server.request("elicitation/create", FORM)
    assert answer["error"]["code"] == -32601
    server.close()


@pytest.mark.parametrize("answered", ["2024-11-05", "2026-07-28", "banana"])
def test_any_other_version_closes_with_a_protocol_error(answered: str) -> None:
    server = recorded_server(version=answered)
    client = mis.Client(server.transport)
    with pytest.raises(mis.ClientError) as info:
        client.open()
    assert info.value.kind == "protocol"
    assert client.state is mis.ClientState.CLOSED
    server.close()


def test_a_forced_2025_06_18_offers_it_with_plain_elicitation_capability() -> None:
    server = recorded_server()
    with open_client(server, Recording(), protocol="2025-06-18") as client:
        assert client.protocol_version == "2025-06-18"
    init = server.requests_seen("initialize")[0]
    assert init["protocolVersion"] == "2025-06-18"
    assert init["capabilities"] == {"sampling": {}, "elicitation": {}, "roots": {"listChanged": True}}
    server.close()
    assert schema_errors(server) == []


def test_a_forced_version_the_server_does_not_echo_is_a_protocol_error() -> None:
    server = recorded_server(version="2025-11-25")
    with pytest.raises(mis.ClientError) as info:
        open_client(server, protocol="2025-06-18")
    assert info.value.kind == "protocol"
    server.close()


def test_the_modern_era_is_refused_for_now() -> None:
    server = recorded_server()
    with pytest.raises(mis.ClientError) as info:
        open_client(server, protocol="modern")
    assert info.value.kind == "protocol"
    server.close()


def test_an_unanswered_initialize_times_out() -> None:
    server = silent_handshake(recorded_server())
    with pytest.raises(mis.ClientError) as info:
        open_client(server, timeout=0.2)
    assert info.value.kind == "timeout"
    server.close()


def test_sampling_tools_and_context_capabilities_follow_the_handler_and_options() -> None:
    class Tools(Recording):
        sampling_tools = True

    class UrlToo(Recording):
        def elicitation_modes(self) -> tuple[str, ...]:
            return ("form", "url")

    server = recorded_server()
    with open_client(server, Tools(), sampling={"context": True}):
        pass
    assert server.requests_seen("initialize")[0]["capabilities"]["sampling"] == {"context": {}, "tools": {}}
    server.close()
    server = recorded_server()
    with open_client(server, UrlToo()):
        pass
    assert server.requests_seen("initialize")[0]["capabilities"]["elicitation"] == {"form": {}, "url": {}}
    server.close()


def test_nothing_starts_before_open_and_the_first_call_opens() -> None:
    server = recorded_server(standard_tools=True)
    client = mis.Client(server.transport)
    assert (client.era, client.protocol_version, client.state) == (None, None, mis.ClientState.UNOPENED)
    assert server.received == []
    assert client.call_tool("echo", {"text": "hi"})["content"][0]["text"] == "hi"
    assert client.era == "legacy"
    client.close()
    server.close()


# ---------------------------------------------------------------------------- server requests


def test_an_unknown_method_gets_method_not_found() -> None:
    server = recorded_server()
    with open_client(server, Recording()) as client:
        answer = server.request("tasks/list", {})
        assert answer["error"]["code"] == -32601
        assert client.stats["refused"]["other"]["method"] == 1
    server.close()


@pytest.mark.parametrize(
    "method, params",
    [
        ("elicitation/create", None),
        ("elicitation/create", [1, 2]),
        ("elicitation/create", {"message": "no schema"}),
        ("elicitation/create", {"mode": "url", "message": "m", "url": "https://x.example"}),
        ("sampling/createMessage", {"maxTokens": 5}),
        ("sampling/createMessage", {"messages": "nope", "maxTokens": 5}),
        ("sampling/createMessage", {"messages": []}),
    ],
)
def test_malformed_params_get_invalid_params_before_any_callback(method: str, params: Any) -> None:
    handler = Recording()
    server = recorded_server()
    with open_client(server, handler) as client:
        answer = server.request(method, params)
        assert answer["error"]["code"] == -32602
        assert handler.seen == []
        assert sum(client.stats["refused"][k]["malformed"] for k in client.stats["refused"]) == 1
    server.close()


def test_roots_list_without_params_is_answered() -> None:
    server = recorded_server()
    with open_client(server, Recording()):
        assert server.request("roots/list")["result"] == {"roots": [{"uri": "file:///srv/app", "name": "app"}]}
    server.close()


@pytest.mark.parametrize("request_id", [0, "", "0", -1, 2**53])
def test_ids_zero_and_empty_string_are_real_ids(request_id: Any) -> None:
    server = recorded_server()
    with open_client(server, Recording()):
        server.send_request(request_id, "roots/list")
        answer = server.wait_for_answer(request_id)
        assert answer["id"] == request_id and type(answer["id"]) is type(request_id)
        assert "result" in answer
    server.close()


def test_a_request_reusing_the_id_of_an_unanswered_one_is_dropped(caplog: pytest.LogCaptureFixture) -> None:
    gate = threading.Event()
    entered = threading.Event()

    class Blocking(mis.InputHandler):
        def handle_elicitation(self, params: JsonDict, ctx: mis.InputContext) -> JsonDict:
            entered.set()
            gate.wait(WAIT)
            return {"action": "decline"}

    server = recorded_server()
    with open_client(server, Blocking()) as client:
        server.send_request(5, "elicitation/create", FORM)
        assert entered.wait(WAIT)
        with caplog.at_level(logging.WARNING, logger="mcp_input_sync"):
            server.send_request(5, "elicitation/create", FORM)
            server.send_request(5, "ping")
            server.send_request("sync", "ping")
            server.wait_for_answer("sync")
        gate.set()
        server.wait_for_answer(5)
        finish(client)
    assert len(answers_to(server, 5)) == 1
    assert "reused the id" in caplog.text
    server.close()


@pytest.mark.parametrize("bad_id", [None, 1.5, [1], {"a": 1}, True])
def test_a_request_with_an_invalid_id_is_answered_invalid_request(bad_id: Any) -> None:
    server = recorded_server()
    with open_client(server, Recording()):
        server.send_raw({"jsonrpc": "2.0", "id": bad_id, "method": "roots/list"})
        answer = server.wait_for_answer(None)
        assert answer["error"]["code"] == -32600
        assert [m for m in server.answers if m.get("error", {}).get("code") == -32600] == [answer]
    server.close()


def test_an_idle_request_is_untied_and_gets_the_client_assigns() -> None:
    handler = Recording()
    server = recorded_server()
    with open_client(server, handler, assigns={"tenant": "acme"}):
        server.request("roots/list")
    (_, _, ctx, _), = handler.seen
    assert ctx.related_request_id is None and ctx.assigns == {"tenant": "acme"}
    server.close()


@pytest.mark.parametrize(
    "bad",
    [
        None,
        ["roots"],
        {"roots": {1, 2}},
        {"x": float("nan")},
        {"roots": [], "x": float("nan")},  # valid roots, but JSON cannot carry the rest
        {"roots": [], "x": {1, 2}},
    ],
)
def test_a_callback_answer_that_is_not_a_json_object_answers_internal_error(bad: Any, caplog: pytest.LogCaptureFixture) -> None:
    class Bad(mis.InputHandler):
        def list_roots(self, ctx: mis.InputContext) -> Any:
            return bad

    server = recorded_server()
    with caplog.at_level(logging.WARNING, logger="mcp_input_sync"):
        with open_client(server, Bad()) as client:
            assert server.request("roots/list")["error"] == {"code": -32603, "message": "the input handler returned an invalid answer"}
            assert client.stats["served"] == 0
            # each is a refusal of the answer check (step 8), counted and logged, whatever made it invalid
            assert client.stats["refused"]["roots"] == {"answer": 1}
    assert "(check answer, code -32603)" in caplog.text
    server.close()


def test_a_callback_may_call_the_same_client() -> None:
    class Reentrant(mis.InputHandler):
        client: mis.Client

        def handle_elicitation(self, params: JsonDict, ctx: mis.InputContext) -> JsonDict:
            echoed = self.client.call_tool("echo", {"text": "from inside"})
            return {"action": "accept", "content": {"name": echoed["content"][0]["text"]}}

    handler = Reentrant()
    server = recorded_server(standard_tools=True)
    with open_client(server, handler) as client:
        handler.client = client
        result = client.call_tool("elicit_form")
    assert '"name": "from inside"' in result["content"][0]["text"]
    server.close()


def test_a_client_is_safe_to_use_from_many_threads() -> None:
    server = recorded_server(standard_tools=True)
    with open_client(server) as client:
        results: list[str] = []
        lock = threading.Lock()

        def worker(i: int) -> None:
            for j in range(20):
                text = client.call_tool("echo", {"text": f"{i}-{j}"})["content"][0]["text"]
                with lock:
                    results.append(text)

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(WAIT)
    assert sorted(results) == sorted(f"{i}-{j}" for i in range(8) for j in range(20))
    ids = [m["id"] for m in sent_method(server, "tools/call")]
    assert len(set(ids)) == len(ids) == 160
    server.close()


# ---------------------------------------------------------------------------- calls


def test_an_is_error_result_is_returned_not_raised() -> None:
    server = recorded_server()

    @server.tool
    def failing(call: ToolCall) -> ToolResult:
        return {"content": [{"type": "text", "text": "nope"}], "isError": True}

    with open_client(server) as client:
        assert client.call_tool("failing")["isError"] is True
    server.close()


def test_list_methods_follow_next_cursor_across_pages() -> None:
    server = recorded_server()
    pages = {None: (["a", "b"], "p2"), "p2": (["c"], "p3"), "p3": ([], None)}

    def on_list(ctx_params: JsonDict) -> JsonDict:
        names, cursor = pages[ctx_params.get("cursor")]
        result: JsonDict = {"tools": [{"name": n, "inputSchema": {"type": "object"}} for n in names]}
        if cursor:
            result["nextCursor"] = cursor
        return result

    server.override("tools/list", on_list)
    with open_client(server) as client:
        assert [t["name"] for t in client.list_tools()] == ["a", "b", "c"]
    server.close()


def test_read_resource_get_prompt_and_the_lists_send_their_methods() -> None:
    server = recorded_server()
    answers: dict[str, JsonDict] = {
        "resources/read": {"contents": [{"uri": "file:///a", "text": "A"}]},
        "prompts/get": {"messages": []},
        "resources/list": {"resources": [{"uri": "file:///a", "name": "a"}]},
        "resources/templates/list": {"resourceTemplates": []},
        "prompts/list": {"prompts": [{"name": "p"}]},
    }
    for method, answer in answers.items():
        server.override(method, fixed(answer))
    with open_client(server) as client:
        assert client.read_resource("file:///a")["contents"][0]["text"] == "A"
        assert client.get_prompt("p", {"x": "1"}) == {"messages": []}
        assert client.list_resources() == [{"uri": "file:///a", "name": "a"}]
        assert client.list_resource_templates() == []
        assert client.list_prompts() == [{"name": "p"}]
        client.ping()
    assert server.requests_seen("prompts/get")[0] == {"name": "p", "arguments": {"x": "1"}}
    server.close()
    assert schema_errors(server) == []


def test_a_late_response_after_a_timeout_is_dropped() -> None:
    release = threading.Event()

    server = recorded_server(standard_tools=True)

    @server.tool
    def late(call: ToolCall) -> ToolResult:
        release.wait(WAIT)
        call.cancelled.clear()  # answer anyway, as a racing server would
        return text_result("late")

    with open_client(server) as client:
        with pytest.raises(mis.ClientError) as info:
            client.call_tool("late", timeout=0.2)
        assert info.value.kind == "timeout"
        release.set()
        assert client.call_tool("echo", {"text": "next"})["content"][0]["text"] == "next"
    server.close()


def test_notify_roots_changed_is_sent_only_with_list_roots() -> None:
    server = recorded_server()
    with open_client(server, Recording()) as client:
        client.notify_roots_changed()
        server.wait_for("notifications/roots/list_changed")
    server.close()
    server = recorded_server()
    with open_client(server) as client:
        client.notify_roots_changed()
        client.ping()
    assert server.requests_seen("notifications/roots/list_changed") == []
    server.close()


def test_a_client_used_after_fork_raises_closed(monkeypatch: pytest.MonkeyPatch) -> None:
    server = recorded_server(standard_tools=True)
    with open_client(server) as client:
        with monkeypatch.context() as forked:
            forked.setattr(os, "getpid", lambda: -1)  # what a forked child sees: another pid
            with pytest.raises(mis.ClientError) as info:
                client.call_tool("echo", {"text": "x"})
        assert info.value.kind == "closed"
    server.close()


def test_a_server_hanging_up_fails_calls_in_flight_with_transport() -> None:
    server = recorded_server(standard_tools=True)
    with open_client(server) as client:
        thread, box = in_thread(client.call_tool, "slow", {"seconds": 30})
        server.wait_for("tools/call")
        server.close()
        thread.join(WAIT)
        assert box["error"].kind == "transport"
        assert client.state is mis.ClientState.CLOSED


def test_garbage_lines_are_ignored_and_the_connection_carries_on(caplog: pytest.LogCaptureFixture) -> None:
    server = recorded_server(standard_tools=True)
    with open_client(server) as client:
        with caplog.at_level(logging.WARNING, logger="mcp_input_sync"):
            server.send_raw(b"this is not json\n")
            server.send_raw(b"[1, 2]\n")
            server.send_raw(b"\xff\xfe\n")
            server.send_raw({"jsonrpc": "2.0", "id": 999999, "result": {}})  # unknown id
            assert client.call_tool("echo", {"text": "ok"})["content"][0]["text"] == "ok"
    assert "not JSON" in caplog.text
    server.close()


# ---------------------------------------------------------------------------- stdio specifics


def test_a_command_that_cannot_start_raises_transport() -> None:
    with pytest.raises(mis.ClientError) as info:
        mis.connect_stdio(["/nonexistent/mcp-server-binary"])
    assert info.value.kind == "transport"


def test_the_server_stderr_goes_to_python_logging_sanitised(caplog: pytest.LogCaptureFixture) -> None:
    script = (
        "import sys, json\n"
        "sys.stderr.write('hello \\x1b[31mred\\u202e\\n'); sys.stderr.flush()\n"
        "for line in sys.stdin:\n"
        "    m = json.loads(line)\n"
        "    if m.get('method') == 'initialize':\n"
        "        print(json.dumps({'jsonrpc': '2.0', 'id': m['id'], 'result': {'protocolVersion': '2025-11-25', 'capabilities': {}, 'serverInfo': {'name': 's', 'version': '1'}}}), flush=True)\n"
    )
    with caplog.at_level(logging.INFO, logger="mcp_input_sync.server.chatty"):
        with mis.connect_stdio([sys.executable, "-c", script], server_id="chatty") as client:
            assert client.server_id == "chatty"
            client.close()
    messages = [r.getMessage() for r in caplog.records if r.name == "mcp_input_sync.server.chatty"]
    assert "hello [31mred" in messages


# ---------------------------------------------------------------------------- options and errors


@pytest.mark.parametrize(
    "options, error",
    [
        ({"nonsense": 1}, TypeError),
        ({"handler_timeout": {"elicitation": 1, "typo": 2}}, TypeError),
        ({"sampling": {"max_tokenz": 1}}, TypeError),
        ({"elicitation": {"origin": 5}}, TypeError),
        ({"timeout": None}, TypeError),
        ({"timeout": 0}, ValueError),
        ({"timeout": float("inf")}, ValueError),
        ({"max_server_requests": 0}, ValueError),
        ({"protocol": "2019"}, ValueError),
        ({"log_level": "loud"}, ValueError),
        ({"input_rate_limit": (1.0,)}, TypeError),
        ({"handler": object()}, TypeError),
    ],
)
def test_bad_options_raise_when_the_client_is_built(options: JsonDict, error: type) -> None:
    server = recorded_server()
    with pytest.raises(error):
        mis.Client(server.transport, **options)
    server.close()


def test_a_per_call_timeout_of_none_is_refused() -> None:
    server = recorded_server(standard_tools=True)
    with open_client(server) as client:
        with pytest.raises(TypeError):
            client.call_tool("echo", {"text": "x"}, timeout=None)  # type: ignore[arg-type]
    server.close()


def test_exceptions_pickle() -> None:
    err = mis.ClientError("remote", "boom", code=-32042, data={"elicitations": []}, check=None)
    back = pickle.loads(pickle.dumps(err))
    assert (back.kind, back.message, back.code, back.data, back.check) == ("remote", "boom", -32042, {"elicitations": []}, None)
    refused = pickle.loads(pickle.dumps(mis.InputRefused(-1, "no", {"x": 1})))
    assert (refused.code, refused.message, refused.data) == (-1, "no", {"x": 1})
    with pytest.raises(ValueError):
        mis.ClientError("nonsense", "x")


def test_a_server_keeping_the_cap_full_is_never_answered_busy() -> None:
    """The slot is free before the answer is written, so the server's next request finds it.

    A fast stdio server keeps exactly ``max_server_requests`` elicitations open,
    sending the next one the moment it reads an answer.
    """

    class Quick(mis.InputHandler):
        def handle_elicitation(self, params: JsonDict, ctx: mis.InputContext) -> JsonDict:
            return {"action": "accept", "content": {"answer": "ok"}}

    server = [sys.executable, str(PEERS_DIR / "window_server.py")]
    with mis.connect_stdio(server, handler=Quick(), max_server_requests=4, input_rate_limit=(float("inf"), 1)) as client:
        result = client.call_tool("elicit_window", {"n": 2000, "window": 4})
        assert json.loads(result["content"][0]["text"]) == {"accepted": 2000, "errors": {}}
        assert client.stats["served"] == 2000


def url_error(*urls: str) -> mis.ClientError:
    entries = [{"mode": "url", "message": "m", "url": u, "elicitationId": f"e{i}"} for i, u in enumerate(urls)]
    return mis.ClientError("remote", "URL elicitation required", code=-32042, data={"elicitations": entries})


class UrlHandler(mis.InputHandler):
    def __init__(self, answer: Any = None) -> None:
        self.calls = 0
        self.answer = answer or {"action": "accept"}

    def elicitation_modes(self) -> tuple[str, ...]:
        return ("url",)

    def handle_elicitation(self, params: JsonDict, ctx: mis.InputContext) -> JsonDict:
        self.calls += 1
        if self.answer == "raise":
            raise RuntimeError("boom")
        return self.answer  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    "handler, error, kind, check",
    [
        (UrlHandler(), url_error("https://ok.example", "javascript:alert(1)"), "refused", "url"),
        (UrlHandler(), mis.ClientError("remote", "x", code=-32000, data={}), "protocol", "malformed"),
        (UrlHandler(), mis.ClientError("remote", "x", code=-32042, data={"elicitations": [{"mode": "form"}]}), "protocol", "malformed"),
        (Recording(), url_error("https://ok.example"), "protocol", "capability"),
        (UrlHandler({"action": "accept", "content": {"x": 1}}), url_error("https://ok.example"), "input_handler", "answer"),
        (UrlHandler("raise"), url_error("https://ok.example"), "input_handler", None),
    ],
)
def test_handle_url_elicitations_refuses_before_any_callback_or_reports_the_handler(handler: Any, error: mis.ClientError, kind: str, check: Any) -> None:
    server = recorded_server()
    with open_client(server, handler) as client:
        with pytest.raises(mis.ClientError) as info:
            client.handle_url_elicitations(error)
        assert (info.value.kind, info.value.check) == (kind, check)
        if check == "url":
            assert getattr(handler, "calls", 0) == 0  # every entry is checked before the first callback
    server.close()


def test_calls_made_while_another_thread_connects_wait_for_the_handshake() -> None:
    server = silent_handshake(recorded_server(standard_tools=True))
    client = mis.Client(server.transport, protocol="legacy")
    opener, opened = in_thread(client.open)
    (init,) = server.wait_for("initialize")
    caller, called = in_thread(client.call_tool, "echo", {"text": "after the handshake"})
    assert not server.requests_seen("tools/call")  # nothing is sent before the handshake ends
    server.send_raw({"jsonrpc": "2.0", "id": init["id"], "result": {"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": "fake", "version": "1"}}})
    opener.join(WAIT)
    caller.join(WAIT)
    assert called["value"]["content"][0]["text"] == "after the handshake"
    methods = [m.get("method") for m in server.received]
    assert methods.index("notifications/initialized") < methods.index("tools/call")
    client.close()
    server.close()


def test_close_during_the_handshake_returns_at_once_and_open_raises_closed() -> None:
    import freezegun.api

    server = silent_handshake(recorded_server())
    client = mis.Client(server.transport, protocol="legacy")
    opener, opened = in_thread(client.open)
    server.wait_for("initialize")
    started = freezegun.api.real_monotonic()
    client.close(timeout=1.0)
    assert freezegun.api.real_monotonic() - started < 2.0
    opener.join(WAIT)
    assert opened["error"].kind == "closed"
    server.close()


def test_a_late_answer_to_a_timed_out_request_leaves_the_reused_id_open_and_the_sweep_stops() -> None:
    # The server may use an id again once it was answered; a callback that ignored its token and
    # answers late must not take the new request's place: that one is answered, and nothing stays
    # under the deadline sweep.
    release = threading.Event()
    second = threading.Event()
    calls: list[int] = []

    class LateThenFine(mis.InputHandler):
        def handle_elicitation(self, params: JsonDict, ctx: mis.InputContext) -> JsonDict:
            calls.append(1)
            if len(calls) == 1:
                release.wait(WAIT)  # ignores its token on purpose
                return {"action": "decline"}
            second.set()
            release.wait(WAIT)
            return {"action": "accept", "content": {"answer": "ok"}}

    server = recorded_server()
    before = set(threading.enumerate())
    with open_client(server, LateThenFine(), handler_timeout={"elicitation": 0.2}) as client:
        server.send_request(7, "elicitation/create", FORM)
        assert server.wait_for_answer(7)["error"]["code"] == -32603  # timed out
        watchdog = watchdog_of(set(threading.enumerate()) - before)  # started by the request's deadline
        server.send_request(7, "elicitation/create", FORM)
        assert second.wait(WAIT)
        release.set()
        pause = threading.Event()
        for _ in range(200):
            if len(answers_to(server, 7)) == 2:
                break
            pause.wait(0.05)
        assert [("result" in a) for a in answers_to(server, 7)] == [False, True]
        assert answers_to(server, 7)[1]["result"]["action"] == "accept"
        if WAKE_COUNTS:
            # nothing left under the sweep: it stops within about 0.1 s, and the watchdog rests
            assert comes_to_rest(watchdog)
    server.close()


def test_a_cached_era_that_fails_when_its_engine_starts_is_forgotten_and_probed_afresh() -> None:
    server = recorded_server()
    discovers: list[JsonDict] = []

    def discover(params: JsonDict) -> Any:
        discovers.append(params)
        return ["not", "an", "object"] if len(discovers) == 1 else None  # then silence: a legacy server

    server.override("server/discover", discover)
    transport: Any = server.transport
    transport.ties_by_stream, transport.era_key = True, "http://cached.example/mcp"  # an HTTP endpoint, for the cache
    key = ("modern", "http://cached.example/mcp")  # protocol="prefer-modern", this endpoint
    cache = EraCache()  # this test's own: the process's is left alone
    cache.remember(*key, "modern", "2026-07-28")
    with open_client(server, None, era_cache=cache, discover_timeout=0.2, protocol="prefer-modern") as client:
        assert client.era == "legacy" and len(discovers) == 2
        assert cache.endpoint_era(*key) == ("legacy", client.protocol_version)
    server.close()
