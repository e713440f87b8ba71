"""The terminal handler's parts that hold no state: cleaning text for the screen, reading a line that
a cancellation can stop, parsing a typed value, and checking a scripted answers file.

:class:`mcp_input_sync.terminal.TerminalHandler` is built from these.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import select
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Optional, TextIO, Union

from . import reflect
from ._protocol import formview

#: The longest text shown for one value, and for one label (a field's title, a server's name).
TEXT_LIMIT = 2000
LABEL_LIMIT = 200
#: Real seconds between looks at a cancellation while a prompt waits for a line.
POLL = 0.1


def validate_answers(answers: Any) -> dict[str, Any]:
    """Check an ``--answers`` object; return it, or raise ``ValueError`` saying why."""
    if not isinstance(answers, dict):
        raise ValueError("the answers must be a JSON object")
    action = answers.get("_action", "accept")
    if action not in ("accept", "decline", "cancel"):
        raise ValueError('"_action" must be "accept", "decline" or "cancel"')
    url = answers.get("_url", "decline")
    if url not in ("accept", "decline", "cancel"):
        raise ValueError('"_url" must be "accept", "decline" or "cancel"')
    if "_sampling_text" in answers and not isinstance(answers["_sampling_text"], str):
        raise ValueError('"_sampling_text" must be a string')
    roots = answers.get("_roots", [])
    if not isinstance(roots, list) or not all(isinstance(r, str) for r in roots):
        raise ValueError('"_roots" must be a list of paths')
    return answers


def strings_cleaned(value: Any, depth: int = 0) -> Any:
    if isinstance(value, str):
        return reflect.text(value, TEXT_LIMIT)
    if depth > 16:
        return "…"
    if isinstance(value, dict):
        return {reflect.text(str(k), LABEL_LIMIT): strings_cleaned(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [strings_cleaned(v, depth + 1) for v in value]
    return value


def clean(value: Any, limit: int = TEXT_LIMIT) -> str:
    """``value`` as one line of terminal-safe text (JSON for non-strings), cut to ``limit``."""
    if not isinstance(value, str):
        try:
            value = json.dumps(strings_cleaned(value), ensure_ascii=False, sort_keys=True)
        except (TypeError, ValueError):
            value = repr(value)
    return reflect.text(value.replace("\n", " ").replace("\t", " "), limit)


def path_uri(path: Union[str, Path]) -> str:
    return Path(os.path.abspath(os.fspath(path))).as_uri()


class LineReader:
    """Reads lines from a stream; from its file descriptor with ``select`` when it has one."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.fd: Optional[int] = None
        if os.name == "posix":
            try:
                self.fd = stream.fileno()
            except (AttributeError, OSError, ValueError):
                self.fd = None
        self._buffer = b""
        self._eof = False

    def isatty(self) -> bool:
        try:
            return self.fd is not None and os.isatty(self.fd)
        except OSError:
            return False

    @contextlib.contextmanager
    def no_echo(self, secret: bool) -> Iterator[None]:
        """Turn the terminal's echo off while the block runs (when ``secret`` and stdin is a tty)."""
        if not (secret and self.isatty()):
            yield
            return
        import termios

        assert self.fd is not None
        saved = termios.tcgetattr(self.fd)
        quiet = termios.tcgetattr(self.fd)
        quiet[3] &= ~termios.ECHO
        termios.tcsetattr(self.fd, termios.TCSANOW, quiet)
        try:
            yield
        finally:
            termios.tcsetattr(self.fd, termios.TCSANOW, saved)

    def readline(self, cancelled: Callable[[], bool]) -> Optional[str]:
        """One line without its end, or None at end of input or when ``cancelled()`` turns True."""
        if self.fd is None:
            text = self.stream.readline()
            return text.rstrip("\r\n") if text else None
        while b"\n" not in self._buffer and not self._eof:
            if cancelled():
                return None
            ready, _, _ = select.select([self.fd], [], [], POLL)
            if not ready:
                continue
            chunk = os.read(self.fd, 4096)
            if not chunk:
                self._eof = True
            self._buffer += chunk
        if not self._buffer:
            return None
        line, _, rest = self._buffer.partition(b"\n")
        self._buffer = rest
        return line.decode("utf-8", "replace").rstrip("\r")


class Omit:
    pass


def finite(value: Any) -> Optional[float]:
    """``value`` as a finite float, or None (not a number, a bool, NaN, an infinity, an int too large)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


OMIT: Any = Omit()


def message_text(content: Any) -> str:
    return " ".join(clean(b.text) if b.text is not None else f"[{clean(b.type if b.type is not None else '?', 20)}]" for b in formview.blocks(content))


def pick(raw: str, choices: list[tuple[str, str]]) -> Optional[str]:
    if raw.isdigit() and 1 <= int(raw) <= len(choices):
        return choices[int(raw) - 1][0]
    for value, title in choices:
        if raw == value or raw.lower() == title.lower():
            return value
    return None


def parse(raw: str, prop: Mapping[str, Any], choices: list[tuple[str, str]]) -> tuple[Any, Optional[str]]:
    """Turn typed text into a field value; ``(value, None)`` or ``(None, problem)``."""
    kind = prop.get("type")
    if kind == "boolean":
        word = raw.lower()
        if word in ("y", "yes", "true", "1"):
            return True, None
        if word in ("n", "no", "false", "0"):
            return False, None
        return None, "must be yes or no"
    if kind in ("number", "integer"):
        try:
            number: float = int(raw) if kind == "integer" else float(raw)
        except ValueError:
            return None, f"must be {'an integer' if kind == 'integer' else 'a number'}"
        if kind == "number" and number.is_integer() and "." not in raw and "e" not in raw.lower():
            number = int(number)
        return number, None
    if kind == "array":
        picked = []
        for part in (p.strip() for p in raw.split(",")):
            if not part:
                continue
            value = pick(part, choices)
            if value is None:
                return None, f"has {part!r}, which is not one of the choices"
            picked.append(value)
        return picked, None
    if choices:
        value = pick(raw, choices)
        if value is None:
            return None, "is not one of the choices"
        return value, None
    return raw, None
