"""The framework-neutral core of the web bridge: a broker of pending inputs and a handler that parks them.

A web host cannot answer a server's request for input on the thread that
receives it: a person has to open a page, fill a form and submit it. The
:class:`WebHandler` parks each request as a :class:`PendingInput` in a
:class:`PendingInputBroker` and blocks its callback thread until one of:

- the owning user answers through the host's web routes
  (:meth:`PendingInputBroker.answer`, which validates the answer with the
  library's own rules and returns errors per field);
- the library cancels the callback (its ``handler_timeout`` passed, the
  server cancelled the request, the call was cancelled, or the client
  closed): the input is withdrawn and disappears from the pages;
- the handler's own ``timeout`` (optional, never longer than the library's)
  passes: a form or URL elicitation is answered ``cancel``, a sampling
  request is refused.

Only the user the call belongs to (``assigns["user"]`` of the call, or of
the client) may see or answer an input; everyone else gets
:class:`InputNotFound`, exactly as for an id that does not exist.

In the 2026-07-28 era no thread needs to wait at all:
:meth:`PendingInputBroker.start_call` defers the call's input
(``defer_input=True``), parks each input request of the round, and the
process that takes the round's last answer resumes the call with its own
client (``client.resume``); :meth:`PendingInputBroker.result` tells where
the call stands.
"""

from __future__ import annotations

import json
import logging
import secrets
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional, Sequence

from .._protocol.checks import Prepared
from .._protocol.forms import FormSchema, compile_form
from .._protocol.sampling import result_problem
from ..errors import InputRefused
from ..handler import InputContext, InputHandler

log = logging.getLogger("mcp_input_sync.web")

__all__ = [
    "CallState",
    "ELICITATION_ACTIONS",
    "SAMPLING_ACTIONS",
    "InputNotFound",
    "PendingInput",
    "PendingInputBroker",
    "WebElicitationHandler",
    "WebHandler",
    "field_errors",
]

JsonDict = dict[str, Any]

#: The actions a person may take on an elicitation (form or URL).
ELICITATION_ACTIONS = ("accept", "decline", "cancel")
#: The actions a person may take on a sampling request.
SAMPLING_ACTIONS = ("approve", "reject")
#: The key of errors that belong to no single field.
NON_FIELD = "__all__"
#: The JSON-RPC code of a refused sampling request (the spec's "user rejected").
SAMPLING_REJECTED = -1
#: How often a parked callback looks at its cancellation token, in seconds.
POLL = 0.05


class InputNotFound(LookupError):
    """No pending input with this id belongs to this user (or it is no longer pending)."""


@dataclass
class PendingInput:
    """One request for input waiting for a person.

    Everything in ``params`` (and ``url``, ``host``) came from the server:
    escape it before showing it (:mod:`mcp_input_sync.web.forms` does).
    """

    #: A random, unguessable id (URL-safe).
    id: str
    #: ``"form"``, ``"url"`` or ``"sampling"``.
    kind: str
    #: The request's params as the handler saw them (sampling: clamped).
    params: JsonDict
    #: The user the call belongs to (``str(assigns["user"])``).
    user: str
    #: When it was parked (``time.time()``).
    created: float
    #: Which server asks (``ctx.server_id``).
    server_id: str = ""
    #: Form: ``{name: {"sensitive_suspected": bool}}`` (``ctx.fields``).
    fields: Optional[dict[str, dict[str, bool]]] = None
    #: URL elicitation: the URL as sent, its A-label host, IDN and origin facts.
    url: Optional[str] = None
    host: Optional[str] = None
    idn: Optional[bool] = None
    origin_mismatch: Optional[bool] = None
    #: Sampling: a draft reply shown to the person (from the handler's ``draft``).
    draft: Optional[str] = None
    #: When the handler stops waiting (``time.time()``), if it has its own timeout.
    expires: Optional[float] = None
    #: Modern-era deferred call (:meth:`PendingInputBroker.start_call`): the call's id, else None.
    call_id: Optional[str] = None
    #: The input request's key in its round (deferred calls only).
    key: Optional[str] = None

    @property
    def message(self) -> str:
        """The server's message for an elicitation ("" for sampling, or when absent)."""
        value = self.params.get("message")
        return value if isinstance(value, str) else ""

    @property
    def schema(self) -> JsonDict:
        """A form's ``requestedSchema`` (``{}`` for other kinds)."""
        value = self.params.get("requestedSchema")
        return value if isinstance(value, dict) else {}

    def sensitive(self, name: str) -> bool:
        """True when the form field ``name`` is suspected to hold a secret."""
        return bool((self.fields or {}).get(name, {}).get("sensitive_suspected"))


