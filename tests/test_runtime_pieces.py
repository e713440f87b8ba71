"""The runtime's pieces alone, without a client: the deadline sweep, the bounded parallel runner, the
watchdog's fast checks. (The legacy engine's unit tests are in tests/test_engines.py, which shares
:class:`Watch`.)"""

from __future__ import annotations

import logging
import threading
from functools import partial
from typing import Callable, Optional

import pytest
from freezegun import freeze_time

from mcp_input_sync import _clock
from mcp_input_sync._runtime import RealBudget
from mcp_input_sync._runtime.deadlines import DeadlineSweep
from mcp_input_sync._runtime.fanout import NotRun, run_bounded
from mcp_input_sync._runtime.watchdog import Watchdog

WAIT = 10.0


class Watch:
    """Stands in for ``Watchdog.watch``: keeps what was registered; the test calls it."""

    def __init__(self) -> None:
        self.registered: list[Callable[[], bool]] = []

    def __call__(self, fn: Callable[[], bool]) -> None:
        self.registered.append(fn)


# ---------------------------------------------------------------------------- DeadlineSweep


def test_the_sweep_registers_once_for_many_deadlines() -> None:
    watch = Watch()
    sweep = DeadlineSweep(watch)
    assert not sweep.sweeping and watch.registered == []
    now = _clock.monotonic()
    for _ in range(3):
        sweep.track(now + 60, lambda _: None, None)
    assert len(watch.registered) == 1 and sweep.sweeping and len(sweep) == 3


def test_a_deadline_expires_once_after_it_passes_and_a_cancelled_one_never() -> None:
    with freeze_time("2026-12-01") as frozen:
        watch = Watch()
        sweep = DeadlineSweep(watch)
        expired: list[str] = []
        now = _clock.monotonic()
        sweep.track(now + 1, expired.append, "soon")
        sweep.track(now + 5, expired.append, "later")
        sweep.track(now + 1, expired.append, "answered").cancel()
        assert sweep.sweep() is False and expired == []
        frozen.tick(2)
        assert sweep.sweep() is False and expired == ["soon"]
        assert sweep.sweep() is False and expired == ["soon"]  # once
        frozen.tick(10)
        assert sweep.sweep() is False and expired == ["soon", "later"]
        assert len(sweep) == 0


def test_the_sweep_stops_one_wake_after_it_found_nothing_and_a_new_deadline_registers_it_again() -> None:
    watch = Watch()
    sweep = DeadlineSweep(watch)
    sweep.track(_clock.monotonic() + 60, lambda _: None, None).cancel()
    assert sweep.sweep() is False  # drops the cancelled deadline
    sweep.track(_clock.monotonic() + 60, lambda _: None, None).cancel()
    assert sweep.sweep() is False  # something was tracked since the last wake: one more look
    assert sweep.sweep() is True and not sweep.sweeping  # nothing since: it stops
    sweep.track(_clock.monotonic() + 60, lambda _: None, None)
    assert len(watch.registered) == 2 and sweep.sweeping


def test_a_failing_expiry_is_logged_and_the_others_still_expire(caplog: pytest.LogCaptureFixture) -> None:
    with freeze_time("2026-12-01") as frozen:
        sweep = DeadlineSweep(Watch())
        expired: list[str] = []

        def boom(_: object) -> None:
            raise RuntimeError("boom")

        now = _clock.monotonic()
        sweep.track(now + 1, boom, None)
        sweep.track(now + 1, expired.append, "next")
        frozen.tick(2)
        with caplog.at_level(logging.ERROR, logger="mcp_input_sync"):
            assert sweep.sweep() is False
        assert expired == ["next"] and "expiry failed" in caplog.text
        assert len(sweep) == 0


def test_the_sweep_runs_on_the_watchdog_until_nothing_is_left() -> None:
    dog = Watchdog()
    dog.start()
    try:
        sweep = DeadlineSweep(dog.watch)
        expired = threading.Event()
        sweep.track(_clock.monotonic(), lambda event: event.set(), expired)
        assert expired.wait(WAIT)
        assert RealBudget(WAIT).wait_until(lambda: not sweep.sweeping, WAIT)
    finally:
        dog.stop(RealBudget(WAIT))


# ---------------------------------------------------------------------------- run_bounded


def end_of(seconds: float = 600.0) -> float:
    return _clock.monotonic() + seconds


def join_all(threads: set[threading.Thread]) -> None:
    for thread in list(threads):
        thread.join(WAIT)
        assert not thread.is_alive()


def test_run_bounded_runs_every_job_and_returns_their_values() -> None:
    threads: set[threading.Thread] = set()
    jobs: dict[str, Callable[[], str]] = {k: partial(str.__mul__, k, 2) for k in "abc"}
    outcomes = run_bounded(jobs, 2, dict.fromkeys("abc", 60.0), end_of(), on_failure=lambda: None, threads=threads)
    assert outcomes.complete and outcomes.values == {"a": "aa", "b": "bb", "c": "cc"} and outcomes.errors == {}
    join_all(threads)


