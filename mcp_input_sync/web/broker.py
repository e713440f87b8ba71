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

This module holds the in-memory store; the data types are in
:mod:`~mcp_input_sync.web.pending`, the handlers in
:mod:`~mcp_input_sync.web.handlers` and the deferred-call driver (with the
:class:`~mcp_input_sync.web.deferred.Store` interface every store
implements) in :mod:`~mcp_input_sync.web.deferred`. Import the public names
from :mod:`mcp_input_sync.web`.
"""

from __future__ import annotations

import json
import logging
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional

from .deferred import DeferredCallMethods, DeferredCalls
from .pending import InputNotFound, ParkedInput, PendingInput, same_user

log = logging.getLogger("mcp_input_sync.web")

__all__ = ["PendingInputBroker"]

JsonDict = dict[str, Any]

OnPark = Callable[[PendingInput], None]


def announce(on_park: Optional[OnPark], pending: PendingInput) -> None:
    """Call a store's ``on_park`` hook for a newly parked input (a raise is logged, not passed on)."""
    if on_park is not None:
        try:
            on_park(pending)
        except Exception:
            log.exception("mcp_input_sync.web: the on_park hook raised")


@dataclass
class _Slot:
    parked: ParkedInput
    event: threading.Event = field(default_factory=threading.Event)
    result: Optional[JsonDict] = None

    @property
    def answered(self) -> bool:
        return self.event.is_set()


class PendingInputBroker(DeferredCallMethods):
    """Pending inputs of one process, in memory; safe to share between threads.

    The web routes call :meth:`pending`, :meth:`get` and :meth:`answer`; the
    :class:`WebHandler` calls :meth:`park`, :meth:`wait` and :meth:`withdraw`.
    One broker serves any number of clients and handlers. It implements
    :class:`~mcp_input_sync.web.deferred.Store`.

    Args:
        on_park: called with each new :class:`PendingInput` (on the callback's
            thread, outside the broker's lock), e.g. to notify the user.
    """

    def __init__(self, on_park: Optional[OnPark] = None) -> None:
        self._lock = threading.Lock()
        self._slots: dict[str, _Slot] = {}
        self._on_park = on_park
        self._records: dict[str, JsonDict] = {}
        self._claims: set[tuple[str, int]] = set()
        #: The deferred-call driver (:meth:`start_call`, :meth:`result`, :meth:`serve`).
        self.deferred = DeferredCalls(self)

    # ------------------------------------------------------------------ handler side

    def park(self, pending: PendingInput, *, model: str = "human") -> None:
        """Add a pending input (its id must be new). ``model`` names the sampling reply's model."""
        parked = ParkedInput.of(pending, model)
        with self._lock:
            if pending.id in self._slots:
                raise ValueError(f"pending input {pending.id!r} already exists")
            self._slots[pending.id] = _Slot(parked)
        announce(self._on_park, pending)

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
            found = [s.parked.pending for s in self._slots.values() if s.parked.pending.user == who and not s.answered]
        return sorted(found, key=lambda p: p.created)

    def get(self, input_id: str, user: Any) -> PendingInput:
        """The unanswered input ``input_id`` of ``user``.

        Raises:
            InputNotFound: no such input, another user's, or already answered.
        """
        with self._lock:
            return self._owned(input_id, user).parked.pending

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
            slot = self._owned(input_id, user)
            errors, result = slot.parked.validate(data)
            if errors:
                return errors
            slot.result = result
            slot.event.set()
        call_id = slot.parked.pending.call_id
        if call_id is not None:
            self.deferred.answered(call_id)
        return {}

    def check(self, input_id: str, user: Any, data: Mapping[str, Any]) -> dict[str, str]:
        """The errors :meth:`answer` would return, without answering.

        Raises:
            InputNotFound: as :meth:`answer`.
        """
        with self._lock:
            return self._owned(input_id, user).parked.validate(data)[0]

    def __len__(self) -> int:
        with self._lock:
            return len(self._slots)

    def _owned(self, input_id: str, user: Any) -> _Slot:
        """The unanswered slot ``input_id`` of ``user`` (the lock held)."""
        slot = self._slots.get(input_id) if isinstance(input_id, str) else None
        if slot is None or slot.answered or not same_user(slot.parked.pending.user, user):
            raise InputNotFound(input_id)
        return slot

    # ------------------------------------------------------------------ storage of deferred calls

    def answer_of(self, input_id: str) -> Optional[JsonDict]:
        """The answer input ``input_id`` was given, or None (unanswered, withdrawn, unknown)."""
        with self._lock:
            slot = self._slots.get(input_id)
            return slot.result if slot is not None and slot.answered else None

    def put_call(self, record: JsonDict) -> None:
        """Store a copy of a deferred call's record."""
        with self._lock:
            self._records[record["id"]] = json.loads(json.dumps(record))

    def get_call(self, call_id: str) -> Optional[JsonDict]:
        """A copy of the record of deferred call ``call_id``, or None."""
        with self._lock:
            record = self._records.get(call_id)
            return None if record is None else json.loads(json.dumps(record))

    def claim_round(self, call_id: str, round_: int) -> bool:
        """True for the first claim of a call's round, False after."""
        with self._lock:
            if (call_id, round_) in self._claims:
                return False
            self._claims.add((call_id, round_))
            return True
