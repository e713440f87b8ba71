"""The input desk: answering one input request the same way in both eras.

A server asks for input in two ways: a legacy server request (2025-06-18 /
2025-11-25) or an input request of a 2026-07-28 ``input_required`` round (and
the URL elicitations of a -32042 error). Either way the desk runs the check
pipeline (docs/reference.md#order-of-checks), takes from the input budget,
builds the callback's context, calls the handler, checks the answer and
accounts for each refusal (a count and one structured log record). What
differs between the eras is only how an outcome travels: the legacy engine
writes it on the wire, the modern engine raises or retries.

``handler_timeout`` is read in one place, :meth:`InputDesk.deadline`, and
enforced by one mechanism: a sweep of the running callbacks on the watchdog
thread (:meth:`InputDesk.track_locked`). See docs/architecture.md#the-input-desk.
"""

from __future__ import annotations

import logging
import threading
from functools import partial
from typing import Any, Callable, Mapping, Optional, Union

from . import _clock, reflect
from ._calls import Inbound
from ._protocol import jsonrpc, modern
from ._protocol.budget import over_budget
from ._protocol.deadlines import CallClock
from ._protocol.checks import CheckConfig, InputChecks, Prepared, Refusal
from ._protocol.jsonrpc import JsonDict
from ._protocol.limits import round_size
from ._protocol.modern import PendingCall
from ._protocol.eras import INPUT_METHODS, declared_kinds
from ._protocol.forms import quoted
from ._runtime import start_thread
from ._runtime.watchdog import Watchdog
from ._stats import Stats
from .errors import ClientError, InputRefused
from .handler import CancelToken, InputContext, InputHandler
from .options import Options

log = logging.getLogger("mcp_input_sync")


def loggable(text: str) -> str:
    """Text a server chose (a method name, say), fit for the local log: no control
    characters (no forged log lines), lone surrogates escaped (no logging error)."""
    return reflect.text(text, 1024).encode("utf-8", "backslashreplace").decode("utf-8")


def refusal_error(refusal: Refusal) -> ClientError:
    """The ClientError for a refusal of the check pipeline (docs/modern.md#errors)."""
    if refusal.check in ("method", "malformed"):
        return ClientError("protocol", refusal.message, code=refusal.code, check="malformed")
    if refusal.check == "capability":
        return ClientError("protocol", refusal.message, code=refusal.code, check="capability")
    if refusal.check == "answer":
        return ClientError("input_handler", refusal.message, code=refusal.code, data=refusal.detail or None, check="answer")
    return ClientError("refused", refusal.message, code=refusal.code, check=refusal.check)


def call_handler(handler: InputHandler, prepared: Prepared, ctx: InputContext) -> Any:
    """Run the handler method for the request's kind and return what it returned."""
    if prepared.kind == "elicitation":
        return handler.handle_elicitation(prepared.params, ctx)
    if prepared.kind == "sampling":
        return handler.handle_sampling(prepared.params, ctx)
    return handler.list_roots(ctx)


