"""run_bounded: run a few jobs on their own threads, at most ``parallel`` at once, and wait for them.

The shape of ``concurrent.futures.wait(..., return_when=FIRST_EXCEPTION)``,
with two differences a caller answering a person needs: each job has its own
time limit, counted from when it *starts* (a job waiting for a free slot has
not started), and nobody waits past one overall ``end``. Threads are started
per call, as daemon threads (a job that never returns cannot keep the
interpreter alive), and are left running when the wait gives up; the caller
owns the ``threads`` set and joins what is left at close.

It knows nothing of MCP: jobs are callables, times are library-clock seconds.
"""

from __future__ import annotations

import threading
from functools import partial
from typing import Callable, Generic, Hashable, Mapping, Optional, TypeVar

from .. import _clock
from . import start_thread

K = TypeVar("K", bound=Hashable)
T = TypeVar("T")


class NotRun(Exception):
    """The outcome of a job that had not started when another one failed: it never ran."""


class Outcomes(Generic[K, T]):
    """What :func:`run_bounded` saw: each finished job's value or exception, and whether all finished."""

    __slots__ = ("values", "errors", "complete")

    def __init__(self, values: dict[K, T], errors: dict[K, BaseException], complete: bool) -> None:
        #: The return value of each job that returned.
        self.values = values
        #: What each failed job raised (:class:`NotRun` for a job skipped after a failure).
        self.errors = errors
        #: False when the wait gave up (a job ran past its limit, or ``end`` came) with jobs still running.
        self.complete = complete


def run_bounded(
    jobs: Mapping[K, Callable[[], T]],
    parallel: int,
    limits: Mapping[K, float],
    end: float,
    *,
    on_failure: Callable[[], object],
    threads: "set[threading.Thread]",
    role: str = "input",
) -> Outcomes[K, T]:
    """Run ``jobs`` on up to ``parallel`` threads; return when all ended, or when waiting must stop.

    A job that raises is a failure: ``on_failure()`` runs at once on its
    thread (to stop the others, cooperatively), and jobs that have not
    started yet are not run. The wait stops early when a started job has run
    ``limits[key]`` seconds, or at ``end`` (library clock). Each thread is
    added to ``threads``; those that ended are removed before returning.
    """
    slots = threading.BoundedSemaphore(parallel)
    #: Guards ``started``, ``values``, ``errors`` and ``failed``; notified as each job ends.
    progress = threading.Condition()
    started: dict[K, float] = {}
    values: dict[K, T] = {}
    errors: dict[K, BaseException] = {}
    failed = False

    def run(key: K) -> None:
        nonlocal failed
        with slots:
            with progress:
                started[key] = _clock.monotonic()
                skip = failed
            error: Optional[BaseException] = NotRun() if skip else None
            if error is None:
                try:
                    value = jobs[key]()
                except BaseException as exc:  # a thread must end with an outcome, whatever the job did
                    error = exc
                    with progress:
                        failed = True
                    on_failure()
        with progress:
            if error is None:
                values[key] = value
            else:
                errors[key] = error
            progress.notify_all()

    mine = [start_thread(role, partial(run, key)) for key in jobs]
    threads.update(mine)

    def overdue(now: float) -> bool:
        if now >= end:
            return True
        return any(key not in values and key not in errors and key in started and now >= started[key] + limits[key] for key in jobs)

    with progress:
        while len(values) + len(errors) < len(jobs) and not overdue(_clock.monotonic()):
            progress.wait(_clock.MAX_WAIT)
        outcomes = Outcomes(dict(values), dict(errors), len(values) + len(errors) == len(jobs))
    for thread in list(threads):  # this run's, and those of runs abandoned earlier that have ended since
        if not thread.is_alive():
            threads.discard(thread)
    return outcomes
