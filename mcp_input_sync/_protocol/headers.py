"""What the 2026-07-28 Streamable HTTP headers say of a request, read where the request is built.

A property annotated ``"x-mcp-header": "Name"`` in a tool's ``inputSchema``
is mirrored into the request header ``Mcp-Param-Name`` on ``tools/call``. A
client must drop a tool whose annotations are invalid: an empty or
non-token name, a name used twice (case-insensitively), an annotation on a
``number``, object or array property, or one not reachable purely through
``properties``. ``Mcp-Name`` carries the tool or prompt name, the resource
URI or the task id (:func:`routed_name`). The transport gets these with the
message (``transports.base.Outgoing``) and encodes them as headers.
"""

from __future__ import annotations

import base64
import re
from typing import Any, Mapping, Optional

ANNOTATION = "x-mcp-header"
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+\Z")
_ALLOWED_TYPES = frozenset({"string", "integer", "boolean"})

Path = tuple[str, ...]
#: ``(header name, value as text)`` of each mirrored argument, in the map's order.
HeaderArgs = tuple[tuple[str, str], ...]
#: How a header value that is not plain visible ASCII starts once encoded (:func:`header_value`).
SENTINEL_PREFIX = "=?base64?"


def header_value(value: str) -> str:
    """A header value as sent: plain visible ASCII as is, anything else as the base64 sentinel."""
    plain = value.isascii() and value.isprintable() and value == value.strip() and not value.startswith(SENTINEL_PREFIX)
    if plain:
        return value
    return SENTINEL_PREFIX + base64.b64encode(value.encode("utf-8")).decode("ascii") + "?="


def tool_header_map(tool: Any) -> Optional[dict[Path, str]]:
    """The argument path of each annotated property -> its header name; None when invalid."""
    schema = tool.get("inputSchema") if isinstance(tool, dict) else None
    if not isinstance(schema, dict):
        return {}
    found: dict[Path, str] = {}
    seen: set[str] = set()
    reachable: set[int] = set()
    stack: list[tuple[dict[str, Any], Path]] = [(schema, ())]
    while stack:
        node, path = stack.pop()
        reachable.add(id(node))
        properties = node.get("properties")
        if not isinstance(properties, dict):
            continue
        for name, prop in properties.items():
            if not isinstance(prop, dict):
                continue
            here = path + (str(name),)
            if ANNOTATION in prop:
                header = prop[ANNOTATION]
                if not isinstance(header, str) or not _TOKEN.match(header) or header.lower() in seen:
                    return None
                kind = prop.get("type")
                if not isinstance(kind, str) or kind not in _ALLOWED_TYPES:  # a list of types is not one primitive
                    return None
                seen.add(header.lower())
                found[here] = header
            stack.append((prop, here))
    if _annotation_elsewhere(schema, reachable):
        return None
    return found


def _annotation_elsewhere(schema: dict[str, Any], reachable: set[int]) -> bool:
    """True when an annotation sits in a schema not reached through ``properties`` alone."""
    stack: list[Any] = [schema]
    depth = 0
    while stack and depth < 100_000:
        depth += 1
        node = stack.pop()
        if isinstance(node, dict):
            if ANNOTATION in node and id(node) not in reachable:
                return True
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return False


def argument_at(arguments: Any, path: Path) -> Any:
    """The argument value at ``path`` (None when absent)."""
    value = arguments
    for key in path:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


def header_arguments(header_map: Mapping[Path, str], arguments: Any) -> HeaderArgs:
    """The ``Mcp-Param-<name>`` headers of a ``tools/call``: each annotated argument present, as text.

    A boolean is ``true`` or ``false``, any other value its ``str()``; an
    absent (or null) argument has no header.
    """
    found: list[tuple[str, str]] = []
    given = arguments if isinstance(arguments, dict) else {}
    for path, header in header_map.items():
        value = argument_at(given, path)
        if value is None:
            continue
        found.append((header, ("true" if value else "false") if isinstance(value, bool) else str(value)))
    return tuple(found)


def routed_name(method: str, params: Any) -> Optional[str]:
    """What ``Mcp-Name`` carries for a request: the tool or prompt name, the resource URI, the task id; else None."""
    if not isinstance(params, dict):
        return None
    if method == "tools/call" or method == "prompts/get":
        name = params.get("name")
    elif method == "resources/read":
        name = params.get("uri")
    elif method.startswith("tasks/"):
        name = params.get("taskId")
    else:
        return None
    return name if isinstance(name, str) else None
