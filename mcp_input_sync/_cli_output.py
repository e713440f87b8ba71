"""The command line's output and input words: a result written to stdout (exact for a program, cleaned for a
person), listings in columns, ``key=value`` arguments typed by a schema, ``--header`` values, and ``--verbose``
(a stdio server's stderr, routine notices)."""

from __future__ import annotations

import base64
import binascii
import json
import logging
import re
import sys
from typing import Any, Mapping, Optional, Sequence, TextIO

from .reflect import dumps, text

#: The logger a stdio server's stderr goes to (one child per server id).
SERVER_LOGGER = "mcp_input_sync.server"

_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_BAD_VALUE = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
_KEY = re.compile(r"[^=\s]+")
#: A lone surrogate (JSON can carry one, UTF-8 cannot): written as U+FFFD.
_SURROGATE = re.compile("[\ud800-\udfff]")


def _is_terminal(stream: TextIO) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


def write_text(value: str, out: Optional[TextIO] = None, *, ended: bool = False) -> None:
    """Write a server's text and a line feed: exactly as sent (UTF-8) when ``out`` is not a terminal, since a
    program reads it; cleaned by ``reflect.text`` (line feeds kept, tabs as four spaces) on a terminal.

    ``ended``: a text that ends with a line feed gets no other (a resource's text is a file's: ``read URI > file``
    keeps it as it was)."""
    stream = out if out is not None else sys.stdout
    end = "" if ended and value.endswith("\n") else "\n"
    if _is_terminal(stream):
        stream.write(text(value, len(value), lines=True).replace("\t", "    ") + end)
        stream.flush()
        return
    write_bytes(_SURROGATE.sub("\ufffd", value + end).encode("utf-8"), stream)


def write_bytes(data: bytes, out: Optional[TextIO] = None) -> None:
    """Write bytes to ``out`` (its binary buffer when it has one)."""
    stream = out if out is not None else sys.stdout
    stream.flush()
    buffer = getattr(stream, "buffer", None)
    if buffer is not None:
        buffer.write(data)
        buffer.flush()
    else:
        stream.write(data.decode("utf-8", "replace"))
        stream.flush()


def print_result(result: Mapping[str, Any], out: Optional[TextIO] = None) -> None:
    """A tool's result on stdout: each text block as :func:`write_text` writes it, every other block as one
    line of JSON (``reflect.dumps``); ``structuredContent`` as JSON only when no block is text (a server that
    sends it also sends it as text, the specification says: it is printed once)."""
    stream = out if out is not None else sys.stdout
    blocks = result.get("content")
    blocks = blocks if isinstance(blocks, list) else []
    said = False
    for block in blocks:
        if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
            write_text(block["text"], stream)
            said = True
        else:
            _line(dumps(block), stream)
    if "structuredContent" in result and not said:
        _line(dumps(result["structuredContent"]), stream)


def _line(value: str, stream: TextIO) -> None:
    stream.write(value + "\n")
    stream.flush()


def print_contents(result: Mapping[str, Any], out: Optional[TextIO] = None, err: Optional[TextIO] = None) -> Optional[str]:
    """A resource's contents on stdout: text as :func:`write_text` writes it; a blob's bytes as they are when
    stdout is not a terminal, else a note on stderr. Returns a problem to report, or None."""
    stream = out if out is not None else sys.stdout
    notes = err if err is not None else sys.stderr
    contents = result.get("contents")
    for item in contents if isinstance(contents, list) else []:
        if not isinstance(item, dict):
            continue
        if isinstance(item.get("text"), str):
            write_text(item["text"], stream, ended=True)
        elif isinstance(item.get("blob"), str):
            try:
                data = base64.b64decode(item["blob"], validate=True)
            except (binascii.Error, ValueError):
                return "the server sent a blob that is not base64"
            if _is_terminal(stream):
                kind = text(str(item.get("mimeType") or "no MIME type"), 100)
                print(f"mcp-input-sync: {text(str(item.get('uri', '?')), 300)} is binary ({len(data)} bytes, {kind}): "
                      "redirect stdout to a file to keep it, or pass --json", file=notes)
            else:
                write_bytes(data, stream)
    return None


def print_prompt(result: Mapping[str, Any], out: Optional[TextIO] = None) -> None:
    """A prompt's messages on stdout: ``ROLE:`` on a line, then the message's text (:func:`write_text`) or its
    block as JSON."""
    stream = out if out is not None else sys.stdout
    messages = result.get("messages")
    for message in messages if isinstance(messages, list) else []:
        if not isinstance(message, dict):
            continue
        _line(f"{text(str(message.get('role', '?')), 40)}:", stream)
        content = message.get("content")
        for block in content if isinstance(content, list) else [content]:
            if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
                write_text(block["text"], stream)
            elif block is not None:
                _line(dumps(block), stream)


