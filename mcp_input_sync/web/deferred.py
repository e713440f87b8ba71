"""Deferred modern-era calls: no thread waits while a person answers, any process resumes the call.

In the 2026-07-28 era a call can stop at a round of input and hand back a
:class:`~mcp_input_sync.PendingCall` (``defer_input=True``). The driver here
(:class:`DeferredCalls`) parks each input request of the round in a store
as a :class:`~mcp_input_sync.web.PendingInput` tagged with the call's id;
the store tells the driver of every answer (:meth:`DeferredCalls.answered`),
and the process that takes the round's last answer resumes the call with
its own client for the server (``client.resume``), then stores the result
or parks the next round.

The driver keeps nothing but the clients of its process: every call's
state lives in the store as a JSON object (a *call record*, below), so a
store shared by processes (Redis) lets any of them go on with the call.

A call goes on only on a client allowed to carry it, never on whichever
client of the same server was used last (each client may hold another
user's credentials). The record names it in ``via``:

* ``["client", token]``: the very client that started the call, in this
  process; the call fails once that client is closed or gone. A call started
  on a client nobody served (:meth:`DeferredCalls.serve`) is bound this way.
* ``["user", server_id, user]``: a client served for that user
  (``serve(client, user=...)``) in any process sharing the store.
* ``["shared", server_id]``: a client served for every user
  (``serve(client)``: one set of credentials for the whole app) in any
  process sharing the store.
:class:`Store` declares what a store offers, to the driver and to the web
routes; :class:`~mcp_input_sync.web.PendingInputBroker` and
:class:`~mcp_input_sync.web.redis_broker.RedisBroker` both implement it.

A call record holds ``id``, ``user``, ``server_id``, ``via``, ``created``, ``round``
(rounds asked so far), ``status`` (``"pending"``, ``"complete"`` or
``"error"``), ``pending`` (the :class:`PendingCall` as JSON while a round
waits), ``inputs`` (the round's ``{key: input id}``), ``auto`` (answers
given without a person: ``roots/list``), ``result`` and ``error``.
"""

from __future__ import annotations

import secrets
import threading
import time
import weakref
from typing import TYPE_CHECKING, Any, Mapping, Optional, Protocol, runtime_checkable

from .._protocol.checks import Prepared
from .._protocol.modern import PendingCall
from ..client import ClientState
from ..errors import ClientError
from .pending import CallState, InputNotFound, PendingInput, same_user

if TYPE_CHECKING:  # pragma: no cover
    from ..client import Client

__all__ = ["DeferredCallMethods", "DeferredCalls", "Store"]

JsonDict = dict[str, Any]


@runtime_checkable
class Store(Protocol):
    """Where pending inputs and deferred calls live: what the handlers, the web routes and the driver use.

    The handlers (:class:`~mcp_input_sync.web.WebHandler`) park, wait and
    withdraw; the routes list, show, check and answer inputs and read a
    call's state; the driver keeps call records and reads answers. A store
    that takes an answer to an input of a deferred call (``call_id`` set)
    tells its :class:`DeferredCalls` (:meth:`DeferredCalls.answered`).
    """

    # the handlers' side

    def park(self, pending: PendingInput, *, model: str = "human") -> None:
        """Add a pending input (its id must be new); ``model`` names an approved sampling reply's model."""

    def wait(self, input_id: str, timeout: float) -> Optional[JsonDict]:
        """Block up to ``timeout`` seconds for the answer; None while unanswered (:class:`InputNotFound` once withdrawn)."""

    def withdraw(self, input_id: str) -> Optional[JsonDict]:
        """Remove an input; returns its answer when it had one meanwhile (else None)."""

    # the routes' side

    def pending(self, user: Any) -> list[PendingInput]:
        """The unanswered inputs of ``user``, oldest first."""

    def get(self, input_id: str, user: Any) -> PendingInput:
        """The unanswered input ``input_id`` of ``user`` (else :class:`InputNotFound`)."""

    def check(self, input_id: str, user: Any, data: Mapping[str, Any]) -> dict[str, str]:
        """The errors :meth:`answer` would return, without answering."""

    def answer(self, input_id: str, user: Any, data: Mapping[str, Any]) -> dict[str, str]:
        """Answer an input for ``user`` after the library's checks; errors per field, empty when taken."""

    def result(self, call_id: str, user: Any) -> CallState:
        """Where deferred call ``call_id`` of ``user`` stands (else :class:`InputNotFound`)."""

    # the driver's side

    def answer_of(self, input_id: str) -> Optional[JsonDict]:
        """The answer an input was given, or None (unanswered, withdrawn, unknown)."""

    def put_call(self, record: JsonDict) -> None:
        """Store a call record (a copy: later changes to ``record`` are not seen)."""

    def get_call(self, call_id: str) -> Optional[JsonDict]:
        """A copy of the call record ``call_id``, or None."""

    def claim_round(self, call_id: str, round_: int) -> bool:
        """True for the first claim of a call's round, in every process sharing the store; False after."""


