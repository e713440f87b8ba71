"""The 2026-07-28 round driver alone (``_protocol/rounds.py``): scripted results in, what the engine does next out.

No client, no thread, no clock: each row is a call's results in order and
what the driver says to each, as the official SDK's table test of its
input_required driver does.
"""

from __future__ import annotations

from typing import Any, Optional

import pytest

from mcp_input_sync._protocol import rounds
from mcp_input_sync._protocol.modern import PendingCall, question_key
from mcp_input_sync._protocol.rounds import ASK, DEFER, DONE, FOLLOW, WAIT, RoundDriver, RoundRefused

FORM = {"method": "elicitation/create", "params": {"message": "Name?", "requestedSchema": {"type": "object", "properties": {}}}}
OTHER = {"method": "elicitation/create", "params": {"message": "Age?", "requestedSchema": {"type": "object", "properties": {}}}}


def ask(requests: Optional[dict[str, Any]] = None, state: Optional[str] = None) -> dict[str, Any]:
    result: dict[str, Any] = {"resultType": "input_required"}
    if requests is not None:
        result["inputRequests"] = requests
    if state is not None:
        result["requestState"] = state
    return result


def driver(method: str = "tools/call", **kw: Any) -> RoundDriver:
    kw.setdefault("tasks", True)
    kw.setdefault("max_rounds", 3)
    return RoundDriver(method, {"name": "t"}, **kw)


@pytest.mark.parametrize(
    "method, kw, results, steps",
    [
        pytest.param("tools/call", {}, [{"content": []}], [DONE], id="complete without resultType"),
        pytest.param("tools/call", {}, [{"resultType": "complete"}], [DONE], id="complete"),
        pytest.param("tools/list", {}, [{"resultType": "complete"}], [DONE], id="complete from any method"),
        pytest.param("tools/call", {}, [ask({"a": FORM}), {"content": []}], [ASK, DONE], id="one round"),
        pytest.param("prompts/get", {}, [ask({"a": FORM}, "s1"), ask({"b": OTHER}, "s2"), {}], [ASK, ASK, DONE], id="two rounds"),
        pytest.param("resources/read", {}, [ask(state="s"), ask(state="s"), {}], [WAIT, WAIT, DONE], id="state only"),
        pytest.param("tools/call", {"defer": True}, [ask({"a": FORM})], [DEFER], id="defer at the first round"),
        pytest.param("tools/call", {"defer": True}, [ask(state="s"), ask({"a": FORM})], [WAIT, DEFER], id="defer waits out a state-only round"),
        pytest.param("tools/call", {}, [{"resultType": "task", "taskId": "t1"}], [FOLLOW], id="a task is followed"),
        pytest.param("tools/call", {"wait": False}, [{"resultType": "task", "taskId": "t1"}], [DONE], id="a task not followed is the result"),
    ],
)
def test_what_each_result_means(method: str, kw: dict[str, Any], results: list[dict[str, Any]], steps: list[str]) -> None:
    d = driver(method, **kw)
    seen = []
    for result in results:
        step = d.next(result)
        seen.append(step)
        if step is ASK:
            d.answered({key: {"action": "accept", "content": {}} for key in d.requests})
    assert seen == steps
    assert d.result is results[-1]


@pytest.mark.parametrize(
    "method, tasks, result, check, kind",
    [
        pytest.param("tools/call", True, {"resultType": "surprise"}, "result", "protocol", id="unknown resultType"),
        pytest.param("tools/list", True, ask({"a": FORM}), "result", "protocol", id="input_required where no method may"),
        pytest.param("tools/call", False, {"resultType": "task", "taskId": "t"}, "result", "protocol", id="a task without tasks"),
        pytest.param("prompts/get", True, {"resultType": "task", "taskId": "t"}, "result", "protocol", id="a task from prompts/get"),
        pytest.param("tools/call", True, {"resultType": "task"}, "result", "protocol", id="a task without taskId"),
        pytest.param("tools/call", True, ask(), "result", "protocol", id="neither requests nor state"),
        pytest.param("tools/call", True, ask(["x"]), "result", "protocol", id="inputRequests not an object"),  # type: ignore[arg-type]
        pytest.param("tools/call", True, ask({"a": FORM}, 7), "result", "protocol", id="requestState not a string"),  # type: ignore[arg-type]
    ],
)
def test_a_result_that_breaks_a_rule_is_refused(method: str, tasks: bool, result: dict[str, Any], check: str, kind: str) -> None:
    with pytest.raises(RoundRefused) as caught:
        driver(method, tasks=tasks).next(result)
    assert (caught.value.kind, caught.value.check) == (kind, check)


