"""Callbacks on callers' threads: the input desk's part that runs a callback where a call waits.

A 2026-07-28 round's input requests and a -32042 error's URL elicitations are
answered by the caller's own thread (or, for a round, on worker threads the
caller waits for), not by a legacy engine's workers. The desk (``_input.py``)
decides: checks, budget, the callback's context, the answer check. This part
only runs: one callback under its deadlines, ``handler_timeout`` and the
call's ``max_total_timeout`` (:meth:`CallerCallbacks.answer_here`), or a
round's callbacks one by one or in parallel up to the handler's
``input_parallelism`` (:meth:`CallerCallbacks.answer_round`, with
:func:`~mcp_input_sync._runtime.fanout.run_bounded`). It owns what a close
needs and nobody else may change: the tokens of the callbacks running now and
the worker threads not yet seen ended. It imports nothing of the desk (the
desk builds it and hands it its callback, answer check and ``handler_timeout`` table), so
:func:`refusal_error`, which both raise with, lives here.
"""

from __future__ import annotations

import logging
import sys
import threading
from functools import partial
from typing import TYPE_CHECKING, Any, Callable, Mapping, Optional, Union

from . import _clock
from ._protocol import jsonrpc
from ._protocol.checks import Prepared, Refusal
from ._protocol.deadlines import CallClock
from ._protocol.eras import KIND_METHODS, outcome_of
from ._telemetry import LOADED
from ._protocol.jsonrpc import JsonDict
from ._runtime.deadlines import DeadlineSweep
from ._runtime.fanout import NotRun, run_bounded
from ._stats import Stats
from .errors import ClientError, InputRefused
from .handler import CancelToken, InputHandler
from .options import Options

if TYPE_CHECKING:
    from ._telemetry import Tracing

log = logging.getLogger("mcp_input_sync")

#: The desk's callback: the context, then the handler (prepared, assigns, related id, token) -> what it returned.
Callback = Callable[[Prepared, Optional[Mapping[str, Any]], Any, Optional[CancelToken]], Any]
#: The desk's answer check (prepared, value, what, raised): the answer to send, or its refusal, counted and logged.
AnswerCheck = Callable[[Prepared, Any, str, bool], Union[Refusal, JsonDict]]


def refusal_error(refusal: Refusal) -> ClientError:
    """The ClientError for a refusal of the check pipeline (docs/modern.md#errors): the one mapping."""
    check = refusal.check
    if check in ("method", "malformed"):
        return ClientError("protocol", refusal.message, code=refusal.code, check="malformed")
    if check == "capability":
        return ClientError("protocol", refusal.message, code=refusal.code, check="capability")
    if check == "answer":
        return ClientError("input_handler", refusal.message, code=refusal.code, data=refusal.detail or None, check="answer")
    message = refusal.message
    if check == "budget" and refusal.detail:  # the caller is told which option to raise; a server never is
        message = f"{message}: {refusal.detail}"
    return ClientError("refused", message, code=refusal.code, check=check)