def field_errors(form: FormSchema, content: Any) -> dict[str, str]:
    """Every problem of a form answer's ``content``, per field, with the library's own checks.

    Returns:
        ``{field: message}`` (``"__all__"`` for a problem of the whole
        content); empty when :meth:`FormSchema.check_content` accepts it.
    """
    if content is None:
        content = {}
    if type(content) is not dict:
        return {NON_FIELD: "the answer is not an object"}
    errors: dict[str, str] = {}
    for name in form.required:
        if name not in content:
            errors[name] = "is required"
    for name, value in content.items():
        check = form.checks.get(name)
        if check is None:
            if form.closed:
                errors[str(name)] = "is not in the form"
            continue
        problem = check(value)
        if problem is not None:
            errors[name] = problem
    if not errors:  # belt and braces: the library's whole-answer check decides
        problem = form.check_content(content)
        if problem is not None:
            errors[NON_FIELD] = problem
    return errors


@dataclass
class _Slot:
    pending: PendingInput
    form: Optional[FormSchema]
    model: str
    event: threading.Event = field(default_factory=threading.Event)
    result: Optional[JsonDict] = None


class PendingInputBroker:
    """Pending inputs of one process, in memory; safe to share between threads.

    The web routes call :meth:`pending`, :meth:`get` and :meth:`answer`; the
    :class:`WebHandler` calls :meth:`park`, :meth:`wait` and :meth:`withdraw`.
    One broker serves any number of clients and handlers.

    Args:
        on_park: called with each new :class:`PendingInput` (on the callback's
            thread, outside the broker's lock), e.g. to notify the user.
    """

    def __init__(self, on_park: Optional[Callable[[PendingInput], None]] = None) -> None:
        self._lock = threading.Lock()
        self._slots: dict[str, _Slot] = {}
        self._on_park = on_park
        self._calls: dict[str, JsonDict] = {}
        self._claims: set[tuple[str, int]] = set()
        #: Clients of this process that resume deferred calls, by ``server_id``.
        self._clients: dict[str, Any] = {}

    # ------------------------------------------------------------------ handler side

    def park(self, pending: PendingInput, *, model: str = "human") -> None:
        """Add a pending input (its id must be new). ``model`` names the sampling reply's model."""
        form = compile_form(pending.schema) if pending.kind == "form" else None
        with self._lock:
            if pending.id in self._slots:
                raise ValueError(f"pending input {pending.id!r} already exists")
            self._slots[pending.id] = _Slot(pending, form, model)
        self._announce(pending)

    def _announce(self, pending: PendingInput) -> None:
        """Call the ``on_park`` hook for a newly parked input (a raise is logged)."""
        if self._on_park is not None:
            try:
                self._on_park(pending)
            except Exception:
                log.exception("mcp_input_sync.web: the on_park hook raised")

    def wait(self, input_id: str, timeout: float) -> Optional[JsonDict]:
        """Block up to ``timeout`` real seconds for the answer; None while unanswered.

        Raises:
            InputNotFound: the input was withdrawn.
        """
        with self._lock:
            slot = self._slots.get(input_id)
        if slot is None:
            raise InputNotFound(input_id)
        if slot.event.wait(timeout):
            return slot.result
        return None

    def withdraw(self, input_id: str) -> Optional[JsonDict]:
        """Remove an input; returns its answer when it had one meanwhile (else None)."""
        with self._lock:
            slot = self._slots.pop(input_id, None)
        return None if slot is None else slot.result

    # ------------------------------------------------------------------ web side

    def pending(self, user: Any) -> list[PendingInput]:
        """The unanswered inputs of ``user``, oldest first."""
        who = str(user)
        with self._lock:
            found = [s.pending for s in self._slots.values() if s.pending.user == who and not s.event.is_set()]
        return sorted(found, key=lambda p: p.created)

    def get(self, input_id: str, user: Any) -> PendingInput:
        """The unanswered input ``input_id`` of ``user``.

        Raises:
            InputNotFound: no such input, another user's, or already answered.
        """
        return self._slot(input_id, user).pending

    def answer(self, input_id: str, user: Any, data: Mapping[str, Any]) -> dict[str, str]:
        """Answer an input for ``user``, after the library's checks.

        ``data`` is, for a form, an ``ElicitResult`` (``{"action": "accept",
        "content": {...}}``, or ``{"action": "decline"}`` / ``"cancel"``); for
        a URL elicitation the same without ``content``; for sampling
        ``{"action": "approve", "text": "the reply"}`` or ``{"action":
        "reject"}``.

        Returns:
            Errors per field (``"__all__"`` for the whole answer); empty when
            the answer was taken and the waiting callback released.

        Raises:
            InputNotFound: no such input, another user's, or already answered.
        """
        with self._lock:
            slot = self._slot_locked(input_id, user)
            errors, result = _validate(slot, data)
            if errors:
                return errors
            slot.result = result
            slot.event.set()
        if slot.pending.call_id is not None:
            self._continue_call(slot.pending.call_id)
        return {}

    def check(self, input_id: str, user: Any, data: Mapping[str, Any]) -> dict[str, str]:
        """The errors :meth:`answer` would return, without answering.

        Raises:
            InputNotFound: as :meth:`answer`.
        """
        with self._lock:
            slot = self._slot_locked(input_id, user)
            return _validate(slot, data)[0]

    def __len__(self) -> int:
        with self._lock:
            return len(self._slots)

    def _slot(self, input_id: str, user: Any) -> _Slot:
        with self._lock:
            return self._slot_locked(input_id, user)

    def _slot_locked(self, input_id: str, user: Any) -> _Slot:
        slot = self._slots.get(input_id) if isinstance(input_id, str) else None
        if slot is None or user is None or slot.event.is_set():
            raise InputNotFound(input_id)
        if not secrets.compare_digest(slot.pending.user.encode("utf-8", "surrogatepass"), str(user).encode("utf-8", "surrogatepass")):
            raise InputNotFound(input_id)
        return slot

    # ------------------------------------------------------------------ deferred modern-era calls

    def serve(self, client: Any) -> None:
        """Let ``client`` resume, in this process, the deferred calls to its server (by ``client.server_id``)."""
        self._clients[client.server_id] = client

    def start_call(
        self,
        client: Any,
        tool: str,
        arguments: Optional[Mapping[str, Any]],
        user: Any,
        **options: Any,
    ) -> "CallState":
        """Call a tool on a 2026-07-28 server without holding a thread while a person answers.

        ``client.call_tool(..., defer_input=True)``: a complete result is
        stored and returned; a round of input is parked as this call's
        :class:`PendingInput` s (owned by ``user``). When the user has
        answered all of them, on any worker, that worker resumes the call with
        its own client for the server (see :meth:`serve`) and stores the
        result, or parks the next round. ``options`` go to ``call_tool``
        (``timeout``, ``max_total_timeout``...).

        Raises:
            ClientError: as ``call_tool`` (``protocol`` in the legacy era).
        """
        if user is None:
            raise ValueError("a deferred call needs a user to answer its input")
        self.serve(client)
        who = str(user)
        options.setdefault("assigns", {"user": who})
        outcome = client.call_tool(tool, arguments, defer_input=True, **options)
        record: JsonDict = {
            "id": secrets.token_urlsafe(16),
            "user": who,
            "server_id": client.server_id,
            "created": time.time(),
            "round": 0,
            "status": "pending",
            "pending": None,
            "inputs": {},
            "result": None,
            "error": None,
        }
        self._advance(client, record, outcome)
        return self.result(record["id"], who)

    def result(self, call_id: str, user: Any) -> "CallState":
        """Where deferred call ``call_id`` of ``user`` stands.

        Raises:
            InputNotFound: no such call, or another user's.
        """
        record = self._get_call(call_id) if isinstance(call_id, str) else None
        if record is None or user is None:
            raise InputNotFound(call_id)
        if not secrets.compare_digest(str(record["user"]).encode("utf-8", "surrogatepass"), str(user).encode("utf-8", "surrogatepass")):
            raise InputNotFound(call_id)
        inputs = []
        if record["status"] == "pending":
            for input_id in record["inputs"].values():
                try:
                    inputs.append(self.get(input_id, user))
                except InputNotFound:
                    continue
        return CallState(record["id"], record["status"], record["result"], record["error"], inputs, record["round"])

    def _advance(self, client: Any, record: JsonDict, outcome: Any) -> None:
        """Store a call's outcome: its result, or its next round parked as pending inputs."""
        from .._protocol.modern import PendingCall

        if not isinstance(outcome, PendingCall):
            record.update(status="complete", result=outcome, pending=None, inputs={})
            self._put_call(record)
            return
        prepared: dict[str, Any] = {}
        auto: JsonDict = {}
        for key, request in outcome.input_requests.items():
            method = request.get("method")
            if method == "roots/list":
                auto[key] = {"roots": []}  # nobody on the web to list roots: none are shared
                continue
            step = client.check_input(method, request.get("params")) if isinstance(method, str) else None
            if not isinstance(step, Prepared):
                record.update(status="error", error=f"input request {key!r} was refused by the checks", inputs={})
                self._put_call(record)
                return
            prepared[key] = step
        record.update(round=record["round"] + 1, pending=outcome.to_json(), inputs={}, auto=auto)
        now = time.time()
        parked = []
        for key, step in prepared.items():
            kind = "sampling" if step.kind == "sampling" else ("url" if step.mode == "url" else "form")
            url = step.url
            pending = PendingInput(
                id=secrets.token_urlsafe(16),
                kind=kind,
                params=step.params,
                user=record["user"],
                created=now,
                server_id=record["server_id"],
                fields={k: dict(v) for k, v in step.fields.items()} if step.fields is not None else None,
                url=url.url if url is not None else None,
                host=url.host if url is not None else None,
                idn=url.idn if url is not None else None,
                origin_mismatch=url.origin_mismatch if url is not None else None,
                call_id=record["id"],
                key=key,
            )
            record["inputs"][key] = pending.id
            parked.append(pending)
        self._put_call(record)  # before parking: an answer finds its call
        for pending in parked:
            self.park(pending)
        if not parked:  # only roots: answer at once
            self._continue_call(record["id"])

    def _continue_call(self, call_id: str) -> None:
        """After an answer: when every input of the round is answered, resume the call here (once)."""
        from .._protocol.modern import PendingCall
        from ..errors import ClientError

        record = self._get_call(call_id)
        if record is None or record["status"] != "pending" or record["pending"] is None:
            return
        answers: JsonDict = dict(record.get("auto") or {})
        for key, input_id in record["inputs"].items():
            answer = self._answer_of(input_id)
            if answer is None:
                return
            answers[key] = answer
        if not self._claim(call_id, record["round"]):
            return  # another answer (maybe on another worker) resumes it
        for input_id in record["inputs"].values():
            self.withdraw(input_id)
        client = self._clients.get(record["server_id"])
        if client is None:
            record.update(status="error", error=f"no client for server {record['server_id']!r} in this process (broker.serve)", inputs={})
            self._put_call(record)
            return
        if any(a.get("action") == "reject" for a in answers.values()):
            record.update(status="error", error="the user rejected the sampling request", inputs={})
            self._put_call(record)
            return
        try:
            outcome = client.resume(PendingCall.from_json(record["pending"]), answers, assigns={"user": record["user"]})
        except ClientError as exc:
            record.update(status="error", error=str(exc), inputs={})
            self._put_call(record)
            return
        self._advance(client, record, outcome)

    # storage of deferred calls (overridden by the Redis broker)

    def _put_call(self, record: JsonDict) -> None:
        with self._lock:
            self._calls[record["id"]] = json.loads(json.dumps(record))

    def _get_call(self, call_id: str) -> Optional[JsonDict]:
        with self._lock:
            record = self._calls.get(call_id)
            return None if record is None else json.loads(json.dumps(record))

    def _claim(self, call_id: str, round_: int) -> bool:
        with self._lock:
            if (call_id, round_) in self._claims:
                return False
            self._claims.add((call_id, round_))
            return True

    def _answer_of(self, input_id: str) -> Optional[JsonDict]:
        with self._lock:
            slot = self._slots.get(input_id)
            return slot.result if slot is not None and slot.event.is_set() else None


