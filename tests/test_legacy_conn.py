"""The legacy era's sans-IO connection alone (``_protocol/legacy_conn.py``): requests and answers in, bytes out.

No client, no thread, no clock: ``now`` is passed in, the budget is a
function (the real ``InputChecks.budget``, or a recording fake), the lock a
real one that nothing contends for. As h11's tests feed a ``Connection``
bytes and read its events, each row here is one server request, or one
answer, and exactly what the connection returns:

* ``REQUESTS``: a request the connection does not open, and the exact bytes
  it says instead (ping, an invalid id, a duplicate, each refusal of
  docs/reference.md#order-of-checks in its order, closing), with the
  refusal's check and kind for the engine to count and log;
* ``OPENED``: a request it opens, and the entry the callback gets;
* ``ANSWERS`` and ``FAILURES``: a callback's answer or error, and the exact
  bytes (or the refusal of step 8);
* ``SCRIPTS``: conversations of requests, answers, errors, cancels and a
  close, each step with what the connection returns: every request is
  settled exactly once, a late answer (also to an id the server used again)
  is dropped.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from typing import Any, Optional, Union

import pytest

from mcp_input_sync._protocol import jsonrpc
from mcp_input_sync._protocol.checks import CheckConfig, InputChecks, Prepared, Refusal
from mcp_input_sync._protocol.legacy_conn import RELATED_TASK, Inbound, LegacyConnection, Said
from mcp_input_sync.handler import CancelToken

FORM = {"message": "Name?", "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}}
URL = {"mode": "url", "message": "Sign in", "url": "https://example.com/login", "elicitationId": "e1"}
SAMPLE = {"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}], "maxTokens": 10}
TOOL_TURN = {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {}}]}
TOOL_RESULT = {"role": "user", "content": [{"type": "tool_result", "toolUseId": "t", "content": []}]}
TIMEOUTS = {"elicitation": 30.0, "sampling": 60.0, "roots": 5.0}
ALL_KINDS = frozenset({"elicitation", "sampling", "roots"})


class Budget:
    """Step 4 as a recording fake: refuses once ``left`` is spent; records what was asked."""

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
    kinds: frozenset[str] = ALL_KINDS,
    modes: frozenset[str] = frozenset({"form", "url"}),
    rate: float = float("inf"),
    budget: Optional[Budget] = None,
    burst: int = 10,
    **config: Any,
) -> LegacyConnection:
    """A connection whose client declared ``kinds`` (elicitation ``modes``), at 2025-11-25.

    ``budget``: a recording fake for step 4; without one, the checks' own
    token bucket (``rate`` per second, ``burst``, full at time 0).
    ``config``: other :class:`CheckConfig` fields (``rejection_code``, ``allow_idle``, ...).
    """
    checks = InputChecks(CheckConfig(kinds=kinds, modes=modes, **config), rate, burst, 0.0)
    return LegacyConnection(checks, checks.budget if budget is None else budget, TIMEOUTS, CancelToken, threading.Lock())


def wire(data: Optional[bytes]) -> Any:
    assert data is not None and data.endswith(b"\n")
    return json.loads(data)


def admitted(got: Union[Inbound, Said]) -> Inbound:
    assert isinstance(got, Inbound), got
    return got


def error_bytes(request_id: Any, code: int, message: str) -> bytes:
    """One error answer as the connection writes it: compact JSON, ASCII, one line."""
    return (json.dumps({"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}, separators=(",", ":")) + "\n").encode()


def result_bytes(request_id: Any, result: Any) -> bytes:
    return (json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}, separators=(",", ":")) + "\n").encode()


# ---------------------------------------------------------------------------- requests the connection does not open


@dataclass
class Row:
    """One server request and what the connection says instead of opening it."""

    request_id: Any
    method: str
    params: Any
    data: Optional[bytes]  # the exact bytes to write (None: nothing)
    check: Optional[str] = None  # the refusal's check, for the engine to count and log
    kind: str = ""  # the refusal's kind ("other" for a method that is no input request)
    warning: bool = False  # something for the local log
    client: dict[str, Any] = field(default_factory=dict)  # connection() arguments
    before: tuple[Any, ...] = ()  # ids of roots/list requests opened first
    in_flight: bool = True  # a call of the client is in flight
    busy: bool = False  # every worker slot is held
    closing: bool = False  # close() was called first


INVALID = error_bytes(None, -32600, "invalid request id")
SPENT = {"rate": 1e-9, "burst": 1}  # one token, spent by the request opened ``before``

REQUESTS = [
    # the request id: only an int or a string, else answered -32600 without an id
    pytest.param(Row(1.5, "elicitation/create", FORM, INVALID, warning=True), id="id: a float"),
    pytest.param(Row(None, "ping", None, INVALID, warning=True), id="id: null"),
    pytest.param(Row(True, "roots/list", None, INVALID, warning=True), id="id: true is no int"),
    pytest.param(Row([1], "roots/list", None, INVALID, warning=True), id="id: a list"),
    pytest.param(Row({"a": 1}, "tools/call", {}, INVALID, warning=True), id="id: an object, before step 1"),
    # a duplicate of an open id: dropped, nothing written, before any check (and before ping)
    pytest.param(Row(1, "roots/list", None, None, warning=True, before=(1,)), id="duplicate of an open id"),
    pytest.param(Row(1, "ping", None, None, warning=True, before=(1,)), id="duplicate: a ping reusing an open id"),
    pytest.param(Row(1, "tools/call", {}, None, warning=True, before=(1,)), id="duplicate: before step 1"),
    pytest.param(Row(1, "roots/list", None, None, warning=True, before=(1,), closing=True), id="duplicate: also while closing"),
    # ping: answered at once, without a check, a token or a slot
    pytest.param(Row(1, "ping", None, result_bytes(1, {})), id="ping"),
    pytest.param(Row("p", "ping", {}, result_bytes("p", {}), busy=True, in_flight=False), id="ping: a string id, every slot held"),
    pytest.param(Row("\u00e9", "ping", None, b'{"jsonrpc":"2.0","id":"\\u00e9","result":{}}\n'), id="ping: the id written in ASCII"),
    pytest.param(Row(2, "ping", None, result_bytes(2, {}), client=SPENT, before=(9,)), id="ping: the budget spent"),
    # step 1: method
    pytest.param(Row(2, "tools/call", {}, error_bytes(2, -32601, "method not found: 'tools/call'"), "method", "other"), id="step 1: not an input method"),
    pytest.param(
        Row(2, "tools/call\u202e", {}, error_bytes(2, -32601, "method not found: 'tools/call\\u202e'"), "method", "other"),
        id="step 1: the method quoted in ASCII",
    ),
    pytest.param(
        Row(2, "tools/call", [], error_bytes(2, -32601, "method not found: 'tools/call'"), "method", "other", client={"kinds": frozenset()}),
        id="step 1 before step 2",
    ),
    # step 2: capability (the kind declared)
    pytest.param(
        Row(3, "sampling/createMessage", SAMPLE, error_bytes(3, -32601, "client does not support sampling/createMessage"), "capability", "sampling",
            client={"kinds": frozenset({"elicitation"})}),
        id="step 2: sampling not declared",
    ),
    pytest.param(
        Row(3, "roots/list", None, error_bytes(3, -32601, "client does not support roots/list"), "capability", "roots", client={"kinds": frozenset()}),
        id="step 2: roots not declared",
    ),
    pytest.param(
        Row(3, "sampling/createMessage", [], error_bytes(3, -32601, "client does not support sampling/createMessage"), "capability", "sampling",
            client={"kinds": frozenset({"roots"})}),
        id="step 2 before step 3",
    ),
    # step 3: malformed params, then the declared capability's details
    pytest.param(
        Row("s", "elicitation/create", [], error_bytes("s", -32602, "invalid params: params is not an object"), "malformed", "elicitation"),
        id="step 3: params not an object",
    ),
    pytest.param(
        Row("s", "elicitation/create", None, error_bytes("s", -32602, "invalid params: params missing"), "malformed", "elicitation"),
        id="step 3: params missing",
    ),
    pytest.param(
        Row(4, "elicitation/create", {"message": "x"}, error_bytes(4, -32602, "invalid params: requestedSchema missing"), "malformed", "elicitation"),
        id="step 3: a form without its schema",
    ),
    pytest.param(
        Row(4, "elicitation/create", {k: v for k, v in URL.items() if k != "elicitationId"},
            error_bytes(4, -32602, "invalid params: elicitationId missing"), "malformed", "elicitation"),
        id="step 3: a URL elicitation without its elicitationId",
    ),
    pytest.param(
        Row(4, "sampling/createMessage", {"maxTokens": 1}, error_bytes(4, -32602, "invalid params: messages missing"), "malformed", "sampling"),
        id="step 3: sampling without messages",
    ),
    pytest.param(
        Row(4, "roots/list", [], error_bytes(4, -32602, "invalid params: params is not an object"), "malformed", "roots"),
        id="step 3: roots with params not an object",
    ),
    pytest.param(
        Row(5, "elicitation/create", URL, error_bytes(5, -32602, "elicitation mode not supported by this client"), "capability", "elicitation",
            client={"modes": frozenset({"form"})}),
        id="step 3: an undeclared elicitation mode",
    ),
    pytest.param(
        Row(5, "elicitation/create", dict(FORM, mode="weird"), error_bytes(5, -32602, "elicitation mode not supported by this client"), "capability",
            "elicitation"),
        id="step 3: an unknown elicitation mode",
    ),
    pytest.param(
        Row(5, "sampling/createMessage", dict(SAMPLE, tools=[]), error_bytes(5, -32602, "sampling with tools is not supported by this client"),
            "capability", "sampling"),
        id="step 3: sampling tools not declared",
    ),
    pytest.param(
        Row(5, "sampling/createMessage", dict(SAMPLE, toolChoice={"mode": "auto"}),
            error_bytes(5, -32602, "sampling with tools is not supported by this client"), "capability", "sampling"),
        id="step 3: a toolChoice without sampling tools",
    ),
    pytest.param(
        Row(5, "elicitation/create", {"mode": "url"}, error_bytes(5, -32602, "invalid params: message missing"), "malformed", "elicitation",
            client={"modes": frozenset({"form"})}),
        id="step 3: malformed before the mode",
    ),
    pytest.param(
        Row(5, "elicitation/create", {"message": "x"}, error_bytes(5, -32602, "invalid params: requestedSchema missing"), "malformed", "elicitation",
            client=SPENT, before=(9,)),
        id="step 3 before step 4",
    ),
    # step 4: the budget (the burst spent by the request opened before)
    pytest.param(
        Row(6, "elicitation/create", FORM, error_bytes(6, -32000, "rate limited: too many input requests"), "budget", "elicitation",
            client=SPENT, before=(9,)),
        id="step 4: elicitation over the budget",
    ),
    pytest.param(
        Row(6, "roots/list", None, error_bytes(6, -32000, "rate limited: too many input requests"), "budget", "roots", client=SPENT, before=(9,)),
        id="step 4: roots over the budget",
    ),
    pytest.param(
        Row(6, "sampling/createMessage", SAMPLE, error_bytes(6, -1, "rate limited: too many input requests"), "budget", "sampling",
            client=SPENT, before=(9,)),
        id="step 4: sampling over the budget gets the rejection code",
    ),
    pytest.param(
        Row(6, "sampling/createMessage", SAMPLE, error_bytes(6, -32099, "rate limited: too many input requests"), "budget", "sampling",
            client=dict(SPENT, rejection_code=-32099), before=(9,)),
        id="step 4: the configured rejection code",
    ),
    pytest.param(
        Row(6, "sampling/createMessage", dict(SAMPLE, maxTokens=0), error_bytes(6, -1, "rate limited: too many input requests"), "budget", "sampling",
            client=SPENT, before=(9,), in_flight=False),
        id="step 4 before step 5",
    ),
    # step 5: the kind's own checks
    pytest.param(
        Row(7, "sampling/createMessage", dict(SAMPLE, maxTokens=0), error_bytes(7, -32602, "maxTokens must be an integer of at least 1"),
            "max_tokens", "sampling"),
        id="step 5: maxTokens below 1",
    ),
    pytest.param(
        Row(7, "sampling/createMessage", dict(SAMPLE, maxTokens=True), error_bytes(7, -32602, "maxTokens must be an integer of at least 1"),
            "max_tokens", "sampling"),
        id="step 5: maxTokens true is no int",
    ),
    pytest.param(
        Row(7, "sampling/createMessage", dict(SAMPLE, maxTokens=0), error_bytes(7, -32602, "maxTokens must be an integer of at least 1"),
            "max_tokens", "sampling", in_flight=False),
        id="step 5: max_tokens before idle",
    ),
    pytest.param(
        Row(7, "sampling/createMessage", SAMPLE, error_bytes(7, -1, "sampling refused: no call is in progress"), "idle", "sampling", in_flight=False),
        id="step 5: sampling with no call in flight",
    ),
    pytest.param(
        Row(7, "sampling/createMessage", dict(SAMPLE, messages=[TOOL_TURN, TOOL_RESULT] * 6),
            error_bytes(7, -1, "sampling refused: too many tool iterations"), "tool_loop", "sampling"),
        id="step 5: too many tool turns",
    ),
    pytest.param(
        Row(7, "elicitation/create", dict(URL, url="http://example.com/"), error_bytes(7, -32602, "elicitation URL must use the https scheme"),
            "url", "elicitation"),
        id="step 5: a URL that is not https",
    ),
    pytest.param(
        Row(7, "elicitation/create", {"message": "x", "requestedSchema": {"type": "array"}},
            error_bytes(7, -32602, 'requestedSchema refused: requestedSchema must have type "object"'), "schema", "elicitation"),
        id="step 5: a schema that is no form",
    ),
    pytest.param(
        Row(7, "elicitation/create", dict(URL, url="http://example.com/"), error_bytes(7, -32602, "elicitation URL must use the https scheme"),
            "url", "elicitation", busy=True),
        id="step 5 before step 6",
    ),
    # step 6: no worker slot (legacy only)
    pytest.param(
        Row(8, "elicitation/create", FORM, error_bytes(8, -32000, "busy: too many requests in flight"), "busy", "elicitation", busy=True),
        id="step 6: every slot held",
    ),
    pytest.param(
        Row(8, "roots/list", None, error_bytes(8, -32000, "busy: too many requests in flight"), "busy", "roots", busy=True, closing=True),
        id="step 6: busy even while closing",
    ),
    # closing: after every check, nothing more is opened
    pytest.param(Row(9, "elicitation/create", FORM, error_bytes(9, -32603, "the client is closing"), closing=True), id="closing"),
    pytest.param(
        Row(9, "tools/call", {}, error_bytes(9, -32601, "method not found: 'tools/call'"), "method", "other", closing=True),
        id="closing: a refusal is answered as such",
    ),
    pytest.param(Row(9, "ping", None, result_bytes(9, {}), closing=True), id="closing: a ping is still answered"),
]


@pytest.mark.parametrize("row", REQUESTS)
def test_what_the_connection_says_instead_of_opening_a_request(row: Row) -> None:
    conn = connection(**row.client)
    opened = [admitted(conn.receive(rid, "roots/list", None, 0.0, True)) for rid in row.before]
    if row.closing:
        conn.close()
    said = conn.receive(row.request_id, row.method, row.params, 1.0, row.in_flight, row.busy)
    assert isinstance(said, Said), said
    assert said.data == row.data
    if said.data is not None:
        assert said.data.isascii() and said.data.count(b"\n") == 1
    assert (said.refusal.check if said.refusal is not None else None) == row.check
    assert said.kind == row.kind
    assert bool(said.warning) == row.warning
    if said.refusal is not None:  # what the engine counts and logs is what the wire says
        assert wire(said.data)["error"] == {"code": said.refusal.code, "message": said.refusal.message}
    assert conn.open_requests() == opened and len(conn) == len(opened)  # nothing opened, nothing settled


def test_a_duplicate_and_an_invalid_id_say_why_for_the_log() -> None:
    conn = connection()
    admitted(conn.receive(1, "roots/list", None, 0.0, False))
    assert "reused" in conn.receive(1, "roots/list", None, 0.0, False).warning  # type: ignore[union-attr]
    assert "invalid id" in conn.receive(1.5, "roots/list", None, 0.0, False).warning  # type: ignore[union-attr]


# ---------------------------------------------------------------------------- the budget (step 4) as the connection asks it


def test_the_budget_is_asked_after_steps_1_to_3_with_the_time_and_its_refusal_is_generic() -> None:
    budget = Budget(left=1)
    conn = connection(rate=1.0, budget=budget)
    assert isinstance(conn.receive(1, "tools/call", {}, 5.0, True), Said)  # step 1: no token taken
    assert isinstance(conn.receive(2, "elicitation/create", {"message": "x"}, 5.0, True), Said)  # step 3: none either
    assert isinstance(conn.receive(2, "ping", None, 5.0, True), Said)  # ping: none
    assert budget.asked == []
    admitted(conn.receive(2, "elicitation/create", FORM, 5.0, True))
    said = conn.receive(3, "elicitation/create", FORM, 6.0, True)
    assert isinstance(said, Said) and said.refusal is not None and said.refusal.check == "budget"
    assert said.refusal.detail == "the option"  # for the log; the wire has the generic message
    assert said.data == error_bytes(3, -32000, "rate limited: too many input requests")
    assert budget.asked == [(["elicitation"], 5.0), (["elicitation"], 6.0)]


def test_a_request_refused_at_step_5_has_taken_its_token() -> None:
    budget = Budget()
    conn = connection(rate=1.0, budget=budget)
    said = conn.receive(1, "sampling/createMessage", SAMPLE, 3.0, False)
    assert isinstance(said, Said) and said.refusal is not None and said.refusal.check == "idle"
    assert budget.asked == [(["sampling"], 3.0)]


def test_an_unlimited_rate_never_asks_the_budget() -> None:
    budget = Budget(left=0)
    admitted(connection(budget=budget).receive(1, "elicitation/create", FORM, 0.0, True))
    assert budget.asked == []


def test_the_bucket_refills_with_the_time_passed_in() -> None:
    conn = connection(rate=1.0, burst=1)
    admitted(conn.receive(1, "roots/list", None, 0.0, False))
    assert isinstance(conn.receive(2, "roots/list", None, 0.5, False), Said)  # half a token
    admitted(conn.receive(3, "roots/list", None, 1.5, False))  # a whole one again


# ---------------------------------------------------------------------------- requests the connection opens


@pytest.mark.parametrize(
    "request_id, method, params, in_flight, client, kind, limit, mode, seen",
    [
        pytest.param(7, "elicitation/create", FORM, True, {}, "elicitation", 30.0, "form", FORM, id="a form"),
        pytest.param("u", "elicitation/create", URL, False, {}, "elicitation", 30.0, "url", URL, id="a URL elicitation, idle"),
        pytest.param(0, "sampling/createMessage", SAMPLE, True, {}, "sampling", 60.0, None, SAMPLE, id="sampling while a call is in flight"),
        pytest.param(-1, "sampling/createMessage", SAMPLE, False, {"allow_idle": True}, "sampling", 60.0, None, SAMPLE, id="sampling idle, allowed"),
        pytest.param(
            1, "sampling/createMessage", dict(SAMPLE, maxTokens=10**9, includeContext="allServers"), True, {}, "sampling", 60.0, None,
            dict(SAMPLE, maxTokens=4096, includeContext="none"), id="sampling clamped and its context narrowed",
        ),
        pytest.param(
            2, "sampling/createMessage", dict(SAMPLE, tools=[]), True, {"sampling_tools": True}, "sampling", 60.0, None, dict(SAMPLE, tools=[]),
            id="sampling with tools, declared",
        ),
        pytest.param("", "roots/list", None, False, {}, "roots", 5.0, None, {}, id="roots without params, an empty string id"),
        pytest.param(3, "roots/list", {"x": 1}, False, {}, "roots", 5.0, None, {"x": 1}, id="roots with params"),
    ],
)
def test_a_request_that_passes_is_opened_with_what_its_callback_needs_and_its_deadline(
    request_id: Any, method: str, params: Any, in_flight: bool, client: dict[str, Any], kind: str, limit: float, mode: Optional[str], seen: Any
) -> None:
    conn = connection(**client)
    entry = admitted(conn.receive(request_id, method, params, 100.0, in_flight))
    assert (entry.id, entry.method, entry.kind, entry.limit, entry.at, entry.done) == (request_id, method, kind, limit, 100.0 + limit, False)
    assert isinstance(entry.prepared, Prepared) and entry.prepared.kind == kind and entry.prepared.mode == mode
    assert entry.prepared.params == seen
    assert isinstance(entry.token, CancelToken) and not entry.token.is_set and entry.token.reason is None
    assert entry.call is None and entry.task_id is None and entry.on_expiry is None
    assert str(entry) == f"{method} {request_id!r}"
    assert conn.is_open(request_id) and conn.get(request_id) is entry and conn.open_requests() == [entry] and len(conn) == 1


def test_what_the_checks_found_travels_with_the_entry() -> None:
    conn = connection()
    form = admitted(conn.receive(1, "elicitation/create", FORM, 0.0, True))
    assert form.prepared.params is FORM and form.prepared.form is not None and form.prepared.fields == {"name": {"sensitive_suspected": False}}
    url = admitted(conn.receive(2, "elicitation/create", URL, 0.0, True))
    assert url.prepared.url is not None and url.prepared.url.host == "example.com"
    assert form.token is not url.token  # each request its own token


def test_an_int_id_and_its_string_are_two_requests() -> None:
    conn = connection()
    one = admitted(conn.receive(1, "roots/list", None, 0.0, False))
    text = admitted(conn.receive("1", "roots/list", None, 0.0, False))
    assert one is not text and conn.get(1) is one and conn.get("1") is text and len(conn) == 2
    assert not conn.is_open(2) and conn.get(2) is None


@pytest.mark.parametrize(
    "meta, task_id",
    [
        pytest.param({RELATED_TASK: {"taskId": "t-1"}}, "t-1", id="a task"),
        pytest.param({RELATED_TASK: {"taskId": "t-1"}, "other": 1}, "t-1", id="a task among other meta"),
        pytest.param({"x": 1}, None, id="no related task"),
        pytest.param({RELATED_TASK: "t"}, None, id="related task not an object"),
        pytest.param({RELATED_TASK: {"taskId": 5}}, None, id="a taskId that is no string"),
        pytest.param("not a dict", None, id="_meta not an object"),
    ],
)
def test_a_request_carries_its_related_task_only_when_it_names_one(meta: Any, task_id: Optional[str]) -> None:
    entry = admitted(connection().receive(1, "roots/list", {"_meta": meta}, 0.0, False))
    assert entry.task_id == task_id


def test_an_expired_request_calls_its_expiry_once_set() -> None:
    entry = admitted(connection().receive(1, "roots/list", None, 0.0, False))
    entry.expired()  # nothing set: nothing happens
    seen: list[Inbound] = []
    entry.on_expiry = seen.append
    entry.expired()
    assert seen == [entry]


# ---------------------------------------------------------------------------- answers out


ROOT = {"uri": "file:///tmp", "name": "tmp"}
ASSISTANT = {"role": "assistant", "content": {"type": "text", "text": "x"}, "model": "m"}
TASK_META = {"_meta": {RELATED_TASK: {"taskId": "t-1"}}}


@pytest.mark.parametrize(
    "method, params, value, expected",
    [
        # what step 8 keeps, exactly as written
        pytest.param("elicitation/create", FORM, {"action": "accept", "content": {"name": "ada"}, "extra": 1},
                     {"action": "accept", "content": {"name": "ada"}}, id="form accept: only action and content kept"),
        pytest.param("elicitation/create", FORM, {"action": "accept"}, {"action": "accept"}, id="form accept without content"),
        pytest.param("elicitation/create", FORM, {"action": "decline", "content": {"name": "leaked"}}, {"action": "decline"},
                     id="decline: its content dropped"),
        pytest.param("elicitation/create", FORM, {"action": "cancel", "_meta": {"m": 1}}, {"action": "cancel"}, id="cancel"),
        pytest.param("elicitation/create", URL, {"action": "accept"}, {"action": "accept"}, id="URL accept"),
        pytest.param("sampling/createMessage", SAMPLE, ASSISTANT, ASSISTANT, id="sampling: as returned"),
        pytest.param("roots/list", None, {"roots": [ROOT], "nextCursor": "c"}, {"roots": [ROOT], "nextCursor": "c"}, id="roots: other fields kept"),
        pytest.param("roots/list", None, {"roots": [{"uri": "https://example.com/"}, ROOT]}, {"roots": [ROOT]}, id="roots: a remote root dropped"),
        pytest.param("roots/list", None, {"roots": [], "text": "\udcff"}, {"roots": [], "text": "\udcff"}, id="roots: a lone surrogate escaped"),
        # the related task: added to what step 8 keeps, the answer's own _meta kept when the kind keeps it
        pytest.param("elicitation/create", dict(FORM, **TASK_META), {"action": "accept", "content": {"name": "ada"}, "_meta": {"mine": 1}},
                     {"action": "accept", "content": {"name": "ada"}, **TASK_META}, id="task: an elicitation answer"),
        pytest.param("roots/list", TASK_META, {"roots": [], "_meta": {"mine": 1}}, {"roots": [], "_meta": {"mine": 1, RELATED_TASK: {"taskId": "t-1"}}},
                     id="task: a roots answer keeps its own _meta"),
        pytest.param("sampling/createMessage", dict(SAMPLE, **TASK_META), dict(ASSISTANT, _meta={RELATED_TASK: {"taskId": "forged"}}),
                     dict(ASSISTANT, **TASK_META), id="task: the request's task, not the handler's"),
    ],
)
def test_an_answer_is_checked_encoded_and_settles_its_request(method: str, params: Any, value: Any, expected: Any) -> None:
    conn = connection()
    entry = admitted(conn.receive(9, method, params, 0.0, True))
    data = conn.answer(entry, value)
    assert data == (json.dumps({"jsonrpc": "2.0", "id": 9, "result": expected}, separators=(",", ":")) + "\n").encode("ascii")
    assert entry.done and not conn.is_open(9) and len(conn) == 0


def test_an_answer_leaves_the_handlers_value_as_it_was() -> None:
    conn = connection()
    entry = admitted(conn.receive(1, "roots/list", TASK_META, 0.0, False))
    value = {"roots": [], "_meta": {"mine": 1}}
    assert conn.answer(entry, value) is not None
    assert value == {"roots": [], "_meta": {"mine": 1}}


def test_a_dropped_root_is_noted_for_the_log() -> None:
    conn = connection()
    entry = admitted(conn.receive(1, "roots/list", None, 0.0, False))
    prepared = entry.prepared  # the engine keeps it for the log; the settled entry lets it go
    assert conn.answer(entry, {"roots": [{"uri": "https://example.com/"}]}) == result_bytes(1, {"roots": []})
    assert len(prepared.notes) == 1 and prepared.notes[0].startswith("roots[0]: ")
    assert entry.prepared is None


@pytest.mark.parametrize(
    "method, params, value, detail",
    [
        pytest.param("elicitation/create", FORM, {"action": "maybe"}, "action 'maybe'", id="an unknown action"),
        pytest.param("elicitation/create", FORM, "accept", "not a dict", id="not a dict"),
        pytest.param("elicitation/create", FORM, None, "not a dict", id="None"),
        pytest.param("elicitation/create", FORM, {"action": "accept", "content": {"name": 5}}, None, id="content off the schema"),
        pytest.param("elicitation/create", URL, {"action": "accept", "content": {}}, "a URL accept carries content", id="a URL accept with content"),
        pytest.param("sampling/createMessage", SAMPLE, {"role": "assistant", "content": {"type": "text", "text": "x"}}, "model must be a string",
                     id="sampling without its model"),
        pytest.param("roots/list", None, {"roots": "file:///"}, "roots result must have a 'roots' list", id="roots not a list"),
        # the one deliberate change: what JSON cannot carry is a refusal of step 8, as any invalid answer
        pytest.param("sampling/createMessage", SAMPLE, dict(ASSISTANT, junk={1, 2}), "not JSON-serialisable", id="a set JSON cannot carry"),
        pytest.param("roots/list", None, {"roots": [], "n": float("nan")}, "not JSON-serialisable", id="a NaN JSON cannot carry"),
        pytest.param("roots/list", TASK_META, {"roots": [], "_meta": {"x": object()}}, "not JSON-serialisable", id="an object, in a task's answer"),
    ],
)
def test_an_answer_step_8_refuses_leaves_the_request_open_for_its_error(method: str, params: Any, value: Any, detail: Optional[str]) -> None:
    conn = connection()
    entry = admitted(conn.receive(1, method, params, 0.0, True))
    refused = conn.answer(entry, value)
    assert isinstance(refused, Refusal)
    assert (refused.check, refused.code, refused.message) == ("answer", -32603, "the input handler returned an invalid answer")
    if detail is not None:
        assert refused.detail == detail
    assert conn.is_open(1) and not entry.done  # still open: the engine answers it with the refusal's error
    assert conn.fail(entry, refused.code, refused.message) == error_bytes(1, -32603, "the input handler returned an invalid answer")
    assert entry.done and not conn.is_open(1)


@pytest.mark.parametrize(
    "code, message, data, expected",
    [
        pytest.param(-1, "declined", None, {"code": -1, "message": "declined"}, id="an error"),
        pytest.param(-1, "declined", {"why": "no"}, {"code": -1, "message": "declined", "data": {"why": "no"}}, id="with data"),
        pytest.param(-1, "declined", {"why": object()}, {"code": -1, "message": "declined"}, id="data JSON cannot carry: left out"),
        pytest.param(-32603, "the input handler timed out", None, {"code": -32603, "message": "the input handler timed out"}, id="timed out"),
        pytest.param(-32603, "the client is closing", None, {"code": -32603, "message": "the client is closing"}, id="closing"),
    ],
)
def test_an_error_answer_is_encoded_and_settles_its_request(code: int, message: str, data: Any, expected: Any) -> None:
    conn = connection()
    entry = admitted(conn.receive("r", "roots/list", None, 0.0, False))
    out = conn.fail(entry, code, message, data)
    assert out == (json.dumps({"jsonrpc": "2.0", "id": "r", "error": expected}, separators=(",", ":")) + "\n").encode()
    assert entry.done and len(conn) == 0


# ---------------------------------------------------------------------------- scripts: each request settled exactly once

OPEN = "open"  # receive: an Inbound, named by the step's label
REFUSED = "refused"  # answer: a Refusal of step 8, the request still open


def A(request_id: Any) -> bytes:
    """The bytes of the roots answer ``{"roots": []}`` to ``request_id``."""
    return result_bytes(request_id, {"roots": []})


def E(request_id: Any, message: str = "x") -> bytes:
    return error_bytes(request_id, -32603, message)


INVALID_ANSWER = "the input handler returned an invalid answer"
GOOD: dict[str, Any] = {"roots": []}
BAD: dict[str, Any] = {"roots": "no"}

SCRIPTS = [
    pytest.param(
        [("receive", "a", 1, OPEN), ("answer", "a", GOOD, A(1)), ("answer", "a", GOOD, None), ("fail", "a", "x", None), ("cancel", 1, None),
         ("open", [])],
        id="an answer, then a second answer, an error and a cancel: nothing more",
    ),
    pytest.param(
        [("receive", "a", 1, OPEN), ("fail", "a", "x", E(1)), ("answer", "a", GOOD, None), ("fail", "a", "x", None), ("open", [])],
        id="an error, then a late answer: dropped",
    ),
    pytest.param(
        [("receive", "a", "c", OPEN), ("cancel", "c", "a"), ("done", "a", True), ("answer", "a", GOOD, None), ("fail", "a", "x", None),
         ("cancel", "c", None), ("open", [])],
        id="cancelled: no answer at all",
    ),
    pytest.param(
        [("receive", "a", 1, OPEN), ("cancel", 2, None), ("cancel", "1", None), ("cancel", 1.0, None), ("cancel", None, None),
         ("cancel", [1], None), ("open", ["a"]), ("answer", "a", GOOD, A(1))],
        id="a cancel naming another id, or no valid id, cancels nothing",
    ),
    pytest.param(
        [("receive", "a", 0, OPEN), ("answer", "a", GOOD, A(0)), ("receive", "b", 0, OPEN), ("answer", "a", GOOD, None),
         ("fail", "a", "x", None), ("open", ["b"]), ("answer", "b", GOOD, A(0)), ("open", [])],
        id="a late answer to an id the server used again leaves the new request open",
    ),
    pytest.param(
        [("receive", "a", 0, OPEN), ("cancel", 0, "a"), ("receive", "b", 0, OPEN), ("answer", "a", GOOD, None), ("open", ["b"]),
         ("fail", "b", "x", E(0)), ("open", [])],
        id="a late answer after a cancel and a reuse of the id",
    ),
    pytest.param(
        [("receive", "a", 5, OPEN), ("receive", "dup", 5, None), ("open", ["a"]), ("answer", "a", GOOD, A(5)), ("receive", "b", 5, OPEN),
         ("open", ["b"])],
        id="a duplicate while open keeps the first; once answered the id is free",
    ),
    pytest.param(
        [("receive", "a", 1, OPEN), ("receive", "b", "1", OPEN), ("answer", "a", GOOD, A(1)), ("open", ["b"]), ("answer", "b", GOOD, A("1"))],
        id="1 and '1' are settled apart",
    ),
    pytest.param(
        [("receive", "a", 1, OPEN), ("answer", "a", BAD, REFUSED), ("done", "a", False), ("open", ["a"]), ("answer", "a", BAD, REFUSED),
         ("fail", "a", INVALID_ANSWER, E(1, INVALID_ANSWER)), ("answer", "a", GOOD, None), ("answer", "a", BAD, None), ("open", [])],
        id="a refused answer settles nothing; its error does; a late answer is not even checked",
    ),
    pytest.param(
        [("receive", "a", 1, OPEN), ("receive", "b", "two", OPEN), ("close", ["a", "b"]), ("receive", "c", 3, E(3, "the client is closing")),
         ("open", ["a", "b"]), ("fail", "a", "the client is closing", E(1, "the client is closing")), ("answer", "b", GOOD, A("two")),
         ("answer", "a", GOOD, None), ("open", []), ("close", []), ("receive", "d", 1, E(1, "the client is closing"))],
        id="close: the open requests stay to be answered once, no new one is opened",
    ),
]


@pytest.mark.parametrize("steps", SCRIPTS)
def test_a_script_of_requests_and_answers(steps: list[tuple[Any, ...]]) -> None:
    conn = connection()
    entries: dict[str, Inbound] = {}
    for step in steps:
        action, *args, expected = step
        if action == "receive":
            label, request_id = args
            got = conn.receive(request_id, "roots/list", None, 0.0, False)
            if expected == OPEN:
                entries[label] = admitted(got)
            else:
                assert isinstance(got, Said) and got.data == expected, step
        elif action == "answer":
            label, value = args
            out = conn.answer(entries[label], value)
            if expected == REFUSED:
                assert isinstance(out, Refusal) and out.check == "answer", step
            else:
                assert out == expected, step
        elif action == "fail":
            label, message = args
            assert conn.fail(entries[label], -32603, message) == expected, step
        elif action == "cancel":
            (request_id,) = args
            assert conn.cancelled(request_id) is (None if expected is None else entries[expected]), step
        elif action == "done":
            (label,) = args
            assert entries[label].done is expected, step
        elif action == "open":
            assert conn.open_requests() == [entries[label] for label in expected] and len(conn) == len(expected), step
            assert all(conn.is_open(entries[label].id) and conn.get(entries[label].id) is entries[label] for label in expected), step
        else:
            assert action == "close", step
            assert conn.close() == [entries[label] for label in expected], step
            assert conn.closing
    for entry in entries.values():  # whatever was settled says so; whatever is open does not
        assert entry.done is not (conn.get(entry.id) is entry)
