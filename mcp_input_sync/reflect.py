"""Sanitising of server-supplied text before it reaches a host (public module).

Everything a server sends may end up on a terminal, in a log file or in a web
page.  This module removes the code points that can hide, reorder or forge
text there, and bounds the size and shape of log entries.

Contract:

* :func:`text` deletes every *hidden* code point (:data:`HIDDEN_RANGES`),
  then cuts the result to ``limit`` code points.  Hidden are: the control
  characters (category ``Cc``: U+0000-U+001F, U+007F-U+009F), the whole
  format category ``Cf`` as of Unicode 15.1 (soft hyphen, bidi marks,
  embeddings, overrides and isolates, zero-width characters, U+2060-U+206F,
  U+FEFF, the tag characters...), the line and paragraph separators
  (``Zl``, ``Zp``), surrogates (``Cs``), private use (``Co``), every other
  default-ignorable code point (U+034F, the Hangul fillers U+115F, U+1160,
  U+3164, U+FFA0, U+17B4, U+17B5, U+180B-U+180F, the variation selectors
  U+FE00-U+FE0F and U+E0100-U+E01EF, and the ranges Unicode reserves for
  future ones: U+FFF0-U+FFF8, U+E0000-U+E0FFF) and the noncharacters
  (U+FDD0-U+FDEF and the last two code points of every plane).  With
  ``lines=True`` the line feed U+000A and the tab U+0009 are kept.  The list
  is fixed in this module, so it is the same on every Python version.
  Nothing else is changed: no normalisation, no escaping.  Deletion is per
  code point and never adds anything, so ``text(text(s, n), n) == text(s, n)``
  and ``text(s, n) == text(s, m)[:n]`` for every ``m >= n``.
* :func:`dumps` writes a JSON value for a person to read: the hidden code
  points inside strings are written as ``\\uXXXX`` escapes instead of
  raw, so the output shows them without acting on them and
  ``json.loads(dumps(v)) == v``.
* :func:`tree` cleans every string and dict key of a JSON value with
  :func:`text` (for a JSON endpoint a page reads), without recursion.
* :func:`log_entry` turns the ``params`` of a ``notifications/message`` into
  a sanitised log entry (docs/safety.md#logs): ``level`` is kept when it
  is one of the eight lowercase RFC 5424 names, otherwise ``"info"``;
  ``logger`` is kept only when it is a string, cleaned to 256 code points;
  every string in ``data`` (dict keys too) is cleaned to 4 096 code points;
  a container deeper than ``max_depth`` levels (``data`` itself is level 1)
  is replaced by the string ``"…"``; every other key is dropped.  It never
  recurses, so hostile nesting cannot exhaust the Python stack.

The functions are pure, thread-safe and never raise on hostile input of the
documented types.
"""

from __future__ import annotations

import json
import math
import re
from typing import Callable, Final

__all__ = [
    "DATA_STRING_LIMIT",
    "ELLIPSIS",
    "HIDDEN_RANGES",
    "LEVELS",
    "LOGGER_LIMIT",
    "MAX_DEPTH",
    "dumps",
    "log_entry",
    "text",
    "tree",
]

#: The eight RFC 5424 severities, in increasing order, as MCP spells them.
LEVELS: Final[tuple[str, ...]] = (
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
)

#: Code points kept from a log entry's ``logger``.
LOGGER_LIMIT: Final = 256

#: Code points kept from each string (and dict key) inside ``data``.
DATA_STRING_LIMIT: Final = 4096

#: Default container depth kept in ``data`` (``data`` itself is level 1).
MAX_DEPTH: Final = 16

#: What a container nested too deeply is replaced with (U+2026).
ELLIPSIS: Final = "\u2026"

_LEVEL_SET: Final = frozenset(LEVELS)