@dataclass
class CallState:
    """Where a deferred modern-era call stands (:meth:`PendingInputBroker.result`)."""

    #: The call's id (random, URL-safe).
    id: str
    #: ``"pending"`` (waiting for the user), ``"complete"`` or ``"error"``.
    status: str
    #: The tool's ``CallToolResult`` once complete.
    result: Optional[JsonDict]
    #: Why the call failed (a ``ClientError``'s text, a rejected sampling request...).
    error: Optional[str]
    #: The user's unanswered inputs of the current round.
    inputs: list[PendingInput]
    #: Rounds of input asked so far.
    rounds: int = 0


def _validate(slot: _Slot, data: Mapping[str, Any]) -> tuple[dict[str, str], JsonDict]:
    """The errors of an answer, or none and what the callback returns."""
    if not isinstance(data, Mapping):
        return {NON_FIELD: "the answer is not an object"}, {}
    action = data.get("action")
    kind = slot.pending.kind
    if kind == "sampling":
        if action == "reject":
            return {}, {"action": "reject"}
        if action != "approve":
            return {NON_FIELD: "choose approve or reject"}, {}
        text = data.get("text")
        if type(text) is not str or not text.strip():
            return {"text": "a reply is required to approve"}, {}
        result = {"role": "assistant", "content": {"type": "text", "text": text}, "model": slot.model, "stopReason": "endTurn"}
        problem = result_problem(result, "2025-11-25")
        if problem is not None:  # pragma: no cover - a text block always passes
            return {NON_FIELD: problem}, {}
        return {}, result
    if not isinstance(action, str) or action not in ELICITATION_ACTIONS:
        return {NON_FIELD: "choose accept, decline or cancel"}, {}
    if action != "accept":
        return {}, {"action": action}
    content = data.get("content")
    if kind == "url":
        if content is not None:
            return {NON_FIELD: "a URL accept carries no content"}, {}
        return {}, {"action": "accept"}
    assert slot.form is not None
    errors = field_errors(slot.form, content)
    if errors:
        return errors, {}
    return {}, {"action": "accept", "content": dict(content or {})}


