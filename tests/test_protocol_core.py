"""The pure protocol core: table-driven, no threads, no clock."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_input_sync._protocol import jsonrpc
from mcp_input_sync._protocol.deadlines import MAX_TOTAL, TIMEOUT, CallClock
from mcp_input_sync._protocol.eras import ProtocolViolation, accept_initialize_result, client_capabilities, declared_kinds, missing_param
from mcp_input_sync._protocol.legacy_conn import Inbound

from .test_legacy_conn import connection

PACKAGE = Path(__file__).resolve().parents[1] / "mcp_input_sync"


# ---------------------------------------------------------------------------- layering


def imports_of(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = "." * node.level + (node.module or "")
            names.add(base)
    return names


@pytest.mark.parametrize("path", sorted((PACKAGE / "_protocol").glob("*.py")), ids=lambda p: p.name)
def test_the_protocol_core_has_no_threads_sockets_sleeps_or_clock(path: Path) -> None:
    forbidden = {"threading", "queue", "socket", "subprocess", "time", "select", "selectors", "asyncio"}
    assert imports_of(path) & forbidden == set()
    assert not any(name.startswith("..") for name in imports_of(path)), "the core imports nothing of the library"


@pytest.mark.parametrize("path", sorted((PACKAGE / "_runtime").glob("*.py")), ids=lambda p: p.name)
def test_the_runtime_knows_threads_not_mcp(path: Path) -> None:
    assert not any("_protocol" in name or "client" in name for name in imports_of(path))


# ---------------------------------------------------------------------------- jsonrpc


def test_encoding_survives_a_lone_surrogate_and_stays_one_ascii_line() -> None:
    data = jsonrpc.encode({"jsonrpc": "2.0", "id": 1, "result": {"state": "a\ud800b\nc\u2028"}})
    assert data.endswith(b"\n") and data.count(b"\n") == 1
    data.decode("ascii")
    assert json.loads(data)["result"]["state"] == "a\ud800b\nc\u2028"


@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(), lambda c: st.lists(c) | st.dictionaries(st.text(), c), max_leaves=20))
def test_any_json_value_encodes_to_one_line_and_round_trips(value: Any) -> None:
    data = jsonrpc.encode({"v": value})
    assert data.count(b"\n") == 1
    assert jsonrpc.decode(data) == {"v": value}


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), {1, 2}, object()])
def test_values_json_cannot_carry_are_refused_by_the_encoder(bad: Any) -> None:
    with pytest.raises((TypeError, ValueError)):
        jsonrpc.encode({"v": bad})


@pytest.mark.parametrize(
    "message, kind",
    [
        ({"jsonrpc": "2.0", "id": 0, "method": "ping"}, jsonrpc.REQUEST),
        ({"jsonrpc": "2.0", "id": "", "method": "ping"}, jsonrpc.REQUEST),
        ({"jsonrpc": "2.0", "method": "notifications/x"}, jsonrpc.NOTIFICATION),
        ({"jsonrpc": "2.0", "id": 0, "result": {}}, jsonrpc.RESPONSE),
        ({"jsonrpc": "2.0", "id": None, "error": {}}, jsonrpc.RESPONSE),
        ({"jsonrpc": "2.0", "id": 1}, jsonrpc.INVALID),
        ({"jsonrpc": "2.0", "method": 5}, jsonrpc.INVALID),
        ([], jsonrpc.INVALID),
    ],
)
def test_classify(message: Any, kind: str) -> None:
    assert jsonrpc.classify(message) == kind


def test_ids_one_and_string_one_are_different_keys() -> None:
    assert jsonrpc.id_key(1) != jsonrpc.id_key("1")
    assert jsonrpc.is_valid_id(0) and jsonrpc.is_valid_id("") and not jsonrpc.is_valid_id(True)


# ---------------------------------------------------------------------------- versions and capabilities


@pytest.mark.parametrize(
    "version, sampling, modes, roots, tools, context, expected",
    [
        ("2025-11-25", False, None, False, False, False, {}),
        ("2025-11-25", True, None, False, True, True, {"sampling": {"context": {}, "tools": {}}}),
        ("2025-06-18", True, None, False, True, True, {"sampling": {}}),
        ("2025-11-25", False, ("form",), False, False, False, {"elicitation": {"form": {}}}),
        ("2025-11-25", False, ("url",), False, False, False, {"elicitation": {"url": {}}}),
        ("2025-06-18", False, ("form", "url"), False, False, False, {"elicitation": {}}),
        ("2025-11-25", False, None, True, False, False, {"roots": {"listChanged": True}}),
    ],
)
def test_client_capabilities(version: str, sampling: bool, modes: Any, roots: bool, tools: bool, context: bool, expected: dict[str, Any]) -> None:
    caps = client_capabilities(version=version, sampling=sampling, elicitation_modes=modes, roots=roots, sampling_tools=tools, sampling_context=context)
    assert caps == expected


@pytest.mark.parametrize("answered", ["2025-11-25", "2025-06-18", "2025-03-26"])
def test_legacy_versions_are_accepted(answered: str) -> None:
    version, caps = accept_initialize_result({"protocolVersion": answered, "capabilities": {"tools": {}}}, None)
    assert (version, caps) == (answered, {"tools": {}})


@pytest.mark.parametrize(
    "result, forced",
    [
        ({"protocolVersion": "2024-11-05"}, None),
        ({"protocolVersion": "2026-07-28"}, None),
        ({"protocolVersion": 20251125}, None),
        ({}, None),
        ([], None),
        ({"protocolVersion": "2025-11-25"}, "2025-06-18"),
    ],
)
def test_other_initialize_results_are_protocol_violations(result: Any, forced: Any) -> None:
    with pytest.raises(ProtocolViolation):
        accept_initialize_result(result, forced)


def test_a_2025_03_26_session_has_no_elicitation() -> None:
    caps = {"sampling": {}, "elicitation": {}, "roots": {}}
    assert declared_kinds(caps, "2025-03-26") == {"sampling", "roots"}
    assert declared_kinds(caps, "2025-11-25") == {"sampling", "elicitation", "roots"}


@pytest.mark.parametrize(
    "method, params, problem",
    [
        ("roots/list", None, None),
        ("roots/list", {}, None),
        ("roots/list", [], "params is not an object"),
        ("sampling/createMessage", {"messages": [], "maxTokens": 1}, None),
        ("sampling/createMessage", {"maxTokens": 1}, "messages missing"),
        ("sampling/createMessage", {"messages": []}, "maxTokens missing"),
        ("elicitation/create", {"message": "m", "requestedSchema": {}}, None),
        ("elicitation/create", {"message": "m"}, "requestedSchema missing"),
        ("elicitation/create", {"mode": "url", "message": "m", "url": "u", "elicitationId": "e"}, None),
        ("elicitation/create", {"mode": "url", "message": "m", "url": "u"}, "elicitationId missing"),
        ("elicitation/create", None, "params missing"),
    ],
)
def test_missing_params(method: str, params: Any, problem: Any) -> None:
    assert missing_param(method, params) == problem


# ---------------------------------------------------------------------------- the legacy connection's inbox


def test_the_inbox_lets_exactly_one_answer_through() -> None:
    conn = connection()
    a = conn.receive(0, "roots/list", None, 0.0, False)
    assert isinstance(a, Inbound)
    assert not isinstance(conn.receive(0, "roots/list", None, 0.0, False), Inbound)  # duplicate of an open id
    b, c = conn.receive("0", "roots/list", None, 0.0, False), conn.receive("", "roots/list", None, 0.0, False)
    assert isinstance(b, Inbound) and isinstance(c, Inbound)
    assert conn.fail(a, -1, "x") is not None
    assert conn.fail(a, -1, "x") is None  # a late second answer is dropped
    assert conn.cancelled("") is c
    assert conn.fail(c, -1, "x") is None  # cancelled: no answer at all
    assert [e.id for e in conn.open_requests()] == ["0"]
    reused = conn.receive(0, "roots/list", None, 0.0, False)  # a finished id may come again
    assert isinstance(reused, Inbound) and len(conn) == 2
    assert conn.fail(a, -1, "x") is None  # a late answer of the first leaves the reused id open
    assert conn.fail(reused, -1, "x") is not None


@given(st.lists(st.tuples(st.sampled_from(["admit", "settle", "cancel"]), st.one_of(st.integers(0, 3), st.sampled_from(["", "0", "1"])))))
def test_the_inbox_never_answers_an_id_twice_and_stays_bounded(ops: list[tuple[str, Any]]) -> None:
    conn = connection()
    open_now: dict[Any, Inbound] = {}
    for op, rid in ops:
        key = (type(rid), rid)
        if op == "admit":
            got = conn.receive(rid, "roots/list", None, 0.0, False)
            assert isinstance(got, Inbound) == (key not in open_now)
            if isinstance(got, Inbound):
                open_now[key] = got
        elif op == "settle":
            entry = open_now.pop(key, None)
            if entry is None:
                assert conn.get(rid) is None and not conn.is_open(rid)  # nothing open under this id to settle
            else:
                assert conn.get(rid) is entry
                assert conn.fail(entry, -1, "x") is not None
                assert conn.fail(entry, -1, "x") is None
        else:
            assert (conn.cancelled(rid) is not None) == (open_now.pop(key, None) is not None)
        assert len(conn) == len(open_now) <= 8


# ---------------------------------------------------------------------------- call clock


def test_the_call_timeout_counts_only_time_not_paused() -> None:
    clock = CallClock(now=100.0, timeout=60.0, max_total=600.0)
    assert clock.remaining(100.0) == 60.0
    clock.pause(110.0)  # a tied request arrives after 10 s
    assert clock.expired(500.0) is None  # paused: no timeout
    clock.pause(200.0)  # overlapping tied request: one pause
    clock.resume(300.0)
    assert clock.paused
    clock.resume(410.0)  # paused 110..410
    assert clock.waited(410.0) == pytest.approx(10.0)
    assert clock.expired(459.0) is None
    assert clock.expired(460.0) == TIMEOUT


def test_max_total_timeout_bounds_a_paused_call() -> None:
    clock = CallClock(now=0.0, timeout=60.0, max_total=100.0)
    clock.pause(1.0)
    assert clock.remaining(50.0) == pytest.approx(50.0)
    assert clock.expired(100.0) == MAX_TOTAL


def test_an_unmatched_resume_is_ignored() -> None:
    clock = CallClock(now=0.0, timeout=10.0, max_total=100.0)
    clock.resume(5.0)
    assert not clock.paused and clock.expired(10.0) == TIMEOUT


# ---------------------------------------------------------------------------- the modern era, pure

from mcp_input_sync._protocol import modern  # noqa: E402


@pytest.mark.parametrize(
    "response, era, version",
    [
        ({"result": {"supportedVersions": ["2026-07-28"], "capabilities": {}}}, "modern", "2026-07-28"),
        ({"result": {"supportedVersions": ["2099-01-01", "2025-11-25"]}}, "legacy", "2025-11-25"),
        ({"result": {}}, "legacy", "2025-11-25"),
        ({"error": {"code": -32020, "message": "header mismatch"}}, "modern", "2026-07-28"),
        ({"error": {"code": -32021, "message": "missing capability"}}, "modern", "2026-07-28"),
        ({"error": {"code": -32022, "message": "x", "data": {"supported": ["2026-07-28"]}}}, "modern", "2026-07-28"),
        ({"error": {"code": -32022, "message": "x", "data": {"supported": ["2025-06-18"]}}}, "legacy", "2025-06-18"),
        ({"error": {"code": -32022, "message": "x", "data": {"supported": ["2025-11-25", "2025-06-18"]}}}, "legacy", "2025-11-25"),
        ({"error": {"code": -32601, "message": "method not found"}}, "legacy", "2025-11-25"),
        ({"error": {"code": -32600, "message": "invalid"}}, "legacy", "2025-11-25"),
        ({"error": "garbage"}, "legacy", "2025-11-25"),
    ],
)
def test_the_probe_answer_decides_the_era(response: dict[str, Any], era: str, version: str) -> None:
    decision = modern.decide_from_discover(response)
    assert (decision.era, decision.version) == (era, version)


@pytest.mark.parametrize(
    "response",
    [
        {"error": {"code": -32022, "message": "x", "data": {"supported": ["2099-01-01"]}}},
        {"result": {"supportedVersions": ["2099-01-01"]}},
    ],
)
def test_a_probe_answer_naming_no_version_we_speak_is_a_protocol_violation(response: dict[str, Any]) -> None:
    with pytest.raises(ProtocolViolation):
        modern.decide_from_discover(response)


# result types, a round's shape and the back-off: tests/test_rounds.py (the round driver)


def test_retry_params_carry_the_original_params_responses_and_state_only_when_sent() -> None:
    original = {"name": "t", "arguments": {"x": 1}, "_meta": {"progressToken": "p"}}
    assert modern.retry_params(original, {"a": {"action": "decline"}}, None) == {"name": "t", "arguments": {"x": 1}, "inputResponses": {"a": {"action": "decline"}}}
    assert modern.retry_params(original, None, "s")["requestState"] == "s"


def test_a_pending_call_survives_a_json_round_trip_and_refuses_garbage() -> None:
    pending = modern.PendingCall("tools/call", {"name": "t"}, {"a": {"method": "roots/list"}}, "st\u2028ate", 2, ["q"])
    assert modern.PendingCall.from_json(pending.to_json()) == pending
    for text in ("[]", '{"v": 2}', '{"v": 1, "method": "tools/list", "params": {}, "input_requests": {}, "rounds": 0}'):
        with pytest.raises(ValueError):
            modern.PendingCall.from_json(text)


def test_modern_capabilities_have_no_list_changed_and_tasks_as_an_extension() -> None:
    caps = modern.capabilities(sampling=True, elicitation_modes=("form",), roots=True, sampling_tools=False, sampling_context=False, tasks=True)
    assert caps == {"sampling": {}, "elicitation": {"form": {}}, "roots": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}}


def test_a_stdio_request_ties_to_the_call_left_when_another_ends() -> None:
    from mcp_input_sync._calls import Call, CallTable
    from mcp_input_sync._calls import Inbound

    table = CallTable()

    def call(request_id: int, is_call: bool = True) -> Call:
        return Call(request_id, "tools/call" if is_call else "tools/list", is_call, {}, CallClock(0.0, 60.0, 600.0))

    first, second, listing = call(1), call(2), call(3, is_call=False)
    assert table.add(first) and table.add(listing)
    assert table.tie(Inbound("a", "roots/list", "roots"), 1.0) is first  # the only call (a list is no call)
    assert table.add(second)
    assert table.tie(Inbound("b", "roots/list", "roots"), 1.0) is None  # two calls: tied to neither
    assert table.pop(1) is first
    assert table.tie(Inbound("c", "roots/list", "roots"), 2.0) is second  # the one left
    assert table.pop(2) is second
    assert table.tie(Inbound("d", "roots/list", "roots"), 3.0) is None  # none in flight
