"""A 2026-07-28 call's ``input_required`` rounds as a pure driver.

Fed each result the server returns for one call, :class:`RoundDriver` says
what the engine does next, one of:

- :data:`DONE`: the call is complete (``driver.result``), or a task was
  created and the caller does not follow it;
- :data:`FOLLOW`: a task was created (``driver.task_id``); follow it;
- :data:`ASK`: a round of input requests (``driver.requests``, in sorted key
  order): check them, answer them, tell the driver (:meth:`RoundDriver.answered`)
  and retry with the answers and ``driver.state``;
- :data:`WAIT`: a round with only ``requestState``: wait ``driver.delay``
  seconds, then retry with ``driver.state``;
- :data:`DEFER`: a round while the caller asked to defer input: return
  ``driver.pending()``.

The driver reads no clock, sends nothing and calls no callback: the engine
(``_engines/modern.py``) is the loop around it that does, and the table test
(``tests/test_rounds.py``) drives it with scripted results. Every rule is
docs/reference.md#modern-input-rounds: the ``resultType`` a method may
return, ``max_rounds``, the shape of a round, and no question asked again
right after it was declined or cancelled. A broken rule raises
:class:`RoundRefused`, which the engine raises as ``ClientError``.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional

from .forms import quoted
from .jsonrpc import JsonDict
from .modern import BACKOFF_FIRST, BACKOFF_MAX, COMPLETE, INPUT_REQUIRED, INPUT_REQUIRED_METHODS, TASK, PendingCall, question_key

DONE = "done"
FOLLOW = "follow"
ASK = "ask"
WAIT = "wait"
DEFER = "defer"


class RoundRefused(Exception):
    """A result that breaks a rule of the rounds: the engine raises ``ClientError(kind, message, check=check, data=data)``."""

    def __init__(self, kind: str, message: str, check: str, data: Any = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.check = check
        self.data = data


class RoundDriver:
    """The rounds of one call: fed each result (:meth:`next`) and each round's answers (:meth:`answered`).

    Args:
        method, params: the call (``params`` without ``_meta``).
        tasks: the client follows tasks (a ``task`` result is allowed).
        max_rounds: rounds allowed in this call (``max_rounds``).
        defer: return a :class:`PendingCall` at the first round of input.
        wait: follow a created task to its result (else it is the result).
        rounds, declined: a resumed call's rounds so far and what its last round declined.
    """

    __slots__ = ("method", "params", "_tasks", "_max_rounds", "_defer", "_wait", "rounds", "_declined", "_state_only",
                 "result", "task_id", "requests", "state", "delay")

    def __init__(
        self,
        method: str,
        params: JsonDict,
        *,
        tasks: bool,
        max_rounds: int,
        defer: bool = False,
        wait: bool = True,
        rounds: int = 0,
        declined: frozenset[str] = frozenset(),
    ) -> None:
        self.method = method
        self.params = params
        self._tasks = tasks
        self._max_rounds = max_rounds
        self._defer = defer
        self._wait = wait
        #: Rounds so far in this call (a resumed call's included).
        self.rounds = rounds
        #: The question keys declined or cancelled in the previous round.
        self._declined = declined
        #: State-only rounds in a row (their back-off doubles).
        self._state_only = 0
        #: The last result fed in (DONE: the call's result).
        self.result: JsonDict = {}
        #: FOLLOW: the created task's id.
        self.task_id: Optional[str] = None
        #: ASK: the round's input requests, by key in sorted order.
        self.requests: dict[str, Any] = {}
        #: ASK and WAIT: the ``requestState`` to echo, or None.
        self.state: Optional[str] = None
        #: WAIT: seconds to wait before the retry.
        self.delay = 0.0

    def next(self, result: JsonDict) -> str:
        """What one result of the call means: DONE, FOLLOW, ASK, WAIT or DEFER.

        Raises:
            RoundRefused: a result that breaks a rule (``check`` "result",
                "rounds" or "reask").
        """
        self.result = result
        kind = result.get("resultType", COMPLETE)
        if kind == COMPLETE:
            return DONE
        method = self.method
        if kind == TASK and self._tasks and method == "tools/call":
            task_id = result.get("taskId")
            if not isinstance(task_id, str):
                raise RoundRefused("protocol", "a task result without a taskId", "result", result)
            if not self._wait:
                return DONE
            self.task_id = task_id
            return FOLLOW
        if kind != INPUT_REQUIRED or method not in INPUT_REQUIRED_METHODS:
            raise RoundRefused("protocol", f"{method} returned resultType {kind!r}", "result", result)
        self.rounds += 1
        if self.rounds > self._max_rounds:
            raise RoundRefused("protocol", f"the server asked for input more than max_rounds={self._max_rounds} times", "rounds")
        requests = result.get("inputRequests")
        state = result.get("requestState")
        if requests is None and state is None:
            raise RoundRefused("protocol", "input_required result has neither inputRequests nor requestState", "result", result)
        if requests is not None and type(requests) is not dict:
            raise RoundRefused("protocol", "inputRequests is not an object", "result", result)
        if state is not None and type(state) is not str:
            raise RoundRefused("protocol", "requestState is not a string", "result", result)
        self.state = state
        if not requests:  # state only: wait, doubling, then retry
            self.requests = {}
            self.delay = float(min(BACKOFF_MAX, BACKOFF_FIRST * (2**self._state_only)))
            self._state_only += 1
            self._declined = frozenset()
            return WAIT
        self.requests = requests = dict(sorted(requests.items()))
        self._state_only = 0
        declined = self._declined
        if declined:
            for key, request in requests.items():
                if type(request) is dict and question_key(request) in declined:
                    raise RoundRefused("declined", f"the server asked again for {quoted(key)} after it was declined", "reask")
        return DEFER if self._defer else ASK

    def answered(self, answers: Mapping[str, Mapping[str, Any]]) -> None:
        """The answers of the round just asked (by key): the questions declined or cancelled are not to be asked again next."""
        requests = self.requests
        declined = None
        for key, answer in answers.items():  # a loop, not a comprehension: no call of its own per round
            if answer.get("action") in ("decline", "cancel"):
                declined = (declined or set()) | {question_key(requests[key])}
        self._declined = frozenset(declined) if declined else frozenset()

    def pending(self) -> PendingCall:
        """DEFER: the call as a :class:`PendingCall`, to be resumed with the answers."""
        return PendingCall(self.method, self.params, self.requests, self.state, self.rounds, sorted(self._declined))