class WebElicitationHandler(InputHandler):
    """An :class:`InputHandler` that parks form and URL elicitations for a person on the web.

    Args:
        broker: where inputs wait (shared with the web routes).
        timeout: optional bound in seconds on one wait, besides the
            library's ``handler_timeout`` (which always applies). When it
            passes, an elicitation is answered ``cancel``.
        modes: the elicitation modes served (default form and URL).
        user_key: the ``assigns`` key naming the user (default ``"user"``).

    A request whose ``assigns`` names no user has no one to answer it: an
    elicitation is declined at once (and logged).
    """

    def __init__(
        self,
        broker: PendingInputBroker,
        *,
        timeout: Optional[float] = None,
        modes: Sequence[str] = ("form", "url"),
        user_key: str = "user",
    ) -> None:
        if timeout is not None and not timeout > 0:
            raise ValueError("timeout must be positive")
        self.broker = broker
        self.timeout = timeout
        self.modes = tuple(modes)
        self.user_key = user_key

    def elicitation_modes(self) -> Sequence[str]:
        return self.modes

    def handle_elicitation(self, params: dict[str, Any], ctx: InputContext) -> dict[str, Any]:
        kind = "url" if ctx.mode == "url" else "form"
        answer = self._park(kind, params, ctx)
        if answer is None:
            return {"action": "cancel"} if self._has_user(ctx) else {"action": "decline"}
        return answer

    # ------------------------------------------------------------------ parking

    def _has_user(self, ctx: InputContext) -> bool:
        return ctx.assigns is not None and ctx.assigns.get(self.user_key) is not None

    def _park(self, kind: str, params: dict[str, Any], ctx: InputContext, *, draft: Optional[str] = None, model: str = "human") -> Optional[JsonDict]:
        """Park one input and wait for its answer; None when nobody answered (cancelled, timed out, no user)."""
        if not self._has_user(ctx):
            log.warning("mcp_input_sync.web: a %s request from server %s names no user in assigns; refused", kind, ctx.server_id)
            return None
        assert ctx.assigns is not None
        now = time.time()
        pending = PendingInput(
            id=secrets.token_urlsafe(16),
            kind=kind,
            params=params,
            user=str(ctx.assigns[self.user_key]),
            created=now,
            server_id=ctx.server_id,
            fields={k: dict(v) for k, v in ctx.fields.items()} if ctx.fields is not None else None,
            url=ctx.url,
            host=ctx.host,
            idn=ctx.idn,
            origin_mismatch=ctx.origin_mismatch,
            draft=draft,
            expires=None if self.timeout is None else now + self.timeout,
        )
        self.broker.park(pending, model=model)
        deadline = None if self.timeout is None else time.monotonic() + self.timeout
        try:
            while not ctx.cancelled:
                step = POLL if deadline is None else min(POLL, deadline - time.monotonic())
                if step <= 0:
                    break
                try:
                    answer = self.broker.wait(pending.id, step)
                except InputNotFound:
                    return None
                if answer is not None:
                    return answer
        finally:
            late = self.broker.withdraw(pending.id)
        # answered in the last instant: the answer still counts unless the library gave up
        return late if late is not None and not ctx.cancelled else None


