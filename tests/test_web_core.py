"""The web bridge's framework-neutral core: the broker, WebHandler, and real client calls parked for a person."""

from __future__ import annotations

import json
import threading
import time
from typing import Any, Callable, Iterator, Optional

import pytest

import mcp_input_sync as mis
from mcp_input_sync.web import InputNotFound, PendingInput, PendingInputBroker, WebElicitationHandler, WebHandler, field_errors
from mcp_input_sync._protocol.forms import compile_form

from mcp_input_sync.testing import FakeServer, ToolCall
from mcp_input_sync.testing.shared import ToolResult

from .harness import ask, recorded_server, schema_errors

JsonDict = dict[str, Any]

FORM: JsonDict = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Your name", "minLength": 2, "default": "Ada"},
        "email": {"type": "string", "format": "email"},
        "age": {"type": "integer", "minimum": 18, "maximum": 130},
        "ratio": {"type": "number", "minimum": 0, "maximum": 1},
        "agree": {"type": "boolean", "default": False},
        "size": {"type": "string", "enum": ["s", "m", "l"], "enumNames": ["Small", "Medium", "Large"]},
        "plan": {"type": "string", "oneOf": [{"const": "free", "title": "Free"}, {"const": "pro", "title": "Pro <b>"}]},
        "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b", "c"]}, "maxItems": 2},
        "days": {"type": "array", "items": {"anyOf": [{"const": "mon", "title": "Monday"}, {"const": "tue", "title": "Tuesday"}]}},
        "when": {"type": "string", "format": "date-time"},
        "day": {"type": "string", "format": "date"},
        "site": {"type": "string", "format": "uri"},
        "pin": {"type": "string", "description": "Enter your PIN"},
        "code": {"type": "string", "pattern": "^[A-Z]{3}$"},
    },
    "required": ["name", "age", "plan"],
}

URL_PARAMS: JsonDict = {
    "mode": "url",
    "message": "Connect your calendar",
    "url": "https://calendar.example/connect?x=<1>",
    "elicitationId": "e-1",
}


Tool = Callable[[ToolCall], ToolResult]


def asking(method: str, params: JsonDict) -> Tool:
    """A kit tool that asks the client once and returns the response (result or error) as JSON text."""

    def tool(call: ToolCall) -> ToolResult:
        return json.dumps(ask(call, method, params))

    return tool


TOOLS: dict[str, Tool] = {
    "form": asking("elicitation/create", {"mode": "form", "message": "Tell us <who> you are", "requestedSchema": FORM}),
    "url": asking("elicitation/create", URL_PARAMS),
    "sample": asking(
        "sampling/createMessage",
        {"messages": [{"role": "user", "content": {"type": "text", "text": "Say <hi>"}}], "maxTokens": 50, "systemPrompt": "Be brief"},
    ),
}


class Background:
    """A client call running on its own thread."""

    def __init__(self, call: Callable[[], JsonDict]) -> None:
        self.result: Optional[JsonDict] = None
        self.error: Optional[BaseException] = None
        self._thread = threading.Thread(target=self._run, args=(call,), daemon=True)
        self._thread.start()

    def _run(self, call: Callable[[], JsonDict]) -> None:
        try:
            self.result = call()
        except BaseException as exc:  # noqa: BLE001 - reported to the test
            self.error = exc

    def join(self, timeout: float = 10.0) -> JsonDict:
        self._thread.join(timeout)
        assert not self._thread.is_alive(), "the call did not finish"
        if self.error is not None:
            raise self.error
        assert self.result is not None
        return self.result

    def answer(self) -> JsonDict:
        """The server's view of the client's response (``{"result": ...}`` or ``{"error": ...}``)."""
        result = self.join()
        parsed: JsonDict = json.loads(result["content"][0]["text"])
        return parsed


def wait_pending(broker: PendingInputBroker, user: str, count: int = 1, timeout: float = 5.0) -> list[PendingInput]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = broker.pending(user)
        if len(found) >= count:
            return found
        time.sleep(0.01)
    raise AssertionError(f"no pending input for {user!r}")


