"""A slow tool kept alive by its progress: ``reset_timeout_on_progress`` (issue 34, item 3).

Each progress notification whose value is above the last restarts the
call's ``timeout``; ``max_total_timeout`` still bounds the call; a server that
repeats itself keeps nothing alive. The tools pace themselves in real time
(a few tenths of a second); the client's waits are its own deadlines.
"""

from __future__ import annotations

import threading
from typing import Any, Callable

import pytest

import mcp_input_sync as mis
from mcp_input_sync._protocol.deadlines import MAX_TOTAL, TIMEOUT, CallClock
from mcp_input_sync.testing import FakeServer, ToolCall

STEP = 0.15  # real seconds between two progress notifications of the slow tools
TIMEOUT_S = 0.6  # the calls' timeout: four steps without progress


def paced(values: list[float], seen: list[Any]) -> Callable[[ToolCall], str]:
    """A tool that reports ``values`` one step apart, then answers (recording its progress token)."""

    def slow(call: ToolCall) -> str:
        seen.append(call.progress_token)
        pause = threading.Event()
        for value in values:
            pause.wait(STEP)
            call.progress(value)
        pause.wait(STEP)
        return "done"

    return slow


@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_progress_keeps_a_call_alive_past_its_timeout(era: str) -> None:
    seen: list[Any] = []
    with FakeServer(era=era) as fake:
        fake.add_tool("slow", paced([1, 2, 3, 4, 5, 6, 7, 8], seen))  # 9 steps: past the timeout twice over
        with fake.client(timeout=TIMEOUT_S, reset_timeout_on_progress=True) as client:
            assert client.call_tool("slow")["content"][0]["text"] == "done"
    assert seen[0] is not None  # progress asked for without a progress callback: to keep the call alive


def test_without_the_option_the_same_call_times_out() -> None:
    with FakeServer(era="legacy") as fake:
        fake.add_tool("slow", paced([1, 2, 3, 4, 5, 6, 7, 8], []))
        with fake.client(timeout=TIMEOUT_S) as client:
            with pytest.raises(mis.ClientError) as caught:
                client.call_tool("slow")
    assert caught.value.kind == "timeout"


def test_the_call_option_overrides_the_clients() -> None:
    with FakeServer(era="legacy") as fake:
        fake.add_tool("slow", paced([1, 2, 3, 4, 5, 6, 7, 8], []))
        with fake.client(timeout=TIMEOUT_S, reset_timeout_on_progress=True) as client:
            with pytest.raises(mis.ClientError) as caught:
                client.call_tool("slow", reset_timeout_on_progress=False)
    assert caught.value.kind == "timeout"


def test_progress_that_does_not_increase_keeps_nothing_alive() -> None:
    with FakeServer(era="legacy") as fake:
        fake.add_tool("stuck", paced([1, 1, 1, 1, 1, 1, 1, 1], []))  # the same value over and over
        with fake.client(timeout=TIMEOUT_S, reset_timeout_on_progress=True) as client:
            with pytest.raises(mis.ClientError) as caught:
                client.call_tool("stuck")
    assert caught.value.kind == "timeout" and "max_total_timeout" not in caught.value.message


def test_max_total_timeout_still_bounds_a_call_that_progresses() -> None:
    with FakeServer(era="legacy") as fake:
        fake.add_tool("endless", paced([float(n) for n in range(1, 12)], []))
        with fake.client(timeout=TIMEOUT_S, max_total_timeout=0.9, reset_timeout_on_progress=True) as client:
            with pytest.raises(mis.ClientError) as caught:
                client.call_tool("endless")
    assert caught.value.kind == "timeout" and "max_total_timeout" in caught.value.message


def test_the_option_is_a_bool() -> None:
    with pytest.raises(TypeError):
        mis.Client(mis.transports.memory.MemoryTransport(), reset_timeout_on_progress="yes")


# ---------------------------------------------------------------------------- the clock alone


def test_a_restart_counts_timeout_again_and_leaves_max_total_alone() -> None:
    clock = CallClock(100.0, 10.0, 60.0, resets=True)
    assert clock.expired(109.0) is None and clock.expired(110.0) == TIMEOUT
    clock.restart(109.0)
    assert clock.expired(118.0) is None and clock.remaining(118.0) == 1.0
    assert clock.expired(119.0) == TIMEOUT
    clock.restart(158.0)
    assert clock.remaining(158.0) == 2.0 and clock.total_left(158.0) == 2.0  # max_total is nearer
    assert clock.expired(160.0) == MAX_TOTAL


def test_a_restart_while_paused_counts_from_the_restart_once_resumed() -> None:
    clock = CallClock(0.0, 10.0, 600.0, resets=True)
    clock.pause(5.0)  # a person answers from 5 s
    clock.restart(8.0)  # progress meanwhile
    clock.resume(20.0)
    assert clock.waited(20.0) == 0.0 and clock.waited(25.0) == 5.0
