"""The calls every MCP SDK has beside the three: completion, the log level, any request, the listings.

:class:`SurfaceAPI` is mixed into :class:`~mcp_input_sync.client.Client`,
as :class:`~mcp_input_sync._api.CallsAPI` is; the client supplies the
attributes declared at the top of the class. It also keeps what the
listings taught about each tool's ``outputSchema`` and checks tool results
against it (docs/reference.md#output-schemas). See docs/architecture.md#the-client.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Callable, Mapping, Optional

from ._api import _UNSET, Seconds
from ._cache import CacheMode, ResponseCache, mode_for
from ._calls import ProgressCallback
from ._notifications import NotificationRouter
from ._output import OutputSchemas
from ._protocol.deadlines import CallClock
from ._protocol.jsonrpc import JsonDict
from ._protocol.limits import json_size
from ._protocol.requestmeta import owned, with_user_meta
from ._session import collect_pages
from .errors import ClientError
from .options import LOG_LEVELS, Options

log = logging.getLogger("mcp_input_sync")

#: Each listing method: the key of its items.
_LISTINGS = {
    "tools/list": "tools",
    "resources/list": "resources",
    "resources/templates/list": "resourceTemplates",
    "prompts/list": "prompts",
}


class SurfaceAPI:
    """``complete``, ``set_log_level``, ``request``, the ``list_*`` calls and their ``*_page`` forms."""

    # ------------------------------------------------------------------ supplied by the client

    _opts: Options
    _router: NotificationRouter
    #: ``_ensure_open()``: open the client if needed and return the era's engine.
    _ensure_open: Callable[[], Any]
    #: ``_clock_for(timeout, max_total_timeout)``: a call's deadlines.
    _clock_for: Callable[[Seconds, Seconds], CallClock]
    #: The kept listings and reads (the ``cache`` option; None: off).
    _cache: Optional[ResponseCache]

    # ------------------------------------------------------------------ completion and logs

    def complete(
        self,
        ref: Mapping[str, Any],
        name: str,
        value: str,
        *,
        context: Optional[Mapping[str, str]] = None,
        timeout: Seconds = _UNSET,
        meta: Optional[Mapping[str, Any]] = None,
    ) -> JsonDict:
        """Ask the server to complete one argument (``completion/complete``); return its ``completion``.

        Args:
            ref: what the argument belongs to, as the specification writes it:
                ``{"type": "ref/prompt", "name": "review"}`` or
                ``{"type": "ref/resource", "uri": "file:///{path}"}``.
            name: the argument's name.
            value: what the user typed so far.
            context: the values of the arguments already chosen (sent as
                ``context.arguments``).
            timeout: seconds to wait (default: the client's ``timeout``).
            meta: keys added to the request's ``_meta``.

        Returns:
            The server's ``completion`` object: ``values`` (a list of
            strings), and ``total`` and ``hasMore`` when it sends them.

        Raises:
            TypeError, ValueError: a malformed ``ref``, ``name``, ``value`` or ``context``.
            ClientError: ``remote`` when the server refuses (a server without
                the ``completions`` capability answers -32601), ``protocol``
                (check ``result``) when the answer has no ``completion.values``
                list, and the kinds of every request.
        """
        params: JsonDict = {"ref": _checked_ref(ref), "argument": {"name": _text("name", name), "value": _text("value", value)}}
        if context is not None:
            if not isinstance(context, Mapping):
                raise TypeError("context must be a mapping of argument names to values")
            params["context"] = {"arguments": {_text("context key", k): _text(f"context[{k!r}]", v) for k, v in context.items()}}
        result = self._plain("completion/complete", params, timeout, meta)
        completion = result.get("completion")
        if type(completion) is not dict or type(completion.get("values")) is not list:
            raise ClientError("protocol", "completion/complete answered without a completion.values list", data=result, check="result")
        return completion

    def set_log_level(self, level: str, *, timeout: Seconds = _UNSET) -> None:
        """Choose the level of the log entries the server sends from now on.

        Legacy era: sends ``logging/setLevel`` and waits for the answer (a
        server that does not serve it raises ``ClientError(kind="remote")``).
        2026-07-28 era, which has no ``logging/setLevel``: nothing is sent;
        every later request carries the level in its ``_meta``
        (``io.modelcontextprotocol/logLevel``). Either way the level replaces
        the ``log_level`` option for the rest of the client's life, and is
        asked for even when no ``handle_log`` or subscriber reads the entries
        (they then go to the logger ``mcp_input_sync.server.<server_id>``).

        Raises:
            ValueError: ``level`` is not one of the eight RFC 5424 names MCP uses.
        """
        if level not in LOG_LEVELS:
            raise ValueError(f"level must be one of {LOG_LEVELS}, not {level!r}")
        engine = self._ensure_open()
        self._router.choose_level(level)
        engine.set_log_level(level, self._clock_for(timeout, _UNSET))

    # ------------------------------------------------------------------ any request

    def request(
        self,
        method: str,
        params: Optional[Mapping[str, Any]] = None,
        *,
        timeout: Seconds = _UNSET,
        max_total_timeout: Seconds = _UNSET,
        progress: Optional[ProgressCallback] = None,
        cancel: Optional[threading.Event] = None,
        meta: Optional[Mapping[str, Any]] = None,
    ) -> JsonDict:
        """Send a request the library does not wrap and return its result as it came.

        It goes through the same session as every call: the era's ``_meta``
        (2026-07-28), the timeouts, ``progress``, ``cancel``, Ctrl-C, and the
        mapping of failures to :class:`ClientError`. No server request is tied
        to it, and its result is not read (an ``input_required`` answer is
        returned as it is). The methods whose answers the library must read
        itself are refused (docs/reference.md#methods-the-library-owns).

        Raises:
            TypeError: ``method`` is not a str or ``params`` not a mapping.
            ValueError: an owned method (the message names the call to use),
                or a reserved ``_meta`` key.
            ClientError: as every call.
        """
        if not isinstance(method, str) or not method:
            raise TypeError("method must be a non-empty str")
        instead = owned(method)
        if instead is not None:
            raise ValueError(f"{method} is the library's own; use {instead}")
        if params is not None and not isinstance(params, Mapping):
            raise TypeError("params must be a mapping or None")
        sent = with_user_meta(params, meta)
        engine = self._ensure_open()
        clock = self._clock_for(timeout, max_total_timeout)
        result: JsonDict = engine.request(method, sent, is_call=False, clock=clock, progress=progress, cancel=cancel)
        return result

    def request_pages(self, method: str, key: str, *, timeout: Seconds = _UNSET, meta: Optional[Mapping[str, Any]] = None) -> list[JsonDict]:
        """Every item of a paged list method the library does not wrap (an extension's), following ``nextCursor``.

        ``key`` names the list in each page (``"skills"`` for ``skills/list``).
        The pages are read as :meth:`list_tools` reads its own, with the same
        bounds: ``limits["listing_bytes"]`` for the items and cursors of all
        pages together, at most 1 000 pages, no cursor twice.

        Raises:
            TypeError: ``method`` or ``key`` is not a non-empty str.
            ValueError: as :meth:`request`, for a method the library owns.
            ClientError: as every call; ``check="limit"`` over ``listing_bytes``.
        """
        if not isinstance(method, str) or not method or not isinstance(key, str) or not key:
            raise TypeError("method and key must be non-empty str")
        instead = owned(method)
        if instead is not None:
            raise ValueError(f"{method} is the library's own; use {instead}")
        return self._list(method, timeout, meta, key)

    def _plain(self, method: str, params: Optional[JsonDict], timeout: Seconds, meta: Optional[Mapping[str, Any]]) -> JsonDict:
        engine = self._ensure_open()
        result: JsonDict = engine.request(method, with_user_meta(params, meta), is_call=False, clock=self._clock_for(timeout, _UNSET))
        return result

    # ------------------------------------------------------------------ listings

    def list_tools(
        self, *, timeout: Seconds = _UNSET, meta: Optional[Mapping[str, Any]] = None, cache_mode: CacheMode = "use"
    ) -> list[JsonDict]:
        """Every tool the server offers, following ``nextCursor`` across pages.

        Over 2026-07-28 HTTP a tool whose ``x-mcp-header`` annotations are
        invalid is left out. Each tool's ``outputSchema`` is kept to check
        its results (``validate_output``). A listing the server said may be
        kept (``ttlMs``) is served again within that time; ``cache_mode``:
        ``"use"`` (the default), ``"refresh"`` (ask the server, keep the
        answer) or ``"bypass"`` (docs/caching.md).
        """
        engine = self._ensure_open()
        tools: list[JsonDict] = engine.note_tools(self._listing("tools/list", timeout, meta, cache_mode))
        self._outputs().note(tools)
        return tools

    def list_resources(
        self, *, timeout: Seconds = _UNSET, meta: Optional[Mapping[str, Any]] = None, cache_mode: CacheMode = "use"
    ) -> list[JsonDict]:
        """Every resource the server offers, following ``nextCursor``; ``cache_mode`` as :meth:`list_tools`."""
        return self._listing("resources/list", timeout, meta, cache_mode)

    def list_resource_templates(
        self, *, timeout: Seconds = _UNSET, meta: Optional[Mapping[str, Any]] = None, cache_mode: CacheMode = "use"
    ) -> list[JsonDict]:
        """Every resource template the server offers, following ``nextCursor``; ``cache_mode`` as :meth:`list_tools`."""
        return self._listing("resources/templates/list", timeout, meta, cache_mode)

    def list_prompts(
        self, *, timeout: Seconds = _UNSET, meta: Optional[Mapping[str, Any]] = None, cache_mode: CacheMode = "use"
    ) -> list[JsonDict]:
        """Every prompt the server offers, following ``nextCursor``; ``cache_mode`` as :meth:`list_tools`."""
        return self._listing("prompts/list", timeout, meta, cache_mode)

    def list_tools_page(
        self, cursor: Optional[str] = None, *, timeout: Seconds = _UNSET, meta: Optional[Mapping[str, Any]] = None
    ) -> JsonDict:
        """One page of ``tools/list``: the result as it came (``tools``, ``nextCursor`` when there are more).

        Pass the page's ``nextCursor`` as ``cursor`` for the next page; the
        tools are kept and filtered as :meth:`list_tools` does.
        """
        engine = self._ensure_open()
        page = self._page("tools/list", cursor, timeout, meta)
        tools = engine.note_tools(page["tools"])
        self._outputs().note(tools)
        return dict(page, tools=tools)

    def list_resources_page(
        self, cursor: Optional[str] = None, *, timeout: Seconds = _UNSET, meta: Optional[Mapping[str, Any]] = None
    ) -> JsonDict:
        """One page of ``resources/list``; see :meth:`list_tools_page`."""
        return self._page("resources/list", cursor, timeout, meta)

    def list_resource_templates_page(
        self, cursor: Optional[str] = None, *, timeout: Seconds = _UNSET, meta: Optional[Mapping[str, Any]] = None
    ) -> JsonDict:
        """One page of ``resources/templates/list``; see :meth:`list_tools_page`."""
        return self._page("resources/templates/list", cursor, timeout, meta)

    def list_prompts_page(
        self, cursor: Optional[str] = None, *, timeout: Seconds = _UNSET, meta: Optional[Mapping[str, Any]] = None
    ) -> JsonDict:
        """One page of ``prompts/list``; see :meth:`list_tools_page`."""
        return self._page("prompts/list", cursor, timeout, meta)

    def _listing(self, method: str, timeout: Seconds, meta: Optional[Mapping[str, Any]], cache_mode: CacheMode) -> list[JsonDict]:
        """A whole listing, through the cache: served when kept and fresh, kept when its pages allow."""
        cache, mode = self._cache, mode_for(cache_mode, meta)
        if cache is None or mode == "bypass":
            return self._list(method, timeout, meta)
        self._ensure_open()  # a closed client raises, whatever is kept
        if mode == "use":
            hit = cache.get(method)
            if isinstance(hit, list):
                return hit
        mark, pages = cache.mark(), []  # type: int, list[JsonDict]
        items = self._list(method, timeout, meta, pages=pages)
        cache.put(method, "", pages, items, mark, mode == "refresh")
        return items

    def _list(
        self, method: str, timeout: Seconds, meta: Optional[Mapping[str, Any]], key: Optional[str] = None, pages: Optional[list[JsonDict]] = None
    ) -> list[JsonDict]:
        engine = self._ensure_open()
        extra = with_user_meta(None, meta)

        def fetch(page_method: str, params: Optional[JsonDict]) -> JsonDict:
            sent = with_user_meta(params, None if extra is None else extra.get("_meta"))
            page: JsonDict = engine.request(page_method, sent, is_call=False, clock=self._clock_for(timeout, _UNSET))
            if pages is not None:
                pages.append(page)
            return page

        return collect_pages(fetch, method, _LISTINGS[method] if key is None else key, self._opts.limits["listing_bytes"])

    def _page(self, method: str, cursor: Optional[str], timeout: Seconds, meta: Optional[Mapping[str, Any]]) -> JsonDict:
        if cursor is not None and not isinstance(cursor, str):
            raise TypeError("cursor must be a str (a page's nextCursor) or None")
        page = self._plain(method, None if cursor is None else {"cursor": cursor}, timeout, meta)
        key = _LISTINGS[method]
        items = page.get(key)
        if type(items) is not list:
            raise ClientError("protocol", f"{method} result has no {key!r} list")
        next_cursor = page.get("nextCursor")
        if next_cursor is not None and (not isinstance(next_cursor, str) or next_cursor == cursor):
            raise ClientError("protocol", f"{method} returned a bad or repeated nextCursor")
        limit = self._opts.limits["listing_bytes"]
        if json_size(items) > limit:
            raise ClientError("protocol", f"{method} sent more than limits['listing_bytes']={limit} of {key}", check="limit")
        return page

    # ------------------------------------------------------------------ output schemas

    def _repeatable(self, name: str) -> bool:
        """Whether the last listing said tool ``name`` is read-only or idempotent (``call_tool``'s ``idempotent``)."""
        return self._outputs().repeatable(name)

    def _outputs(self) -> OutputSchemas:
        found: OutputSchemas = self.__dict__.setdefault("_surface_outputs", OutputSchemas())  # atomic: one per client
        return found

    def _check_output(self, name: str, result: JsonDict, timeout: Seconds) -> JsonDict:
        """Check a tool result against the tool's ``outputSchema`` (``validate_output``); return it.

        A task (not yet a result) passes. When no listing was read yet and the
        result carries ``structuredContent``, the tools are listed once to learn
        the schema; a tool no listing shows is not checked.
        """
        if not self._opts.validate_output or result.get("isError") is True or "task" in result or result.get("resultType") == "task":
            return result
        outputs = self._outputs()
        if not outputs.knows(name) and not outputs.listed and "structuredContent" in result:
            try:
                self.list_tools(timeout=timeout)
            except ClientError as exc:
                if exc.kind in ("closed", "transport", "cancelled"):
                    raise
                log.warning("mcp_input_sync: could not list tools to check the output of %r: %s", name, exc)
                return result
        outputs.check(name, result)
        return result


def _checked_ref(ref: Any) -> JsonDict:
    if not isinstance(ref, Mapping):
        raise TypeError('ref must be a mapping such as {"type": "ref/prompt", "name": "review"}')
    kind = ref.get("type")
    key = {"ref/prompt": "name", "ref/resource": "uri"}.get(kind) if isinstance(kind, str) else None
    if key is None:
        raise ValueError(f"ref type must be 'ref/prompt' or 'ref/resource', not {kind!r}")
    if not isinstance(ref.get(key), str):
        raise ValueError(f"a {kind} ref needs a str {key!r}")
    return dict(ref)


def _text(what: str, value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a str, not {type(value).__name__}")
    return value