def test_more_rounds_than_max_rounds_are_refused_and_a_resumed_call_counts_its_earlier_ones() -> None:
    d = driver(max_rounds=2)
    assert d.next(ask(state="s")) is WAIT and d.next(ask(state="s")) is WAIT
    with pytest.raises(RoundRefused) as caught:
        d.next(ask(state="s"))
    assert caught.value.check == "rounds" and "max_rounds=2" in caught.value.message
    resumed = driver(max_rounds=2, rounds=2)
    with pytest.raises(RoundRefused):
        resumed.next(ask({"a": FORM}))


def test_a_round_gives_its_requests_in_key_order_and_its_state_to_echo() -> None:
    d = driver()
    assert d.next(ask({"b": OTHER, "a": FORM}, "opaque")) is ASK
    assert list(d.requests) == ["a", "b"] and d.state == "opaque"


def test_state_only_rounds_back_off_doubling_to_a_quarter_second_and_a_round_of_input_resets_it() -> None:
    d = driver(max_rounds=10)
    delays = []
    for _ in range(5):
        assert d.next(ask(state="s")) is WAIT
        delays.append(d.delay)
    assert delays == [0.05, 0.1, 0.2, 0.25, 0.25]
    assert d.next(ask({"a": FORM})) is ASK
    d.answered({"a": {"action": "accept"}})
    assert d.next(ask(state="s")) is WAIT and d.delay == 0.05


@pytest.mark.parametrize("action", ["decline", "cancel"])
def test_the_question_just_declined_is_not_asked_again_in_the_next_round(action: str) -> None:
    d = driver()
    assert d.next(ask({"a": FORM})) is ASK
    d.answered({"a": {"action": action}})
    with pytest.raises(RoundRefused) as caught:
        d.next(ask({"again": FORM}))
    assert (caught.value.kind, caught.value.check) == ("declined", "reask") and "'again'" in caught.value.message


def test_another_question_after_a_decline_and_the_same_one_after_an_accept_are_asked() -> None:
    d = driver(max_rounds=5)
    assert d.next(ask({"a": FORM})) is ASK
    d.answered({"a": {"action": "decline"}})
    assert d.next(ask({"b": OTHER})) is ASK  # a different question
    d.answered({"b": {"action": "accept", "content": {}}})
    assert d.next(ask({"a": FORM})) is ASK  # declined two rounds ago: asked again is allowed
    d.answered({"a": {"action": "accept", "content": {}}})
    assert d.next(ask({"a": FORM})) is ASK  # accepted: may be asked again


def test_a_state_only_round_forgets_what_was_declined() -> None:
    d = driver()
    assert d.next(ask({"a": FORM})) is ASK
    d.answered({"a": {"action": "decline"}})
    assert d.next(ask(state="s")) is WAIT
    assert d.next(ask({"a": FORM})) is ASK


def test_a_resumed_call_remembers_what_its_last_round_declined() -> None:
    d = driver(declined=frozenset({question_key(FORM)}))
    with pytest.raises(RoundRefused):
        d.next(ask({"a": FORM}))


def test_a_deferred_round_becomes_a_pending_call_that_carries_the_round() -> None:
    d = RoundDriver("tools/call", {"name": "t", "arguments": {"x": 1}}, tasks=True, max_rounds=3, defer=True, rounds=1,
                    declined=frozenset({"q"}))
    assert d.next(ask({"b": OTHER, "a": FORM}, "s")) is DEFER
    pending = d.pending()
    assert isinstance(pending, PendingCall)
    assert (pending.method, pending.params, list(pending.input_requests), pending.request_state, pending.rounds) == (
        "tools/call", {"name": "t", "arguments": {"x": 1}}, ["a", "b"], "s", 2)
    assert PendingCall.from_json(pending.to_json()) == pending


def test_the_driver_reads_no_clock_and_starts_no_thread() -> None:
    source = rounds.__file__
    with open(source, encoding="utf-8") as f:
        text = f.read()
    for banned in ("import threading", "import time", "_clock", "import socket"):
        assert banned not in text
