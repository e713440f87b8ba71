"""The public calls' signatures: ``call_tool``, ``read_resource`` and ``get_prompt``,
then ``handle_url_elicitations``, ``resume`` and ``await_task``.

Their overloads (a ``PendingCall`` only with ``defer_input``) take more room
than what they do, which is one line each: :class:`CallsAPI` is mixed into
:class:`~mcp_input_sync.client.Client`, which supplies ``_call``,
``_ensure_open`` and ``_clock_for``. See docs/architecture.md#the-client.
"""

from __future__ import annotations

import enum
import threading
from functools import partial
from typing import TYPE_CHECKING, Any, Callable, Literal, Mapping, Optional, Protocol, Union, overload

from ._cache import CacheMode, ResponseCache, mode_for
from ._calls import CallSpec, ProgressCallback
from ._protocol.deadlines import CallClock
from ._protocol.jsonrpc import JsonDict
from ._protocol.modern import PendingCall
from ._protocol.requestmeta import with_user_meta
from .errors import ClientError

if TYPE_CHECKING:
    from ._input import InputDesk


class Resumer(Protocol):
    """What ``resume`` and ``await_task`` need of the era's engine (``_engines.base.EraEngine`` is one)."""

    def resume(self, pending: PendingCall, responses: Mapping[str, Any], spec: CallSpec) -> Union[JsonDict, PendingCall]: ...

    def await_task(self, task_id: str, spec: CallSpec) -> JsonDict: ...


class _Unset(enum.Enum):
    UNSET = "UNSET"


_UNSET = _Unset.UNSET
#: A number of seconds, or unset (the client's option applies).
Seconds = Union[float, _Unset]


