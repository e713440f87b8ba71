"""The runtime shell: worker pool, watchdog and notification pump."""

from __future__ import annotations

import threading

import pytest
from freezegun import freeze_time
import freezegun.api

from mcp_input_sync import _clock
from mcp_input_sync._runtime import RealBudget, thread_name
from mcp_input_sync._runtime.notify import NotificationPump
from mcp_input_sync._runtime.watchdog import Watchdog
from mcp_input_sync._runtime.workers import HandlerPool

WAIT = 10.0


def real_now() -> float:
    """Real monotonic time, even under a freeze (freezegun leaves its own module alone)."""
    return freezegun.api.real_monotonic()


def test_thread_names_follow_the_pattern() -> None:
    first, second = thread_name("x"), thread_name("x")
    assert first.startswith("mcp-input-sync-x-") and first != second


def test_the_pool_refuses_past_its_size_and_holds_a_slot_until_the_job_returns() -> None:
    pool = HandlerPool(2)
    gate = threading.Event()
    started = threading.Semaphore(0)

    def job() -> None:
        started.release()
        gate.wait(WAIT)

    assert pool.start(job, "a") and pool.start(job, "b")
    assert not pool.start(job, "c")  # refused: nothing queued, no slot taken
    assert started.acquire(timeout=WAIT) and started.acquire(timeout=WAIT)
    assert not pool.start(job, "c")
    stuck = pool.shutdown(RealBudget(0.2))
    assert sorted(stuck) == ["a", "b"]
    gate.set()
    for thread in pool._threads:
        thread.join(WAIT)
    assert all(t.daemon for t in pool._threads)
    assert pool.free == 2  # released once the jobs really returned
    with pytest.raises(RuntimeError):
        pool.start(job, "d")  # shut down


def test_the_pool_reuses_idle_workers() -> None:
    pool = HandlerPool(4)
    done = threading.Semaphore(0)
    for i in range(20):
        assert pool.start(done.release, f"job {i}")
        assert done.acquire(timeout=WAIT)
    assert len(pool._threads) <= 2
    assert pool.shutdown(RealBudget(WAIT)) == []


def lazy_pool(size: int) -> tuple[HandlerPool, Watchdog]:
    watchdog = Watchdog()
    watchdog.start()
    return HandlerPool(size, nudge=watchdog.watch_fast), watchdog


def test_a_lazy_pool_answers_fast_jobs_on_few_threads() -> None:
    pool, watchdog = lazy_pool(8)
    done = threading.Semaphore(0)
    for i in range(400):  # bursts of 8, as a server at concurrency 8 sends them
        if i % 8 == 0:
            for _ in range(8 if i else 0):
                assert done.acquire(timeout=WAIT)
        assert pool.start(done.release, f"job {i}")
    for _ in range(8):
        assert done.acquire(timeout=WAIT)
    assert 1 <= len(pool._threads) < 8
    assert pool.shutdown(RealBudget(WAIT)) == []
    watchdog.stop(RealBudget(WAIT))


def test_a_lazy_pool_starts_a_worker_for_a_job_stuck_behind_a_blocked_one() -> None:
    pool, watchdog = lazy_pool(8)
    gate = threading.Event()
    running = threading.Semaphore(0)

    def blocked() -> None:
        running.release()
        gate.wait(WAIT)

    for i in range(8):  # eight callbacks that wait for a person, all at once
        assert pool.start(blocked, f"blocked {i}")
    try:
        for _ in range(8):
            assert running.acquire(timeout=WAIT)  # every one runs: none waits behind another
    finally:
        gate.set()
    assert pool.shutdown(RealBudget(WAIT)) == []
    watchdog.stop(RealBudget(WAIT))


def test_a_lazy_pool_never_starts_more_than_its_size() -> None:
    pool, watchdog = lazy_pool(2)
    gate = threading.Event()
    for i in range(2):
        assert pool.start(lambda: gate.wait(WAIT), f"blocked {i}")
    assert not pool.start(gate.set, "refused")
    gate.set()
    assert pool.shutdown(RealBudget(WAIT)) == []
    assert len(pool._threads) <= 2
    watchdog.stop(RealBudget(WAIT))


def test_a_raising_job_does_not_kill_its_worker(caplog: pytest.LogCaptureFixture) -> None:
    pool = HandlerPool(1)
    done = threading.Event()
    assert pool.start(lambda: 1 / 0, "boom")
    for _ in range(500):  # the slot comes back once the job has raised
        if pool.start(done.set, "next"):
            break
        threading.Event().wait(0.01)
    assert done.wait(WAIT)
    assert len(pool._threads) == 1
    pool.shutdown(RealBudget(WAIT))


