"""The runtime's pieces alone, without a client: the deadline sweep, the bounded parallel runner, the
watchdog's fast checks; and the legacy engine answering one server request through a fake desk."""

from __future__ import annotations

import logging
import threading
from functools import partial
from types import SimpleNamespace
from typing import Any, Callable, Optional, cast

import pytest
from freezegun import freeze_time

from mcp_input_sync import _clock
from mcp_input_sync._calls import CallTable
from mcp_input_sync._engines.legacy import LegacyEngine
from mcp_input_sync._input import InputDesk
from mcp_input_sync._protocol import jsonrpc
from mcp_input_sync._protocol.checks import Prepared, Refusal
from mcp_input_sync._runtime import RealBudget
from mcp_input_sync._runtime.deadlines import DeadlineSweep
from mcp_input_sync._runtime.fanout import NotRun, run_bounded
from mcp_input_sync._runtime.watchdog import Watchdog
from mcp_input_sync._session import Session
from mcp_input_sync._stats import Stats
from mcp_input_sync.handler import CancelToken
from mcp_input_sync.options import Options

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
        outcomes = run_bounded({"stuck": stuck, "quick": quick}, 2, {"stuck": 10.0, "quick": 60.0}, end_of(), on_failure=lambda: None, threads=threads)
        assert not outcomes.complete and outcomes.values == {"quick": "quick"} and outcomes.errors == {}
        assert len(threads) == 1  # the stuck one is left to its owner; the finished one was dropped
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


# ---------------------------------------------------------------------------- the legacy engine and the desk


class FakeDesk:
    """Records what the engine asks of the desk for one server request."""

    def __init__(self, verdict: Any = None) -> None:
        self.asked: list[str] = []
        self.stats = Stats()
        self.server_id = "srv"
        self.handler = None
        self.verdict = verdict if verdict is not None else {"action": "accept", "content": {}}
        self.noted: list[tuple[str, str]] = []

    def admit(self, method: str, params: Any, now: float, in_flight: bool) -> Any:
        self.asked.append("admit")
        if method != "elicitation/create":
            return Refusal("method", jsonrpc.METHOD_NOT_FOUND, "method not found")
        return Prepared("elicitation", params)

    def timeout(self, kind: str) -> float:
        self.asked.append("timeout")
        return 5.0

    def answer(self, prepared: Prepared, assigns: Any, related: Any, token: CancelToken, what: str) -> Any:
        self.asked.append("answer")
        return self.verdict

    def note_refusal(self, kind: str, refusal: Refusal) -> None:
        self.noted.append((kind, refusal.check))


class InlinePool:
    """Runs each job and its follow-up at once, on the calling thread."""

    def full(self) -> bool:
        return False

    def has_queued(self) -> bool:
        return False

    def start(self, job: Callable[[], Optional[Callable[[], object]]], label: object) -> bool:
        follow_up = job()
        if follow_up is not None:
            follow_up()
        return True


def new_list() -> list[Any]:
    return []


def legacy_engine(desk: FakeDesk, sent: list[Any], watch: Optional[Watch] = None) -> LegacyEngine:
    session = SimpleNamespace(calls=CallTable())
    port = SimpleNamespace(answer=lambda data: sent.append(jsonrpc.decode(data)), ties_by_stream=False, send_later=None, flush=None)
    watchdog = SimpleNamespace(watch=watch or Watch(), watch_fast=lambda fn, wake=True: None)
    return LegacyEngine(
        session=cast(Session, session),
        desk=cast(InputDesk, desk),
        port=cast(Any, port),
        options=Options(),
        router=cast(Any, None),
        pool=cast(Any, InlinePool()),
        watchdog=cast(Watchdog, watchdog),
    )


def test_the_engine_asks_the_desk_three_things_and_writes_the_one_answer() -> None:
    desk, sent = FakeDesk(), new_list()
    engine = legacy_engine(desk, sent)
    engine.on_request(7, "elicitation/create", {"message": "m"})
    assert desk.asked == ["admit", "timeout", "answer"]
    assert sent == [{"jsonrpc": "2.0", "id": 7, "result": {"action": "accept", "content": {}}}]
    assert desk.stats.snapshot()["served"] == 1
    assert len(engine.inbox) == 0 and len(engine.sweep) == 0  # settled, and off the sweep


def test_a_refusal_of_the_desk_is_written_as_it_is() -> None:
    desk, sent = FakeDesk(), new_list()
    engine = legacy_engine(desk, sent)
    engine.on_request(8, "tools/call", {})
    assert desk.asked == ["admit"]
    assert sent == [{"jsonrpc": "2.0", "id": 8, "error": {"code": -32601, "message": "method not found"}}]
    assert desk.noted == []  # the desk counted it itself


def test_a_refused_answer_is_written_as_an_error() -> None:
    desk, sent = FakeDesk(Refusal("answer", jsonrpc.INTERNAL_ERROR, "the input handler returned an invalid answer")), new_list()
    engine = legacy_engine(desk, sent)
    engine.on_request(9, "elicitation/create", {"message": "m"})
    assert sent == [{"jsonrpc": "2.0", "id": 9, "error": {"code": -32603, "message": "the input handler returned an invalid answer"}}]
    assert desk.stats.snapshot()["served"] == 0


def test_a_request_past_its_handler_timeout_is_answered_by_the_engines_sweep() -> None:
    class Parked(InlinePool):
        def __init__(self) -> None:
            self.jobs: list[Callable[[], Any]] = []

        def start(self, job: Callable[[], Any], label: object) -> bool:
            self.jobs.append(job)  # the callback never gets to run
            return True

    with freeze_time("2026-12-01") as frozen:
        desk, sent, watch = FakeDesk(), new_list(), Watch()
        engine = legacy_engine(desk, sent, watch)
        engine.pool = cast(Any, Parked())
        engine.on_request(10, "elicitation/create", {"message": "m"})
        (sweep,) = watch.registered
        (entry,) = list(engine.inbox)
        frozen.tick(6)
        sweep()
        assert sent == [{"jsonrpc": "2.0", "id": 10, "error": {"code": -32603, "message": "the input handler timed out"}}]
        assert entry.token.reason == "timeout" and desk.stats.snapshot()["timed_out"] == 1
        assert len(engine.inbox) == 0


def test_a_request_the_server_cancels_is_taken_off_the_sweep_and_never_answered() -> None:
    class Parked(InlinePool):
        def start(self, job: Callable[[], Any], label: object) -> bool:
            return True

    desk, sent = FakeDesk(), new_list()
    engine = legacy_engine(desk, sent)
    engine.pool = cast(Any, Parked())
    engine.on_request(11, "elicitation/create", {"message": "m"})
    (entry,) = list(engine.inbox)
    engine.on_cancelled(11)
    assert sent == [] and len(engine.inbox) == 0 and len(engine.sweep) == 0
    assert entry.token.reason == "cancelled by the server"