class InputDesk:
    """Checks, budget, context, handler call, answer check and refusal accounting for one client."""

    def __init__(
        self,
        *,
        handler: Optional[InputHandler],
        options: Options,
        stats: Stats,
        client_name: str,
        server_id: str,
        watchdog: Watchdog,
    ) -> None:
        self.handler = handler
        self.options = options
        self.stats = stats
        self.client_name = client_name
        self.server_id = server_id
        #: The check pipeline; its input budget is guarded by ``budget_lock``.
        self.checks = InputChecks(CheckConfig(), *options.input_rate_limit, _clock.monotonic())
        self.budget_lock = threading.Lock()
        #: ``"legacy"`` or ``"modern"`` once the handshake decided (``ctx.era``).
        self.era: Optional[str] = None
        self._timeouts = options.handler_timeout
        self._watchdog = watchdog
        #: Guards the running callbacks below; the stats lock, which the legacy engine holds anyway.
        self.lock = stats.lock
        self._running: dict[int, Inbound] = {}
        #: A deadline sweep is registered with the watchdog (guarded by ``lock``).
        self.sweeping = False
        #: Called by the sweep when the last running callback ends (stdio: write held-back answers).
        self.on_idle: Optional[Callable[[], None]] = None
        #: Tokens of callbacks running on callers' threads (close() sets them).
        self.live_tokens: set[CancelToken] = set()
        #: Worker threads of parallel rounds (close() joins them).
        self.input_threads: set[threading.Thread] = set()

    # ------------------------------------------------------------------ configuration

    def configure(self, version: str, caps: JsonDict, origin: Optional[str]) -> None:
        """What the checks need for one decision: the session's version and what this client declared."""
        sampling_caps = caps.get("sampling", {})
        elicitation_caps = caps.get("elicitation", {})
        opts = self.options
        self.checks.config = CheckConfig(
            version="2025-06-18" if version == "2025-03-26" else version,  # 2025-03-26 is read as 2025-06-18
            kinds=declared_kinds(caps, version),
            modes=frozenset(elicitation_caps) or frozenset({"form"}),
            sampling_tools="tools" in sampling_caps,
            sampling_context="context" in sampling_caps,
            max_tokens=opts.sampling["max_tokens"],
            allow_idle=opts.sampling["allow_idle"],
            max_tool_iterations=opts.sampling["max_tool_iterations"],
            rejection_code=opts.sampling["rejection_code"],
            origin=origin or opts.elicitation["origin"],
        )

    def deadline(self, kind: str) -> float:
        """The ``handler_timeout`` of a ``kind`` callback, in seconds: the one read of that option."""
        return self._timeouts[kind]

    # ------------------------------------------------------------------ checks

    def admit(self, method: str, kind: str, params: Any, now: float, in_flight: bool) -> Union[Refusal, Prepared]:
        """One legacy server request through the pipeline: steps 1-3, the budget, steps 4-5."""
        checks = self.checks
        refusal = checks.before(method, params)
        if refusal is None and not checks.unlimited:
            with self.budget_lock:
                refusal = checks.budget([kind], now)
            if refusal is not None:  # the server gets the generic message; the log names the option
                return Refusal(refusal.check, refusal.code, refusal.message, over_budget(*self.options.input_rate_limit))
        return refusal if refusal is not None else checks.prepare(method, params, in_flight=in_flight)

    def note_refusal(self, kind: str, refusal: Refusal) -> None:
        """Count a refusal and log it as a structured record (server_id, kind, check, code)."""
        self.stats.refuse(kind, refusal.check)
        log.warning(
            "mcp_input_sync: refused %s request from server %s: %s (check %s, code %d)%s",
            kind,
            self.server_id,
            loggable(refusal.message),
            refusal.check,
            refusal.code,
            f": {loggable(refusal.detail)}" if refusal.detail else "",
            extra={"server_id": self.server_id, "kind": kind, "check": refusal.check, "code": refusal.code},
        )

    def check_round(self, requests: Mapping[str, Any]) -> dict[str, Prepared]:
        """Every input request of a modern round through the pipeline, before any callback.

        Raises:
            ClientError: as docs/modern.md#errors says.
        """
        limits = self.options.limits
        if len(requests) > limits["round_requests"]:
            self.stats.add("malformed")
            raise ClientError("protocol", f"the server asked for {len(requests)} inputs in one round, over limits['round_requests']={limits['round_requests']}", check="limit")
        size = round_size(requests)
        if size > limits["round_bytes"]:
            self.stats.add("malformed")
            raise ClientError("protocol", f"one round's input requests take {size} bytes, over limits['round_bytes']={limits['round_bytes']}", check="limit")
        checks = self.checks
        kinds: list[str] = []
        for key, request in requests.items():
            method = request.get("method") if isinstance(request, dict) else None
            params = request.get("params") if isinstance(request, dict) else None
            if not isinstance(method, str):
                raise ClientError("protocol", f"input request {quoted(key)} has no method", code=jsonrpc.METHOD_NOT_FOUND, check="malformed")
            refusal = checks.before(method, params)
            if refusal is not None:
                self.note_refusal(INPUT_METHODS.get(method, "other"), refusal)
                raise refusal_error(refusal)
            kinds.append(INPUT_METHODS[method])
        with self.budget_lock:
            refusal = checks.budget(kinds, _clock.monotonic())
        if refusal is not None:
            why = over_budget(*self.options.input_rate_limit)
            self.note_refusal(kinds[0], Refusal(refusal.check, refusal.code, refusal.message, why))
            raise ClientError("refused", f"{refusal.message}: {why}", code=refusal.code, check=refusal.check)
        prepared: dict[str, Prepared] = {}
        for key, request in requests.items():
            step = checks.prepare(request["method"], request.get("params"), in_flight=True)
            if isinstance(step, Refusal):
                self.note_refusal(INPUT_METHODS[request["method"]], step)
                raise refusal_error(step)
            prepared[key] = step
        return prepared

    def answer_url_elicitations(self, error: ClientError, clock: CallClock) -> list[JsonDict]:
        """The URL elicitations of a -32042 error: all checked first, then answered in order on this thread."""
        data = error.data
        entries = data.get("elicitations") if error.code == jsonrpc.URL_ELICITATION_REQUIRED and isinstance(data, dict) else None
        if not isinstance(entries, list) or not all(isinstance(e, dict) and e.get("mode") == "url" for e in entries):
            raise ClientError("protocol", "not a -32042 error with URL elicitations", check="malformed")
        return [self.answer_here(step, clock, None) for step in self.check_url_elicitations(entries)]

    def check_url_elicitations(self, entries: list[JsonDict]) -> list[Prepared]:
        """The URL elicitations of a -32042 error through the pipeline, all before any callback."""
        checks = self.checks
        prepared: list[Prepared] = []
        for entry in entries:
            found = checks.before("elicitation/create", entry)
            step = found if found is not None else checks.prepare("elicitation/create", entry, in_flight=True)
            if isinstance(step, Refusal):
                self.note_refusal("elicitation", step)
                kind = "refused" if step.check not in ("capability", "malformed", "method") else "protocol"
                raise ClientError(kind, step.message, code=step.code, check=step.check)
            prepared.append(step)
        return prepared

    def check_answers(self, pending: PendingCall, responses: Mapping[str, Any]) -> tuple[JsonDict, list[str]]:
        """A resumed round's answers, each validated as a handler's answer would be.

        A pending call is data from outside: its requests go through the checks
        again. Returns the answers and the question keys the user declined.
        """
        checks = self.checks
        missing = [key for key in pending.input_requests if key not in responses]
        if missing:
            raise ClientError("input_handler", f"no answer for input request {quoted(missing[0])}", code=jsonrpc.INTERNAL_ERROR, check="answer")
        answers: JsonDict = {}
        declined = []
        for key, request in pending.input_requests.items():
            method = request.get("method") if isinstance(request, dict) else None
            refusal = checks.before(method, request.get("params")) if isinstance(method, str) else None
            if not isinstance(method, str) or refusal is not None:
                raise refusal_error(refusal) if refusal is not None else ClientError("protocol", f"input request {quoted(key)} has no method", check="malformed")
            step = checks.prepare(method, request.get("params"), in_flight=True)
            if isinstance(step, Refusal):  # the checks passed when the round arrived; a changed config refuses
                raise refusal_error(step)
            verdict = checks.answer(step, responses[key])
            if isinstance(verdict, Refusal):
                self.note_refusal(step.kind, verdict)
                raise refusal_error(verdict)
            if verdict.get("action") in ("decline", "cancel"):
                declined.append(modern.question_key(request))
            self.stats.add("served")
            answers[key] = verdict
        return answers, declined

    # ------------------------------------------------------------------ one callback

    def context(self, prepared: Prepared, assigns: Optional[Mapping[str, Any]], related: Any, token: Optional[CancelToken]) -> InputContext:
        """The context of a callback answering ``prepared`` (docs/index.md#the-context)."""
        return InputContext._for_request(
            self.client_name, self.server_id, self.era, assigns, related, prepared.mode, prepared.url, prepared.fields, token
        )

    def call(self, prepared: Prepared, ctx: InputContext) -> Any:
        """Run the handler method for the request's kind and return what it returned."""
        handler = self.handler
        assert handler is not None  # the capability check passed
        return call_handler(handler, prepared, ctx)

    def check_answer(self, prepared: Prepared, value: Any, what: str) -> Union[Refusal, JsonDict]:
        """The answer check; a refusal is counted and logged, an accepted answer's notes are logged.

        An answer too strange to check (the checks raise on it) is an invalid
        answer. ``what`` names the request in the log (its method, or kind).
        """
        try:
            verdict = self.checks.answer(prepared, value)
        except Exception:
            log.exception("mcp_input_sync: a %s answer could not be checked; refused as invalid", prepared.kind)
            verdict = Refusal("answer", jsonrpc.INTERNAL_ERROR, "the input handler returned an invalid answer", "unreadable answer")
        if isinstance(verdict, Refusal):
            self.note_refusal(prepared.kind, verdict)
            return verdict
        for note in prepared.notes:
            log.warning("mcp_input_sync: %s answer to server %s: %s", what, self.server_id, note)
        return verdict

    # ------------------------------------------------------------------ handler_timeout

    def track_locked(self, entry: Inbound) -> bool:
        """Put a running callback under the deadline sweep; the caller holds :attr:`lock`.

        Returns True when the sweep is not registered yet: the caller then
        calls :meth:`arm` once it has released the lock.
        """
        self._running[id(entry)] = entry
        if self.sweeping:
            return False
        self.sweeping = True
        return True

    def untrack_locked(self, entry: Inbound) -> None:
        """The callback ended or was answered; the caller holds :attr:`lock`."""
        self._running.pop(id(entry), None)

    def arm(self) -> None:
        """Register the one sweep of deadlines with the watchdog (not a timer per callback)."""
        self._watchdog.watch(self._sweep)

    def _sweep(self) -> bool:
        """Watchdog thread, on every wake (at least every 0.1 s) while callbacks run.

        Expires each callback whose deadline has passed; returns True (stop
        sweeping) once none runs, after calling :attr:`on_idle`.
        """
        now = _clock.monotonic()
        with self.lock:
            entries = list(self._running.values())
        for entry in entries:
            if entry.deadline <= now and entry.expire is not None:
                try:
                    entry.expire(entry)
                except Exception:  # one failing expiry must not end the deadlines of the others
                    log.exception("mcp_input_sync: a %s deadline could not be enforced", entry.kind)
                    with self.lock:
                        self.untrack_locked(entry)
                    entry.token.cancel("timeout")
        with self.lock:
            stop = not self._running
            if stop:
                self.sweeping = False
        on_idle = self.on_idle
        if stop and on_idle is not None:
            on_idle()
        return stop

    # ------------------------------------------------------------------ callbacks on the caller's thread

    def answer_here(
        self,
        step: Prepared,
        clock: CallClock,
        assigns: Optional[Mapping[str, Any]],
        token: Optional[CancelToken] = None,
        cancel: Optional[threading.Event] = None,
    ) -> JsonDict:
        """One callback on this thread under its deadlines (handler_timeout and max_total_timeout), then the answer check.

        For modern rounds and -32042 URL elicitations. A caller's ``cancel``
        event, once set, sets the callback's token.

        Raises:
            ClientError: ``timeout``, ``cancelled``, ``closed``, ``input_handler``
                or the kind of the refusal of its answer.
        """
        token = token or CancelToken()
        now = _clock.monotonic()
        limit = self.deadline(step.kind)
        entry = Inbound(None, step.kind, step.kind, min(now + limit, clock.started + clock.max_total), limit)  # type: ignore[arg-type]
        entry.token = token
        entry.expire = _expire_token
        ctx = self.context(step, self.options.assigns if assigns is None else assigns, None, token)
        self.live_tokens.add(token)
        with self.lock:
            arm = self.track_locked(entry)
        if arm:
            self.arm()
        if cancel is not None:
            watched = token
            live = self.live_tokens

            def forward() -> bool:
                if cancel.is_set():
                    watched.cancel("cancelled")
                    return True
                return watched.is_set or watched not in live

            self._watchdog.watch(forward)
        try:
            value = self.call(step, ctx)
        except InputRefused as refusal:
            raise ClientError("input_handler", refusal.message, code=refusal.code, data=refusal.data) from refusal
        except Exception as exc:
            if token.reason == "timeout":
                raise ClientError("timeout", f"the {step.kind} callback ran past its deadline") from exc
            raise ClientError("input_handler", "the input handler failed", code=jsonrpc.INTERNAL_ERROR) from exc
        finally:
            with self.lock:
                self.untrack_locked(entry)
            self.live_tokens.discard(token)
        if token.reason == "timeout":
            self.stats.add("timed_out")
            raise ClientError("timeout", f"the {step.kind} callback ran past its deadline; its answer was discarded")
        if token.reason is not None:
            raise ClientError("cancelled" if token.reason != "closed" else "closed", f"the call ended while the {step.kind} callback ran")
        verdict = self.check_answer(step, value, step.kind)
        if isinstance(verdict, Refusal):
            raise refusal_error(verdict)
        self.stats.add("served")
        return verdict

    def answer_round(
        self,
        prepared: dict[str, Prepared],
        clock: CallClock,
        assigns: Optional[Mapping[str, Any]],
        cancel: Optional[threading.Event] = None,
    ) -> JsonDict:
        """Run the handler for every input request of a round and validate the answers."""
        handler = self.handler
        parallel = type(handler).input_parallelism if handler is not None else 1
        if parallel > 1 and len(prepared) > 1:
            answers = self._answer_parallel(prepared, clock, assigns, parallel, cancel)
        else:
            answers = {key: self.answer_here(step, clock, assigns, cancel=cancel) for key, step in prepared.items()}
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
    ) -> JsonDict:
        """Run a round's callbacks on up to ``parallel`` worker threads; the first failure cancels the rest.

        The call waits for each callback only until its own deadline, counted
        from when it started (a callback waiting for a free worker has not).
        """
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
                    outcome: Union[JsonDict, ClientError] = self.answer_here(prepared[key], clock, assigns, tokens[key], cancel)
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
        self.input_threads.update(threads)
        limits = {key: self.deadline(step.kind) for key, step in prepared.items()}
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
                self.input_threads.discard(thread)
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

    def close(self) -> None:
        """Set the token of every callback running on a caller's thread."""
        for token in list(self.live_tokens):
            token.cancel("closed")


def _expire_token(entry: Inbound) -> None:
    """A callback on a caller's thread ran past its deadline: its token says so; the caller raises."""
    entry.token.cancel("timeout")