#: The hidden code points :func:`text` deletes, as sorted, disjoint,
#: inclusive ``(first, last)`` ranges (see the module's contract).
HIDDEN_RANGES: Final[tuple[tuple[int, int], ...]] = (
    (0x0000, 0x001F),  # Cc (C0)
    (0x007F, 0x009F),  # Cc (DEL, C1)
    (0x00AD, 0x00AD),  # Cf soft hyphen
    (0x034F, 0x034F),  # combining grapheme joiner (default-ignorable)
    (0x0600, 0x0605),  # Cf
    (0x061C, 0x061C),  # Cf Arabic letter mark
    (0x06DD, 0x06DD),  # Cf
    (0x070F, 0x070F),  # Cf
    (0x0890, 0x0891),  # Cf
    (0x08E2, 0x08E2),  # Cf
    (0x115F, 0x1160),  # Hangul fillers (default-ignorable)
    (0x17B4, 0x17B5),  # Khmer inherent vowels (default-ignorable)
    (0x180B, 0x180F),  # Mongolian selectors, U+180E Cf
    (0x200B, 0x200F),  # Cf zero-width and directional marks
    (0x2028, 0x202E),  # Zl, Zp, Cf embeddings and overrides
    (0x2060, 0x206F),  # Cf joiners, invisible operators, isolates, U+206A-U+206F; U+2065 reserved
    (0x3164, 0x3164),  # Hangul filler (default-ignorable)
    (0xD800, 0xF8FF),  # Cs surrogates, Co private use
    (0xFDD0, 0xFDEF),  # noncharacters
    (0xFE00, 0xFE0F),  # variation selectors (default-ignorable)
    (0xFEFF, 0xFEFF),  # Cf byte order mark
    (0xFFA0, 0xFFA0),  # halfwidth Hangul filler (default-ignorable)
    (0xFFF0, 0xFFFB),  # reserved default-ignorable, Cf interlinear annotation
    (0xFFFE, 0xFFFF),  # noncharacters
    (0x110BD, 0x110BD),  # Cf
    (0x110CD, 0x110CD),  # Cf
    (0x13430, 0x1343F),  # Cf Egyptian hieroglyph format controls
    (0x1BCA0, 0x1BCA3),  # Cf shorthand format controls
    (0x1D173, 0x1D17A),  # Cf musical symbol format controls
    *((plane + 0xFFFE, plane + 0xFFFF) for plane in range(0x10000, 0xE0000, 0x10000)),  # noncharacters
    (0xE0000, 0xE0FFF),  # tags (Cf), variation selectors supplement, reserved default-ignorable
    (0xEFFFE, 0x10FFFF),  # noncharacters of plane 14; planes 15 and 16: Co and noncharacters
)

#: What ``lines=True`` keeps of the hidden code points: the tab and the line feed.
_LINE_KEPT: Final = (0x09, 0x0A)


def _char_class(ranges: tuple[tuple[int, int], ...] | list[tuple[int, int]]) -> str:
    """Build a regex character class matching the given code point ranges.

    Args:
        ranges: Inclusive ``(first, last)`` code point pairs.

    Returns:
        A pattern such as ``[\\x00-\\x1f...]``, escaped so that no literal
        control character ends up in the pattern.
    """
    parts = []
    for first, last in ranges:
        if first == last:
            parts.append(f"\\U{first:08x}")
        else:
            parts.append(f"\\U{first:08x}-\\U{last:08x}")
    return "[" + "".join(parts) + "]"


def _without(ranges: tuple[tuple[int, int], ...], kept: tuple[int, ...]) -> list[tuple[int, int]]:
    """``ranges`` with the single code points ``kept`` taken out."""
    out: list[tuple[int, int]] = []
    for first, last in ranges:
        start = first
        for point in sorted(p for p in kept if first <= p <= last):
            if start < point:
                out.append((start, point - 1))
            start = point + 1
        if start <= last:
            out.append((start, last))
    return out


# How it stays cheap (measured on CPython 3.11, 4 KB lines).  For pure-ASCII
# input, bytes.translate with a delete table beats both a regex and
# str.translate; a short printable ASCII string (the common log line) is
# returned after one isprintable() scan.  Otherwise a regex pass deletes the
# hidden code points of the Basic Multilingual Plane: ``re`` tests those with
# one bitmap lookup per code point (~20 us for 4 KB), whereas every range
# above U+FFFF in a class is a test of its own for every code point (a class
# of all the ranges costs ~170 us).  So the ranges above U+FFFF form a second
# pass, behind a lookahead that lets a BMP code point fail at once, and that
# pass runs only when the string holds a code point above U+FFFF at all
# (told by its UTF-16 length: ~2 us, where a regex search takes ~25 us).  A
# one-code-point class without a "+" quantifier is faster than the "+" form.
_ASTRAL: Final = 0x10000


