"""The 2026-07-28 era over real stdio: the official SDK's modern server and a raw scripted server.

Every message the client sends is validated against the 2026-07-28 schema
(``Recorder``), with the errata of tests/schemas/README.md applied.
"""

from __future__ import annotations

import json
import sys
import threading
from typing import Any, Iterator, Optional

import pytest
from freezegun import freeze_time

import mcp_input_sync as mis

from .harness import PEERS_DIR, RecordingStdio, tool_json, tool_text
from .recorder import Recorder

JsonDict = dict[str, Any]
WAIT = 10.0
SDK_MODERN = [sys.executable, str(PEERS_DIR / "sdk_modern_server.py")]
SCRIPTED = [sys.executable, str(PEERS_DIR / "scripted_server.py")]
V = "2026-07-28"


def form(message: str = "Your answer?") -> JsonDict:
    return {"method": "elicitation/create", "params": {"mode": "form", "message": message, "requestedSchema": {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}}}


SAMPLE = {"method": "sampling/createMessage", "params": {"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}], "maxTokens": 10}}


class Answers(mis.InputHandler):
    """Answers every kind; records (kind, params, ctx, thread name)."""

    def __init__(self, action: str = "accept") -> None:
        self.seen: list[tuple[str, JsonDict, mis.InputContext, str]] = []
        self.action = action
        self.lock = threading.Lock()

    def elicitation_modes(self) -> tuple[str, ...]:
        return ("form", "url")

    def _note(self, kind: str, params: JsonDict, ctx: mis.InputContext) -> None:
        with self.lock:
            self.seen.append((kind, params, ctx, threading.current_thread().name))

    def handle_elicitation(self, params: JsonDict, ctx: mis.InputContext) -> JsonDict:
        self._note("elicitation", params, ctx)
        if ctx.mode == "url":
            return {"action": "accept"}
        if self.action != "accept":
            return {"action": self.action}
        props = params["requestedSchema"]["properties"]
        filler = {"string": "yes", "boolean": True}
        content = {name: filler.get(spec.get("type"), spec.get("default", 1)) for name, spec in props.items()}
        return {"action": "accept", "content": content}

    def handle_sampling(self, params: JsonDict, ctx: mis.InputContext) -> JsonDict:
        self._note("sampling", params, ctx)
        return {"role": "assistant", "content": {"type": "text", "text": "sampled"}, "model": "test-llm"}

    def list_roots(self, ctx: mis.InputContext) -> JsonDict:
        self._note("roots", {}, ctx)
        return {"roots": [{"uri": "file:///srv/app", "name": "app"}]}


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    rec = Recorder()
    yield rec
    assert rec.schema_errors == []


def connect(recorder: Recorder, command: list[str], handler: Optional[mis.InputHandler] = None, *flags: str, **options: Any) -> mis.Client:
    options.setdefault("protocol", "prefer-modern")  # the probe first; "auto" tries the handshake first (test_era_choice.py)
    client = mis.Client(RecordingStdio(command + list(flags), recorder), handler=handler, **options)
    client.open()
    return client


def calls(recorder: Recorder, name: str) -> list[JsonDict]:
    return [m for m in recorder.sent if m.get("method") == "tools/call" and m["params"].get("name") == name]


# ---------------------------------------------------------------------------- the official SDK in its 2026-07-28 mode


def test_the_sdk_modern_server_is_detected_by_the_probe(recorder: Recorder) -> None:
    with connect(recorder, SDK_MODERN, Answers()) as client:
        assert (client.era, client.protocol_version) == ("modern", V)
        assert client.server_info == {"name": "sdk-modern-peer", "version": "1.0.0"}
        assert tool_text(client.call_tool("echo", {"text": "hi"})) == "hi"
    methods = [m.get("method") for m in recorder.sent]
    assert methods[0] == "server/discover" and "initialize" not in methods
    for message in recorder.sent:
        meta = message["params"]["_meta"]
        assert meta["io.modelcontextprotocol/protocolVersion"] == V
        assert meta["io.modelcontextprotocol/clientInfo"]["name"] == "mcp_input_sync"
        assert meta["io.modelcontextprotocol/clientCapabilities"] == {"sampling": {}, "elicitation": {"form": {}, "url": {}}, "roots": {}}


def test_a_form_round_is_answered_on_the_calling_thread_and_retried(recorder: Recorder) -> None:
    handler = Answers()
    with connect(recorder, SDK_MODERN, handler) as client:
        out = tool_json(client.call_tool("ask_form", assigns={"user": 1}))
    assert out == {"action": "accept", "content": {"name": "yes", "age": 30}}
    ((kind, params, ctx, thread),) = handler.seen
    assert thread == threading.current_thread().name
    assert (ctx.era, ctx.related_request_id, ctx.assigns, ctx.mode) == ("modern", None, {"user": 1}, "form")
    first, retry = calls(recorder, "ask_form")
    assert retry["id"] != first["id"]
    assert retry["params"]["inputResponses"] == {"profile": {"action": "accept", "content": {"name": "yes", "age": 30}}}
    assert isinstance(retry["params"]["requestState"], str)


def test_several_kinds_in_one_round_are_answered_in_sorted_key_order(recorder: Recorder) -> None:
    handler = Answers()
    with connect(recorder, SDK_MODERN, handler) as client:
        out = tool_json(client.call_tool("ask_multi"))
        assert client.stats["served"] == 3
    assert [kind for kind, *_ in handler.seen] == ["elicitation", "sampling", "roots"]  # keys form, llm, roots
    assert out["llm"] == "sampled" and out["roots"] == ["file:///srv/app"]


def test_several_rounds_echo_each_request_state(recorder: Recorder) -> None:
    with connect(recorder, SDK_MODERN, Answers()) as client:
        assert tool_json(client.call_tool("ask_rounds", {"n": 3})) == ["yes"] * 3
    sent = calls(recorder, "ask_rounds")
    assert len(sent) == 4 and len({m["id"] for m in sent}) == 4
    assert "requestState" not in sent[0]["params"] and all("requestState" in m["params"] for m in sent[1:])


def test_without_a_request_state_none_is_sent_back(recorder: Recorder) -> None:
    with connect(recorder, SDK_MODERN, Answers()) as client:
        assert tool_text(client.call_tool("ask_no_state")) == "no-state-ok"


def test_state_only_rounds_back_off_and_retry(recorder: Recorder) -> None:
    with connect(recorder, SDK_MODERN, Answers()) as client:
        assert tool_text(client.call_tool("state_only", {"k": 2})) == "state-only-ok after 2 polls"


def test_a_tampered_request_state_is_refused_by_the_server(recorder: Recorder) -> None:
    with connect(recorder, SDK_MODERN, Answers()) as client:
        pending = client.call_tool("sealed", defer_input=True)
        assert isinstance(pending, mis.PendingCall)
        forged = mis.PendingCall.from_json(pending.to_json())
        forged.request_state = (forged.request_state or "") + "x"
        with pytest.raises(mis.ClientError) as info:
            client.resume(forged, {"ok": {"action": "accept", "content": {"ok": True}}})
        assert (info.value.kind, info.value.code) == ("remote", -32602)
        assert tool_text(client.resume(pending, {"ok": {"action": "accept", "content": {"ok": True}}})) == "sealed-ok"


def test_a_url_elicitation_without_elicitation_id_is_served(recorder: Recorder) -> None:
    handler = Answers()
    with connect(recorder, SDK_MODERN, handler) as client:
        assert tool_json(client.call_tool("ask_url")) == {"action": "accept"}
    ((_, _, ctx, _),) = handler.seen
    assert (ctx.mode, ctx.host, ctx.origin_mismatch) == ("url", "example.invalid", True)


def test_modern_logs_and_progress_reach_the_handler_sanitised(recorder: Recorder) -> None:
    logs: list[JsonDict] = []
    got = threading.Semaphore(0)

    class Logs(Answers):
        def handle_log(self, entry: JsonDict, ctx: mis.InputContext) -> None:
            logs.append(entry)
            got.release()

    updates: list[JsonDict] = []
    with connect(recorder, SCRIPTED, Logs()) as client:
        assert tool_text(client.call_tool("log_and_progress", {"steps": 2}, progress=updates.append)) == "done 2 steps"
        for _ in range(len([m for m in recorder.inbound if m.get("method") == "notifications/message"])):
            assert got.acquire(timeout=WAIT)
    call = calls(recorder, "log_and_progress")[0]
    assert call["params"]["_meta"]["io.modelcontextprotocol/logLevel"] == "info"
    assert [u["progress"] for u in updates] == [1, 2]
    assert all("\u202e" not in json.dumps(e, ensure_ascii=False) and "\x07" not in json.dumps(e) for e in logs)
    assert any(e["data"] == "eviltext" for e in logs)


def test_without_a_log_reader_no_log_level_is_asked(recorder: Recorder) -> None:
    with connect(recorder, SCRIPTED, Answers()) as client:
        client.call_tool("echo", {"text": "x"})
    assert "io.modelcontextprotocol/logLevel" not in calls(recorder, "echo")[0]["params"]["_meta"]


def test_a_call_that_times_out_is_cancelled_on_stdio(recorder: Recorder) -> None:
    with connect(recorder, SDK_MODERN, Answers()) as client:
        with pytest.raises(mis.ClientError) as info:
            client.call_tool("slow", {"seconds": 30}, timeout=0.3)
        assert info.value.kind == "timeout"
        call = calls(recorder, "slow")[0]
        recorder.wait_for(lambda m: m.get("method") == "notifications/cancelled" and m["params"]["requestId"] == call["id"])
        assert tool_text(client.call_tool("echo", {"text": "after"})) == "after"


# ---------------------------------------------------------------------------- the raw scripted server


def ask(client: mis.Client, requests: Optional[JsonDict] = None, state: Optional[str] = "st-1", **kw: Any) -> Any:
    args: JsonDict = {"requests": requests, "state": state}
    return client.call_tool("ask", args, **kw)


def test_a_result_without_result_type_is_complete(recorder: Recorder) -> None:
    with connect(recorder, SCRIPTED, Answers()) as client:
        assert tool_text(client.call_tool("no_result_type")) == "no resultType"
    assert len(calls(recorder, "no_result_type")) == 1


def test_an_unknown_result_type_is_a_protocol_error(recorder: Recorder) -> None:
    with connect(recorder, SCRIPTED, Answers()) as client:
        with pytest.raises(mis.ClientError) as info:
            client.call_tool("unknown_result_type")
    assert (info.value.kind, info.value.check) == ("protocol", "result")


def test_the_request_state_is_echoed_byte_for_byte(recorder: Recorder) -> None:
    state = 'v1.{"odd": "\u2028 \U0001f600 \\u0000 lone:\ud800"}=='  # any string, even one no UTF-8 encoder takes
    with connect(recorder, SCRIPTED, Answers()) as client:
        out = tool_json(ask(client, {"k": form()}, state=state))
    assert out["requestState"] == state
    assert out["inputResponses"] == {"k": {"action": "accept", "content": {"answer": "yes"}}}
    assert out["arguments"] == {"requests": {"k": form()}, "state": state}


@pytest.mark.parametrize(
    "requests, kind, code, check",
    [
        ({"a": SAMPLE}, "protocol", -32601, "capability"),
        ({"a": {"method": "elicitation/create", "params": {"mode": "url", "message": "m", "url": "javascript:alert(1)"}}}, "refused", -32602, "url"),
        ({"a": {"method": "tasks/get", "params": {}}}, "protocol", -32601, "malformed"),
        ({"a": {"method": "elicitation/create", "params": "nope"}}, "protocol", -32602, "malformed"),
        ({"a": {"method": "elicitation/create", "params": {"message": "m", "requestedSchema": {"type": "object", "properties": {"o": {"type": "object"}}}}}}, "refused", -32602, "schema"),
    ],
)
def test_refusals_raise_the_errors_of_the_table(recorder: Recorder, requests: JsonDict, kind: str, code: int, check: str) -> None:
    class FormsOnly(mis.InputHandler):
        calls = 0

        def elicitation_modes(self) -> tuple[str, ...]:
            return ("form", "url")

        def handle_elicitation(self, params: JsonDict, ctx: mis.InputContext) -> JsonDict:
            FormsOnly.calls += 1
            return {"action": "decline"}

    with connect(recorder, SCRIPTED, FormsOnly()) as client:
        with pytest.raises(mis.ClientError) as info:
            ask(client, {"z": form(), **requests})
    assert (info.value.kind, info.value.code, info.value.check) == (kind, code, check)
    assert FormsOnly.calls == 0  # every input request is checked before the first callback
    assert len(calls(recorder, "ask")) == 1  # no retry


def test_a_budget_too_small_for_the_round_refuses_it_whole(recorder: Recorder) -> None:
    handler = Answers()
    with connect(recorder, SCRIPTED, handler, input_rate_limit=(0.001, 2)) as client:
        with pytest.raises(mis.ClientError) as info:
            ask(client, {"b": form(), "a": SAMPLE, "c": form()})
        assert (info.value.kind, info.value.code, info.value.check) == ("refused", -1, "budget")  # "a" is sampling
        assert handler.seen == []
        assert tool_json(ask(client, {"b": form(), "c": form()}))["inputResponses"].keys() == {"b", "c"}  # no token was spent


def test_callback_failures_raise_input_handler_errors(recorder: Recorder) -> None:
    class Failing(mis.InputHandler):
        mode = "raise"

        def handle_elicitation(self, params: JsonDict, ctx: mis.InputContext) -> JsonDict:
            if self.mode == "raise":
                raise KeyError("secret")
            if self.mode == "refuse":
                raise mis.InputRefused(-7, "no thanks")
            return {"action": "accept", "content": {"answer": 42}}

    handler = Failing()
    with connect(recorder, SCRIPTED, handler) as client:
        with pytest.raises(mis.ClientError) as info:
            ask(client, {"a": form()})
        assert (info.value.kind, info.value.code, info.value.check) == ("input_handler", -32603, None)
        assert isinstance(info.value.__cause__, KeyError)
        handler.mode = "refuse"
        with pytest.raises(mis.ClientError) as info:
            ask(client, {"a": form()})
        assert (info.value.kind, info.value.code) == ("input_handler", -7)
        handler.mode = "bad answer"
        with pytest.raises(mis.ClientError) as info:
            ask(client, {"a": form()})
        assert (info.value.kind, info.value.code, info.value.check) == ("input_handler", -32603, "answer")
    assert all("inputResponses" not in m["params"] for m in calls(recorder, "ask"))


@pytest.mark.parametrize("then, expected", [("same", "reask"), ("different", "answered"), ("complete", "no answer: decline")])
def test_a_re_ask_after_a_decline_stops_the_call(recorder: Recorder, then: str, expected: str) -> None:
    class DeclineOnce(Answers):
        def handle_elicitation(self, params: JsonDict, ctx: mis.InputContext) -> JsonDict:
            self._note("elicitation", params, ctx)
            if len(self.seen) == 1:
                return {"action": "decline"}
            return {"action": "accept", "content": {"answer": "answered"}}

    with connect(recorder, SCRIPTED, DeclineOnce()) as client:
        if expected == "reask":
            with pytest.raises(mis.ClientError) as info:
                client.call_tool("reask", {"decline_then": then})
            assert (info.value.kind, info.value.check) == ("declined", "reask")
        else:
            assert tool_text(client.call_tool("reask", {"decline_then": then})) == expected


def test_an_endless_re_ask_stops_at_max_rounds(recorder: Recorder) -> None:
    with connect(recorder, SCRIPTED, Answers(), max_rounds=3) as client:
        with pytest.raises(mis.ClientError) as info:
            client.call_tool("endless")
    assert (info.value.kind, info.value.check) == ("protocol", "rounds")
    assert len(calls(recorder, "endless")) == 4  # 3 rounds answered (the call and 3 retries); the 4th round raised


def test_a_server_request_in_the_modern_era_is_logged_counted_and_never_answered(recorder: Recorder) -> None:
    with connect(recorder, SCRIPTED, Answers()) as client:
        assert tool_text(client.call_tool("server_request")) == "sent a request"
        received = tool_json(client.call_tool("_received"))
        assert client.stats["refused"]["elicitation"]["era"] == 1
    assert not [m for m in received if m.get("id") == "srv-1" and "method" not in m]
    assert not [m for m in recorder.sent if "result" in m or "error" in m]


def test_resources_and_prompts_run_the_same_loop(recorder: Recorder) -> None:
    with connect(recorder, SCRIPTED, Answers()) as client:
        contents = client.read_resource("file:///needs-input")["contents"][0]["text"]
        prompt = client.get_prompt("needs-input")["messages"][0]["content"]["text"]
    assert json.loads(contents)["inputResponses"] == {"pw": {"action": "accept", "content": {"answer": "yes"}}}
    assert json.loads(prompt)["inputResponses"] == {"pw": {"action": "accept", "content": {"answer": "yes"}}}


def test_concurrent_calls_never_see_each_others_rounds(recorder: Recorder) -> None:
    barrier = threading.Barrier(2, timeout=WAIT)

    class Meeting(Answers):
        def handle_elicitation(self, params: JsonDict, ctx: mis.InputContext) -> JsonDict:
            barrier.wait()  # both calls are mid-round at once
            return {"action": "accept", "content": {"answer": params["message"]}}

    with connect(recorder, SCRIPTED, Meeting()) as client:
        results: dict[str, Any] = {}
        threads = [
            threading.Thread(target=lambda n=n: results.__setitem__(n, tool_json(ask(client, {"k": form(n)}, state=f"state-{n}"))))
            for n in ("one", "two")
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(WAIT)
        unrelated = tool_json(client.call_tool("_received"))
    for n in ("one", "two"):
        assert results[n]["requestState"] == f"state-{n}"
        assert results[n]["inputResponses"]["k"]["content"]["answer"] == n
    echo_calls = [m for m in unrelated if m.get("method") == "tools/call" and m["params"]["name"] == "_received"]
    assert all("inputResponses" not in m["params"] and "requestState" not in m["params"] for m in echo_calls)


def test_input_parallelism_runs_a_round_on_worker_threads(recorder: Recorder) -> None:
    barrier = threading.Barrier(3, timeout=WAIT)

    class Parallel(Answers):
        input_parallelism = 3

        def handle_elicitation(self, params: JsonDict, ctx: mis.InputContext) -> JsonDict:
            self._note("elicitation", params, ctx)
            barrier.wait()  # all three run at once
            return {"action": "accept", "content": {"answer": "p"}}

    handler = Parallel()
    with connect(recorder, SCRIPTED, handler) as client:
        out = tool_json(ask(client, {"a": form(), "b": form(), "c": form()}))
    assert set(out["inputResponses"]) == {"a", "b", "c"}
    assert all(name.startswith("mcp-input-sync-input-") for *_, name in handler.seen)


def test_with_parallel_callbacks_the_first_failure_cancels_the_others(recorder: Recorder) -> None:
    cancelled: list[str] = []

    class OneFails(Answers):
        input_parallelism = 2

        def handle_elicitation(self, params: JsonDict, ctx: mis.InputContext) -> JsonDict:
            if params["message"] == "fail":
                raise ValueError("boom")
            if ctx.wait_cancelled(WAIT):
                cancelled.append(params["message"])
            return {"action": "decline"}

    with connect(recorder, SCRIPTED, OneFails()) as client:
        with pytest.raises(mis.ClientError) as info:
            ask(client, {"a": form("wait"), "b": form("fail")})
    assert info.value.kind == "input_handler" and isinstance(info.value.__cause__, ValueError)
    assert cancelled == ["wait"]


# ---------------------------------------------------------------------------- time on the calling thread


def test_handler_timeout_applies_to_a_callback_on_the_calling_thread(recorder: Recorder) -> None:
    with freeze_time("2026-11-29 12:00:00") as frozen:

        class Slow(Answers):
            def handle_elicitation(self, params: JsonDict, ctx: mis.InputContext) -> JsonDict:
                frozen.tick(301)
                assert ctx.wait_cancelled(WAIT)  # the watchdog sets the token
                return {"action": "accept", "content": {"answer": "late"}}

        with connect(recorder, SCRIPTED, Slow()) as client:
            with pytest.raises(mis.ClientError) as info:
                ask(client, {"a": form()})
            assert info.value.kind == "timeout"
    assert len(calls(recorder, "ask")) == 1  # the late answer was discarded, never sent


def test_time_in_callbacks_does_not_count_against_the_call_timeout(recorder: Recorder) -> None:
    with freeze_time("2026-11-29 12:00:00") as frozen:

        class Thinking(Answers):
            def handle_elicitation(self, params: JsonDict, ctx: mis.InputContext) -> JsonDict:
                frozen.tick(100)  # longer than the call's timeout of 60 s
                return {"action": "accept", "content": {"answer": "ok"}}

        with connect(recorder, SCRIPTED, Thinking()) as client:
            out = tool_json(ask(client, {"a": form(), "b": form()}, timeout=60, max_total_timeout=1000))
    assert set(out["inputResponses"]) == {"a", "b"}


def test_max_total_timeout_bounds_callbacks_too(recorder: Recorder) -> None:
    with freeze_time("2026-11-29 12:00:00") as frozen:

        class Thinking(Answers):
            def handle_elicitation(self, params: JsonDict, ctx: mis.InputContext) -> JsonDict:
                frozen.tick(100)
                assert ctx.wait_cancelled(WAIT)
                return {"action": "accept", "content": {"answer": "ok"}}

        with connect(recorder, SCRIPTED, Thinking()) as client:
            with pytest.raises(mis.ClientError) as info:
                ask(client, {"a": form()}, max_total_timeout=50)
    assert info.value.kind == "timeout"


# ---------------------------------------------------------------------------- resumable calls


def test_a_deferred_call_round_trips_as_json_and_resumes_in_another_client(recorder: Recorder) -> None:
    with connect(recorder, SCRIPTED, Answers()) as first:
        pending = ask(first, {"b": form("B?"), "a": SAMPLE}, state="opaque-1", defer_input=True)
        assert isinstance(pending, mis.PendingCall)
        assert list(pending.input_requests) == ["a", "b"] and pending.request_state == "opaque-1"
        stored = pending.to_json()
    second_recorder = Recorder()
    with connect(second_recorder, SCRIPTED, Answers()) as second:
        answers = {
            "a": {"role": "assistant", "content": {"type": "text", "text": "from the web form"}, "model": "m"},
            "b": {"action": "accept", "content": {"answer": "typed later"}},
        }
        out = tool_json(second.resume(mis.PendingCall.from_json(stored), answers))
    assert out["requestState"] == "opaque-1" and out["inputResponses"] == answers
    assert second_recorder.schema_errors == []


def test_resume_validates_the_answers(recorder: Recorder) -> None:
    with connect(recorder, SCRIPTED, Answers()) as client:
        pending = ask(client, {"a": form()}, defer_input=True)
        assert isinstance(pending, mis.PendingCall)
        for bad in ({}, {"a": {"action": "accept", "content": {}}}, {"a": {"action": "sure"}}):
            with pytest.raises(mis.ClientError) as info:
                client.resume(pending, bad)
            assert (info.value.kind, info.value.check) == ("input_handler", "answer")
        declined = client.resume(pending, {"a": {"action": "decline", "content": {"answer": "dropped"}}})
    assert tool_json(declined)["inputResponses"] == {"a": {"action": "decline"}}


def test_defer_input_is_refused_in_the_legacy_era(recorder: Recorder) -> None:
    with connect(recorder, SCRIPTED, Answers(), "--legacy-only") as client:
        with pytest.raises(mis.ClientError) as info:
            client.call_tool("echo", {"text": "x"}, defer_input=True)
    assert info.value.kind == "protocol"


# ---------------------------------------------------------------------------- tasks


def test_a_task_that_needs_input_twice_is_followed_to_its_result(recorder: Recorder) -> None:
    handler = Answers()
    with connect(recorder, SCRIPTED, handler, tasks=True) as client:
        out = tool_json(client.call_tool("task_input"))
    assert out == {"a": {"action": "accept", "content": {"answer": "yes"}}, "b": {"action": "accept", "content": {"answer": "yes"}}}
    assert [p["message"] for _, p, _, _ in handler.seen] == ["First question?", "Second question?"]  # each key once
    caps = recorder.sent[0]["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]
    assert caps["extensions"] == {"io.modelcontextprotocol/tasks": {}}
    updates = [m for m in recorder.sent if m.get("method") == "tasks/update"]
    assert [list(m["params"]["inputResponses"]) for m in updates] == [["a"], ["b"]]


def test_wait_false_returns_the_task_and_await_task_follows_it(recorder: Recorder) -> None:
    with connect(recorder, SCRIPTED, Answers(), tasks=True) as client:
        created = client.call_tool("task_input", wait=False)
        assert created["resultType"] == "task" and created["status"] == "working"
        assert set(tool_json(client.await_task(created["taskId"]))) == {"a", "b"}


def test_failed_and_cancelled_tasks_raise(recorder: Recorder) -> None:
    with connect(recorder, SCRIPTED, Answers(), tasks=True) as client:
        with pytest.raises(mis.ClientError) as info:
            client.call_tool("task_fail")
        assert (info.value.kind, info.value.code) == ("remote", -32000)
        created = client.call_tool("task_cancel", wait=False)
        client.cancel_task(created["taskId"])
        with pytest.raises(mis.ClientError) as info:
            client.await_task(created["taskId"])
        assert info.value.kind == "cancelled"


# ---------------------------------------------------------------------------- subscriptions


def test_a_listen_stream_brings_list_changes_and_resource_updates(recorder: Recorder) -> None:
    heard: list[tuple[str, JsonDict]] = []
    got = threading.Semaphore(0)

    class Listening(Answers):
        def handle_notification(self, method: str, params: JsonDict, ctx: mis.InputContext) -> None:
            heard.append((method, params))
            got.release()

    with connect(recorder, SCRIPTED, Listening()) as client:
        (listen,) = [m for m in recorder.sent if m.get("method") == "subscriptions/listen"]
        assert listen["params"]["notifications"] == {"toolsListChanged": True, "resourcesListChanged": True}
        client.call_tool("fire", {"what": "tools"})
        assert got.acquire(timeout=WAIT)
        client.subscribe_resource("file:///watched.txt")
        listens = [m for m in recorder.sent if m.get("method") == "subscriptions/listen"]
        assert listens[-1]["params"]["notifications"]["resourceSubscriptions"] == ["file:///watched.txt"]
        recorder.wait_for(lambda m: m.get("method") == "notifications/cancelled" and m["params"]["requestId"] == listen["id"])
        client.call_tool("fire", {"what": "resource:file:///watched.txt"})
        assert got.acquire(timeout=WAIT)
    assert [m for m, _ in heard] == ["notifications/tools/list_changed", "notifications/resources/updated"]
    assert heard[1][1]["uri"] == "file:///watched.txt"
    last_listen = [m for m in recorder.sent if m.get("method") == "subscriptions/listen"][-1]
    assert any(m.get("method") == "notifications/cancelled" and m["params"]["requestId"] == last_listen["id"] for m in recorder.sent)


def test_without_a_notification_reader_no_listen_is_opened(recorder: Recorder) -> None:
    with connect(recorder, SCRIPTED, Answers()) as client:
        client.call_tool("echo", {"text": "x"})
    assert not [m for m in recorder.sent if m.get("method") == "subscriptions/listen"]


def test_legacy_resource_subscriptions_use_resources_subscribe(recorder: Recorder) -> None:
    heard: list[str] = []
    got = threading.Semaphore(0)

    class Listening(mis.InputHandler):
        def handle_notification(self, method: str, params: JsonDict, ctx: mis.InputContext) -> None:
            heard.append(method)
            got.release()

    with connect(recorder, SCRIPTED, Listening(), "--legacy-only") as client:
        client.subscribe_resource("file:///a")
        client.call_tool("fire_legacy", {"uri": "file:///a"})
        assert got.acquire(timeout=WAIT) and got.acquire(timeout=WAIT)
        client.unsubscribe_resource("file:///a")
    assert heard == ["notifications/resources/updated", "notifications/tools/list_changed"]
    assert [m["method"] for m in recorder.sent if m.get("method", "").startswith("resources/")] == ["resources/subscribe", "resources/unsubscribe"]


# ---------------------------------------------------------------------------- era detection


@pytest.mark.parametrize(
    "flags, options, era, version",
    [
        (["--modern"], {}, "modern", V),
        (["--legacy-only"], {}, "legacy", "2025-11-25"),
        (["--supported-legacy"], {}, "legacy", "2025-11-25"),
        (["--silent-probe"], {"discover_timeout": 0.3}, "legacy", "2025-11-25"),
        (["--late-discover", "0.6"], {"discover_timeout": 0.2}, "modern", V),
        (["--legacy-only"], {"protocol": "2025-06-18"}, "legacy", "2025-06-18"),
        (["--modern"], {"protocol": "modern"}, "modern", V),
        # forced: nothing else to try, so a late answer within timeout is waited for
        (["--late-discover", "0.6"], {"protocol": "2026-07-28", "discover_timeout": 0.2}, "modern", V),
    ],
)
def test_era_detection(recorder: Recorder, flags: list[str], options: JsonDict, era: str, version: str) -> None:
    with connect(recorder, SCRIPTED, Answers(), *flags, **options) as client:
        assert (client.era, client.protocol_version) == (era, version)
        assert tool_text(client.call_tool("echo", {"text": "works"})) == "works"


def test_a_server_whose_reader_died_on_the_probe_is_restarted_once(recorder: Recorder, caplog: pytest.LogCaptureFixture) -> None:
    with connect(recorder, SCRIPTED, Answers(), "--crash-on-discover", discover_timeout=0.2, timeout=2) as client:
        assert (client.era, client.protocol_version) == ("legacy", "2025-11-25")
        assert tool_text(client.call_tool("echo", {"text": "second process"}, timeout=10)) == "second process"
    methods = [m.get("method") for m in recorder.sent]
    assert methods[:3] == ["server/discover", "initialize", "initialize"]
    assert "restarting it once" in caplog.text


def test_forcing_legacy_against_a_modern_only_server_fails_clearly(recorder: Recorder) -> None:
    client = mis.Client(RecordingStdio(SCRIPTED + ["--modern"], recorder), handler=Answers(), protocol="legacy")
    with pytest.raises(mis.ClientError) as info:
        client.open()
    assert info.value.kind == "remote" and info.value.data["supported"] == [V]


def test_forcing_modern_against_a_legacy_only_server_fails_clearly(recorder: Recorder) -> None:
    client = mis.Client(RecordingStdio(SCRIPTED + ["--legacy-only"], recorder), handler=Answers(), protocol="modern")
    with pytest.raises(mis.ClientError) as info:
        client.open()
    assert info.value.kind == "protocol"


LEGACY_TASKS = ["--legacy-only", "--legacy-capabilities", json.dumps({"tools": {}, "tasks": {"requests": {"tools": {"call": {}}}}})]


def test_a_2025_11_25_task_is_followed_and_its_requests_are_answered_by_the_legacy_engine(recorder: Recorder) -> None:
    handler = Answers()
    with connect(recorder, SCRIPTED, handler, *LEGACY_TASKS, tasks=True) as client:
        assert client.protocol_version == "2025-11-25"
        out = tool_json(client.call_tool("task_required", assigns={"job": 9}))
        related = {"io.modelcontextprotocol/related-task": {"taskId": "lt1"}}
        assert out == {"action": "accept", "content": {"answer": "yes"}, "_meta": related}
        ((_, params, ctx, thread),) = handler.seen
        (result_call,) = [m for m in recorder.sent if m.get("method") == "tasks/result"]
        assert ctx.related_request_id == result_call["id"] and ctx.assigns == {"job": 9}
        assert thread.startswith("mcp-input-sync-reader-")  # a legacy callback, quick: on the stdio reader
        (task_call,) = calls(recorder, "task_required")
        assert task_call["params"]["task"] == {}
        answer = next(m for m in recorder.sent if m.get("id") == "lq-lt1")
        assert answer["result"]["_meta"] == {"io.modelcontextprotocol/related-task": {"taskId": "lt1"}}
        # an optional tool runs as a task only when the caller does not wait
        assert tool_text(client.call_tool("task_optional")) == "optional, no task"
        created = client.call_tool("task_optional", wait=False)
        assert created["task"]["status"] == "working"
        assert tool_json(client.await_task(created["task"]["taskId"]))["action"] == "accept"


def test_a_cancelled_2025_11_25_task_raises(recorder: Recorder) -> None:
    with connect(recorder, SCRIPTED, Answers(), *LEGACY_TASKS, tasks=True) as client:
        created = client.call_tool("task_optional", wait=False)
        client.cancel_task(created["task"]["taskId"])
        with pytest.raises(mis.ClientError) as info:
            client.await_task(created["task"]["taskId"])
        assert info.value.kind == "cancelled"


def test_a_round_key_without_a_method_is_named_in_ascii(recorder: Recorder) -> None:
    key = "\x1b]0;owned\x07\u202ekey\ufe0f"
    with connect(recorder, SCRIPTED, mis.InputHandler()) as client:
        with pytest.raises(mis.ClientError) as info:
            ask(client, {key: {"params": {}}})
    assert info.value.check == "malformed"
    assert info.value.message.isascii() and "\x1b" not in info.value.message and "\\x1b" in info.value.message