def first_line(item: Mapping[str, Any]) -> str:
    """What a listing says about an item: its description's first line, else its title; cleaned and cut."""
    for key in ("description", "title"):
        value = item.get(key)
        if isinstance(value, str) and value.strip():
            return text(value.strip().split("\n", 1)[0], 200)  # a line feed ends a line; hidden breaks are removed
    return ""


#: The keys of a listed item shown in each column, by kind (``"about"``: :func:`first_line`; ``"args"``: a prompt's arguments).
COLUMNS = {"tools": ("name", "about"), "prompts": ("name", "args", "about"), "resources": ("uri", "name", "about"),
           "resource_templates": ("uriTemplate", "name", "about")}
#: The widest a column is padded to: a longer cell pushes only its own line.
WIDEST = 60


def cells(item: Mapping[str, Any], kind: str) -> list[str]:
    """A listed item's cells (:data:`COLUMNS`), each cleaned and cut; a prompt's optional arguments end in ``?``."""
    out: list[str] = []
    for number, key in enumerate(COLUMNS[kind]):
        if key == "about":
            out.append(first_line(item))
        elif key == "args":
            listed = item.get("arguments")
            names = [text(str(a.get("name", "?")), 100) + ("" if a.get("required") else "?") for a in listed if isinstance(a, dict)] if isinstance(listed, list) else []
            out.append(f"args: {', '.join(names) or 'none'}")
        else:
            value = item.get(key)
            out.append(text(str(value), 300) if value is not None else "" if number else "?")  # the first cell names the item
    return out


def aligned(rows: Sequence[Sequence[str]], indent: str = "") -> list[str]:
    """Rows of cells as lines in columns: each column but the last padded to its widest cell (at most :data:`WIDEST`)."""
    widths = [min(WIDEST, max((len(row[i]) for row in rows if i < len(row)), default=0)) for i in range(max(map(len, rows), default=0))]
    return [(indent + "  ".join(cell.ljust(widths[i]) if i < len(row) - 1 else cell for i, cell in enumerate(row))).rstrip() for row in rows]


# ---------------------------------------------------------------------------- arguments


def split_arguments(words: Sequence[str]) -> tuple[Optional[dict[str, Any]], list[tuple[str, str]]]:
    """A JSON object (the first word, when it starts with ``{``) and ``key=value`` pairs; ValueError says what is wrong."""
    obj: Optional[dict[str, Any]] = None
    rest = list(words)
    if rest and rest[0].lstrip().startswith("{"):
        try:
            obj = json.loads(rest.pop(0))
        except ValueError as exc:
            raise ValueError(f"the arguments are not a JSON object: {exc}") from None
        if not isinstance(obj, dict):
            raise ValueError("the arguments must be a JSON object")
    pairs: list[tuple[str, str]] = []
    for word in rest:
        key, sep, value = word.partition("=")
        if not sep or not _KEY.fullmatch(key):
            raise ValueError(f"{text(word, 100)!r} is neither KEY=VALUE nor a JSON object (a JSON object goes first)")
        if key in (k for k, _ in pairs):
            raise ValueError(f"argument {text(key, 100)!r} is given twice")
        pairs.append((key, value))
    return obj, pairs


def _types(schema: Any) -> list[str]:
    """The JSON types a property schema allows, in the order written (``anyOf``/``oneOf`` branches included)."""
    if not isinstance(schema, dict):
        return []
    kinds = schema.get("type")
    found = [kinds] if isinstance(kinds, str) else [k for k in kinds if isinstance(k, str)] if isinstance(kinds, list) else []
    for branch_key in ("anyOf", "oneOf"):
        for branch in schema.get(branch_key) or ():
            found.extend(k for k in _types(branch) if k not in found)
    if not found and isinstance(schema.get("enum"), list):
        found = list(dict.fromkeys({bool: "boolean", int: "integer", float: "number", str: "string", type(None): "null"}.get(type(v), "string")
                                   for v in schema["enum"]))
    return found


def _as(kind: str, raw: str) -> tuple[bool, Any]:
    if kind == "string":
        return True, raw
    if kind == "integer":
        return (True, int(raw)) if re.fullmatch(r"[+-]?\d+", raw.strip()) else (False, None)
    if kind == "number":
        try:
            number = float(raw)
        except ValueError:
            return False, None
        if number != number or number in (float("inf"), float("-inf")):
            return False, None
        return True, int(raw) if re.fullmatch(r"[+-]?\d+", raw.strip()) else number
    if kind == "boolean":
        word = raw.strip().lower()
        return (True, word == "true") if word in ("true", "false") else (False, None)
    if kind == "null":
        return (True, None) if raw.strip() == "null" else (False, None)
    if kind in ("array", "object"):
        try:
            value = json.loads(raw)
        except (ValueError, RecursionError):
            return False, None
        return (True, value) if isinstance(value, list if kind == "array" else dict) else (False, None)
    return False, None