class CallsAPI:
    """The three calls a server's tools, resources and prompts answer."""

    #: Supplied by the client: ``_call(method, params, timeout, max_total_timeout, assigns, progress, cancel,
    #: defer_input, wait, reset_timeout_on_progress, idempotent, keep)`` runs one call through the era's engine;
    #: ``keep(result, direct)``, when given, hears how the call ended (the response cache).
    _call: Callable[
        [str, JsonDict, Seconds, Seconds, Optional[Mapping[str, Any]], Optional[ProgressCallback], Optional[threading.Event], bool, bool,
         Optional[bool], bool, Optional[Callable[[Any, bool], None]]],
        Union[JsonDict, PendingCall],
    ]
    #: Supplied by the client: the kept listings and reads (the ``cache`` option; None: off).
    _cache: Optional[ResponseCache]
    #: Supplied by the client: its input desk once open (None before).
    _desk: "Optional[InputDesk]"
    #: Supplied by the client: ``_check_output(tool, result, timeout)`` checks ``structuredContent``
    #: against the tool's ``outputSchema`` and returns the result.
    _check_output: Callable[[str, JsonDict, Seconds], JsonDict]
    #: Supplied by the client: ``_repeatable(tool)``, whether the last listing calls the tool safe to run twice.
    _repeatable: Callable[[str], bool]
    #: Supplied by the client: the era's engine of an open client (opening or reconnecting it first).
    _ensure_open: Callable[[], Resumer]
    #: Supplied by the client: ``_clock_for(timeout, max_total_timeout)``, a call's deadlines from now.
    _clock_for: Callable[[Seconds, Seconds], CallClock]


    @overload
    def call_tool(
        self, name: str, arguments: Optional[Mapping[str, Any]] = None, *, timeout: Seconds = ...,
        max_total_timeout: Seconds = ..., assigns: Optional[Mapping[str, Any]] = ...,
        progress: Optional[ProgressCallback] = ..., cancel: Optional[threading.Event] = ...,
        reset_timeout_on_progress: Optional[bool] = ..., idempotent: Optional[bool] = ...,
        meta: Optional[Mapping[str, Any]] = ..., defer_input: Literal[False] = ..., wait: bool = ...,
    ) -> JsonDict: ...

    @overload
    def call_tool(
        self, name: str, arguments: Optional[Mapping[str, Any]] = None, *, timeout: Seconds = ...,
        max_total_timeout: Seconds = ..., assigns: Optional[Mapping[str, Any]] = ...,
        progress: Optional[ProgressCallback] = ..., cancel: Optional[threading.Event] = ...,
        reset_timeout_on_progress: Optional[bool] = ..., idempotent: Optional[bool] = ...,
        meta: Optional[Mapping[str, Any]] = ..., defer_input: bool, wait: bool = ...,
    ) -> Union[JsonDict, PendingCall]: ...

    def call_tool(
        self,
        name: str,
        arguments: Optional[Mapping[str, Any]] = None,
        *,
        timeout: Seconds = _UNSET,
        max_total_timeout: Seconds = _UNSET,
        assigns: Optional[Mapping[str, Any]] = None,
        progress: Optional[ProgressCallback] = None,
        reset_timeout_on_progress: Optional[bool] = None,
        idempotent: Optional[bool] = None,
        cancel: Optional[threading.Event] = None,
        meta: Optional[Mapping[str, Any]] = None,
        defer_input: bool = False,
        wait: bool = True,
    ) -> Union[JsonDict, PendingCall]:
        """Call a tool and return its ``CallToolResult`` (``isError: true`` is returned, not raised).

        Args:
            name: the tool's name.
            arguments: the tool's arguments.
            timeout: seconds to wait on the server (not counting time spent
                answering its input requests).
            max_total_timeout: hard bound on the whole call, in seconds.
            assigns: what callbacks answering this call's input see as ``ctx.assigns``.
            progress: called on the notification thread with each progress update.
            reset_timeout_on_progress: each progress the server reports, with a
                value above the last, restarts ``timeout``; ``max_total_timeout``
                still bounds the call (None: the client's option).
            idempotent: True: running the tool twice is safe, so over HTTP it
                may be sent again after a failure that may have reached the
                server (the ``retry`` option); False: never; None (default):
                as the tool's annotations (``readOnlyHint``, ``idempotentHint``)
                of the last listing say.
            cancel: an Event another thread may set to cancel the call.
            meta: keys added to the request's ``_meta`` (every request of the
                call), beside the library's own; a key the library sets or MCP
                reserves raises ``ValueError``.
            defer_input: (2026-07-28 era) return a :class:`PendingCall` at the
                first round of input instead of calling the handler; continue
                it with :meth:`resume`.
            wait: with ``tasks=True``, follow a task to its result (True) or
                return the ``CreateTaskResult`` at once (False).

        Raises:
            ClientError: ``remote`` for a JSON-RPC error (``-32042`` included, its
                elicitations in ``.data``), ``timeout``, ``cancelled``, ``closed``,
                ``transport``, ``protocol``, and in the 2026-07-28 era
                ``input_handler``, ``refused`` and ``declined``.
        """
        params: JsonDict = {"name": name}
        if arguments is not None:
            params["arguments"] = dict(arguments)
        if idempotent is not None and not isinstance(idempotent, bool):
            raise TypeError("idempotent must be a bool or None")
        safe = self._repeatable(name) if idempotent is None else idempotent
        result = self._call(
            "tools/call", _meta(params, meta), timeout, max_total_timeout, assigns, progress, cancel, defer_input, wait, reset_timeout_on_progress, safe, None
        )
        return self._check_output(name, result, timeout) if isinstance(result, dict) else result

    @overload
    def read_resource(
        self, uri: str, *, timeout: Seconds = ..., max_total_timeout: Seconds = ...,
        assigns: Optional[Mapping[str, Any]] = ..., progress: Optional[ProgressCallback] = ...,
        reset_timeout_on_progress: Optional[bool] = ..., cancel: Optional[threading.Event] = ..., meta: Optional[Mapping[str, Any]] = ...,
        defer_input: Literal[False] = ..., cache_mode: CacheMode = ...,
    ) -> JsonDict: ...

    @overload
    def read_resource(
        self, uri: str, *, timeout: Seconds = ..., max_total_timeout: Seconds = ...,
        assigns: Optional[Mapping[str, Any]] = ..., progress: Optional[ProgressCallback] = ...,
        reset_timeout_on_progress: Optional[bool] = ..., cancel: Optional[threading.Event] = ..., meta: Optional[Mapping[str, Any]] = ...,
        defer_input: bool, cache_mode: CacheMode = ...,
    ) -> Union[JsonDict, PendingCall]: ...

    def read_resource(
        self,
        uri: str,
        *,
        timeout: Seconds = _UNSET,
        max_total_timeout: Seconds = _UNSET,
        assigns: Optional[Mapping[str, Any]] = None,
        progress: Optional[ProgressCallback] = None,
        reset_timeout_on_progress: Optional[bool] = None,
        cancel: Optional[threading.Event] = None,
        meta: Optional[Mapping[str, Any]] = None,
        defer_input: bool = False,
        cache_mode: CacheMode = "use",
    ) -> Union[JsonDict, PendingCall]:
        """Read a resource and return its ``ReadResourceResult``; see :meth:`call_tool`.

        A result the server said may be kept (``ttlMs``, 2026-07-28) is served
        again within that time (docs/caching.md). ``cache_mode``: ``"use"``
        (the default) serves and keeps, ``"refresh"`` asks the server and
        keeps, ``"bypass"`` neither reads nor writes the cache. A result
        reached through a round of input is never kept.
        """
        params = _meta({"uri": uri}, meta)
        cache, mode = self._cache, mode_for(cache_mode, meta)
        keep: Optional[Callable[[Any, bool], None]] = None
        if cache is not None and mode != "bypass":
            self._ensure_open()  # a closed client raises, whatever is kept
            if mode == "use":
                hit = cache.get("resources/read", uri)
                if isinstance(hit, dict):
                    return hit
            keep = partial(cache.keep, "resources/read", uri, cache.mark(), mode == "refresh")
        return self._call("resources/read", params, timeout, max_total_timeout, assigns, progress, cancel, defer_input, True, reset_timeout_on_progress, False, keep)

    @overload
    def get_prompt(
        self, name: str, arguments: Optional[Mapping[str, str]] = None, *, timeout: Seconds = ...,
        max_total_timeout: Seconds = ..., assigns: Optional[Mapping[str, Any]] = ...,
        progress: Optional[ProgressCallback] = ..., cancel: Optional[threading.Event] = ...,
        reset_timeout_on_progress: Optional[bool] = ...,
        meta: Optional[Mapping[str, Any]] = ..., defer_input: Literal[False] = ...,
    ) -> JsonDict: ...

    @overload
    def get_prompt(
        self, name: str, arguments: Optional[Mapping[str, str]] = None, *, timeout: Seconds = ...,
        max_total_timeout: Seconds = ..., assigns: Optional[Mapping[str, Any]] = ...,
        progress: Optional[ProgressCallback] = ..., cancel: Optional[threading.Event] = ...,
        reset_timeout_on_progress: Optional[bool] = ..., meta: Optional[Mapping[str, Any]] = ...,
        defer_input: bool,
    ) -> Union[JsonDict, PendingCall]: ...

    def get_prompt(
        self,
        name: str,
        arguments: Optional[Mapping[str, str]] = None,
        *,
        timeout: Seconds = _UNSET,
        max_total_timeout: Seconds = _UNSET,
        assigns: Optional[Mapping[str, Any]] = None,
        progress: Optional[ProgressCallback] = None,
        reset_timeout_on_progress: Optional[bool] = None,
        cancel: Optional[threading.Event] = None,
        meta: Optional[Mapping[str, Any]] = None,
        defer_input: bool = False,
    ) -> Union[JsonDict, PendingCall]:
        """Get a prompt and return its ``GetPromptResult``; see :meth:`call_tool`."""
        params: JsonDict = {"name": name}
        if arguments is not None:
            params["arguments"] = dict(arguments)
        return self._call("prompts/get", _meta(params, meta), timeout, max_total_timeout, assigns, progress, cancel, defer_input, True, reset_timeout_on_progress, False, None)


    def handle_url_elicitations(self, error: ClientError) -> list[JsonDict]:
        """Answer the URL elicitations of a -32042 error through the checks and the handler.

        Each entry of ``error.data["elicitations"]`` (URL mode, with an
        ``elicitationId``) passes the capability and URL checks first, all of
        them before any callback; then ``handle_elicitation`` runs for each, in
        order, on the calling thread, with the client's ``assigns``; each
        answer is validated. The library never opens a URL: the handler asks
        the user. Retry the original call once the user is done.

        Returns:
            The ``ElicitResult`` of each entry, in order.

        Raises:
            ClientError: ``protocol`` (check ``malformed``) when ``error`` is not
                a -32042 error with URL elicitations; ``protocol`` (check
                ``capability``) when the handler does not serve URL elicitation;
                ``refused`` (check ``url``) for a URL the checks refuse;
                ``input_handler`` when the handler raises or answers badly.
        """
        self._ensure_open()
        desk = self._desk
        assert desk is not None
        # the callbacks run as a modern round's do: on this thread, under their deadlines
        return desk.answer_url_elicitations(error, self._clock_for(_UNSET, _UNSET))

    def resume(
        self,
        pending: PendingCall,
        responses: Mapping[str, Any],
        *,
        timeout: Seconds = _UNSET,
        max_total_timeout: Seconds = _UNSET,
        assigns: Optional[Mapping[str, Any]] = None,
        progress: Optional[ProgressCallback] = None,
        cancel: Optional[threading.Event] = None,
        defer_input: bool = True,
        wait: bool = True,
    ) -> Union[JsonDict, PendingCall]:
        """Continue a call that returned a :class:`PendingCall`, with the user's answers.

        ``responses`` maps every key of ``pending.input_requests`` to its answer
        (an ``ElicitResult``, ``CreateMessageResult`` or ``ListRootsResult``);
        each is validated as a handler's answer would be. Any thread, or any
        process with a client for the same server, may resume. By default a
        further round of input is deferred again.

        Raises:
            ClientError: as :meth:`call_tool`; ``input_handler`` (check
                ``answer``) for a missing or invalid answer.
        """
        engine = self._ensure_open()
        spec = CallSpec(self._clock_for(timeout, max_total_timeout), assigns, progress, cancel, defer_input, wait)
        result = engine.resume(pending, responses, spec)
        if isinstance(result, dict) and pending.method == "tools/call":
            return self._check_output(str(pending.params.get("name")), result, timeout)
        return result

    def await_task(
        self,
        task_id: str,
        *,
        timeout: Seconds = _UNSET,
        max_total_timeout: Seconds = _UNSET,
        assigns: Optional[Mapping[str, Any]] = None,
        cancel: Optional[threading.Event] = None,
    ) -> JsonDict:
        """Follow a server task to its result (``tasks=True``).

        Polls ``tasks/get`` as the task's ``pollIntervalMs`` asks, answers each
        of its input requests once (through the checks and the handler) with
        ``tasks/update``, and returns the task's result.

        Raises:
            ClientError: ``remote`` for a failed task, ``cancelled`` for a
                cancelled one, ``timeout`` past ``max_total_timeout``, and the
                kinds of :meth:`call_tool` for a failing callback (the task is
                left running).
        """
        engine = self._ensure_open()
        return engine.await_task(task_id, CallSpec(self._clock_for(timeout, max_total_timeout), assigns, cancel=cancel))

def _meta(params: JsonDict, meta: Optional[Mapping[str, Any]]) -> JsonDict:
    """``params`` with the caller's ``meta=`` as its ``_meta`` (checked before anything is sent)."""
    if meta is None:
        return params
    out = with_user_meta(params, meta)
    assert out is not None
    return out