def test_run_bounded_runs_at_most_parallel_jobs_at_once() -> None:
    running = 0
    most = 0
    lock = threading.Lock()

    def job() -> None:
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
        threading.Event().wait(0.02)
        with lock:
            running -= 1

    threads: set[threading.Thread] = set()
    outcomes = run_bounded(dict.fromkeys(range(6), job), 2, dict.fromkeys(range(6), 60.0), end_of(), on_failure=lambda: None, threads=threads)
    assert outcomes.complete and most <= 2
    join_all(threads)


def test_the_first_failure_stops_the_others_and_jobs_not_started_never_run() -> None:
    stopped = threading.Event()

    def fails() -> None:
        raise ValueError("first")

    threads: set[threading.Thread] = set()
    jobs: dict[str, Callable[[], Optional[str]]] = {"a": fails, "b": lambda: "b", "c": lambda: "c"}
    outcomes = run_bounded(jobs, 1, dict.fromkeys(jobs, 60.0), end_of(), on_failure=stopped.set, threads=threads)
    assert outcomes.complete and stopped.is_set()
    assert isinstance(outcomes.errors["a"], ValueError)
    # one slot: each of the others ran before the failure, or never ran at all
    for key in "bc":
        assert outcomes.values.get(key) == key or isinstance(outcomes.errors.get(key), NotRun)
    join_all(threads)


def test_a_failure_is_told_at_once_so_running_jobs_can_stop() -> None:
    stop = threading.Event()
    entered = threading.Event()

    def fails() -> None:
        assert entered.wait(WAIT)
        raise ValueError("first")

    def waits() -> str:
        entered.set()
        assert stop.wait(WAIT)  # set by on_failure while this job runs
        return "stopped"

    threads: set[threading.Thread] = set()
    outcomes = run_bounded({"a": fails, "b": waits}, 2, {"a": 60.0, "b": 60.0}, end_of(), on_failure=stop.set, threads=threads)
    assert outcomes.complete and outcomes.values == {"b": "stopped"} and isinstance(outcomes.errors["a"], ValueError)
    join_all(threads)


def test_a_job_past_its_own_limit_ends_the_wait_with_the_others_counted_from_their_start() -> None:
    with freeze_time("2026-12-01") as frozen:
        release = threading.Event()
        entered = threading.Event()

        def stuck() -> str:
            entered.set()
            assert release.wait(WAIT)
            return "late"

        def quick() -> str:
            assert entered.wait(WAIT)
            frozen.tick(30)  # past stuck's 10 s limit
            return "quick"

        threads: set[threading.Thread] = set()
        try:
            outcomes = run_bounded({"stuck": stuck, "quick": quick}, 2, {"stuck": 10.0, "quick": 60.0}, end_of(), on_failure=lambda: None, threads=threads)
            assert not outcomes.complete and outcomes.values == {"quick": "quick"} and outcomes.errors == {}
            # the stuck one is left to its owner; the quick one is dropped if its thread had
            # ended by then (it may still be returning: a race this test does not decide)
            assert 1 <= len(threads) <= 2 and any(t.is_alive() for t in threads)
        finally:
            release.set()
            join_all(threads)


def test_nobody_waits_past_the_end() -> None:
    with freeze_time("2026-12-01") as frozen:
        release = threading.Event()
        entered = threading.Event()

        def stuck() -> None:
            entered.set()
            assert release.wait(WAIT)

        threads: set[threading.Thread] = set()
        end = end_of(5.0)
        ticker = threading.Thread(target=lambda: (entered.wait(WAIT), frozen.tick(6)))
        ticker.start()
        outcomes = run_bounded({"x": stuck}, 1, {"x": 60.0}, end, on_failure=lambda: None, threads=threads)
        assert not outcomes.complete and outcomes.values == {} and outcomes.errors == {}
        release.set()
        ticker.join(WAIT)
        join_all(threads)


# ---------------------------------------------------------------------------- the watchdog's fast checks


def test_a_fast_check_wakes_an_idle_watchdog_and_still_runs_after_the_watcher_that_kept_it_awake_stops() -> None:
    dog = Watchdog()
    dog.start()
    try:
        ran = threading.Event()

        def once() -> bool:
            ran.set()
            return True

        dog.watch_fast(once)  # nothing registered: woken at once
        assert ran.wait(WAIT)
        stopped = threading.Event()

        def watcher() -> bool:
            stopped.set()
            return True  # stops on its first call

        dog.watch(watcher)
        ran.clear()
        dog.watch_fast(once)  # a watcher is registered: no wake, the next one runs it
        assert stopped.wait(WAIT) and ran.wait(WAIT)
    finally:
        dog.stop(RealBudget(WAIT))