class DeferredCalls:
    """The deferred-call driver of one store.

    Args:
        store: where the call records and their inputs live.
    """

    def __init__(self, store: Store) -> None:
        self.store = store
        self._lock = threading.Lock()
        # server_id -> the client this process resumes every user's calls on
        self._shared: dict[str, Client] = {}
        # (server_id, user) -> the client this process resumes one user's calls on
        self._per_user: weakref.WeakValueDictionary[tuple[str, str], Client] = weakref.WeakValueDictionary()
        # token -> a client that started calls without being served
        self._started: weakref.WeakValueDictionary[str, Client] = weakref.WeakValueDictionary()
        self._tokens: weakref.WeakKeyDictionary[Client, str] = weakref.WeakKeyDictionary()

    def serve(self, client: Client, *, user: Any = None) -> None:
        """Let ``client`` resume, in this process, deferred calls to its server.

        With ``user`` it carries only that user's calls (a client on the
        user's own credentials); without, every user's (a client on the
        app's credentials, shared by all). Calls started on a client that
        was not served go on only on that very client.

        Raises:
            ValueError: ``client`` already serves another user, or every user.
        """
        server_id = client.server_id
        with self._lock:
            served = self._served_as(client)
            wanted = None if user is None else str(user)
            if served is not None and served != ("user", wanted):
                if not (served == ("shared", None) and wanted is None):
                    raise ValueError(f"this client already serves {_whom(served[1])}; use one client per user")
            if wanted is None:
                self._shared[server_id] = client
            else:
                self._per_user[(server_id, wanted)] = client

    def _served_as(self, client: Client) -> Optional[tuple[str, Optional[str]]]:
        """``("shared", None)`` or ``("user", name)`` when ``client`` is served (the lock held), else None."""
        if self._shared.get(client.server_id) is client:
            return ("shared", None)
        for (server_id, who), other in self._per_user.items():
            if other is client and server_id == client.server_id:
                return ("user", who)
        return None

    def _bind(self, client: Client, who: str) -> list[str]:
        """The ``via`` of a call ``who`` starts on ``client``: which clients may carry it on."""
        with self._lock:
            served = self._served_as(client)
            if served == ("shared", None):
                return ["shared", client.server_id]
            if served is not None:
                if served[1] != who:
                    raise ValueError(f"this client serves {_whom(served[1])}, not {who!r}; use that user's own client")
                return ["user", client.server_id, who]
            token = self._tokens.get(client)
            if token is None:
                token = self._tokens[client] = secrets.token_urlsafe(16)
                self._started[token] = client
            return ["client", token]

    def _carrier(self, record: JsonDict) -> Client:
        """The client allowed to carry ``record`` on in this process.

        Raises:
            ClientError: ``kind="closed"`` when that client is closed, gone,
                or not in this process; never another client.
        """
        via = record.get("via")
        with self._lock:
            if isinstance(via, list) and via[:1] == ["shared"] and len(via) == 2:
                client = self._shared.get(str(via[1]))
                missing = "no client served for every user of this server in this process (broker.serve(client))"
            elif isinstance(via, list) and via[:1] == ["user"] and len(via) == 3:
                client = self._per_user.get((str(via[1]), str(via[2])))
                missing = "no client served for this user in this process (broker.serve(client, user=...))"
            elif isinstance(via, list) and via[:1] == ["client"] and len(via) == 2:
                client = self._started.get(str(via[1]))
                missing = "the client this call was started on is gone, or in another process (serve a client for the user on every worker)"
            else:
                client, missing = None, "the call record does not say which client may carry it"
        if client is None:
            raise ClientError("closed", f"cannot resume the call: {missing}")
        if client.state is ClientState.CLOSED:
            raise ClientError("closed", "cannot resume the call: the client it belongs to is closed")
        return client

    def start(self, client: Client, tool: str, arguments: Optional[Mapping[str, Any]], user: Any, **options: Any) -> CallState:
        """Call ``tool`` with ``defer_input=True`` and store the outcome (see :meth:`DeferredCallMethods.start_call`)."""
        if user is None:
            raise ValueError("a deferred call needs a user to answer its input")
        who = str(user)
        via = self._bind(client, who)
        options.setdefault("assigns", {"user": who})
        outcome = client.call_tool(tool, arguments, defer_input=True, **options)
        record: JsonDict = {
            "id": secrets.token_urlsafe(16),
            "user": who,
            "server_id": client.server_id,
            "via": via,
            "created": time.time(),
            "round": 0,
            "status": "pending",
            "pending": None,
            "inputs": {},
            "result": None,
            "error": None,
        }
        self._advance(client, record, outcome)
        return self.state(record["id"], who)

    def state(self, call_id: str, user: Any) -> CallState:
        """Where call ``call_id`` of ``user`` stands.

        Raises:
            InputNotFound: no such call, or another user's.
        """
        store = self.store
        record = store.get_call(call_id) if isinstance(call_id, str) else None
        if record is None or not same_user(str(record["user"]), user):
            raise InputNotFound(call_id)
        inputs = []
        if record["status"] == "pending":
            for input_id in record["inputs"].values():
                try:
                    inputs.append(store.get(input_id, user))
                except InputNotFound:
                    continue
        return CallState(record["id"], record["status"], record["result"], record["error"], inputs, record["round"])

    def answered(self, call_id: str) -> None:
        """After an answer: when every input of the round is answered, resume the call here (once)."""
        store = self.store
        record = store.get_call(call_id)
        if record is None or record["status"] != "pending" or record["pending"] is None:
            return
        answers: JsonDict = dict(record.get("auto") or {})
        for key, input_id in record["inputs"].items():
            answer = store.answer_of(input_id)
            if answer is None:
                return
            answers[key] = answer
        if not store.claim_round(call_id, record["round"]):
            return  # another answer (maybe on another worker) resumes it
        for input_id in record["inputs"].values():
            store.withdraw(input_id)
        try:
            client = self._carrier(record)
        except ClientError as exc:
            self._fail(record, str(exc))
            return
        if any(a.get("action") == "reject" for a in answers.values()):
            self._fail(record, "the user rejected the sampling request")
            return
        try:
            outcome = client.resume(PendingCall.from_json(record["pending"]), answers, assigns={"user": record["user"]})
        except ClientError as exc:
            self._fail(record, str(exc))
            return
        self._advance(client, record, outcome)

    def _fail(self, record: JsonDict, error: str) -> None:
        record.update(status="error", error=error, inputs={})
        self.store.put_call(record)

    def _advance(self, client: Client, record: JsonDict, outcome: Any) -> None:
        """Store a call's outcome: its result, or its next round parked as pending inputs."""
        store = self.store
        if not isinstance(outcome, PendingCall):
            record.update(status="complete", result=outcome, pending=None, inputs={})
            store.put_call(record)
            return
        prepared: dict[str, Prepared] = {}
        auto: JsonDict = {}
        for key, request in outcome.input_requests.items():
            method = request.get("method")
            if method == "roots/list":
                auto[key] = {"roots": []}  # nobody on the web to list roots: none are shared
                continue
            step = client.check_input(method, request.get("params")) if isinstance(method, str) else None
            if not isinstance(step, Prepared):
                self._fail(record, f"input request {key!r} was refused by the checks")
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
                server_origin=url.server_origin if url is not None else None,
                call_id=record["id"],
                key=key,
            )
            record["inputs"][key] = pending.id
            parked.append(pending)
        store.put_call(record)  # before parking: an answer finds its call
        for pending in parked:
            store.park(pending)
        if not parked:  # only roots: answer at once
            self.answered(record["id"])


