"""The legacy era's sans-IO connection alone (``_protocol/legacy_conn.py``): requests and answers in, bytes out.

No client, no thread, no clock: ``now`` is passed in, the budget is a
function, the lock a real one that nothing contends for. Each row is one
server request and what the connection says (as h11's tests feed a
``Connection`` bytes and read its events), then the answers: checked,
encoded, and each request settled exactly once.
"""

from __future__ import annotations

import json
import threading
from typing import Any, Optional, Union

import pytest

from mcp_input_sync._protocol import jsonrpc
from mcp_input_sync._protocol.checks import CheckConfig, InputChecks, Prepared, Refusal
from mcp_input_sync._protocol.legacy_conn import RELATED_TASK, Inbound, LegacyConnection, Said
from mcp_input_sync.handler import CancelToken

FORM = {"message": "Name?", "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}}
URL = {"mode": "url", "message": "Sign in", "url": "https://example.com/login", "elicitationId": "e1"}
SAMPLE = {"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}], "maxTokens": 10}
TIMEOUTS = {"elicitation": 30.0, "sampling": 60.0, "roots": 5.0}


class Budget:
    """Step 4 as the desk gives it: refuses once ``left`` is spent; records what was asked."""

    def __init__(self, left: int = 1000) -> None:
        self.left = left
        self.asked: list[tuple[list[str], float]] = []

    def __call__(self, kinds: list[str], now: float) -> Optional[Refusal]:
        self.asked.append((kinds, now))
        if self.left < len(kinds):
            return Refusal("budget", jsonrpc.SERVER_ERROR, "rate limited: too many input requests", "the option")
        self.left -= len(kinds)
        return None


def connection(
    kinds: frozenset[str] = frozenset({"elicitation", "sampling", "roots"}),
    modes: frozenset[str] = frozenset({"form", "url"}),
    rate: float = float("inf"),
    budget: Optional[Budget] = None,
) -> LegacyConnection:
    """A connection whose client declared ``kinds`` (elicitation ``modes``), at 2025-11-25."""
    checks = InputChecks(CheckConfig(kinds=kinds, modes=modes), rate, 10, 0.0)
    return LegacyConnection(checks, budget or Budget(), TIMEOUTS, CancelToken, threading.Lock())


def wire(data: Optional[bytes]) -> Any:
    assert data is not None and data.endswith(b"\n")
    return json.loads(data)


def admitted(got: Union[Inbound, Said]) -> Inbound:
    assert isinstance(got, Inbound), got
    return got


# ---------------------------------------------------------------------------- requests in


@pytest.mark.parametrize(
    "request_id, method, params, answer, check",
    [
        pytest.param(1, "ping", None, {"jsonrpc": "2.0", "id": 1, "result": {}}, None, id="ping"),
        pytest.param(1.5, "roots/list", None, {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "invalid request id"}}, None, id="an id of no valid type"),
        pytest.param(None, "roots/list", None, {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "invalid request id"}}, None, id="a null id"),
        pytest.param(2, "tools/call", {}, {"jsonrpc": "2.0", "id": 2, "error": {"code": -32601, "message": "method not found: 'tools/call'"}}, "method", id="step 1: not an input method"),
        pytest.param("s", "elicitation/create", [], {"jsonrpc": "2.0", "id": "s", "error": {"code": -32602, "message": "invalid params: params is not an object"}}, "malformed", id="step 3: params not an object"),
        pytest.param(3, "elicitation/create", {"message": "x"}, {"jsonrpc": "2.0", "id": 3, "error": {"code": -32602, "message": "invalid params: requestedSchema missing"}}, "malformed", id="step 3: a form without its schema"),
        pytest.param(4, "sampling/createMessage", dict(SAMPLE, maxTokens=0), {"jsonrpc": "2.0", "id": 4, "error": {"code": -32602, "message": "maxTokens must be an integer of at least 1"}}, "max_tokens", id="step 5: maxTokens below 1"),
        pytest.param(5, "sampling/createMessage", SAMPLE, {"jsonrpc": "2.0", "id": 5, "error": {"code": -1, "message": "sampling refused: no call is in progress"}}, "idle", id="step 5: sampling with no call in flight"),
        pytest.param(6, "elicitation/create", dict(URL, url="http://example.com/"), None, "url", id="step 5: a URL that is not https"),
        pytest.param(7, "elicitation/create", {"message": "x", "requestedSchema": {"type": "array"}}, None, "schema", id="step 5: a schema that is no form"),
    ],
)
def test_what_the_connection_says_instead_of_opening_a_request(
    request_id: Any, method: str, params: Any, answer: Optional[dict[str, Any]], check: Optional[str]
) -> None:
    conn = connection()
    said = conn.receive(request_id, method, params, 1.0, False)
    assert isinstance(said, Said)
    if answer is not None:
        assert wire(said.data) == answer
    else:
        assert wire(said.data)["error"]["code"] == jsonrpc.INVALID_PARAMS
    assert (said.refusal.check if said.refusal is not None else None) == check
    assert len(conn) == 0


