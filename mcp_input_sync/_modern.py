"""Driving modern calls: the input_required retry loop, resumable calls and tasks (behaviour.md section 6).

A call in the 2026-07-28 era may be answered ``input_required``. The loop
here checks every input request of the round through the shared check
pipeline (steps 1 to 3 for each, in sorted key order; the budget once for
the round; step 5 for each), runs the handler for each on the calling
thread (or on up to ``input_parallelism`` worker threads), validates the
answers, and retries with a new JSON-RPC id, the original params,
``inputResponses`` and the echoed ``requestState``. Nothing here is shared
between concurrent calls: each call's state lives in its own frames.
"""

from __future__ import annotations

import logging
import threading
from functools import partial
from typing import TYPE_CHECKING, Any, Callable, Mapping, Optional, Union

from . import _clock
from ._protocol import jsonrpc, modern
from ._protocol.calls import CallClock
from ._protocol.checks import Prepared, Refusal
from ._protocol.jsonrpc import JsonDict
from ._protocol.limits import round_size
from ._protocol.modern import PendingCall
from ._protocol.versions import INPUT_METHODS, ProtocolViolation
from ._runtime import start_thread
from .errors import ClientError, InputRefused
from ._callbacks import call_handler, checked_answer, input_context
from .handler import CancelToken

if TYPE_CHECKING:
    from .client import Client

log = logging.getLogger("mcp_input_sync")

ProgressCallback = Callable[[JsonDict], None]


def refusal_error(refusal: Refusal) -> ClientError:
    """The ClientError of behaviour.md section 6's table for a refusal of the check pipeline."""
    if refusal.check in ("method", "malformed"):
        return ClientError("protocol", refusal.message, code=refusal.code, check="malformed")
    if refusal.check == "capability":
        return ClientError("protocol", refusal.message, code=refusal.code, check="capability")
    if refusal.check == "answer":
        return ClientError("input_handler", refusal.message, code=refusal.code, data=refusal.detail or None, check="answer")
    return ClientError("refused", refusal.message, code=refusal.code, check=refusal.check)


