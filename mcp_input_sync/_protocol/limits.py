"""Limits on what a server may send, and salvage of the id of a message that broke one.

Pure: no threads, no I/O, no clock. The defaults admit 1 MB elicitation
schemas and answers (the benchmarks' largest) with room to spare, and keep a
hostile server from making the client hold more than a few tens of MB for one
message or one paged listing. Over a limit the message is not processed: a legacy request whose
id can be read is refused on the wire, a response fails its call with a
typed error, anything else is logged and counted.
"""

from __future__ import annotations

import json
import re
from types import MappingProxyType
from typing import Any, Mapping, Optional, Union

MIB = 1 << 20

#: The ``limits`` option's keys and their defaults.
DEFAULT_LIMITS: Mapping[str, int] = MappingProxyType(
    {
        # one inbound message: a stdio line, an SSE event's data, an HTTP JSON body
        "message_bytes": 16 * MIB,
        # containers nested inside one message (the message itself is level 1)
        "json_depth": 64,
        # input requests in one input_required round (or one task's input)
        "round_requests": 32,
        # the JSON size of one round's input requests together
        "round_bytes": 8 * MIB,
        # one line of an SSE stream
        "sse_line_bytes": 16 * MIB,
        # the JSON size of the items of one whole paged listing (tools/list, ...), all pages together
        "listing_bytes": 16 * MIB,
    }
)

#: How much of a broken message is kept to look for its id.
SALVAGE_BYTES = 64 * 1024


class LimitExceeded(ValueError):
    """A message from the server broke one of the client's limits.

    ``limit`` names the key of the ``limits`` option that was exceeded.
    """

    def __init__(self, limit: str, message: str) -> None:
        super().__init__(message)
        self.limit = limit


_SIZE = json.JSONEncoder(ensure_ascii=False, check_circular=False, separators=(",", ":")).encode

try:  # the C encoder behind _SIZE, made once: JSONEncoder.encode builds one per call (a third of its cost)
    from _json import make_encoder as _make_encoder

    _c_size: Any = _make_encoder(None, json.JSONEncoder().default, json.encoder.encode_basestring, None, ":", ",", False, False, True)
except ImportError:  # pragma: no cover - CPython always has _json
    _c_size = None


def json_size(value: Any) -> int:
    """The size in characters of ``value`` as compact JSON (0 when it cannot be encoded)."""
    try:
        if _c_size is not None and type(value) is dict:
            return len("".join(_c_size(value, 0)))
        return len(_SIZE(value))
    except (TypeError, ValueError):
        return 0


def too_deep(value: Any, limit: int) -> bool:
    """True when ``value`` nests containers more than ``limit`` levels deep (``value`` is level 1)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    pop = stack.pop
    push = stack.append
    while stack:
        item, level = pop()
        if type(item) is dict:
            children: Any = item.values()
        elif type(item) is list:
            children = item
        else:
            continue
        if level > limit:
            return True
        for child in children:
            if type(child) is dict or type(child) is list:
                push((child, level + 1))
    return False


def may_be_too_deep(line: Union[bytes, str], limit: int) -> bool:
    """A cheap bound: a message with at most ``limit`` brackets cannot nest deeper than ``limit``."""
    if type(line) is bytes:
        return line.count(b"{") + line.count(b"[") > limit
    return True


# A JSON string, possibly a key (then followed by a colon), or one bracket.
_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"(?:\s*:)?|[][{}]')
# an id value, followed by what ends it (an integer cut short by the salvage window is no id)
_ID_VALUE = re.compile(rb'\s*(-?(?:0|[1-9][0-9]{0,17})(?=\s*[,}])|"(?:[^"\\\x00-\x1f]|\\.){0,256}")')


class Salvage:
    """What could be read from the top level of a message that did not decode."""

    __slots__ = ("id", "found", "is_request")

    def __init__(self, found: bool, request_id: Any, is_request: bool) -> None:
        self.found = found
        self.id = request_id
        self.is_request = is_request


def salvage(data: Union[bytes, str]) -> Salvage:
    """Find the top-level ``id`` (an int or a short string) and whether a ``method`` is present.

    Reads at most :data:`SALVAGE_BYTES`. Strings are skipped whole, so an
    ``"id"`` inside ``params`` is never taken for the message's own.
    """
    if isinstance(data, str):
        data = data.encode("utf-8", "replace")
    text = data[:SALVAGE_BYTES]
    start = len(text) - len(text.lstrip())
    if text[start : start + 1] != b"{":
        return Salvage(False, None, False)
    depth = 0
    found = False
    request_id: Optional[Union[int, str]] = None
    is_request = False
    for match in _TOKEN.finditer(text, start):
        token = match.group()
        first = token[0]
        if first == 0x7B or first == 0x5B:  # { [
            depth += 1
        elif first == 0x7D or first == 0x5D:  # } ]
            depth -= 1
            if depth <= 0:
                break
        elif depth == 1 and token[-1] == 0x3A:  # a key of the top-level object
            key = token[: token.rindex(b'"') + 1]
            if key == b'"method"':
                is_request = True
            elif key == b'"id"' and not found:
                value = _ID_VALUE.match(text, match.end())
                if value is not None:
                    try:
                        parsed = json.loads(value.group(1))
                    except ValueError:
                        continue
                    if type(parsed) is int or type(parsed) is str:
                        found, request_id = True, parsed
    return Salvage(found, request_id, is_request)
