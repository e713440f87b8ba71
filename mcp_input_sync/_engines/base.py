"""The interface every era's engine offers the client, and the one task poll loop."""

from __future__ import annotations

import threading
from typing import Any, Callable, Mapping, Optional, Protocol, TypeVar, Union

from .. import _clock
from .._calls import CallSpec, ProgressCallback
from .._protocol.deadlines import CallClock
from .._protocol.eras import ERA_SETTING, back_channel_advice, back_channel_missing, era_advice, era_needed_by_error, era_needed_by_result
from .._protocol.forms import quoted
from .._protocol.jsonrpc import JsonDict
from .._protocol.modern import PendingCall
from ..errors import ClientError

T = TypeVar("T")

#: Returned by a poll's ``settle`` to poll again after the task's interval.
AGAIN: Any = object()
#: Returned by a poll's ``settle`` to poll again at once (new input was just answered).
AGAIN_NOW: Any = object()

#: The longest pause between two polls of a task, in seconds.
MAX_POLL_PAUSE = 5.0


class EraEngine(Protocol):
    """What the client asks of the engine of the era the handshake chose (or of the era router).

    Each era's engine is also the session's ``Receiver`` when it hears the
    server; the client never hands it a server message, so this interface
    leaves those methods out and the router needs none.
    """

    #: ``"legacy"`` or ``"modern"``.
    era: str

    @property
    def version(self) -> Optional[str]:
        """The protocol version in use (the modern engine may switch once, on -32022)."""

    def started(self, version: str, server_capabilities: Optional[JsonDict]) -> Optional[JsonDict]:
        """The handshake chose this engine's era at ``version``: ``notifications/initialized``
        and logs (legacy), or the listen (modern); None capabilities: the engine asks for them.

        Returns the server's ``DiscoverResult`` when the engine had to ask for
        it (modern, after a cached or switched decision), else None.
        """

    def request(
        self,
        method: str,
        params: Optional[JsonDict],
        *,
        is_call: bool,
        clock: CallClock,
        assigns: Optional[Mapping[str, Any]] = None,
        progress: Optional[ProgressCallback] = None,
        cancel: Optional[threading.Event] = None,
        idempotent: bool = False,
    ) -> JsonDict:
        """One request and its result, by the era's rules (``idempotent``: ``Outgoing.idempotent``)."""

    def call(self, method: str, params: JsonDict, spec: CallSpec) -> Union[JsonDict, PendingCall]:
        """A tool call, resource read or prompt, with the era's input and tasks."""

    def resume(self, pending: PendingCall, responses: Mapping[str, Any], spec: CallSpec) -> Union[JsonDict, PendingCall]:
        """Continue a deferred call with the user's answers."""

    def await_task(self, task_id: str, spec: CallSpec) -> JsonDict:
        """Follow a server task to its result."""

    def hear(self) -> None:
        """Someone started hearing notifications or logs."""

    def subscribe_resource(self, uri: str, subscribe: bool) -> None:
        """Hear (or stop hearing) updates of one resource."""

    def set_log_level(self, level: str, clock: CallClock) -> None:
        """The caller chose a log level: legacy sends ``logging/setLevel``; modern stamps it on later requests."""

    def roots_changed(self) -> None:
        """The handler's roots changed."""

    def note_tools(self, tools: list[JsonDict]) -> list[JsonDict]:
        """What a ``tools/list`` teaches the engine; returns the tools to show."""

    def close(self, answer: bool) -> None:
        """Stop; answer what the era answers at close (when ``answer``)."""