_WORDS = {"integer": "an integer", "number": "a number", "boolean": "true or false", "null": "null",
          "array": "a JSON array", "object": "a JSON object", "string": "a string"}


def coerce(pairs: Sequence[tuple[str, str]], schema: Any) -> dict[str, Any]:
    """``key=value`` pairs typed by a tool's ``inputSchema``: integers, numbers, booleans (``true``/``false``),
    ``null``, arrays and objects as JSON, strings as they are; a key the schema does not type stays a string.
    Raises ValueError naming the argument and what its schema wants."""
    properties = schema.get("properties") if isinstance(schema, dict) else None
    properties = properties if isinstance(properties, dict) else {}
    out: dict[str, Any] = {}
    for key, raw in pairs:
        kinds = _types(properties.get(key))
        if not kinds:
            out[key] = raw
            continue
        # a string is the last resort: "5" for a property typed ["integer", "string"] is the integer
        for kind in [k for k in kinds if k != "string"] + (["string"] if "string" in kinds else []):
            ok, value = _as(kind, raw)
            if ok:
                out[key] = value
                break
        else:
            wanted = " or ".join(_WORDS.get(k, text(k, 20)) for k in kinds)
            raise ValueError(f"argument {text(key, 100)!r}: {text(raw, 100)!r} is not {wanted}, as the tool's input schema asks")
    return out


def prompt_arguments(words: Sequence[str]) -> Optional[dict[str, str]]:
    """A prompt's arguments: a JSON object of strings and/or ``key=value`` pairs (always strings)."""
    obj, pairs = split_arguments(words)
    if obj is None and not pairs:
        return None
    merged = dict(obj or {})
    for key, value in merged.items():
        if not isinstance(value, str):
            raise ValueError(f"prompt argument {text(key, 100)!r} must be a string")
    merged.update(pairs)
    return merged


def parse_headers(values: Sequence[str]) -> dict[str, str]:
    """``--header "Name: value"`` words as a dict. ValueError names the header, never its value."""
    headers: dict[str, str] = {}
    for value in values:
        name, sep, rest = value.partition(":")
        name = name.strip()
        if not sep or not _TOKEN.fullmatch(name):
            raise ValueError('--header takes "Name: value": one has no colon or no header name before it (it is not shown)')
        rest = rest.strip(" \t")
        if _BAD_VALUE.search(rest):
            raise ValueError(f"--header {name!r}: the value holds a line break or a control character (not shown)")
        if any(k.lower() == name.lower() for k in headers):
            raise ValueError(f"--header {name!r} is given twice")
        headers[name] = rest
    return headers


# ---------------------------------------------------------------------------- --verbose


class _StderrLines(logging.Handler):
    """Prints each stderr line of a stdio server on the command line's stderr, cleaned, with the server id."""

    def __init__(self, stream: TextIO) -> None:
        super().__init__(logging.INFO)
        self.stream = stream

    def emit(self, record: logging.LogRecord) -> None:
        try:
            server = text(record.name[len(SERVER_LOGGER) + 1 :], 80) or "server"
            line = text(record.getMessage(), 4000)
            self.stream.write(f"  stderr     {server}: {line}\n")
            self.stream.flush()
        except Exception:  # noqa: BLE001 - logging must never break the command
            self.handleError(record)


def show_server_stderr(stream: Optional[TextIO] = None) -> logging.Handler:
    """``--verbose``: print what stdio servers write to stderr as it comes (the logger ``mcp_input_sync.server``)."""
    handler = _StderrLines(stream if stream is not None else sys.stderr)
    logger = logging.getLogger(SERVER_LOGGER)
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    return handler


#: Notices a command that runs once has no use for: a listing changed (each run lists afresh). server-everything
#: sends five per call. Printed with ``--verbose``.
ROUTINE = frozenset({"notifications/tools/list_changed", "notifications/resources/list_changed", "notifications/prompts/list_changed"})


def quiet_routine(handler: Any) -> None:
    """Without ``--verbose``: ``handler`` (a TerminalHandler) prints no :data:`ROUTINE` notice; every other still."""
    shown = handler.handle_notification

    def handle_notification(method: str, params: dict[str, Any], ctx: Any) -> None:
        if method not in ROUTINE:
            shown(method, params, ctx)

    handler.handle_notification = handle_notification  # the instance's own: the handler class stays the terminal's