class _Patterns:
    """The compiled passes, built on first use: compiling them costs ~5 ms, too much for ``import``."""

    __slots__ = ("bmp", "bmp_lines", "astral")

    def __init__(self) -> None:
        bmp = tuple(r for r in HIDDEN_RANGES if r[1] < _ASTRAL)
        self.bmp = re.compile(_char_class(bmp))
        self.bmp_lines = re.compile(_char_class(_without(bmp, _LINE_KEPT)))
        self.astral = re.compile("(?=[\\U00010000-\\U0010ffff])" + _char_class([r for r in HIDDEN_RANGES if r[0] >= _ASTRAL]))


_compiled: list[_Patterns] = []


def _patterns() -> _Patterns:
    """The compiled passes (two threads may both build them: the same either way)."""
    if not _compiled:
        _compiled.append(_Patterns())
    return _compiled[0]


_ASCII_DELETED: Final = bytes(range(0x20)) + b"\x7f"
_ASCII_LINES_DELETED: Final = bytes(c for c in _ASCII_DELETED if c not in _LINE_KEPT)
_SHORT: Final = 256
# Below this many code points per needed output code point the whole string
# is cleaned at once; above it only a growing prefix is (see _clean_prefix).
_PREFIX_FACTOR: Final = 4
_MIN_CHUNK: Final = 4096


def _has_astral(value: str) -> bool:
    """True when ``value`` holds a code point above U+FFFF (one in UTF-16 takes 4 bytes; a lone surrogate 2)."""
    return len(value.encode("utf-16-le", "surrogatepass")) != 2 * len(value)


def _clean(value: str, lines: bool) -> str:
    """Delete the hidden code points from a whole string.

    Args:
        value: Any string (lone surrogates included).
        lines: Keep U+0009 and U+000A.

    Returns:
        ``value`` without the deleted code points; ``value`` itself when
        nothing had to be deleted from a short printable ASCII string.
    """
    if value.isascii():
        if len(value) <= _SHORT and value.isprintable():
            return value
        deleted = _ASCII_LINES_DELETED if lines else _ASCII_DELETED
        return value.encode("ascii").translate(None, deleted).decode("ascii")
    patterns = _patterns()
    value = (patterns.bmp_lines if lines else patterns.bmp).sub("", value)
    if _has_astral(value):
        value = patterns.astral.sub("", value)
    return value


def _clean_prefix(value: str, limit: int, lines: bool) -> str:
    """Clean only as much of ``value`` as the first ``limit`` kept code points need.

    Deletion works code point by code point, so cleaning consecutive slices
    and joining them equals cleaning the whole string.  This keeps a hostile
    multi-megabyte string cut to a few kilobytes cheap.

    Args:
        value: The string to clean.
        limit: How many code points of output are wanted (``>= 0``).
        lines: Keep U+0009 and U+000A.

    Returns:
        ``_clean(value, lines)[:limit]``.
    """
    pieces: list[str] = []
    have = 0
    pos = 0
    end = len(value)
    while have < limit and pos < end:
        step = max(limit - have, _MIN_CHUNK)
        piece = _clean(value[pos : pos + step], lines)
        pos += step
        pieces.append(piece)
        have += len(piece)
    return "".join(pieces)[:limit]


def text(value: str, limit: int, *, lines: bool = False) -> str:
    """Return ``value`` without hidden code points, cut to ``limit``.

    Deletes every code point of :data:`HIDDEN_RANGES`: controls (``Cc``),
    the format category (``Cf``), ``Zl``, ``Zp``, surrogates, private use,
    the other default-ignorable code points (variation selectors, Hangul
    fillers, U+034F...) and the noncharacters; then keeps the first
    ``limit`` code points.  The function is idempotent:
    ``text(text(s, n), n) == text(s, n)``.

    Args:
        value: The untrusted string.
        limit: Maximum number of code points in the result; ``0`` gives
            ``""``.
        lines: Keep the line feed (U+000A) and the tab (U+0009), for text
            shown on several lines (a ``<textarea>``, a ``<pre>``).  A
            carriage return is still deleted.

    Returns:
        The cleaned, cut string.

    Raises:
        TypeError: ``value`` is not a ``str`` or ``limit`` is not an ``int``
            (``bool`` refused).
        ValueError: ``limit`` is negative.
    """
    if not isinstance(value, str):
        raise TypeError(f"value must be str, not {type(value).__name__}")
    if not isinstance(limit, int) or isinstance(limit, bool):
        raise TypeError(f"limit must be int, not {type(limit).__name__}")
    if limit < 0:
        raise ValueError("limit must be >= 0")
    if len(value) > _PREFIX_FACTOR * max(limit, _MIN_CHUNK):
        return _clean_prefix(value, limit, bool(lines))
    return _clean(value, bool(lines))[:limit]


