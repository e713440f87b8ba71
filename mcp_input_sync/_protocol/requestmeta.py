"""What a caller may add to a request: its own ``_meta`` keys, and the methods ``Client.request`` sends.

Pure. The library sets some ``_meta`` keys itself (the 2026-07-28 envelope,
``progressToken``); a caller's ``meta=`` sits beside them and may not name
them, nor any key under a prefix MCP reserves (*MCP 2026-07-28, basic*,
"_meta": a prefix whose second label is ``modelcontextprotocol`` or ``mcp``).
``Client.request`` sends any method but those whose answer the library must
process itself (docs/reference.md#methods-the-library-owns).
"""

from __future__ import annotations

from typing import Any, Mapping, Optional

from .jsonrpc import JsonDict

#: Keys the library sets that have no reserved prefix.
LIBRARY_KEYS = frozenset({"progressToken"})

#: Methods ``Client.request`` refuses, each with the call to use instead.
OWNED_METHODS: Mapping[str, str] = {
    "initialize": "open() (the handshake)",
    "server/discover": "open() (era detection)",
    "tools/call": "call_tool()",
    "resources/read": "read_resource()",
    "prompts/get": "get_prompt()",
    "logging/setLevel": "set_log_level()",
    "resources/subscribe": "subscribe_resource()",
    "resources/unsubscribe": "unsubscribe_resource()",
    "subscriptions/listen": "subscribe() or subscribe_resource()",
    "tasks/result": "await_task()",
    "tasks/update": "await_task() or resume()",
}


def reserved(key: str) -> bool:
    """True for a ``_meta`` key the library sets or MCP reserves (``io.modelcontextprotocol/x``, ``dev.mcp/x``)."""
    if key in LIBRARY_KEYS:
        return True
    prefix, slash, _ = key.rpartition("/")
    if not slash:
        return False
    labels = prefix.split(".")
    return len(labels) >= 2 and labels[1] in ("modelcontextprotocol", "mcp")


def user_meta(meta: Any) -> JsonDict:
    """A copy of a caller's ``meta=``, checked.

    Raises:
        TypeError: not a mapping, or a key that is not a str.
        ValueError: a key the library sets or MCP reserves.
    """
    if not isinstance(meta, Mapping):
        raise TypeError(f"meta must be a mapping, not {type(meta).__name__}")
    out: JsonDict = {}
    for key, value in meta.items():
        if not isinstance(key, str):
            raise TypeError("meta keys must be str")
        if reserved(key):
            raise ValueError(f"meta key {key!r} is set by the library or reserved by MCP; it cannot be given")
        out[key] = value
    return out


def with_user_meta(params: Optional[Mapping[str, Any]], meta: Optional[Mapping[str, Any]]) -> Optional[JsonDict]:
    """``params`` (copied) whose ``_meta`` holds the caller's keys (``params``'s own ``_meta`` checked the same way).

    Returns ``params`` as a dict, or None when both are None.

    Raises:
        TypeError, ValueError: as :func:`user_meta`; the same key in both.
    """
    if params is None and meta is None:
        return None
    out: JsonDict = dict(params or {})
    merged: JsonDict = user_meta(out["_meta"]) if "_meta" in out else {}
    if meta is not None:
        extra = user_meta(meta)
        both = sorted(set(merged) & set(extra))
        if both:
            raise ValueError(f"meta key {both[0]!r} is given twice (in params['_meta'] and meta=)")
        merged.update(extra)
    if merged or "_meta" in out:
        out["_meta"] = merged
    return out


def owned(method: str) -> Optional[str]:
    """What to call instead of sending ``method`` through ``Client.request``, or None when it may be sent."""
    if method.startswith("notifications/"):
        return "nothing: a notification is not a request"
    return OWNED_METHODS.get(method)
