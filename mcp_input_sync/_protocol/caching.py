"""What a listing or a read may be cached for, and under which key (docs/caching.md).

Pure: no store, no clock. The 2026-07-28 results of ``tools/list``,
``prompts/list``, ``resources/list``, ``resources/templates/list`` and
``resources/read`` carry ``ttlMs`` (how long the client may keep the result,
as HTTP's ``max-age``) and ``cacheScope`` (``"public"``: no user's data in
it; ``"private"``: only for the same authorization context).
"""

from __future__ import annotations

import json
from typing import Any, Iterable, Literal, Optional

#: The listings whose results may be cached (and ``resources/read``, per URI).
LISTINGS = ("tools/list", "prompts/list", "resources/list", "resources/templates/list")

#: What each list_changed notification makes stale (resources/updated: the read of its URI).
STALE_AFTER = {
    "notifications/tools/list_changed": ("tools/list",),
    "notifications/prompts/list_changed": ("prompts/list",),
    # templates describe the same resource space
    "notifications/resources/list_changed": ("resources/list", "resources/templates/list"),
}

#: Every notification that makes a kept result stale.
STALE_NOTICES = frozenset(STALE_AFTER) | {"notifications/resources/updated"}

#: The longest a result is kept, whatever its ``ttlMs`` says: one day.
MAX_TTL = 24 * 3600.0

Scope = Literal["public", "private"]


def freshness(results: Iterable[Any], *, modern: bool, default_ttl: float) -> Optional[tuple[float, Scope]]:
    """Seconds the result (made of ``results``, a listing's pages) may be kept, and its scope; None: not at all.

    The hints count only in the 2026-07-28 era (an older server's ``ttlMs``
    is no promise of the protocol it speaks). A page without a valid
    ``ttlMs`` is kept ``default_ttl`` seconds (0: not kept); a listing is
    kept as long as its shortest-lived page allows, and is ``"public"``
    only when every page says so.
    """
    ttl = MAX_TTL
    scope: Scope = "public"
    for result in results:
        hint = result.get("ttlMs") if modern and isinstance(result, dict) else None
        if isinstance(hint, int) and not isinstance(hint, bool) and hint >= 0:
            ttl = min(ttl, hint / 1000.0)
        else:
            ttl = min(ttl, default_ttl)
            hint = None
        if hint is None or not isinstance(result, dict) or result.get("cacheScope") != "public":
            scope = "private"
    if ttl <= 0:
        return None
    return ttl, scope


def cache_key(server: str, version: Optional[str], scope: Scope, principal: str, method: str, subject: str = "") -> str:
    """The key of one result: its parts as a JSON array (no two sets of parts give one key).

    ``server`` names the endpoint, ``version`` the protocol version spoken
    (a result of one version is never served to another), ``principal`` the
    authorization context; a ``"public"`` result's key leaves it out, so
    every user of the server shares it. ``subject`` is the URI of a read.
    The key may hold a credential (a header the transport sends): a store
    outside this process gets it hashed (:mod:`mcp_input_sync._cache`).
    """
    return json.dumps([server, version or "", scope, principal if scope == "private" else "", method, subject], ensure_ascii=True)