def _escape(match: re.Match[str]) -> str:
    """A hidden code point as JSON ``\\uXXXX`` escapes (a surrogate pair above U+FFFF)."""
    point = ord(match.group())
    if point < _ASTRAL:
        return f"\\u{point:04x}"
    point -= _ASTRAL
    return f"\\u{0xD800 + (point >> 10):04x}\\u{0xDC00 + (point & 0x3FF):04x}"


def dumps(value: object, *, indent: int | None = None, sort_keys: bool = False) -> str:
    """``value`` as JSON for a person to read: no hidden code point is written raw.

    Like ``json.dumps(value, ensure_ascii=False)`` (letters of every script
    stay readable), except that every code point :func:`text` would delete
    is written as a JSON ``\\uXXXX`` escape.  The output is valid JSON and
    faithful: ``json.loads(dumps(v)) == v`` for every JSON value ``v``.

    Args:
        value: A JSON value (dicts, lists, strings, numbers, booleans, None).
        indent: As for :func:`json.dumps`.
        sort_keys: As for :func:`json.dumps`.

    Returns:
        The JSON text.

    Raises:
        TypeError: ``value`` holds something JSON cannot write.
        ValueError: ``value`` holds a circular reference.
    """
    # Outside strings json.dumps writes only ASCII punctuation, digits,
    # letters, spaces and (with indent) line feeds; inside strings it already
    # escapes U+0000-U+001F.  So every hidden code point left in the output
    # but the line feed is inside a string, and escaping it keeps the JSON.
    patterns = _patterns()
    out = patterns.bmp_lines.sub(_escape, json.dumps(value, ensure_ascii=False, indent=indent, sort_keys=sort_keys))
    if _has_astral(out):
        out = patterns.astral.sub(_escape, out)
    return out


_Clean = Callable[[str], str]


def _log_string(value: str) -> str:
    """A string of a log entry's ``data``: cleaned, cut to :data:`DATA_STRING_LIMIT`."""
    return text(value, DATA_STRING_LIMIT)


def _key(key: object, clean: _Clean) -> str | None:
    """Turn a dict key into a cleaned string key.

    JSON decoders only produce string keys; for dicts built in Python the
    scalar keys JSON would accept are converted the way ``json.dumps`` does.

    Args:
        key: The original key.
        clean: How a string is cleaned.

    Returns:
        The cleaned key, or ``None`` when the key cannot be represented in
        JSON (the member is then dropped).
    """
    if isinstance(key, str):
        return clean(key)
    if key is None:
        return "null"
    if isinstance(key, bool):
        return "true" if key else "false"
    if isinstance(key, int):
        return clean(str(key))
    if isinstance(key, float):
        return clean(repr(key))
    return None


def _scalar(value: object, clean: _Clean, finite: bool) -> object:
    """Sanitise a value that is not a container.

    Args:
        value: A JSON scalar (or something a JSON decoder never produces).
        clean: How a string is cleaned.
        finite: Turn NaN and the infinities into ``None``.

    Returns:
        Cleaned strings, JSON scalars unchanged, and for any other type the
        cleaned string ``"<typename>"`` (its ``repr`` is never called).
    """
    if isinstance(value, str):
        return clean(value)
    if finite and isinstance(value, float) and not math.isfinite(value):
        return None
    if value is None or isinstance(value, (bool, int, float)):
        return value
    return clean(f"<{type(value).__name__}>")