def wait_empty(broker: PendingInputBroker, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while len(broker) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(broker) == 0


def web_server() -> FakeServer:
    """The kit's legacy fake serving ``TOOLS`` (waits bounded at 30 s); see ``harness.schema_errors``."""
    fake = recorded_server(timeout=30.0)
    for name, tool in TOOLS.items():
        fake.add_tool(name, tool)
    return fake


@pytest.fixture
def server() -> Iterator[FakeServer]:
    fake = web_server()
    yield fake
    fake.close()
    assert schema_errors(fake) == []


def web_client(server: FakeServer, handler: mis.InputHandler, **options: Any) -> mis.Client:
    return mis.Client(server.transport, handler=handler, elicitation={"origin": "https://calendar.example"}, **options)


VALID: JsonDict = {"name": "Grace", "age": 40, "plan": "pro"}


# ---------------------------------------------------------------------------- the broker alone


def parked(broker: PendingInputBroker, kind: str = "form", user: str = "alice", params: Optional[JsonDict] = None) -> PendingInput:
    if params is None:
        params = {"message": "m", "requestedSchema": FORM} if kind == "form" else dict(URL_PARAMS) if kind == "url" else {"messages": [], "maxTokens": 5}
    pending = PendingInput(id=f"id-{kind}-{user}", kind=kind, params=params, user=user, created=time.time())
    broker.park(pending, model="reviewer")
    return pending


def test_only_the_owner_sees_and_answers() -> None:
    broker = PendingInputBroker()
    pending = parked(broker)
    assert broker.pending("alice") == [pending]
    assert broker.pending("bob") == []
    assert broker.get(pending.id, "alice") is pending
    for who in ("bob", None, "Alice", "alice "):
        with pytest.raises(InputNotFound):
            broker.get(pending.id, who)
        with pytest.raises(InputNotFound):
            broker.answer(pending.id, who, {"action": "accept", "content": VALID})
    with pytest.raises(InputNotFound):
        broker.get("nope", "alice")
    assert broker.answer(pending.id, "alice", {"action": "accept", "content": VALID}) == {}
    # answered: gone from the pages, and it cannot be answered twice
    assert broker.pending("alice") == []
    with pytest.raises(InputNotFound):
        broker.answer(pending.id, "alice", {"action": "decline"})
    assert broker.wait(pending.id, 0) == {"action": "accept", "content": VALID}
    assert broker.withdraw(pending.id) == {"action": "accept", "content": VALID}
    assert len(broker) == 0


def test_any_user_id_works() -> None:
    broker = PendingInputBroker()
    pending = parked(broker, user="josé ✓")
    assert broker.get(pending.id, "josé ✓") is pending
    with pytest.raises(InputNotFound):
        broker.get(pending.id, "jose")
    with pytest.raises(InputNotFound):
        broker.get(123, "josé ✓")  # type: ignore[arg-type]


def test_form_answers_are_checked_per_field() -> None:
    broker = PendingInputBroker()
    pending = parked(broker)
    bad = {"name": "A", "age": 12, "email": "nope", "tags": ["a", "b", "c"], "when": "yesterday", "code": "abc", "size": "xl"}
    errors = broker.answer(pending.id, "alice", {"action": "accept", "content": bad})
    assert errors == {
        "name": "is shorter than 2",
        "age": "is below the minimum 18",
        "email": "is not a valid email",
        "tags": "has more than 2 choices",
        "when": "is not a valid date-time",
        "code": "does not match the pattern",
        "size": "is not one of the allowed values",
        "plan": "is required",
    }
    assert broker.pending("alice") == [pending]  # still waiting
    assert broker.answer(pending.id, "alice", {"action": "bogus"}) == {"__all__": "choose accept, decline or cancel"}
    assert broker.answer(pending.id, "alice", {"action": "accept", "content": "x"}) == {"__all__": "the answer is not an object"}
    assert broker.answer(pending.id, "alice", {"action": "decline", "content": {"ignored": 1}}) == {}
    assert broker.wait(pending.id, 0) == {"action": "decline"}


def test_field_errors_agree_with_the_library_check() -> None:
    form = compile_form({**FORM, "additionalProperties": False})
    assert field_errors(form, VALID) == {}
    assert form.check_content(VALID) is None
    assert field_errors(form, {**VALID, "extra": 1}) == {"extra": "is not in the form"}
    assert form.check_content({**VALID, "extra": 1}) is not None
    assert field_errors(form, None) == {"name": "is required", "age": "is required", "plan": "is required"}


def test_url_and_sampling_answers() -> None:
    broker = PendingInputBroker()
    url = parked(broker, "url")
    assert broker.answer(url.id, "alice", {"action": "accept", "content": {}}) == {"__all__": "a URL accept carries no content"}
    assert broker.answer(url.id, "alice", {"action": "accept"}) == {}
    assert broker.wait(url.id, 0) == {"action": "accept"}
    sampling = parked(broker, "sampling")
    assert broker.answer(sampling.id, "alice", {"action": "approve", "text": "  "}) == {"text": "a reply is required to approve"}
    assert broker.answer(sampling.id, "alice", {"action": "maybe"}) == {"__all__": "choose approve or reject"}
    assert broker.answer(sampling.id, "alice", {"action": "approve", "text": "Hi"}) == {}
    assert broker.wait(sampling.id, 0) == {
        "role": "assistant",
        "content": {"type": "text", "text": "Hi"},
        "model": "reviewer",
        "stopReason": "endTurn",
    }


def test_park_refuses_a_duplicate_id_and_calls_the_hook() -> None:
    seen: list[PendingInput] = []
    broker = PendingInputBroker(on_park=seen.append)
    pending = parked(broker)
    assert seen == [pending]
    with pytest.raises(ValueError):
        broker.park(pending)


def test_threads_answer_once() -> None:
    broker = PendingInputBroker()
    pending = parked(broker)
    outcomes: list[str] = []
    lock = threading.Lock()

    def answer() -> None:
        try:
            broker.answer(pending.id, "alice", {"action": "accept", "content": VALID})
            outcome = "ok"
        except InputNotFound:
            outcome = "gone"
        with lock:
            outcomes.append(outcome)

    threads = [threading.Thread(target=answer) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["gone"] * 15 + ["ok"]


# ---------------------------------------------------------------------------- WebHandler with a real client


def test_form_flow_through_a_real_client(server: FakeServer) -> None:
    broker = PendingInputBroker()
    with web_client(server, WebHandler(broker)) as client:
        call = Background(lambda: client.call_tool("form", assigns={"user": "alice"}))
        (pending,) = wait_pending(broker, "alice")
        assert pending.kind == "form" and pending.server_id == client.server_id
        assert pending.message == "Tell us <who> you are"
        assert pending.fields is not None and pending.sensitive("pin") and not pending.sensitive("name")
        assert broker.pending("bob") == []
        assert broker.answer(pending.id, "alice", {"action": "accept", "content": {"name": "G"}}) != {}
        assert broker.answer(pending.id, "alice", {"action": "accept", "content": VALID}) == {}
        assert call.answer() == {"result": {"action": "accept", "content": VALID}}
    assert len(broker) == 0


def test_url_flow_carries_the_url_facts(server: FakeServer) -> None:
    broker = PendingInputBroker()
    with web_client(server, WebElicitationHandler(broker), assigns={"user": 7}) as client:
        call = Background(lambda: client.call_tool("url"))
        (pending,) = wait_pending(broker, "7")
        assert (pending.kind, pending.url, pending.host) == ("url", URL_PARAMS["url"], "calendar.example")
        assert pending.idn is False and pending.origin_mismatch is False
        assert broker.answer(pending.id, 7, {"action": "accept"}) == {}
        assert call.answer() == {"result": {"action": "accept"}}


def test_sampling_approval_and_rejection(server: FakeServer) -> None:
    broker = PendingInputBroker()
    drafts: list[JsonDict] = []

    def draft(params: JsonDict, ctx: mis.InputContext) -> str:
        drafts.append(params)
        return "Hi there"

    with web_client(server, WebHandler(broker, draft=draft, model="gpt-x"), assigns={"user": "alice"}) as client:
        call = Background(lambda: client.call_tool("sample"))
        (pending,) = wait_pending(broker, "alice")
        assert pending.kind == "sampling" and pending.draft == "Hi there" and len(drafts) == 1
        assert broker.answer(pending.id, "alice", {"action": "approve", "text": "Hello!"}) == {}
        result = call.answer()["result"]
        assert result["content"] == {"type": "text", "text": "Hello!"} and result["model"] == "gpt-x"

        call = Background(lambda: client.call_tool("sample"))
        (pending,) = wait_pending(broker, "alice")
        assert broker.answer(pending.id, "alice", {"action": "reject"}) == {}
        assert call.answer()["error"]["code"] == -1


def test_a_sampler_drafts_the_reply_the_person_approves_under_the_providers_model(server: FakeServer) -> None:
    broker = PendingInputBroker()

    def sampler(params: JsonDict, ctx: mis.InputContext) -> JsonDict:
        return {"role": "assistant", "content": {"type": "text", "text": "From the model"}, "model": "gpt-4.1-2026", "stopReason": "endTurn"}

    with web_client(server, WebHandler(broker, sampler=sampler), assigns={"user": "alice"}) as client:
        call = Background(lambda: client.call_tool("sample"))
        (pending,) = wait_pending(broker, "alice")
        assert pending.draft == "From the model"
        assert broker.answer(pending.id, "alice", {"action": "approve", "text": "From the model, checked"}) == {}
        result = call.answer()["result"]
        assert result["content"]["text"] == "From the model, checked" and result["model"] == "gpt-4.1-2026"


def test_an_elicitation_handler_offers_no_sampling(server: FakeServer) -> None:
    broker = PendingInputBroker()
    with web_client(server, WebElicitationHandler(broker), assigns={"user": "alice"}) as client:
        assert Background(lambda: client.call_tool("sample")).answer()["error"]["code"] == -32601


def test_the_library_handler_timeout_withdraws_the_input(server: FakeServer) -> None:
    broker = PendingInputBroker()
    with web_client(server, WebHandler(broker), assigns={"user": "alice"}, handler_timeout={"elicitation": 0.3}) as client:
        started = time.monotonic()
        call = Background(lambda: client.call_tool("form"))
        (pending,) = wait_pending(broker, "alice")
        assert call.answer()["error"]["code"] == -32603
        wait_empty(broker)
        assert time.monotonic() - started < 5
        with pytest.raises(InputNotFound):
            broker.answer(pending.id, "alice", {"action": "accept", "content": VALID})


def test_the_handlers_own_timeout_cancels(server: FakeServer) -> None:
    broker = PendingInputBroker()
    with web_client(server, WebHandler(broker, timeout=0.2), assigns={"user": "alice"}) as client:
        call = Background(lambda: client.call_tool("form"))
        (pending,) = wait_pending(broker, "alice")
        assert pending.expires is not None and pending.expires > pending.created
        assert call.answer() == {"result": {"action": "cancel"}}
        call = Background(lambda: client.call_tool("sample"))
        assert call.answer()["error"]["code"] == -1
    assert len(broker) == 0


def test_a_cancelled_call_withdraws_the_input(server: FakeServer) -> None:
    broker = PendingInputBroker()
    cancel = threading.Event()
    with web_client(server, WebHandler(broker), assigns={"user": "alice"}) as client:
        call = Background(lambda: client.call_tool("form", cancel=cancel))
        wait_pending(broker, "alice")
        cancel.set()
        with pytest.raises(mis.ClientError) as err:
            call.join()
        assert err.value.kind == "cancelled"
        wait_empty(broker)


def test_closing_the_client_withdraws_the_input(server: FakeServer) -> None:
    broker = PendingInputBroker()
    client = web_client(server, WebHandler(broker), assigns={"user": "alice"})
    client.open()
    call = Background(lambda: client.call_tool("form"))
    wait_pending(broker, "alice")
    client.close()
    with pytest.raises(mis.ClientError):
        call.join()
    wait_empty(broker)


def test_no_user_means_no_one_to_ask(server: FakeServer) -> None:
    broker = PendingInputBroker()
    with web_client(server, WebHandler(broker)) as client:
        assert Background(lambda: client.call_tool("form")).answer() == {"result": {"action": "decline"}}
        assert Background(lambda: client.call_tool("sample", assigns={"user": None})).answer()["error"]["code"] == -1
    assert len(broker) == 0


def test_handler_arguments_are_checked() -> None:
    with pytest.raises(ValueError):
        WebHandler(PendingInputBroker(), timeout=0)
    assert WebHandler(PendingInputBroker(), modes=("form",)).elicitation_modes() == ("form",)


def test_a_modern_era_round_is_parked_too() -> None:
    testing = pytest.importorskip("mcp_input_sync.testing")
    broker = PendingInputBroker()
    with testing.FakeServer(era="modern") as fake:

        @fake.tool
        def book(call: Any) -> str:
            answer = call.elicit("Which seat?", {"type": "object", "properties": {"seat": {"type": "string", "minLength": 2}}, "required": ["seat"]})
            return f"{answer['action']} {(answer.get('content') or {}).get('seat')}"

        with fake.client(handler=WebHandler(broker), assigns={"user": "alice"}) as client:
            assert client.era == "modern"
            call = Background(lambda: client.call_tool("book"))
            (pending,) = wait_pending(broker, "alice")
            assert pending.message == "Which seat?"
            assert broker.answer(pending.id, "alice", {"action": "accept", "content": {"seat": "1"}}) == {"seat": "is shorter than 2"}
            assert broker.answer(pending.id, "alice", {"action": "accept", "content": {"seat": "12A"}}) == {}
            assert call.join()["content"][0]["text"] == "accept 12A"
    assert len(broker) == 0
