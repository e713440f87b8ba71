"""mcp_input_sync.testing: the public fake server, in both eras, fast and leak-free."""

from __future__ import annotations

import threading
from pathlib import Path
from types import ModuleType
from typing import Any, Iterator

import pytest
from freezegun import freeze_time

import mcp_input_sync as mis
from mcp_input_sync import testing as kit
from mcp_input_sync.testing import ClientRefused, FakeServer, ToolCall, ToolError, shared, text_result


ERAS = ["legacy", "modern"]
SEAT = {"type": "object", "properties": {"seat": {"type": "string"}}, "required": ["seat"]}


class Handler(mis.InputHandler):
    def __init__(self) -> None:
        self.logs: list[Any] = []
        self.notes: list[str] = []
        self.noted = threading.Event()

    def handle_elicitation(self, params: Any, ctx: mis.InputContext) -> Any:
        return {"action": "accept", "content": {"seat": "12A"}}

    def elicitation_modes(self) -> tuple[str, ...]:
        return ("form", "url")

    def handle_sampling(self, params: Any, ctx: mis.InputContext) -> Any:
        return {"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "m"}

    def list_roots(self, ctx: mis.InputContext) -> Any:
        return {"roots": [{"uri": "file:///work", "name": "work"}]}

    def handle_log(self, entry: Any, ctx: mis.InputContext) -> None:
        self.logs.append(entry["data"])

    def handle_notification(self, method: str, params: Any, ctx: mis.InputContext) -> None:
        self.notes.append(method)
        self.noted.set()


def all_kinds(call: ToolCall) -> str:
    call.log("info", "start")
    seat = call.elicit("Seat?", SEAT)["content"]["seat"]
    call.progress(1, 2, "half")
    said = call.sample("say hi", max_tokens=5)["content"]["text"]
    root = call.roots()[0]["uri"]
    call.log("info", "end")
    return f"{seat} {said} {root}"


@pytest.fixture(params=ERAS)
def fake(request: pytest.FixtureRequest) -> Iterator[FakeServer]:
    with FakeServer(era=request.param) as server:
        server.add_tool("all_kinds", all_kinds)
        yield server


def text(result: Any) -> str:
    return str(result["content"][0]["text"])


def test_every_helper_works_and_is_recorded(fake: FakeServer) -> None:
    handler = Handler()
    progress: list[Any] = []
    with fake.client(handler=handler) as client:
        assert client.era == fake.era
        assert text(client.call_tool("all_kinds", progress=progress.append)) == "12A hi file:///work"
    assert handler.logs == ["start", "end"]  # a modern replay does not send them again
    assert progress == [{"progress": 1, "total": 2, "message": "half"}]
    assert fake.assert_answered("elicitation/create", count=1) == [{"action": "accept", "content": {"seat": "12A"}}]
    assert fake.assert_answered("sampling/createMessage", count=1)[0]["model"] == "m"
    assert fake.assert_answered("roots/list", count=1)[0]["roots"][0]["name"] == "work"
    assert [e.method for e in fake.exchanges] == ["elicitation/create", "sampling/createMessage", "roots/list"]
    assert fake.unanswered == []
    assert fake.requests_seen("tools/call")[0]["name"] == "all_kinds"
    caps = fake.client_capabilities
    assert caps is not None and "elicitation" in caps and "sampling" in caps
    if fake.era == "legacy":
        assert len(fake.answers) == 3 and fake.input_responses == []
        assert fake.negotiated == "2025-11-25" and fake.client_info is not None
    else:
        assert fake.answers == []
        assert [sorted(r) for r in fake.input_responses] == [["elicit-1"], ["sample-2"], ["roots-3"]]
        assert len(fake.requests_seen("tools/call")) == 4  # the call and three retries


def test_assert_answered_counts_and_explains(fake: FakeServer) -> None:
    with fake.client(handler=Handler()) as client:
        client.call_tool("all_kinds")
    with pytest.raises(AssertionError, match="not 2"):
        fake.assert_answered("elicitation/create", count=2)
    with pytest.raises(AssertionError, match="no ping"):
        fake.assert_answered("ping")


def test_decorator_forms_and_tools_list(fake: FakeServer) -> None:
    @fake.tool
    def plain(call: ToolCall) -> str:
        return "plain " + str(call.arguments.get("x"))

    @fake.tool("named", description="a named tool", input_schema={"type": "object", "properties": {"x": {"type": "integer"}}})
    def whatever(call: ToolCall) -> dict[str, Any]:
        return text_result(call.name)

    with fake.client() as client:
        names = {t["name"]: t for t in client.list_tools()}
        assert set(names) == {"all_kinds", "plain", "named"}
        assert names["named"]["description"] == "a named tool"
        assert text(client.call_tool("plain", {"x": 3})) == "plain 3"
        assert text(client.call_tool("named")) == "named"
        with pytest.raises(mis.ClientError) as err:
            client.call_tool("missing")
        assert err.value.code == -32602


def test_tool_errors_and_bugs(fake: FakeServer) -> None:
    @fake.tool
    def rpc_error(call: ToolCall) -> str:
        raise ToolError(-32042, "go there first", {"why": "test"})

    @fake.tool
    def buggy(call: ToolCall) -> str:
        raise KeyError("oops")

    with fake.client() as client:
        with pytest.raises(mis.ClientError) as err:
            client.call_tool("rpc_error")
        assert (err.value.kind, err.value.code, err.value.data) == ("remote", -32042, {"why": "test"})
        result = client.call_tool("buggy")
        assert result["isError"] is True and "KeyError" in text(result)


def test_raw_requests_from_a_tool(fake: FakeServer) -> None:
    @fake.tool
    def raw(call: ToolCall) -> str:
        return str(call.request("roots/list", {} if call.era == "modern" else None)["roots"][0]["uri"])

    with fake.client(handler=Handler()) as client:
        assert text(client.call_tool("raw")) == "file:///work"
    fake.assert_answered("roots/list", count=1)


def test_a_refused_url_in_both_eras(fake: FakeServer) -> None:
    @fake.tool
    def visit(call: ToolCall) -> str:
        try:
            call.elicit_url("Log in", "http://insecure.example/login")
        except ClientRefused as exc:
            return f"refused {exc.code}"
        return "visited"

    with fake.client(handler=Handler()) as client:
        if fake.era == "legacy":
            assert text(client.call_tool("visit")) == "refused -32602"
            assert fake.assert_refused(-32602, "elicitation/create")
            with pytest.raises(AssertionError):
                fake.assert_refused(-32601)
        else:
            with pytest.raises(mis.ClientError) as err:
                client.call_tool("visit")
            assert (err.value.kind, err.value.check) == ("refused", "url")
            assert [e.params["url"] for e in fake.unanswered if e.params] == ["http://insecure.example/login"]
            with pytest.raises(AssertionError, match="modern era"):
                fake.assert_refused(-32602)


def test_an_uncaught_refusal_becomes_a_tool_error() -> None:
    with FakeServer() as fake:

        @fake.tool
        def ask(call: ToolCall) -> str:
            call.sample("hello")  # the handler declares no sampling: -32601
            return "unreachable"

        with fake.client(handler=None) as client:
            result = client.call_tool("ask")
        assert result["isError"] is True and "-32601" in text(result)
        fake.assert_refused(-32601, "sampling/createMessage")


def test_notify_and_hostile_messages(fake: FakeServer) -> None:
    handler = Handler()
    with fake.client(handler=handler) as client:
        fake.send_raw("this is not JSON")
        fake.send_raw(b"[1, 2]")
        fake.send_raw({"jsonrpc": "2.0", "id": 999, "result": {}})  # an answer to nothing
        fake.notify("notifications/tools/list_changed")
        assert handler.noted.wait(5)
        assert text(client.call_tool("all_kinds")) == "12A hi file:///work"  # the client survived
    assert handler.notes == ["notifications/tools/list_changed"]
    assert {"jsonrpc": "2.0", "id": 999, "result": {}} in fake.sent


def test_requests_outside_a_tool(fake: FakeServer) -> None:
    with fake.client(handler=Handler()) as client:
        client.list_tools()
        if fake.era == "legacy":
            response = fake.request("roots/list")
            assert response["result"]["roots"][0]["uri"] == "file:///work"
            assert fake.request("ping")["result"] == {}
        else:
            with pytest.raises(TimeoutError):  # the modern client never answers a server request
                fake.request("roots/list", timeout=0.1)


def test_on_message_taps_both_directions_in_order() -> None:
    for era in ERAS:
        seen: list[tuple[str, Any]] = []
        lock = threading.Lock()

        def tap(direction: str, message: Any) -> None:
            with lock:
                seen.append((direction, message))

        with FakeServer(era=era, on_message=tap) as fake:
            fake.add_tool("all_kinds", all_kinds)
            with fake.client(handler=Handler()) as client:
                assert text(client.call_tool("all_kinds")) == "12A hi file:///work"
            fake.send_raw(b"raw bytes are not shown")
            with lock:
                received = [m for d, m in seen if d == "received"]
                sent = [m for d, m in seen if d == "sent"]
            assert received == fake.received  # every message the client sent, in order, before it was recorded
            assert len(sent) == len(fake.sent) and all(m in fake.sent for m in sent)  # every dict the fake sent
            assert any(m.get("method") == "tools/call" for m in received)


def test_override_answers_a_method_or_stays_silent(fake: FakeServer) -> None:
    complete = {"resultType": "complete"} if fake.era == "modern" else {}
    pages = {None: (["a"], "p2"), "p2": (["b"], None)}

    def paged(params: Any) -> Any:
        names, cursor = pages[params.get("cursor")]
        result = {**complete, "tools": [{"name": n, "inputSchema": {"type": "object"}} for n in names]}
        if cursor:
            result["nextCursor"] = cursor
        return result

    def refuse(params: Any) -> Any:
        raise ToolError(-32000, "not today", {"why": "test"})

    def buggy(params: Any) -> Any:
        raise KeyError("oops")

    fake.override("tools/list", paged)
    fake.override("prompts/list", refuse)
    fake.override("resources/list", lambda params: None)
    fake.override("resources/templates/list", buggy)
    with fake.client(handler=Handler(), timeout=0.3) as client:
        assert [t["name"] for t in client.list_tools()] == ["a", "b"]
        with pytest.raises(mis.ClientError) as refused:
            client.list_prompts()
        assert (refused.value.kind, refused.value.code) == ("remote", -32000)
        with pytest.raises(mis.ClientError) as silent:
            client.list_resources()
        assert silent.value.kind == "timeout"
        with pytest.raises(mis.ClientError) as bug:
            client.list_resource_templates()
        assert (bug.value.code, bug.value.message) == (-32603, "KeyError: 'oops'")
        fake.override("tools/list", None)  # the fake's own answer again
        assert [t["name"] for t in client.list_tools()] == ["all_kinds"]
    assert [p.get("cursor") for p in fake.requests_seen("tools/list")] == [None, "p2", None]


def test_cancellation_reaches_the_tool(fake: FakeServer) -> None:
    seen = threading.Event()
    started = threading.Event()

    @fake.tool
    def slow(call: ToolCall) -> str:
        started.set()
        if call.cancelled.wait(5):
            seen.set()
        return "late"

    cancel = threading.Event()
    with fake.client() as client:
        threading.Thread(target=lambda: (started.wait(5), cancel.set()), daemon=True).start()
        with pytest.raises(mis.ClientError) as err:
            client.call_tool("slow", cancel=cancel)
        assert err.value.kind == "cancelled"
        fake.wait_for("notifications/cancelled")
        assert seen.wait(5)


def test_task_tools(fake: FakeServer) -> None:
    @fake.tool("booking", task=True)
    def booking(call: ToolCall) -> str:
        first = call.elicit("Seat?", SEAT)["content"]["seat"]
        second = call.elicit("Meal?", {"type": "object", "properties": {"seat": {"type": "string"}}})["content"]["seat"]
        return f"{first}+{second}"

    @fake.tool("failing", task=True)
    def failing(call: ToolCall) -> str:
        raise ToolError(-32000, "task broke")

    with fake.client(handler=Handler()) as client:
        assert text(client.call_tool("booking")) == "12A+12A"
        with pytest.raises(mis.ClientError) as err:
            client.call_tool("failing")
        assert err.value.kind == "remote" and err.value.code == -32000
    fake.assert_answered("elicitation/create", count=2)
    if fake.era == "modern":
        assert fake.input_responses == [{"elicit-1": {"action": "accept", "content": {"seat": "12A"}}},
                                        {"elicit-2": {"action": "accept", "content": {"seat": "12A"}}}]
        assert fake.requests_seen("tasks/get") and len(fake.requests_seen("tasks/update")) == 2
        assert {e.chain for e in fake.exchanges} == {"task-1"}
    else:
        assert fake.requests_seen("tasks/get") == []  # a plain tool in the legacy era


def test_waits_are_bounded() -> None:
    with FakeServer(timeout=0.1) as fake:
        with pytest.raises(TimeoutError):
            fake.wait_for("tools/call")
        with pytest.raises(TimeoutError):
            fake.request("ping")  # no client at all


def test_one_client_per_fake_and_valid_eras() -> None:
    with pytest.raises(ValueError):
        FakeServer(era="future")
    with FakeServer() as fake:
        fake.client()
        with pytest.raises(RuntimeError):
            fake.client()


def test_threads_are_named_and_close_is_idempotent() -> None:
    fake = FakeServer(era="modern")
    started = threading.Event()

    @fake.tool
    def wait(call: ToolCall) -> str:
        started.set()
        call.cancelled.wait(5)
        return "done"

    client = fake.client()
    client.open()
    worker = threading.Thread(target=lambda: pytest.raises(mis.ClientError, client.call_tool, "wait"), daemon=True)
    worker.start()
    assert started.wait(5)
    names = [t.name for t in threading.enumerate()]
    assert fake.name in names and f"{fake.name}-tool-1" in names
    assert fake.name.startswith("fake-server-")
    fake.close()
    fake.close()
    worker.join(5)
    assert client.state is mis.ClientState.CLOSED
    assert not any(t.name.startswith(fake.name) and t.is_alive() for t in threading.enumerate())


@pytest.mark.parametrize("era", ERAS)
def test_auto_detection_picks_the_fakes_era(era: str) -> None:
    with FakeServer(era=era) as fake:
        with fake.client(protocol="auto") as client:
            assert client.era == era


def test_older_legacy_versions() -> None:
    with FakeServer(version="2025-06-18") as fake:
        fake.add_tool("all_kinds", all_kinds)
        with fake.client(handler=Handler()) as client:
            assert client.protocol_version == "2025-06-18"
            client.call_tool("all_kinds")
        assert "mode" not in fake.exchanges[0].params  # type: ignore[operator]
    with FakeServer(version="2025-03-26", instructions="be kind") as fake:
        fake.add_tool("all_kinds", all_kinds)
        with fake.client(handler=Handler()) as client:
            assert (client.protocol_version, client.instructions) == ("2025-03-26", "be kind")
            assert client.call_tool("all_kinds")["isError"] is True  # 2025-03-26 has no elicitation
        fake.assert_refused(-32601, "elicitation/create")


class WalkedAway(mis.InputHandler):
    def __init__(self) -> None:
        self.asked = threading.Event()

    def handle_elicitation(self, params: Any, ctx: mis.InputContext) -> Any:
        self.asked.set()
        ctx.wait_cancelled(5)
        return {"action": "cancel"}


@pytest.mark.parametrize("era", ERAS)
def test_handler_timeout_by_time_travel(era: str) -> None:
    handler = WalkedAway()
    outcome: list[Any] = []
    with freeze_time("2026-01-01") as frozen, FakeServer(era=era) as fake:

        @fake.tool
        def ask(call: ToolCall) -> str:
            try:
                return str(call.elicit("Name?", SEAT)["action"])
            except ClientRefused as exc:
                return f"refused {exc.code}"

        with fake.client(handler=handler) as client:

            def run() -> None:
                try:
                    outcome.append(client.call_tool("ask"))
                except mis.ClientError as exc:
                    outcome.append(exc)

            caller = threading.Thread(target=run)
            caller.start()
            assert handler.asked.wait(5)
            frozen.tick(301)  # past the 300 s elicitation handler_timeout
            caller.join(5)
    if era == "legacy":
        assert text(outcome[0]) == "refused -32603"
        fake.assert_refused(-32603)
    else:
        assert isinstance(outcome[0], mis.ClientError) and outcome[0].kind == "timeout"


@pytest.mark.parametrize("era", ERAS)
def test_input_rate_limit_by_time_travel(era: str) -> None:
    with freeze_time("2026-01-01") as frozen, FakeServer(era=era) as fake:

        @fake.tool
        def three(call: ToolCall) -> str:
            answers = []
            for i in range(3):
                try:
                    answers.append(call.elicit(f"Question {i}?", SEAT)["action"])
                except ClientRefused as exc:
                    answers.append(str(exc.code))
            return " ".join(answers)

        with fake.client(handler=Handler(), input_rate_limit=(1.0, 2)) as client:
            if era == "legacy":
                assert text(client.call_tool("three")) == "accept accept -32000"
                frozen.tick(2)  # the bucket refills
                assert text(client.call_tool("three")) == "accept accept -32000"
                assert len(fake.assert_refused(-32000, message="rate limited")) == 2
            else:
                with pytest.raises(mis.ClientError) as err:
                    client.call_tool("three")
                assert err.value.check == "budget"
                frozen.tick(2)
                with pytest.raises(mis.ClientError):
                    client.call_tool("three")
                assert len(fake.assert_answered("elicitation/create")) == 4


@pytest.mark.parametrize("era", ERAS)
def test_log_rate_limit_by_time_travel(era: str) -> None:
    handler = Handler()
    with freeze_time("2026-01-01") as frozen, FakeServer(era=era) as fake:

        @fake.tool
        def chatty(call: ToolCall) -> str:
            for i in range(5):
                call.log("info", i)
            call.notify("notifications/custom", {"done": True})
            return "ok"

        with fake.client(handler=handler, log_rate_limit=(1.0, 2)) as client:
            client.call_tool("chatty")
            assert handler.noted.wait(5)  # the notification thread reached the custom one
            frozen.tick(1)
            handler.noted.clear()
            client.call_tool("chatty")
            assert handler.noted.wait(5)  # and the second call's (so the next wait is for the third)
            handler.noted.clear()
            fake.notify("notifications/custom")
            assert handler.noted.wait(5)
            assert client.stats["logs_dropped"] == 7
    assert handler.logs == [0, 1, 0]
    assert handler.notes == ["notifications/custom"] * 3


def test_the_module_is_stdlib_only_and_public() -> None:
    assert set(kit.__all__) == {"ClientRefused", "Exchange", "FakeServer", "ToolCall", "ToolError", "text_result"}
    parts = sorted(Path(kit.__file__).parent.glob("*.py"))
    assert len(parts) > 1  # the package's parts, not only its __init__
    for part in parts:
        source = part.read_text()
        for name in ("requests", "jsonschema", "pytest", "freezegun"):
            assert f"import {name}" not in source, part.name


def test_the_package_holds_its_public_names_only() -> None:
    # the parts' aliases and constants are imported from their own modules (shared, call, registry)
    public = {name for name, value in vars(kit).items() if not name.startswith("_") and not isinstance(value, ModuleType)}
    assert public - {"annotations"} == set(kit.__all__)
    assert (shared.LEGACY_VERSION, shared.FORCEABLE) == ("2025-11-25", ("2025-11-25", "2025-06-18"))
    assert shared.SERVER_INFO == {"name": "fake-server", "version": "1"}


def test_requests_with_chosen_ids_and_waiting_for_their_answers() -> None:
    with FakeServer() as fake:
        with fake.client(handler=Handler()) as client:
            client.list_tools()
            fake.send_request(7, "roots/list")
            fake.send_request("7", "elicitation/create", {"mode": "form", "message": "m", "requestedSchema": SEAT})
            fake.send_request("nope", "no/such")
            assert fake.wait_for_answer("7")["result"]["content"] == {"seat": "12A"}
            assert fake.wait_for_answer(7)["result"]["roots"][0]["uri"] == "file:///work"  # 7 and "7" stay apart
            assert fake.wait_for_answer("nope")["error"]["code"] == -32601
            assert [(e.method, e.key) for e in fake.exchanges] == [("roots/list", 7), ("elicitation/create", "7"), ("no/such", "nope")]
            fake.assert_answered("roots/list", count=1)
            fake.assert_refused(-32601, "no/such")
            with pytest.raises(TimeoutError):
                fake.wait_for_answer("never", timeout=0.1)


@pytest.mark.parametrize("era", ERAS)
def test_resources_and_prompts_are_served_in_both_eras(era: str) -> None:
    with FakeServer(era=era) as fake:
        fake.add_resource("file:///notes.txt", "remember the milk", description="notes")
        fake.add_resource("file:///logo.png", blob=b"\x89PNG", mime_type="image/png", name="logo")
        fake.add_prompt("hello", "Say hello.")
        fake.add_prompt(
            "review",
            lambda args: [{"role": "user", "content": {"type": "text", "text": f"Review this {args['language']} code."}}],
            description="a code review",
            arguments=[{"name": "language", "required": True}],
        )
        assert {"resources", "prompts", "tools"} <= set(fake.capabilities)
        with fake.client(handler=Handler()) as client:
            assert {"resources", "prompts"} <= set(client.server_capabilities or {})
            assert client.list_resources() == [
                {"uri": "file:///notes.txt", "name": "notes.txt", "mimeType": "text/plain", "description": "notes"},
                {"uri": "file:///logo.png", "name": "logo", "mimeType": "image/png"},
            ]
            assert client.list_resource_templates() == []
            text = client.read_resource("file:///notes.txt")["contents"]
            assert text == [{"uri": "file:///notes.txt", "mimeType": "text/plain", "text": "remember the milk"}]
            assert client.read_resource("file:///logo.png")["contents"][0]["blob"] == "iVBORw=="
            with pytest.raises(mis.ClientError) as missing:
                client.read_resource("file:///nope")
            assert (missing.value.kind, missing.value.code) == ("remote", -32002)

            assert [p["name"] for p in client.list_prompts()] == ["hello", "review"]
            assert client.list_prompts()[1]["arguments"] == [{"name": "language", "required": True}]
            assert client.get_prompt("hello")["messages"] == [{"role": "user", "content": {"type": "text", "text": "Say hello."}}]
            review = client.get_prompt("review", {"language": "python"})
            assert review["description"] == "a code review"
            assert review["messages"][0]["content"]["text"] == "Review this python code."
            for name, args in (("review", {}), ("nope", {})):
                with pytest.raises(mis.ClientError) as bad:
                    client.get_prompt(name, args)
                assert (bad.value.kind, bad.value.code) == ("remote", -32602)


def test_resource_and_prompt_arguments_are_checked_and_capabilities_kept() -> None:
    with FakeServer(capabilities={"tools": {}}) as fake:
        with pytest.raises(ValueError):
            fake.add_resource("file:///both", "text", blob=b"bytes")
        with pytest.raises(ValueError):
            fake.add_resource("file:///neither")
        fake.add_resource("file:///a", "a")
        fake.add_prompt("p", [{"role": "assistant", "content": {"type": "text", "text": "hi"}}])
        assert fake.capabilities == {"tools": {}}  # capabilities given explicitly are not changed