def _data(value: object, max_depth: int, clean: _Clean = _log_string, finite: bool = False) -> object:
    """Sanitise a JSON value (a log entry's ``data``) without recursion.

    Args:
        value: The value as received.
        max_depth: Deepest container level kept; ``value`` is level 1.
        clean: How each string (and dict key) is cleaned.
        finite: Turn NaN and the infinities into ``None``.

    Returns:
        A new structure of dicts, lists and JSON scalars.  Tuples are read
        as lists.  A dict member whose key collides with an earlier one after
        cleaning is dropped (the first one wins).
    """
    if not isinstance(value, (dict, list, tuple)):
        return _scalar(value, clean, finite)
    if max_depth < 1:
        return ELLIPSIS
    root: dict[str, object] | list[object] = {} if isinstance(value, dict) else []
    # Each entry: (source container, destination container, its level).
    stack: list[tuple[object, dict[str, object] | list[object], int]] = [(value, root, 1)]
    while stack:
        source, dest, level = stack.pop()
        if isinstance(source, dict):
            items: list[tuple[str | None, object]] = [(_key(k, clean), v) for k, v in source.items()]
        else:
            assert isinstance(source, (list, tuple))
            items = [(None, v) for v in source]
        for key, item in items:
            out: object
            if isinstance(item, (dict, list, tuple)):
                if level + 1 > max_depth:
                    out = ELLIPSIS
                else:
                    child: dict[str, object] | list[object] = {} if isinstance(item, dict) else []
                    stack.append((item, child, level + 1))
                    out = child
            else:
                out = _scalar(item, clean, finite)
            if isinstance(dest, dict):
                if key is not None and key not in dest:
                    dest[key] = out
            else:
                dest.append(out)
    return root


def tree(value: object, *, limit: int | None = None, lines: bool = False, max_depth: int = 64) -> object:
    """A JSON value with every string and dict key cleaned by :func:`text`, for a page or a JSON endpoint.

    Args:
        value: A JSON value (a tool's result, say).
        limit: Code points kept of each string; ``None`` keeps them all.
        lines: Keep line feeds and tabs in strings (see :func:`text`).
        max_depth: Deepest container level kept (``value`` is level 1);
            deeper containers become ``"…"``.

    Returns:
        A new structure of dicts, lists and JSON scalars; NaN and the
        infinities become ``None`` (JSON has no such numbers); a dict member
        whose key collides with an earlier one after cleaning is dropped.
        It never recurses.

    Raises:
        TypeError: ``limit`` or ``max_depth`` is not an ``int``.
        ValueError: ``limit`` or ``max_depth`` is negative.
    """
    if not isinstance(max_depth, int) or isinstance(max_depth, bool):
        raise TypeError(f"max_depth must be int, not {type(max_depth).__name__}")
    if max_depth < 0:
        raise ValueError("max_depth must be >= 0")
    if limit is not None:
        text("", limit)  # the same checks of limit as text()
    keep = bool(lines)

    def clean(string: str) -> str:
        return text(string, len(string) if limit is None else limit, lines=keep)

    return _data(value, max_depth, clean, True)


def log_entry(params: object, *, max_depth: int = MAX_DEPTH) -> dict[str, object] | None:
    """Sanitise the ``params`` of a ``notifications/message``.

    The result always has ``level`` and ``data``; it has ``logger`` only when
    the server sent a string logger.  A missing ``data`` becomes ``None``.
    Every other member (``_meta`` included) is dropped.

    Args:
        params: The notification's ``params`` as decoded from JSON.
        max_depth: Deepest container level of ``data`` that is kept
            (``data`` itself is level 1); deeper containers become ``"…"``.

    Returns:
        A new dict ``{"level": str, "logger"?: str, "data": ...}``, or
        ``None`` when ``params`` is not a dict.

    Raises:
        TypeError: ``max_depth`` is not an ``int``.
        ValueError: ``max_depth`` is negative.
    """
    if not isinstance(max_depth, int) or isinstance(max_depth, bool):
        raise TypeError(f"max_depth must be int, not {type(max_depth).__name__}")
    if max_depth < 0:
        raise ValueError("max_depth must be >= 0")
    if not isinstance(params, dict):
        return None
    level = params.get("level")
    entry: dict[str, object] = {
        "level": level if isinstance(level, str) and level in _LEVEL_SET else "info"
    }
    logger = params.get("logger")
    if isinstance(logger, str):
        entry["logger"] = text(logger, LOGGER_LIMIT)
    entry["data"] = _data(params.get("data"), max_depth)
    return entry
