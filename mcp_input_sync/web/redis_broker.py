"""A broker on Redis: any web worker (gunicorn, several processes or hosts) answers an input parked by another.

::

    import redis
    from mcp_input_sync.web.redis_broker import RedisBroker

    broker = RedisBroker(redis.Redis.from_url("redis://localhost:6379/0"))

Give every process the same Redis and ``prefix``. The process running the
call parks the input (:class:`~mcp_input_sync.web.WebHandler` as usual) and
waits on it with ``BLPOP``; whichever process serves the user's POST checks
the answer (the schema travels with the input) and pushes it. Keys
(``<prefix>:input:<id>``, ``:user:<user>``, ``:done:<id>``,
``:answer:<id>``, and for deferred modern-era calls ``:call:<id>`` and
``:claim:<id>:<round>``) expire after ``ttl`` seconds, so a process that dies
leaves nothing behind for long. The client object is redis-py's
``redis.Redis`` (or anything with the same methods); this module does not
import redis itself.
"""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Any, Mapping, Optional

from .broker import OnPark, announce
from .deferred import DeferredCallMethods, DeferredCalls
from .pending import InputNotFound, ParkedInput, PendingInput, same_user

__all__ = ["RedisBroker"]

JsonDict = dict[str, Any]


class RedisBroker(DeferredCallMethods):
    """A broker like :class:`~mcp_input_sync.web.PendingInputBroker` whose inputs live in Redis, shared by every process.

    It implements :class:`~mcp_input_sync.web.deferred.Store`, as the
    in-memory broker does, and has the same methods.

    Args:
        client: a ``redis.Redis`` (bytes or decoded responses both work).
        prefix: the key prefix (one per application).
        ttl: seconds a pending input and its answer live at most (default
            one day; keep it above the longest ``handler_timeout``).
        on_park: as :class:`PendingInputBroker` (called in the parking process).
    """

    def __init__(self, client: Any, *, prefix: str = "mcp_input_sync", ttl: int = 86_400, on_park: Optional[OnPark] = None) -> None:
        if not isinstance(ttl, int) or ttl < 1:
            raise ValueError("ttl must be a positive number of seconds")
        self.redis = client
        self.prefix = prefix
        self.ttl = ttl
        self._on_park = on_park
        #: The deferred-call driver (:meth:`start_call`, :meth:`result`, :meth:`serve`).
        self.deferred = DeferredCalls(self)

    # ------------------------------------------------------------------ keys

    def _key(self, what: str, name: str) -> str:
        return f"{self.prefix}:{what}:{name}"

    def _load(self, input_id: str) -> Optional[ParkedInput]:
        if not isinstance(input_id, str):
            return None
        raw = self.redis.get(self._key("input", input_id))
        if raw is None:
            return None
        stored = json.loads(raw)
        model = stored.pop("_model", "human")
        return ParkedInput.of(PendingInput(**stored), model)

    def _owned(self, input_id: str, user: Any) -> ParkedInput:
        parked = self._load(input_id)
        if parked is None or not same_user(parked.pending.user, user) or self.redis.exists(self._key("done", input_id)):
            raise InputNotFound(input_id)
        return parked

    # ------------------------------------------------------------------ handler side

    def park(self, pending: PendingInput, *, model: str = "human") -> None:
        """Add a pending input (its id must be new). ``model`` names the sampling reply's model."""
        ParkedInput.of(pending, model)  # refuse what could never be answered, as the memory broker
        stored = dataclasses.asdict(pending)
        stored["_model"] = model
        if not self.redis.set(self._key("input", pending.id), json.dumps(stored), nx=True, ex=self.ttl):
            raise ValueError(f"pending input {pending.id!r} already exists")
        index = self._key("user", pending.user)
        self.redis.zadd(index, {pending.id: pending.created})
        self.redis.expire(index, self.ttl)
        announce(self._on_park, pending)

    def wait(self, input_id: str, timeout: float) -> Optional[JsonDict]:
        """Block up to ``timeout`` seconds (``BLPOP``) for the answer; None while unanswered.

        Raises:
            InputNotFound: the input was withdrawn.
        """
        done = self.redis.get(self._key("done", input_id))
        if done is not None and done in (b"withdrawn", "withdrawn"):
            raise InputNotFound(input_id)
        if done is None and not self.redis.exists(self._key("input", input_id)):
            raise InputNotFound(input_id)
        # BLPOP takes whole or decimal seconds; 0 would block forever
        popped = self.redis.blpop([self._key("answer", input_id)], timeout=max(0.01, math.ceil(timeout * 100) / 100))
        if popped is None:
            return None
        answer: JsonDict = json.loads(popped[1])
        # keep it readable for withdraw(), which the handler always calls
        self.redis.rpush(self._key("answer", input_id), popped[1])
        self.redis.expire(self._key("answer", input_id), self.ttl)
        return answer

    def withdraw(self, input_id: str) -> Optional[JsonDict]:
        """Remove an input everywhere; returns its answer when it had one meanwhile (else None)."""
        parked = self._load(input_id)
        claimed = self.redis.set(self._key("done", input_id), "withdrawn", nx=True, ex=self.ttl)
        answer: Optional[JsonDict] = None
        if not claimed:  # answered meanwhile: the answer is (or is about to be) in the list
            raw = self.redis.lindex(self._key("answer", input_id), 0)
            if raw is None:
                popped = self.redis.blpop([self._key("answer", input_id)], timeout=1)
                raw = None if popped is None else popped[1]
            answer = None if raw is None else json.loads(raw)
        self.redis.delete(self._key("input", input_id), self._key("answer", input_id))
        if parked is not None:
            self.redis.zrem(self._key("user", parked.pending.user), input_id)
        return answer

    # ------------------------------------------------------------------ web side

    def pending(self, user: Any) -> list[PendingInput]:
        """The unanswered inputs of ``user``, oldest first."""
        who = str(user)
        found = []
        for raw_id in self.redis.zrange(self._key("user", who), 0, -1):
            input_id = raw_id.decode() if isinstance(raw_id, bytes) else str(raw_id)
            parked = self._load(input_id)
            if parked is None:
                self.redis.zrem(self._key("user", who), input_id)  # expired
                continue
            if parked.pending.user == who and not self.redis.exists(self._key("done", input_id)):
                found.append(parked.pending)
        return sorted(found, key=lambda p: p.created)

    def get(self, input_id: str, user: Any) -> PendingInput:
        """The unanswered input ``input_id`` of ``user`` (else :class:`~mcp_input_sync.web.InputNotFound`)."""
        return self._owned(input_id, user).pending

    def check(self, input_id: str, user: Any, data: Mapping[str, Any]) -> dict[str, str]:
        """The errors :meth:`answer` would return, without answering."""
        return self._owned(input_id, user).validate(data)[0]

    def answer(self, input_id: str, user: Any, data: Mapping[str, Any]) -> dict[str, str]:
        """Answer an input for ``user`` (as :meth:`PendingInputBroker.answer`); whichever process parked it gets the answer."""
        parked = self._owned(input_id, user)
        errors, result = parked.validate(data)
        if errors:
            return errors
        if not self.redis.set(self._key("done", input_id), "answered", nx=True, ex=self.ttl):
            raise InputNotFound(input_id)  # answered or withdrawn by someone else first
        self.redis.rpush(self._key("answer", input_id), json.dumps(result))
        self.redis.expire(self._key("answer", input_id), self.ttl)
        self.redis.zrem(self._key("user", parked.pending.user), input_id)
        call_id = parked.pending.call_id
        if call_id is not None:
            self.deferred.answered(call_id)
        return {}

    # ------------------------------------------------------------------ storage of deferred calls

    def answer_of(self, input_id: str) -> Optional[JsonDict]:
        """The answer input ``input_id`` was given, or None (unanswered, withdrawn, unknown)."""
        done = self.redis.get(self._key("done", input_id))
        if done not in (b"answered", "answered"):
            return None
        raw = self.redis.lindex(self._key("answer", input_id), 0)
        if raw is None:
            return None
        answer: JsonDict = json.loads(raw)
        return answer

    def put_call(self, record: JsonDict) -> None:
        """Store a deferred call's record (``<prefix>:call:<id>``, for ``ttl`` seconds)."""
        self.redis.set(self._key("call", record["id"]), json.dumps(record), ex=self.ttl)

    def get_call(self, call_id: str) -> Optional[JsonDict]:
        """The record of deferred call ``call_id``, or None."""
        raw = self.redis.get(self._key("call", call_id))
        if raw is None:
            return None
        record: JsonDict = json.loads(raw)
        return record

    def claim_round(self, call_id: str, round_: int) -> bool:
        """True for the first claim of a call's round in any process (``SET NX``), False after."""
        return bool(self.redis.set(self._key("claim", f"{call_id}:{round_}"), "1", nx=True, ex=self.ttl))

    def __len__(self) -> int:
        """Inputs parked and not yet withdrawn (a scan: for tests and monitoring)."""
        return sum(1 for _ in self.redis.scan_iter(match=f"{self.prefix}:input:*"))