class Sweeper:
    """A watcher that is a bound method and registers itself again while it finishes."""

    def __init__(self, dog: Watchdog) -> None:
        self.dog = dog
        self.calls = 0

    def sweep(self) -> bool:
        self.calls += 1
        if self.calls == 1:
            self.dog.watch(self.sweep)  # a new request re-arms while this run says "done"
        return True


def test_a_watcher_registered_again_while_it_finishes_stays_registered() -> None:
    # Bound methods compare equal: removing finished watchers by equality dropped the new
    # registration too, and the deadline sweep stopped for good (held-back answers stuck).
    dog = Watchdog()
    sweeper = Sweeper(dog)
    dog.watch(sweeper.sweep)
    dog._run_watchers(dog._watchers)
    assert len(dog._watchers) == 1
    dog._run_watchers(dog._watchers)
    assert sweeper.calls == 2 and dog._watchers == []


def test_the_watchdog_fires_deadlines_in_order_and_skips_cancelled_ones() -> None:
    dog = Watchdog()
    dog.start()
    fired: list[str] = []
    done = threading.Event()
    now = _clock.monotonic()
    dog.schedule(now + 0.05, lambda: fired.append("b"))
    dog.schedule(now, lambda: fired.append("a"))
    dog.schedule(now + 0.06, lambda: fired.append("never")).cancel()
    dog.schedule(now + 0.1, done.set)
    assert done.wait(WAIT)
    assert fired == ["a", "b"]
    dog.stop(RealBudget(WAIT))


def test_a_watchdog_deadline_fires_within_a_second_of_a_freezegun_tick() -> None:
    with freeze_time("2026-11-29") as frozen:
        dog = Watchdog()
        dog.start()
        fired = threading.Event()
        dog.schedule(_clock.monotonic() + 3600, fired.set)
        assert not fired.wait(0.1)
        started = real_now()
        frozen.tick(3601)
        assert fired.wait(WAIT)
        assert real_now() - started < 2.5
        dog.stop(RealBudget(WAIT))


def test_many_cancelled_timers_do_not_pile_up() -> None:
    dog = Watchdog()
    dog.start()
    far = _clock.monotonic() + 3600
    for _ in range(10_000):
        dog.schedule(far, lambda: None).cancel()
    assert len(dog._heap) < 200
    dog.stop(RealBudget(WAIT))


def test_the_library_clock_is_the_frozen_clock_on_every_thread() -> None:
    readings: list[float] = []
    with freeze_time("2026-11-29"):
        here = _clock.monotonic()
        thread = threading.Thread(target=lambda: readings.append(_clock.monotonic()))
        thread.start()
        thread.join(WAIT)
    assert readings == [here]


def test_the_pump_runs_jobs_in_order_and_drops_past_its_capacity() -> None:
    pump = NotificationPump(capacity=5)
    pump.start()
    gate = threading.Event()
    started = threading.Event()
    ran: list[int] = []

    def blocker() -> None:
        started.set()
        gate.wait(WAIT)

    assert pump.post(blocker)
    assert started.wait(WAIT)
    accepted = [pump.post(ran.append, i) for i in range(10)]
    assert accepted == [True] * 5 + [False] * 5
    gate.set()
    assert pump.drain(WAIT)
    assert ran == sorted(ran) and len(ran) == accepted.count(True)
    pump.stop(RealBudget(WAIT))
    assert not pump.post(ran.append, 99)


def test_a_raising_job_does_not_stop_the_pump() -> None:
    pump = NotificationPump()
    pump.start()
    ran: list[str] = []
    pump.post(lambda: 1 / 0)
    pump.post(ran.append, "after")
    assert pump.drain(WAIT)
    assert ran == ["after"]
    pump.stop(RealBudget(WAIT))


def test_the_real_budget_never_hands_out_more_than_it_has() -> None:
    budget = RealBudget(1.0)
    assert budget.take(0.7) == pytest.approx(0.7)
    assert budget.take(0.7) == pytest.approx(0.3)
    assert budget.take(5) == 0.0


FROZEN_IMPORT = r"""
import json, threading
from freezegun import freeze_time
with freeze_time("2020-01-01"):
    from mcp_input_sync import _clock  # first imported while time is frozen
    seen = {"main": _clock.monotonic()}
    worker = threading.Thread(target=lambda: seen.update(worker=_clock.monotonic()))
    worker.start()
    worker.join(10)
print(json.dumps(seen))
"""


def test_the_clock_agrees_across_threads_when_first_imported_under_a_freeze() -> None:
    # freezegun patches time.perf_counter too: the "is it the interpreter's own" test must not
    # take its type from a time function, or a frozen import makes fake_monotonic look builtin
    import json
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", FROZEN_IMPORT], capture_output=True, text=True, timeout=60, check=True)
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert abs(seen["main"] - seen["worker"]) < 1.0
