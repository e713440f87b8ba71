"""The roots a handler returns, checked and normalised before they are sent.

Contract (docs/safety.md#answers, roots):

* :func:`normalise_roots` takes the handler's result. Anything other than a
  dict with a ``"roots"`` list whose items are dicts with a string ``"uri"``
  raises :class:`RootsInvalid` (the caller answers JSON-RPC -32603); nothing
  is returned in that case, not even the valid items.
* Otherwise it returns ``(roots to send, reasons for the dropped roots)``.
  Kept roots keep their order and every field except ``"uri"`` unchanged
  (each kept root is a shallow copy; the handler's objects are not mutated).
  The reasons are short fixed strings naming the root's index, never its URI
  (the caller logs them as a warning; a URI could carry control characters
  into the log).
* Pure and lexical: no filesystem access, no symlink resolution, no I/O.

A root is kept only when its URI:

* is a ``file://`` URI (scheme case-insensitive). ``file:relative`` and the
  authority-less ``file:/x`` form are dropped: only ``file://`` URIs are sent;
* has an empty or ``localhost`` host (case-insensitive);
  ``file://localhost/x`` is sent as ``file:///x``. Any other authority,
  including userinfo or a port, is a remote host and is dropped;
* has no control, format or whitespace character (Unicode ``Cc``, ``Cf``,
  ``Cs``, ``Zs``, ``Zl``, ``Zp`` or ``str.isspace``; a raw space is not valid
  in a URI, it must be written ``%20``) and no backslash (a Windows reader
  would take it as a separator and escape the lexical dot-segment removal);
* has no query (``?``) or fragment (``#``): a root names a directory, and a
  query or fragment would either be ignored or change what a server reads;
* has an absolute path (starting with ``/``).

The path of a kept root has ``%2E``/``%2e`` decoded to ``.`` (no other
percent-escape is touched: ``%2F`` stays ``%2F``) and its dot segments
removed as in RFC 3986 section 5.2.4, so ``..`` never climbs above ``/``
(``file:///../../etc`` becomes ``file:///etc``); a trailing slash is kept.
A root whose normalised path starts with ``//`` is dropped, since
``file:////host/share`` reads as a UNC (remote) path. Every kept URI
therefore starts with ``file:///``, and normalising a result twice gives the
same roots as normalising it once.
"""

from __future__ import annotations

import re
from typing import Any

from .urls import has_forbidden_char

__all__ = ["RootsInvalid", "normalise_roots", "remove_dot_segments"]

_SCHEME_RE = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:")
_ENCODED_DOT_RE = re.compile(r"%2[Ee]")


class RootsInvalid(ValueError):
    """The handler's roots result has the wrong shape (the caller answers -32603)."""


def normalise_roots(result: object) -> tuple[list[dict[str, Any]], list[str]]:
    """Check the handler's roots result and keep only safe local file roots.

    Args:
        result: what the handler returned for ``roots/list``.

    Returns:
        ``(roots, dropped)``: the roots to send, in order, with normalised
        ``uri`` and every other field unchanged; and one short reason per
        dropped root, e.g. ``"roots[2]: remote host"``.

    Raises:
        RootsInvalid: result is not a dict with a ``"roots"`` list of dicts
            each holding a string ``"uri"``.
    """
    if not isinstance(result, dict):
        raise RootsInvalid("roots result must be an object")
    items = result.get("roots")
    if not isinstance(items, list):
        raise RootsInvalid("roots result must have a 'roots' list")
    for item in items:
        if not isinstance(item, dict):
            raise RootsInvalid("each root must be an object")
        if not isinstance(item.get("uri"), str):
            raise RootsInvalid("each root must have a string 'uri'")
    kept: list[dict[str, Any]] = []
    dropped: list[str] = []
    for index, item in enumerate(items):
        uri, reason = _normalise_uri(item["uri"])
        if uri is None:
            dropped.append(f"roots[{index}]: {reason}")
            continue
        root = dict(item)
        root["uri"] = uri
        kept.append(root)
    return kept, dropped


def remove_dot_segments(path: str) -> str:
    """Remove ``.`` and ``..`` segments lexically (RFC 3986 section 5.2.4).

    Args:
        path: a URI path.

    Returns:
        The path without dot segments; for an absolute path the result is
        absolute and never climbs above ``/``.
    """
    output: list[str] = []
    i, n = 0, len(path)
    while i < n:
        if path.startswith("../", i):  # A
            i += 3
        elif path.startswith("./", i):  # A
            i += 2
        elif path.startswith("/./", i):  # B
            i += 2
        elif i + 2 == n and path.endswith("/."):  # B: "/." becomes "/"
            output.append("/")
            break
        elif path.startswith("/../", i):  # C
            i += 3
            if output:
                output.pop()
        elif i + 3 == n and path.endswith("/.."):  # C: "/.." becomes "/"
            if output:
                output.pop()
            output.append("/")
            break
        elif n - i <= 2 and path[i:] in (".", ".."):  # D
            break
        else:  # E: move the first segment, with its leading "/", to the output
            cut = path.find("/", i + 1)
            if cut < 0:
                cut = n
            output.append(path[i:cut])
            i = cut
    return "".join(output)


def _normalise_uri(uri: str) -> tuple[str | None, str]:
    """Return (normalised URI, "") for a root to keep, else (None, reason)."""
    if "\\" in uri:
        return None, "backslash in URI"
    if has_forbidden_char(uri):
        return None, "control or whitespace character in URI"
    match = _SCHEME_RE.match(uri)
    if match is None:
        return None, "not an absolute URI"
    if match.group()[:-1].lower() != "file":
        return None, "not a file URI"
    rest = uri[match.end() :]
    if not rest.startswith("//"):
        return None, "not a file:// URI"
    rest = rest[2:]
    if "?" in rest or "#" in rest:
        return None, "query or fragment in file URI"
    slash = rest.find("/")
    authority, path = (rest, "") if slash < 0 else (rest[:slash], rest[slash:])
    if authority and authority.lower() != "localhost":
        return None, "remote host in file URI"
    if not path.startswith("/"):
        return None, "file URI path is not absolute"
    path = remove_dot_segments(_ENCODED_DOT_RE.sub(".", path))
    if path.startswith("//"):
        return None, "file URI path starts with '//'"
    return "file://" + path, ""