def poll_task(
    task_id: str,
    fetch: Callable[[CallClock], JsonDict],
    settle: Callable[[JsonDict], Any],
    clock: CallClock,
    cancel: Optional[threading.Event],
    interval_key: str,
) -> Any:
    """Poll ``tasks/get`` (through ``fetch``) until ``settle`` returns something other than :data:`AGAIN`.

    Each poll gets its own ``timeout`` within what is left of the call's
    ``max_total_timeout``; the pause between polls is the task's
    ``interval_key`` (milliseconds), at least 10 ms and at most 5 s (1 s when
    unset). A cancelled task, the caller's ``cancel`` and ``max_total_timeout``
    end the loop with a :class:`ClientError`.
    """
    while True:
        task = fetch(clock.child(_clock.monotonic()))
        if task.get("status") == "cancelled":
            raise ClientError("cancelled", f"task {quoted(task_id)} was cancelled")
        outcome = settle(task)
        if outcome is AGAIN_NOW:
            continue
        if outcome is not AGAIN:
            return outcome
        interval = task.get(interval_key)
        pause = interval / 1000.0 if isinstance(interval, (int, float)) and not isinstance(interval, bool) and interval > 0 else 1.0
        pause = min(max(pause, 0.01), MAX_POLL_PAUSE, max(0.0, clock.remaining(_clock.monotonic())))
        if (cancel.wait(pause) if cancel is not None else threading.Event().wait(pause)):
            raise ClientError("cancelled", "await_task was cancelled")
        if _clock.monotonic() - clock.started >= clock.max_total:
            raise ClientError("timeout", f"task {quoted(task_id)} did not finish within max_total_timeout")


def wrong_era(
    era: str,
    version: Optional[str],
    method: str,
    params: JsonDict,
    exc: Optional[ClientError] = None,
    result: Optional[JsonDict] = None,
    learnt: bool = False,
) -> Optional[ClientError]:
    """The error to raise when a tool call failed because the tool wants the other era, else None.

    ``exc`` is the call's error, or ``result`` its ``isError`` result. A
    certain match becomes ``ClientError(kind="protocol", check="era")``
    whose message says which era the tool needs, that the call was not
    sent again and what to pass instead; a hint only (the SDK's ambiguous
    -32603) keeps the server's error and adds the advice to its message.
    A handshake-era server with no back-channel at all (stateless or
    JSON-only HTTP) gets ``check="back-channel"`` and says what to change.
    """
    if method != "tools/call":
        return None
    tool = str(params.get("name"))
    shown = version or era
    if exc is not None:
        if exc.kind != "remote":
            return None
        need = era_needed_by_error(era, exc.code, exc.message)
        said = exc.message
    elif result is not None:
        need = era_needed_by_result(era, result)
        said = str(result["content"][0]["text"]) if need is not None else ""
    else:
        return None
    if need is None:
        return _no_back_channel(era, tool, shown, exc, result)
    advice = era_advice(tool, shown, need, learnt)
    if not need.certain:
        assert exc is not None
        return ClientError("remote", f"{exc.message} ({advice})", code=exc.code, data=exc.data)
    data: JsonDict = {"tool": tool, "needs": ERA_SETTING[need.needs][1], "version": shown}
    if exc is not None:
        data["error"] = {"code": exc.code, "message": exc.message, "data": exc.data}
    else:
        data["result"] = result
    return ClientError("protocol", f"{advice}. The server said: {said}", code=exc.code if exc else None, data=data, check="era")


def _no_back_channel(era: str, tool: str, version: str, exc: Optional[ClientError], result: Optional[JsonDict]) -> Optional[ClientError]:
    """``ClientError(kind="protocol", check="back-channel")`` when the server could not ask at all, else None.

    Raised like an era failure (an ``isError`` result too, kept in ``data``)
    because no era of this client helps: only the server can change
    (docs/modern.md#servers-with-no-back-channel).
    """
    if exc is not None:
        method = back_channel_missing(era, tool, code=exc.code, message=exc.message)
    else:
        method = back_channel_missing(era, tool, result=result)
    if method is None:
        return None
    data: JsonDict = {"tool": tool, "method": method, "version": version}
    if exc is not None:
        data["error"] = {"code": exc.code, "message": exc.message, "data": exc.data}
        said = exc.message
    else:
        data["result"] = result
        said = str(result["content"][0]["text"]) if result is not None else ""
    advice = back_channel_advice(tool, method, version)
    return ClientError("protocol", f"{advice}. The server said: {said}", code=exc.code if exc else None, data=data, check="back-channel")