class WebHandler(WebElicitationHandler):
    """:class:`WebElicitationHandler` that also parks sampling requests for approval.

    The person reads the request and approves it with a reply text (the
    answer sent to the server, as ``model``), or rejects it (the server gets
    error -1). Overriding ``handle_sampling`` advertises the ``sampling``
    capability; use :class:`WebElicitationHandler` when the host offers none.

    Args:
        draft: optional ``draft(params, ctx) -> str`` run before parking (your
            LLM, say); the person sees it pre-filled and may edit it.
        model: the ``model`` of approved replies (default ``"human"``, or
            the name of the model whose draft the person approves).
    """

    def __init__(
        self,
        broker: PendingInputBroker,
        *,
        timeout: Optional[float] = None,
        modes: Sequence[str] = ("form", "url"),
        user_key: str = "user",
        draft: Optional[Callable[[dict[str, Any], InputContext], str]] = None,
        model: str = "human",
    ) -> None:
        super().__init__(broker, timeout=timeout, modes=modes, user_key=user_key)
        self.draft = draft
        self.model = model

    def handle_sampling(self, params: dict[str, Any], ctx: InputContext) -> dict[str, Any]:
        text = self.draft(params, ctx) if self.draft is not None and self._has_user(ctx) else None
        answer = self._park("sampling", params, ctx, draft=text, model=self.model)
        if answer is None:
            raise InputRefused(SAMPLING_REJECTED, "the user did not approve the sampling request")
        if answer.get("action") == "reject":
            raise InputRefused(SAMPLING_REJECTED, "the user rejected the sampling request")
        return answer
