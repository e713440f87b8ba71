"""The public calls' signatures: ``call_tool``, ``read_resource`` and ``get_prompt``.

Their overloads (a ``PendingCall`` only with ``defer_input``) take more room
than what they do, which is one line each: :class:`CallsAPI` is mixed into
:class:`~mcp_input_sync.client.Client`, which supplies ``_call``. See
docs/architecture.md#the-client.
"""

from __future__ import annotations

import enum
import threading
from typing import Any, Callable, Literal, Mapping, Optional, Union, overload

from ._calls import ProgressCallback
from ._protocol.jsonrpc import JsonDict
from ._protocol.modern import PendingCall
from ._protocol.requestmeta import with_user_meta


class _Unset(enum.Enum):
    UNSET = "UNSET"


_UNSET = _Unset.UNSET
#: A number of seconds, or unset (the client's option applies).
Seconds = Union[float, _Unset]


class CallsAPI:
    """The three calls a server's tools, resources and prompts answer."""

    #: Supplied by the client: ``_call(method, params, timeout, max_total_timeout, assigns,
    #: progress, cancel, defer_input, wait, reset_timeout_on_progress)`` runs one call through the era's engine.
    _call: Callable[
        [str, JsonDict, Seconds, Seconds, Optional[Mapping[str, Any]], Optional[ProgressCallback], Optional[threading.Event], bool, bool,
         Optional[bool]],
        Union[JsonDict, PendingCall],
    ]
    #: Supplied by the client: ``_check_output(tool, result, timeout)`` checks ``structuredContent``
    #: against the tool's ``outputSchema`` and returns the result.
    _check_output: Callable[[str, JsonDict, Seconds], JsonDict]


    @overload
    def call_tool(
        self, name: str, arguments: Optional[Mapping[str, Any]] = None, *, timeout: Seconds = ...,
        max_total_timeout: Seconds = ..., assigns: Optional[Mapping[str, Any]] = ...,
        progress: Optional[ProgressCallback] = ..., cancel: Optional[threading.Event] = ...,
        reset_timeout_on_progress: Optional[bool] = ...,
        meta: Optional[Mapping[str, Any]] = ..., defer_input: Literal[False] = ..., wait: bool = ...,
    ) -> JsonDict: ...

    @overload
    def call_tool(
        self, name: str, arguments: Optional[Mapping[str, Any]] = None, *, timeout: Seconds = ...,
        max_total_timeout: Seconds = ..., assigns: Optional[Mapping[str, Any]] = ...,
        progress: Optional[ProgressCallback] = ..., cancel: Optional[threading.Event] = ...,
        reset_timeout_on_progress: Optional[bool] = ...,
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
        result = self._call("tools/call", _meta(params, meta), timeout, max_total_timeout, assigns, progress, cancel, defer_input, wait, reset_timeout_on_progress)
        return self._check_output(name, result, timeout) if isinstance(result, dict) else result

    @overload
    def read_resource(
        self, uri: str, *, timeout: Seconds = ..., max_total_timeout: Seconds = ...,
        assigns: Optional[Mapping[str, Any]] = ..., progress: Optional[ProgressCallback] = ...,
        reset_timeout_on_progress: Optional[bool] = ..., cancel: Optional[threading.Event] = ..., meta: Optional[Mapping[str, Any]] = ...,
        defer_input: Literal[False] = ...,
    ) -> JsonDict: ...

    @overload
    def read_resource(
        self, uri: str, *, timeout: Seconds = ..., max_total_timeout: Seconds = ...,
        assigns: Optional[Mapping[str, Any]] = ..., progress: Optional[ProgressCallback] = ...,
        reset_timeout_on_progress: Optional[bool] = ..., cancel: Optional[threading.Event] = ..., meta: Optional[Mapping[str, Any]] = ...,
        defer_input: bool,
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
    ) -> Union[JsonDict, PendingCall]:
        """Read a resource and return its ``ReadResourceResult``; see :meth:`call_tool`."""
        return self._call("resources/read", _meta({"uri": uri}, meta), timeout, max_total_timeout, assigns, progress, cancel, defer_input, True, reset_timeout_on_progress)

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
        return self._call("prompts/get", _meta(params, meta), timeout, max_total_timeout, assigns, progress, cancel, defer_input, True, reset_timeout_on_progress)


def _meta(params: JsonDict, meta: Optional[Mapping[str, Any]]) -> JsonDict:
    """``params`` with the caller's ``meta=`` as its ``_meta`` (checked before anything is sent)."""
    if meta is None:
        return params
    out = with_user_meta(params, meta)
    assert out is not None
    return out
