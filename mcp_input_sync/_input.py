"""The input desk: answering one input request the same way in both eras.

A server asks for input in two ways: a legacy server request (2025-06-18 /
2025-11-25) or an input request of a 2026-07-28 ``input_required`` round (and
the URL elicitations of a -32042 error). Either way the desk runs the check
pipeline (docs/reference.md#order-of-checks) through one path,
:meth:`InputDesk._check`, takes from the input budget, builds the callback's
context, calls the handler, checks the answer and accounts for each refusal
(a count and one structured log record). What differs between the eras is
only how an outcome travels: the legacy engine writes it on the wire, the
modern engine raises or retries; :func:`~mcp_input_sync._input_rounds.refusal_error`
is the one mapping of a refusal to the error raised.

``handler_timeout`` is read in one place, :attr:`InputDesk.timeouts`. A
callback on a caller's thread is run by the desk's part in ``_input_rounds.py``
under the runtime's deadline sweep
(:class:`~mcp_input_sync._runtime.deadlines.DeadlineSweep`, built by
``_assembly.py``), as the legacy engine's server requests are. See
docs/architecture.md#the-input-desk.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Any, Mapping, Optional, Sequence, Union

from . import _clock, reflect
from ._era import ClientEra
from ._input_rounds import CallerCallbacks, refusal_error
from ._protocol import jsonrpc, modern
from ._protocol.budget import over_budget
from ._protocol.deadlines import CallClock
from ._protocol.checks import CheckConfig, InputChecks, Prepared, Refusal
from ._protocol.jsonrpc import JsonDict
from ._protocol.limits import json_size
from ._protocol.modern import PendingCall
from ._protocol.eras import INPUT_REQUEST_KINDS, KIND_METHODS, declared_kinds, outcome_of
from ._protocol.forms import quoted
from ._runtime.deadlines import DeadlineSweep
from ._runtime.watchdog import Watchdog
from ._stats import Stats
from .errors import ClientError
from .handler import CancelToken, InputContext, InputHandler
from .options import Options

if TYPE_CHECKING:
    from ._telemetry import Tracing

log = logging.getLogger("mcp_input_sync")

#: One input request as the check path takes it: (key for messages, method, params).
Request = tuple[Any, Any, Any]


def loggable(text: str) -> str:
    """Text a server chose (a method name, say), fit for the local log: no control
    characters (no forged log lines), lone surrogates escaped (no logging error)."""
    return reflect.text(text, 1024).encode("utf-8", "backslashreplace").decode("utf-8")


class InputDesk:
    """Checks, budget, context, handler call, answer check and refusal accounting for one client.

    Callbacks on callers' threads are run by its :class:`~mcp_input_sync._input_rounds.CallerCallbacks`,
    whose methods it binds as its own (``answer_here``, ``answer_round``, ``close``, ``live_callbacks``,
    ``worker_threads``).
    """

    def __init__(
        self,
        *,
        handler: Optional[InputHandler],
        options: Options,
        stats: Stats,
        client_name: str,
        server_id: str,
        watchdog: Watchdog,
        sweep: DeadlineSweep,
        era: ClientEra,
        tracing: Optional[Tracing] = None,
    ) -> None:
        """``sweep``: the runtime's deadline sweep, which the callbacks on callers' threads go under;
        ``tracing``: the client's OpenTelemetry (None: off), a SERVER span per input request."""
        self.handler = handler
        self.tracing = tracing
        self.options = options
        self.stats = stats
        self.client_name = client_name
        self.server_id = server_id
        #: The check pipeline; its input budget is guarded by ``_budget_lock``.
        self.checks = InputChecks(CheckConfig(), *options.input_rate_limit, _clock.monotonic())
        self._budget_lock = threading.Lock()
        #: The client's era (``ctx.era``): read here, decided elsewhere.
        self.era = era
        #: ``handler_timeout`` by kind: the one read of that option (the legacy connection takes this table).
        self.timeouts: Mapping[str, float] = options.handler_timeout
        here = CallerCallbacks(
            callback=self.callback, check_answer=self.check_answer, timeouts=self.timeouts, handler=handler,
            options=options, stats=stats, sweep=sweep, watch=watchdog.watch, tracing=tracing,
        )
        # The part that runs callbacks on callers' threads owns their tokens and worker threads; its
        # methods are bound here, not wrapped, so a round's path takes no extra call through the desk.
        #: One callback on this thread under its deadlines, then the answer check (CallerCallbacks.answer_here).
        self.answer_here = here.answer_here
        #: Every callback of a round, in parallel up to ``input_parallelism`` (CallerCallbacks.answer_round).
        self.answer_round = here.answer_round
        #: Set the token of every callback running on a caller's thread.
        self.close = here.close
        #: How many callbacks run on callers' threads now: a read-only view.
        self.live_callbacks = here.live_callbacks
        #: The parallel rounds' worker threads not yet seen ended, a snapshot (the client joins them at close).
        self.worker_threads = here.worker_threads

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

    # ------------------------------------------------------------------ the check path

    def _check(
        self, requests: Sequence[Request], budget: bool, in_flight: bool, now: Optional[float] = None, note: bool = True, raised: bool = False
    ) -> Union[list[Prepared], Refusal]:
        """The one check path: input requests through docs/reference.md#order-of-checks, all before any callback.

        Steps 1-3 for every request, then (with ``budget``) one token each from
        the input budget, all or none, then step 5 for every request; the first
        refusal decides. A refusal is counted and logged under its request's
        kind (with ``note``; at INFO when ``raised``: the caller gets it as an
        exception); a request without a method is refused ``malformed`` and
        not counted. ``now`` is when the budget is taken (None: read the clock).
        """
        checks = self.checks
        for key, method, params in requests:
            if type(method) is not str:
                return Refusal("malformed", jsonrpc.METHOD_NOT_FOUND, f"input request {quoted(key)} has no method")
            refusal = checks.before(method, params)
            if refusal is not None:
                return self._noted(INPUT_REQUEST_KINDS.get(method, "other"), refusal, note, raised, method)
        if budget and not checks.unlimited:  # an infinite rate keeps no state: no lock
            kinds = [INPUT_REQUEST_KINDS[method] for _, method, _ in requests]
            refusal = self.take_budget(kinds, _clock.monotonic() if now is None else now)
            if refusal is not None:
                return self._noted(kinds[0], refusal, note, raised, requests[0][1])
        prepared: list[Prepared] = []
        for _, method, params in requests:
            step = checks.prepare(method, params, in_flight=in_flight)
            if type(step) is Refusal:
                return self._noted(INPUT_REQUEST_KINDS[method], step, note, raised, method)
            prepared.append(step)  # type: ignore[arg-type]
        return prepared

    def take_budget(self, kinds: list[str], now: float) -> Optional[Refusal]:
        """Step 4, the input budget both eras share: one token per request, all or none (the refusal is not noted here)."""
        with self._budget_lock:
            refusal = self.checks.budget(kinds, now)
        if refusal is None:
            return None
        # the server gets the generic message; the log and the caller's error name the option
        return Refusal(refusal.check, refusal.code, refusal.message, over_budget(*self.options.input_rate_limit))

    def _noted(self, kind: str, refusal: Refusal, note: bool, raised: bool, method: str) -> Refusal:
        if note:
            self.note_refusal(kind, refusal, raised)
            tracing = self.tracing
            if tracing is not None:
                traced = tracing.server(method, None, tracing.parent())
                if traced is not None:
                    traced.settle("refused", str(refusal.code), refusal.check)
        return refusal

    def refused_span(self, kind: str, request_id: Any, refusal: Refusal) -> None:
        """A legacy server request a check refused before anything ran: a SERVER span that says so (telemetry on)."""
        tracing = self.tracing
        method = KIND_METHODS.get(kind)
        if tracing is None or method is None:
            return
        traced = tracing.server(method, request_id, None)
        if traced is not None:
            traced.settle("refused", str(refusal.code), refusal.check)

    def note_refusal(self, kind: str, refusal: Refusal, raised: bool = False) -> None:
        """Count a refusal and log it as a structured record (server_id, kind, check, code).

        At WARNING when only the server hears of it (a legacy refusal); at INFO
        when the caller gets it as an exception too (``raised``): one message
        per error.
        """
        self.stats.refuse(kind, refusal.check)
        log.log(
            logging.INFO if raised else logging.WARNING,
            "mcp_input_sync: refused %s request from server %s: %s (check %s, code %d)%s",
            kind,
            self.server_id,
            loggable(refusal.message),
            refusal.check,
            refusal.code,
            f": {loggable(refusal.detail)}" if refusal.detail else "",
            extra={"server_id": self.server_id, "kind": kind, "check": refusal.check, "code": refusal.code},
        )

    # ------------------------------------------------------------------ the three ways in (the legacy era's: _protocol/legacy_conn.py)

    def check_round(self, requests: Mapping[str, Any]) -> dict[str, Prepared]:
        """Every input request of a modern round through the check path, before any callback.

        Raises:
            ClientError: as docs/modern.md#errors says.
        """
        limits = self.options.limits
        if len(requests) > limits["round_requests"]:
            self.stats.add("malformed")
            raise ClientError("protocol", f"the server asked for {len(requests)} inputs in one round, over limits['round_requests']={limits['round_requests']}", check="limit")
        size = json_size(requests)
        if size > limits["round_bytes"]:
            self.stats.add("malformed")
            raise ClientError("protocol", f"one round's input requests take {size} bytes, over limits['round_bytes']={limits['round_bytes']}", check="limit")
        asked: list[Request] = []
        for key, request in requests.items():  # _as_request(), inline, in a loop: no call of its own per request
            asked.append((key, request.get("method"), request.get("params")) if type(request) is dict else (key, None, None))
        checked = self._check(asked, budget=True, in_flight=True, raised=True)
        if isinstance(checked, Refusal):
            raise refusal_error(checked)
        return dict(zip(requests, checked))

    def check_url_elicitations(self, entries: list[JsonDict]) -> list[Prepared]:
        """The URL elicitations of a -32042 error through the check path, one by one, all before any callback."""
        prepared: list[Prepared] = []
        for i, entry in enumerate(entries):
            checked = self._check(((i, "elicitation/create", entry),), budget=False, in_flight=True, raised=True)
            if isinstance(checked, Refusal):
                raise refusal_error(checked)
            prepared.append(checked[0])
        return prepared

    def check_answers(self, pending: PendingCall, responses: Mapping[str, Any]) -> tuple[JsonDict, list[str]]:
        """A resumed round's answers, each validated as a handler's answer would be.

        A pending call is data from outside: its requests go through the check
        path again, one by one (the budget was taken when the round came; a
        refusal here is the client's own configuration, not counted), then
        each answer through the answer check. Returns the answers and the
        question keys the user declined.
        """
        missing = [key for key in pending.input_requests if key not in responses]
        if missing:
            raise ClientError("input_handler", f"no answer for input request {quoted(missing[0])}", code=jsonrpc.INTERNAL_ERROR, check="answer")
        answers: JsonDict = {}
        declined = []
        for key, request in pending.input_requests.items():
            checked = self._check((_as_request(key, request),), budget=False, in_flight=True, note=False)
            if isinstance(checked, Refusal):
                raise refusal_error(checked)
            step = checked[0]
            verdict = self.checks.answer(step, responses[key])
            if isinstance(verdict, Refusal):
                self.note_refusal(step.kind, verdict, raised=True)
                raise refusal_error(verdict)
            if verdict.get("action") in ("decline", "cancel"):
                declined.append(modern.question_key(request))
            self.stats.add("served")
            answers[key] = verdict
        return answers, declined

    # ------------------------------------------------------------------ one callback (answer_here and answer_round: see __init__)

    def callback(self, prepared: Prepared, assigns: Optional[Mapping[str, Any]], related: Any, token: Optional[CancelToken]) -> Any:
        """One callback: its context (docs/index.md#the-context), then the handler method for its kind.

        Returns what the handler returned, unchecked.

        Raises:
            BaseException: whatever the handler raised (``InputRefused`` included).
        """
        handler = self.handler
        assert handler is not None  # the capability check passed
        ctx = InputContext.for_request(
            self.client_name, self.server_id, self.era.name, assigns, related, prepared.mode, prepared.url, prepared.fields, token
        )
        kind = prepared.kind  # call_handler(), inline: once per callback
        if kind == "elicitation":
            return handler.handle_elicitation(prepared.params, ctx)
        if kind == "sampling":
            return handler.handle_sampling(prepared.params, ctx)
        return handler.list_roots(ctx)

    def check_answer(self, prepared: Prepared, value: Any, what: str, raised: bool = False) -> Union[Refusal, JsonDict]:
        """The answer check; a refusal is counted and logged (see :meth:`note_refusal`), an accepted answer's notes are logged.

        An answer too strange to check (the checks raise on it) is an invalid
        answer. ``what`` names the request in the log (its method, or kind).
        """
        try:
            verdict = self.checks.answer(prepared, value)
        except Exception:
            log.exception("mcp_input_sync: a %s answer could not be checked; refused as invalid", prepared.kind)
            verdict = Refusal("answer", jsonrpc.INTERNAL_ERROR, "the input handler returned an invalid answer", "unreadable answer")
        if isinstance(verdict, Refusal):
            self.note_refusal(prepared.kind, verdict, raised)
            return verdict
        for note in prepared.notes:
            log.warning("mcp_input_sync: %s answer to server %s: %s", what, self.server_id, note)
        return verdict

    def answer_url_elicitations(self, error: ClientError, clock: CallClock) -> list[JsonDict]:
        """The URL elicitations of a -32042 error: all checked first, then answered in order on this thread."""
        data = error.data
        entries = data.get("elicitations") if error.code == jsonrpc.URL_ELICITATION_REQUIRED and isinstance(data, dict) else None
        if not isinstance(entries, list) or not all(isinstance(e, dict) and e.get("mode") == "url" for e in entries):
            raise ClientError("protocol", "not a -32042 error with URL elicitations", check="malformed")
        return [self.answer_here(step, clock, None) for step in self.check_url_elicitations(entries)]



def _as_request(key: str, request: Any) -> Request:
    """A round's ``{"method", "params"}`` entry as the check path takes it."""
    if not isinstance(request, dict):
        return key, None, None
    return key, request.get("method"), request.get("params")