class CallerCallbacks:
    """Runs the desk's callbacks on callers' threads under their deadlines; sets their tokens at close."""

    def __init__(
        self,
        *,
        callback: Callback,
        check_answer: AnswerCheck,
        timeouts: Mapping[str, float],
        handler: Optional[InputHandler],
        options: Options,
        stats: Stats,
        sweep: DeadlineSweep,
        watch: Callable[[Callable[[], bool]], None],
        tracing: "Optional[Tracing]" = None,
    ) -> None:
        self._callback = callback
        self._tracing = tracing
        self._check_answer = check_answer
        #: ``handler_timeout`` by kind (the desk's table).
        self._timeouts = timeouts
        self._handler = handler
        self._options = options
        self._stats = stats
        self._sweep = sweep
        self._watch = watch
        #: Tokens of the callbacks running now (close() sets them).
        self._live_tokens: set[CancelToken] = set()
        #: Worker threads of parallel rounds not yet seen ended (close() joins them); run_bounded adds and drops.
        self._input_threads: set[threading.Thread] = set()

    def live_callbacks(self) -> int:
        """How many callbacks run on callers' threads now (those close() would set)."""
        return len(self._live_tokens)

    def worker_threads(self) -> tuple[threading.Thread, ...]:
        """The worker threads of parallel rounds not yet seen ended, a snapshot (to join at close)."""
        return tuple(self._input_threads)

    def close(self) -> None:
        """Set the token of every callback running on a caller's thread."""
        for token in list(self._live_tokens):
            token.cancel("closed")

    def answer_here(
        self,
        step: Prepared,
        clock: CallClock,
        assigns: Optional[Mapping[str, Any]],
        token: Optional[CancelToken] = None,
        cancel: Optional[threading.Event] = None,
        parent: Any = None,
        untraced: bool = False,
    ) -> JsonDict:
        """One callback on this thread under its deadlines (handler_timeout and max_total_timeout), then the answer check.

        For modern rounds and -32042 URL elicitations. A caller's ``cancel``
        event, once set, sets the callback's token. With telemetry on, it is a
        SERVER span, a child of ``parent`` (None: the request this thread
        last had answered), ended with its outcome (``untraced``: already in one).

        Raises:
            ClientError: ``timeout``, ``cancelled``, ``closed``, ``input_handler``
                or the kind of the refusal of its answer.
        """
        tracing = self._tracing
        if tracing is not None and not untraced and (tracing.found or LOADED in sys.modules):
            return self._traced(tracing, step, clock, assigns, token, cancel, parent)
        token = token or CancelToken()
        now = _clock.monotonic()
        timer = self._sweep.track(min(now + self._timeouts[step.kind], clock.started + clock.max_total), _expire_token, token)
        live = self._live_tokens
        live.add(token)
        if cancel is not None:
            watched = token

            def forward() -> bool:
                if cancel.is_set():
                    watched.cancel("cancelled")
                    return True
                return watched.is_set or watched not in live

            self._watch(forward)
        try:
            value = self._callback(step, self._options.assigns if assigns is None else assigns, None, token)
        except InputRefused as refusal:
            raise ClientError("input_handler", refusal.message, code=refusal.code, data=refusal.data) from refusal
        except Exception as exc:
            if token.reason == "timeout":
                raise ClientError("timeout", f"the {step.kind} callback ran past its deadline") from exc
            raise ClientError("input_handler", "the input handler failed", code=jsonrpc.INTERNAL_ERROR) from exc
        finally:
            timer.cancel()
            live.discard(token)
        if token.reason == "timeout":
            self._stats.add("timed_out")
            raise ClientError("timeout", f"the {step.kind} callback ran past its deadline; its answer was discarded")
        if token.reason is not None:
            raise ClientError("cancelled" if token.reason != "closed" else "closed", f"the call ended while the {step.kind} callback ran")
        verdict = self._check_answer(step, value, step.kind, True)
        if isinstance(verdict, Refusal):
            raise refusal_error(verdict)
        self._stats.add("served")
        return verdict

    def _traced(
        self, tracing: "Tracing", step: Prepared, clock: CallClock, assigns: Optional[Mapping[str, Any]], token: Optional[CancelToken],
        cancel: Optional[threading.Event], parent: Any,
    ) -> JsonDict:
        """:meth:`answer_here` as a SERVER span (telemetry), ended with the outcome."""
        traced = tracing.server(KIND_METHODS.get(step.kind, step.kind), None, parent if parent is not None else tracing.parent())
        if traced is None:
            return self.answer_here(step, clock, assigns, token, cancel, untraced=True)
        try:
            verdict = self.answer_here(step, clock, assigns, token, cancel, untraced=True)
        except ClientError as exc:
            if exc.kind == "refused":
                traced.settle("refused", str(exc.code), exc.check)
            elif exc.kind in ("timeout", "cancelled", "closed"):
                traced.settle("timeout" if exc.kind == "timeout" else "cancelled", exc.kind)
            else:
                traced.settle("error", exc.kind)
            raise
        traced.settle(outcome_of(verdict))
        return verdict

    def answer_round(
        self,
        prepared: dict[str, Prepared],
        clock: CallClock,
        assigns: Optional[Mapping[str, Any]],
        cancel: Optional[threading.Event] = None,
    ) -> JsonDict:
        """Run the handler for every input request of a round and validate the answers.

        In parallel, up to the handler's ``input_parallelism``: each callback's
        wait is bounded by its own deadline, counted from when it started (one
        waiting for a free thread has not), and the first failure cancels the
        others. The call's ``timeout`` is paused meanwhile (a person answers,
        not the server); ``max_total_timeout`` is not.
        """
        handler = self._handler
        parallel = type(handler).input_parallelism if handler is not None else 1
        clock.pause(_clock.monotonic())
        try:
            if parallel > 1 and len(prepared) > 1:
                parent = None if self._tracing is None else self._tracing.parent()  # read here: workers are other threads
                answers = self._answer_parallel(prepared, clock, assigns, parallel, cancel, parent)
            else:
                answers = {}
                for key, step in prepared.items():  # a loop, not a comprehension: no call of its own per round
                    answers[key] = self.answer_here(step, clock, assigns, None, cancel)
        finally:
            clock.resume(_clock.monotonic())
        if cancel is not None and cancel.is_set():
            raise ClientError("cancelled", "the call was cancelled while its input was answered")
        return answers

    def _answer_parallel(
        self,
        prepared: dict[str, Prepared],
        clock: CallClock,
        assigns: Optional[Mapping[str, Any]],
        parallel: int,
        cancel: Optional[threading.Event],
        parent: Any = None,
    ) -> JsonDict:
        tokens = {key: CancelToken() for key in prepared}

        def cancel_the_others() -> None:
            for token in tokens.values():
                token.cancel("cancelled")

        outcomes = run_bounded(
            {key: partial(self._answer_on_worker, step, clock, assigns, tokens[key], cancel, parent) for key, step in prepared.items()},
            parallel,
            {key: self._timeouts[step.kind] for key, step in prepared.items()},
            clock.started + clock.max_total,
            on_failure=cancel_the_others,
            threads=self._input_threads,
        )
        errors = [(key, _round_error(exc)) for key, exc in sorted(outcomes.errors.items())]
        # callbacks cancelled because another one failed are not failures of their own
        failures = [e for e in errors if e[1].kind != "cancelled"] or errors
        if failures:
            raise failures[0][1]
        if not outcomes.complete:
            for token in tokens.values():
                token.cancel("timeout")
            raise ClientError("timeout", "a callback of the round ran past its deadline; the round was abandoned")
        return {key: outcomes.values[key] for key in prepared}

    def _answer_on_worker(
        self, step: Prepared, clock: CallClock, assigns: Optional[Mapping[str, Any]], token: CancelToken, cancel: Optional[threading.Event],
        parent: Any = None,
    ) -> JsonDict:
        """:meth:`answer_here` on a round's worker thread: whatever else it raises becomes an ``input_handler`` error."""
        try:
            return self.answer_here(step, clock, assigns, token, cancel, parent)
        except ClientError:
            raise
        except BaseException as exc:  # a worker must end with an outcome, whatever the callback did
            log.exception("mcp_input_sync: a parallel input callback failed")
            raise ClientError("input_handler", "the input handler failed", code=jsonrpc.INTERNAL_ERROR) from exc


def _round_error(exc: BaseException) -> ClientError:
    """What a parallel round's callback ended with, as the error the call raises."""
    if isinstance(exc, ClientError):
        return exc
    if isinstance(exc, NotRun):
        return ClientError("cancelled", "another callback of the round failed")
    return ClientError("input_handler", "the input handler failed", code=jsonrpc.INTERNAL_ERROR)


def _expire_token(token: CancelToken) -> None:
    """A callback on a caller's thread ran past its deadline: its token says so; the caller raises."""
    token.cancel("timeout")