def test_an_undeclared_kind_is_refused_at_step_2() -> None:
    said = connection(kinds=frozenset({"elicitation"})).receive(1, "sampling/createMessage", SAMPLE, 1.0, True)
    assert isinstance(said, Said) and said.refusal is not None and said.refusal.check == "capability" and said.kind == "sampling"
    assert wire(said.data)["error"] == {"code": -32601, "message": "client does not support sampling/createMessage"}


def test_an_undeclared_elicitation_mode_is_refused() -> None:
    said = connection(modes=frozenset({"form"})).receive(1, "elicitation/create", URL, 1.0, True)
    assert isinstance(said, Said) and said.refusal is not None and said.refusal.check == "capability"


def test_a_request_that_passes_is_opened_with_what_its_callback_needs_and_its_deadline() -> None:
    conn = connection()
    entry = admitted(conn.receive(7, "elicitation/create", FORM, 100.0, True))
    assert (entry.id, entry.method, entry.kind, entry.limit, entry.at, entry.done) == (7, "elicitation/create", "elicitation", 30.0, 130.0, False)
    assert isinstance(entry.prepared, Prepared) and entry.prepared.mode == "form" and entry.prepared.params is FORM
    assert isinstance(entry.token, CancelToken) and entry.call is None and entry.task_id is None
    assert str(entry) == "elicitation/create 7"
    assert conn.is_open(7) and not conn.is_open("7") and conn.get(7) is entry and len(conn) == 1


def test_a_sampling_request_while_a_call_is_in_flight_is_opened_clamped() -> None:
    entry = admitted(connection().receive(1, "sampling/createMessage", dict(SAMPLE, maxTokens=10**9), 0.0, True))
    assert entry.prepared.params["maxTokens"] == 4096


def test_an_id_reused_while_open_is_dropped_and_a_string_id_is_another_id() -> None:
    conn = connection()
    first = admitted(conn.receive(1, "roots/list", None, 0.0, False))
    again = conn.receive(1, "roots/list", None, 0.0, False)
    assert isinstance(again, Said) and again.data is None and "reused" in again.warning
    assert admitted(conn.receive("1", "roots/list", None, 0.0, False)) is not first
    assert conn.get(1) is first and len(conn) == 2


def test_the_budget_is_taken_after_steps_1_to_3_and_refuses_generically() -> None:
    budget = Budget(left=1)
    conn = connection(rate=1.0, budget=budget)
    assert isinstance(conn.receive(1, "tools/call", {}, 5.0, True), Said)  # step 1: no token taken
    assert budget.asked == []
    admitted(conn.receive(2, "elicitation/create", FORM, 5.0, True))
    said = conn.receive(3, "elicitation/create", FORM, 6.0, True)
    assert isinstance(said, Said) and said.refusal is not None and said.refusal.check == "budget"
    assert said.refusal.detail == "the option"  # for the log; the wire has the generic message
    assert wire(said.data)["error"] == {"code": -32000, "message": "rate limited: too many input requests"}
    assert budget.asked == [(["elicitation"], 5.0), (["elicitation"], 6.0)]


def test_an_unlimited_rate_never_asks_the_budget() -> None:
    budget = Budget(left=0)
    admitted(connection(budget=budget).receive(1, "elicitation/create", FORM, 0.0, True))
    assert budget.asked == []


def test_busy_is_step_6_after_every_other_check_and_nothing_is_opened() -> None:
    conn = connection()
    said = conn.receive(1, "elicitation/create", FORM, 0.0, True, busy=True)
    assert isinstance(said, Said) and said.refusal is not None and said.refusal.check == "busy" and said.kind == "elicitation"
    assert wire(said.data)["error"] == {"code": -32000, "message": "busy: too many requests in flight"}
    bad = conn.receive(2, "tools/call", {}, 0.0, True, busy=True)
    assert isinstance(bad, Said) and bad.refusal is not None and bad.refusal.check == "method"  # an earlier step decides
    assert len(conn) == 0


def test_a_tasks_request_carries_its_task_and_its_answer_carries_the_related_task_meta() -> None:
    conn = connection()
    params = dict(FORM, _meta={RELATED_TASK: {"taskId": "t-1"}})
    entry = admitted(conn.receive(1, "elicitation/create", params, 0.0, True))
    assert entry.task_id == "t-1"
    out = wire(conn.answer(entry, {"action": "accept", "content": {"name": "ada"}, "_meta": {"mine": 1}}))
    # the answer check keeps an elicitation's action and content only; the task's _meta is the connection's
    assert out["result"] == {"action": "accept", "content": {"name": "ada"}, "_meta": {RELATED_TASK: {"taskId": "t-1"}}}
    roots = admitted(conn.receive(2, "roots/list", {"_meta": {RELATED_TASK: {"taskId": "t-1"}}}, 0.0, True))
    got = wire(conn.answer(roots, {"roots": [], "_meta": {"mine": 1}}))["result"]
    assert got == {"roots": [], "_meta": {"mine": 1, RELATED_TASK: {"taskId": "t-1"}}}  # kept, and the task's added