class DeferredCallMethods:
    """The deferred-call methods of a store (:meth:`serve`, :meth:`start_call`, :meth:`result`).

    A store inherits them and sets ``self.deferred = DeferredCalls(self)``
    in its ``__init__``; the driver does the work.
    """

    deferred: DeferredCalls

    def serve(self, client: Client, *, user: Any = None) -> None:
        """Let ``client`` resume, in this process, deferred calls to its server.

        Without ``user``: every user's calls (a client on the app's own
        credentials); with ``user``: only that user's (a client on the user's
        own credentials, e.g. from :meth:`~mcp_input_sync.web.logins.Logins.connect`).
        A call started on a client that is not served goes on only on that
        very client, in this process.

        Raises:
            ValueError: ``client`` already serves another user, or every user.
        """
        self.deferred.serve(client, user=user)

    def start_call(
        self,
        client: Client,
        tool: str,
        arguments: Optional[Mapping[str, Any]],
        user: Any,
        **options: Any,
    ) -> CallState:
        """Call a tool on a 2026-07-28 server without holding a thread while a person answers.

        ``client.call_tool(..., defer_input=True)``: a complete result is
        stored and returned; a round of input is parked as this call's
        :class:`PendingInput` s (owned by ``user``). When the user has
        answered all of them, the worker that took the last answer resumes
        the call and stores the result, or parks the next round. The call
        goes on only on ``client`` itself or, on other workers, on a client
        :meth:`serve` d for the same server and for ``user`` (or for every
        user when ``client`` was served so); when there is none, or it is
        closed, the call ends with ``status == "error"``. ``options`` go to ``call_tool``
        (``timeout``, ``max_total_timeout``...).

        Raises:
            ClientError: as ``call_tool`` (``protocol`` in the legacy era).
            ValueError: ``client`` was served for another user.
        """
        return self.deferred.start(client, tool, arguments, user, **options)

    def result(self, call_id: str, user: Any) -> CallState:
        """Where deferred call ``call_id`` of ``user`` stands.

        Raises:
            InputNotFound: no such call, or another user's.
        """
        return self.deferred.state(call_id, user)


def _whom(user: Optional[str]) -> str:
    return "every user" if user is None else f"user {user!r}"