class ModernCalls:
    """The modern side of one client: MRTR rounds, resumable calls and tasks."""

    def __init__(self, client: "Client") -> None:
        self.client = client

    # ------------------------------------------------------------------ the loop

    def call(
        self,
        method: str,
        params: JsonDict,
        *,
        clock: CallClock,
        assigns: Optional[Mapping[str, Any]],
        progress: Optional[ProgressCallback],
        cancel: Optional[threading.Event],
        defer_input: bool,
        wait: bool,
        pending: Optional[PendingCall] = None,
        responses: Optional[JsonDict] = None,
    ) -> Union[JsonDict, PendingCall]:
        """Run a modern call to its end (or to its first round, with ``defer_input``)."""
        client = self.client
        rounds = 0
        declined: frozenset[str] = frozenset()
        state_only = 0
        if pending is None:
            result = client._request(method, params, is_call=True, clock=clock, assigns=assigns, progress=progress, cancel=cancel)
        else:
            rounds = pending.rounds
            declined = frozenset(pending.declined)
            retry = modern.retry_params(params, responses, pending.request_state)
            result = client._request(method, retry, is_call=True, clock=clock, assigns=assigns, progress=progress, cancel=cancel)
        while True:
            try:
                kind = modern.result_type(result, method, client._opts.tasks)
            except ProtocolViolation as exc:
                raise ClientError("protocol", exc.message, data=result, check="result") from None
            if kind == modern.COMPLETE:
                return result
            if kind == modern.TASK:
                task_id = result.get("taskId")
                if not isinstance(task_id, str):
                    raise ClientError("protocol", "a task result without a taskId", data=result, check="result")
                if not wait:
                    return result
                return self.await_task(task_id, clock=clock, assigns=assigns, cancel=cancel)
            rounds += 1
            if rounds > client._opts.max_rounds:
                raise ClientError("protocol", f"the server asked for input more than max_rounds={client._opts.max_rounds} times", check="rounds")
            try:
                round_ = modern.parse_round(result)
            except ProtocolViolation as exc:
                raise ClientError("protocol", exc.message, data=result, check="result") from None
            answers: Optional[JsonDict] = None
            if round_.requests:
                again = modern.reasked(declined, round_)
                if again is not None:
                    raise ClientError("declined", f"the server asked again for {again!r} after it was declined", check="reask")
                prepared = self.check_round(round_.requests)
                if defer_input:
                    return PendingCall(method, params, round_.requests, round_.state, rounds, sorted(declined))
                clock.pause(_clock.monotonic())
                try:
                    answers = self.answer_round(prepared, clock, assigns, cancel)
                finally:
                    clock.resume(_clock.monotonic())
                declined = frozenset(
                    modern.question_key(round_.requests[key])
                    for key, answer in answers.items()
                    if answer.get("action") in ("decline", "cancel")
                )
                state_only = 0
            else:
                self._back_off(state_only, clock, cancel)
                state_only += 1
                declined = frozenset()
            retry = modern.retry_params(params, answers, round_.state)
            result = client._request(method, retry, is_call=True, clock=clock, assigns=assigns, progress=progress, cancel=cancel)

    def _back_off(self, n: int, clock: CallClock, cancel: Optional[threading.Event]) -> None:
        """Wait before retrying a state-only round (cancel-aware, bounded by max_total_timeout)."""
        pause = min(modern.backoff(n), max(0.0, clock.remaining(_clock.monotonic())))
        if cancel is not None:
            if cancel.wait(pause):
                raise ClientError("cancelled", "the call was cancelled")
        else:
            threading.Event().wait(pause)

    # ------------------------------------------------------------------ one round

    def check_round(self, requests: Mapping[str, Any]) -> dict[str, Prepared]:
        """Every input request of a round through the check pipeline, before any callback.

        Raises:
            ClientError: as behaviour.md section 6's table says.
        """
        client = self.client
        responder = client._responder
        assert responder is not None
        limits = client._opts.limits
        if len(requests) > limits["round_requests"]:
            client._stats.add("malformed")
            raise ClientError("protocol", f"the server asked for {len(requests)} inputs in one round, over limits['round_requests']={limits['round_requests']}", check="limit")
        size = round_size(requests)
        if size > limits["round_bytes"]:
            client._stats.add("malformed")
            raise ClientError("protocol", f"one round's input requests take {size} bytes, over limits['round_bytes']={limits['round_bytes']}", check="limit")
        checks = responder.checks
        kinds: list[str] = []
        for key, request in requests.items():
            method = request.get("method") if isinstance(request, dict) else None
            params = request.get("params") if isinstance(request, dict) else None
            if not isinstance(method, str):
                raise ClientError("protocol", f"input request {key!r} has no method", code=jsonrpc.METHOD_NOT_FOUND, check="malformed")
            refusal = checks.before(method, params)
            if refusal is not None:
                responder.note_refusal(INPUT_METHODS.get(method, "other"), refusal)
                raise refusal_error(refusal)
            kinds.append(INPUT_METHODS[method])
        with responder.budget_lock:
            refusal = checks.budget(kinds, _clock.monotonic())
        if refusal is not None:
            responder.note_refusal(kinds[0], refusal)
            raise refusal_error(refusal)
        prepared: dict[str, Prepared] = {}
        for key, request in requests.items():
            step = checks.prepare(request["method"], request.get("params"), in_flight=True)
            if isinstance(step, Refusal):
                responder.note_refusal(INPUT_METHODS[request["method"]], step)
                raise refusal_error(step)
            prepared[key] = step
        return prepared

    def answer_round(
        self,
        prepared: dict[str, Prepared],
        clock: CallClock,
        assigns: Optional[Mapping[str, Any]],
        cancel: Optional[threading.Event] = None,
    ) -> JsonDict:
        """Run the handler for every input request and validate the answers."""
        handler = self.client._handler
        parallel = type(handler).input_parallelism if handler is not None else 1
        if parallel > 1 and len(prepared) > 1:
            answers = self._answer_parallel(prepared, clock, assigns, parallel, cancel)
        else:
            answers = {key: self.answer_one(step, clock, assigns, cancel=cancel) for key, step in prepared.items()}
        if cancel is not None and cancel.is_set():
            raise ClientError("cancelled", "the call was cancelled while its input was answered")
        return answers

    def answer_one(
        self,
        step: Prepared,
        clock: CallClock,
        assigns: Optional[Mapping[str, Any]],
        token: Optional[CancelToken] = None,
        cancel: Optional[threading.Event] = None,
    ) -> JsonDict:
        """One callback under its deadlines (handler_timeout and max_total_timeout), then validation.

        A caller's ``cancel`` event, once set, sets the callback's token.
        """
        client = self.client
        responder = client._responder
        assert responder is not None and client._watchdog is not None
        handler = client._handler
        assert handler is not None  # the capability check passed
        token = token or CancelToken()
        now = _clock.monotonic()
        limit = client._opts.handler_timeout[step.kind]
        deadline = min(now + limit, clock.started + clock.max_total)
        timer = client._watchdog.schedule(deadline, lambda: token.cancel("timeout"))
        ctx = input_context(
            step,
            client=client.name,
            server_id=client.server_id,
            era=client.era,
            assigns=client._opts.assigns if assigns is None else assigns,
            token=token,
        )
        client._live_tokens.add(token)
        if cancel is not None:
            watched = token

            def forward() -> bool:
                if cancel.is_set():
                    watched.cancel("cancelled")
                    return True
                return watched.is_set or watched not in client._live_tokens

            client._watchdog.watch(forward)
        try:
            value = call_handler(handler, step, ctx)
        except InputRefused as refusal:
            raise ClientError("input_handler", refusal.message, code=refusal.code, data=refusal.data) from refusal
        except Exception as exc:
            if token.reason == "timeout":
                raise ClientError("timeout", f"the {step.kind} callback ran past its deadline") from exc
            raise ClientError("input_handler", "the input handler failed", code=jsonrpc.INTERNAL_ERROR) from exc
        finally:
            timer.cancel()
            client._live_tokens.discard(token)
        if token.reason == "timeout":
            client._stats.add("timed_out")
            raise ClientError("timeout", f"the {step.kind} callback ran past its deadline; its answer was discarded")
        if token.reason is not None:
            raise ClientError("cancelled" if token.reason != "closed" else "closed", f"the call ended while the {step.kind} callback ran")
        verdict = checked_answer(responder.checks, step, value)
        if isinstance(verdict, Refusal):
            responder.note_refusal(step.kind, verdict)
            raise refusal_error(verdict)
        for note in step.notes:
            log.warning("mcp_input_sync: %s answer to server %s: %s", step.kind, client.server_id, note)
        client._stats.add("served")
        return verdict

    def _answer_parallel(
        self,
        prepared: dict[str, Prepared],
        clock: CallClock,
        assigns: Optional[Mapping[str, Any]],
        parallel: int,
        cancel: Optional[threading.Event],
    ) -> JsonDict:
        """Run a round's callbacks on up to ``parallel`` worker threads; the first failure cancels the rest.

        The call waits for each callback only until its own deadline, counted
        from when it started (a callback waiting for a free worker has not).
        """
        client = self.client
        gate = threading.BoundedSemaphore(parallel)
        tokens = {key: CancelToken() for key in prepared}
        outcomes: dict[str, Union[JsonDict, ClientError]] = {}
        started: dict[str, float] = {}
        finished = threading.Condition()
        failed = threading.Event()

        def run(key: str) -> None:
            with gate:
                with finished:
                    started[key] = _clock.monotonic()
                try:
                    if failed.is_set():
                        raise ClientError("cancelled", "another callback of the round failed")
                    outcome: Union[JsonDict, ClientError] = self.answer_one(prepared[key], clock, assigns, tokens[key], cancel)
                except ClientError as exc:
                    outcome = exc
                except BaseException:  # a worker must end with an outcome, whatever the callback did
                    log.exception("mcp_input_sync: a parallel input callback failed")
                    outcome = ClientError("input_handler", "the input handler failed", code=jsonrpc.INTERNAL_ERROR)
                if isinstance(outcome, ClientError):
                    failed.set()
                    for other in tokens.values():
                        other.cancel("cancelled")
            with finished:
                outcomes[key] = outcome
                finished.notify_all()

        threads = [start_thread("input", partial(run, key)) for key in prepared]
        client._input_threads.update(threads)
        limits = {key: client._opts.handler_timeout[step.kind] for key, step in prepared.items()}
        end_of_call = clock.started + clock.max_total

        def overdue(now: float) -> bool:
            if now >= end_of_call:
                return True
            return any(key not in outcomes and key in started and now >= started[key] + limits[key] for key in prepared)

        with finished:
            while len(outcomes) < len(prepared) and not overdue(_clock.monotonic()):
                finished.wait(_clock.MAX_WAIT)
            known = dict(outcomes)
        for thread in threads:
            if not thread.is_alive():
                client._input_threads.discard(thread)
        errors = [(key, out) for key, out in sorted(known.items()) if isinstance(out, ClientError)]
        # callbacks cancelled because another one failed are not failures of their own
        failures = [e for e in errors if e[1].kind != "cancelled"] or errors
        if failures:
            raise failures[0][1]
        if len(known) < len(prepared):
            for token in tokens.values():
                token.cancel("timeout")
            raise ClientError("timeout", "a callback of the round ran past its deadline; the round was abandoned")
        answers: JsonDict = {}
        for key in prepared:
            outcome = known[key]
            assert not isinstance(outcome, ClientError)
            answers[key] = outcome
        return answers

    # ------------------------------------------------------------------ resumable calls

    def resume(
        self,
        pending: PendingCall,
        responses: Mapping[str, Any],
        *,
        clock: CallClock,
        assigns: Optional[Mapping[str, Any]],
        progress: Optional[ProgressCallback],
        cancel: Optional[threading.Event],
        defer_input: bool,
        wait: bool,
    ) -> Union[JsonDict, PendingCall]:
        """Validate the answers to a pending round and continue the call."""
        client = self.client
        responder = client._responder
        assert responder is not None
        checks = responder.checks
        missing = [key for key in pending.input_requests if key not in responses]
        if missing:
            raise ClientError("input_handler", f"no answer for input request {missing[0]!r}", code=jsonrpc.INTERNAL_ERROR, check="answer")
        answers: JsonDict = {}
        declined = []
        for key, request in pending.input_requests.items():
            method = request.get("method") if isinstance(request, dict) else None
            refusal = checks.before(method, request.get("params")) if isinstance(method, str) else None
            if not isinstance(method, str) or refusal is not None:  # a pending call is data from outside
                raise refusal_error(refusal) if refusal is not None else ClientError("protocol", f"input request {key!r} has no method", check="malformed")
            step = checks.prepare(method, request.get("params"), in_flight=True)
            if isinstance(step, Refusal):  # the checks passed when the round arrived; a changed config refuses
                raise refusal_error(step)
            verdict = checks.answer(step, responses[key])
            if isinstance(verdict, Refusal):
                responder.note_refusal(step.kind, verdict)
                raise refusal_error(verdict)
            if verdict.get("action") in ("decline", "cancel"):
                declined.append(modern.question_key(request))
            client._stats.add("served")
            answers[key] = verdict
        carried = PendingCall(pending.method, pending.params, pending.input_requests, pending.request_state, pending.rounds, declined)
        return self.call(
            pending.method,
            pending.params,
            clock=clock,
            assigns=assigns,
            progress=progress,
            cancel=cancel,
            defer_input=defer_input,
            wait=wait,
            pending=carried,
            responses=answers,
        )

    # ------------------------------------------------------------------ tasks (extension)

    def await_task(
        self,
        task_id: str,
        *,
        clock: CallClock,
        assigns: Optional[Mapping[str, Any]],
        cancel: Optional[threading.Event],
    ) -> JsonDict:
        """Poll ``tasks/get`` until the task ends; answer its input requests with ``tasks/update``."""
        client = self.client
        answered: set[str] = set()
        while True:
            task = client._request("tasks/get", {"taskId": task_id}, is_call=True, clock=clock.child(_clock.monotonic()), assigns=assigns, cancel=cancel)
            status = task.get("status")
            if status == "completed":
                result = task.get("result")
                if not isinstance(result, dict):
                    raise ClientError("protocol", "a completed task without a result", data=task, check="result")
                return result
            if status == "failed":
                raw = task.get("error")
                error: JsonDict = raw if isinstance(raw, dict) else {}
                code = error.get("code")
                raise ClientError(
                    "remote", str(error.get("message", "the task failed")), code=code if type(code) is int else None, data=error.get("data")
                )
            if status == "cancelled":
                raise ClientError("cancelled", f"task {task_id} was cancelled")
            if status == "input_required":
                requests = task.get("inputRequests")
                if not isinstance(requests, dict):
                    raise ClientError("protocol", "an input_required task without inputRequests", data=task, check="result")
                fresh = {key: requests[key] for key in sorted(requests) if key not in answered}
                if fresh:
                    prepared = self.check_round(fresh)
                    clock.pause(_clock.monotonic())
                    try:
                        answers = self.answer_round(prepared, clock, assigns, cancel)
                    finally:
                        clock.resume(_clock.monotonic())
                    answered.update(answers)
                    client._request("tasks/update", {"taskId": task_id, "inputResponses": answers}, is_call=False, clock=clock.child(_clock.monotonic()), cancel=cancel)
                    continue
            elif status != "working":
                raise ClientError("protocol", f"task status {status!r} is not known", data=task, check="result")
            interval = task.get("pollIntervalMs")
            pause = interval / 1000.0 if isinstance(interval, (int, float)) and not isinstance(interval, bool) and interval > 0 else 1.0
            pause = min(max(pause, 0.01), max(0.0, clock.remaining(_clock.monotonic())))
            if cancel is not None:
                if cancel.wait(pause):
                    raise ClientError("cancelled", "await_task was cancelled")
            else:
                threading.Event().wait(min(pause, 5.0))
            if _clock.monotonic() - clock.started >= clock.max_total:
                raise ClientError("timeout", f"task {task_id} did not finish within max_total_timeout")