@pytest.mark.parametrize("meta", [{"x": 1}, {RELATED_TASK: "t"}, {RELATED_TASK: {"taskId": 5}}, "not a dict"])
def test_a_related_task_that_is_not_one_is_no_task(meta: Any) -> None:
    entry = admitted(connection().receive(1, "roots/list", {"_meta": meta}, 0.0, False))
    assert entry.task_id is None


def test_a_closing_connection_answers_closing_and_opens_nothing() -> None:
    conn = connection()
    first = admitted(conn.receive(1, "roots/list", None, 0.0, False))
    assert conn.close() == [first]
    said = conn.receive(2, "roots/list", None, 0.0, False)
    assert isinstance(said, Said) and wire(said.data)["error"] == {"code": -32603, "message": "the client is closing"}
    assert conn.closing and conn.open_requests() == [first]  # still open: the engine answers it


# ---------------------------------------------------------------------------- answers out


def test_an_answer_is_checked_encoded_and_settles_its_request_once() -> None:
    conn = connection()
    entry = admitted(conn.receive(9, "elicitation/create", FORM, 0.0, True))
    data = conn.answer(entry, {"action": "accept", "content": {"name": "ada"}, "extra": "dropped"})
    assert isinstance(data, bytes) and data.endswith(b"\n")
    assert wire(data) == {"jsonrpc": "2.0", "id": 9, "result": {"action": "accept", "content": {"name": "ada"}}}
    assert entry.done and not conn.is_open(9)
    assert conn.answer(entry, {"action": "decline"}) is None  # a late second answer is dropped
    assert conn.fail(entry, -32603, "late") is None


@pytest.mark.parametrize(
    "value, detail",
    [
        ({"action": "maybe"}, "action 'maybe'"),
        ("not a dict", "not a dict"),
        ({"action": "accept", "content": {"name": 5}}, None),
    ],
)
def test_an_answer_the_check_refuses_leaves_the_request_open_for_its_error(value: Any, detail: Optional[str]) -> None:
    conn = connection()
    entry = admitted(conn.receive(1, "elicitation/create", FORM, 0.0, True))
    refused = conn.answer(entry, value)
    assert isinstance(refused, Refusal) and refused.check == "answer" and refused.code == -32603
    if detail is not None:
        assert refused.detail == detail
    assert conn.is_open(1)
    assert wire(conn.fail(entry, refused.code, refused.message))["error"] == {"code": -32603, "message": "the input handler returned an invalid answer"}
    assert not conn.is_open(1)


def test_an_answer_json_cannot_carry_is_refused_as_invalid() -> None:
    conn = connection()
    entry = admitted(conn.receive(1, "sampling/createMessage", SAMPLE, 0.0, True))
    refused = conn.answer(entry, {"role": "assistant", "content": {"type": "text", "text": "x"}, "model": "m", "junk": {1, 2}})
    assert isinstance(refused, Refusal) and refused.detail == "not JSON-serialisable" and conn.is_open(1)


def test_an_error_answer_carries_its_data_unless_json_cannot() -> None:
    conn = connection()
    one = admitted(conn.receive(1, "roots/list", None, 0.0, False))
    two = admitted(conn.receive(2, "roots/list", None, 0.0, False))
    assert wire(conn.fail(one, -1, "declined", {"why": "no"}))["error"] == {"code": -1, "message": "declined", "data": {"why": "no"}}
    assert wire(conn.fail(two, -1, "declined", {"why": object()}))["error"] == {"code": -1, "message": "declined"}


def test_a_cancelled_request_gets_no_answer_and_only_valid_ids_can_be_cancelled() -> None:
    conn = connection()
    entry = admitted(conn.receive("c", "roots/list", None, 0.0, False))
    assert conn.cancelled(["c"]) is None and conn.cancelled(None) is None
    assert conn.cancelled("c") is entry and entry.done
    assert conn.cancelled("c") is None
    assert conn.answer(entry, {"roots": []}) is None and conn.fail(entry, -32603, "x") is None


def test_a_late_answer_to_an_id_the_server_used_again_leaves_the_new_request_open() -> None:
    conn = connection()
    first = admitted(conn.receive(0, "roots/list", None, 0.0, False))
    assert wire(conn.answer(first, {"roots": []}))["result"] == {"roots": []}
    second = admitted(conn.receive(0, "roots/list", None, 1.0, False))  # a finished id may come again
    assert conn.answer(first, {"roots": []}) is None  # the first's late answer
    assert conn.fail(first, -32603, "timed out") is None
    assert conn.get(0) is second
    assert conn.answer(second, {"roots": []}) is not None and len(conn) == 0


def test_an_expired_request_calls_its_expiry_once_set() -> None:
    entry = admitted(connection().receive(1, "roots/list", None, 0.0, False))
    entry.expired()  # nothing set: nothing happens
    seen: list[Inbound] = []
    entry.on_expiry = seen.append
    entry.expired()
    assert seen == [entry]
