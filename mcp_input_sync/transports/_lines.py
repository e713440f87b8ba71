"""The server's stdout cut into lines: the stdio transport's line reader.

Kept apart from the transport's process and writing work; the state lives
in one object so that whichever thread reads now (the reader, a relieved
reader, a caller the reading was handed to: the transport's reading seat,
``_seat.py``, says which) goes on from the very byte the last one stopped
at. Its fields are written only by its own methods.
"""

from __future__ import annotations

from typing import Callable, Iterator, Optional

from .._protocol.limits import SALVAGE_BYTES
from .base import Oversized


class Lines:
    """The server's stdout cut into lines, for whichever thread reads it now.

    The state lives here, not in a reader's locals, so a new reader
    (:meth:`StdioTransport.relieve`) goes on from the very byte the old one
    stopped at. One read takes whatever the pipe holds (up to 64 KiB), so a
    burst of messages costs one system call, and the reader knows when more
    is in hand (``pos < end``). A line longer than ``limit`` bytes (newline
    excluded) is read and dropped, and handed on as an :class:`Oversized`
    with its first bytes; memory stays bounded by the limit.
    """

    __slots__ = ("read", "limit", "before_wait", "buf", "pos", "end", "parts", "size", "head")

    def __init__(self, read: Callable[[int], Optional[bytes]], limit: int, before_wait: Callable[[], None]) -> None:
        self.read = read
        self.limit = limit
        #: Called before each read that may wait for the server.
        self.before_wait = before_wait
        self.buf = b""
        self.pos = 0
        self.end = 0
        #: The start of a line that began in earlier reads, and its size so far.
        self.parts: list[bytes] = []
        self.size = 0
        #: Dropping a line over the limit: its first bytes (None: not dropping).
        self.head: Optional[bytes] = None

    def take(self) -> Optional[bytes]:
        """The next message that is not blank, or None at the end of the stream."""
        while True:
            line = self.in_hand()
            if line is not None:
                return line
            self.before_wait()
            # 64 KiB, more while a long line is put together (as fill(), written out: calls less on the reader's path)
            data = self.read(65536 if self.size < 65536 else min(self.size, 1 << 20))
            if not data:
                return self._at_end()
            self.buf, self.end = data, len(data)

    def fill(self) -> bool:
        """Read once more (a caller that polled first: this does not wait); False at the end of the stream.

        Only once :meth:`in_hand` returned None (nothing left in hand). The
        end itself is left to :meth:`take`, which the reader thread calls
        again and which hands on a last line without its newline.
        """
        data = self.read(65536 if self.size < 65536 else min(self.size, 1 << 20))  # 64 KiB, more for a long line
        if not data:
            return False
        self.buf, self.end = data, len(data)
        return True

    def in_hand(self) -> Optional[bytes]:
        """The next message that is not blank among the bytes read already; None when a read is needed."""
        while True:
            buf, pos = self.buf, self.pos
            nl = buf.find(b"\n", pos)
            if nl >= 0:
                self.pos = nl + 1
                if self.head is not None:  # the end of a line over the limit
                    return self._dropped(self.size + nl + 1 - pos)
                if self.parts:
                    self.parts.append(buf[pos : nl + 1])
                    line = b"".join(self.parts)
                    self.parts = []
                    self.size = 0
                else:
                    line = buf[pos : nl + 1]
                if len(line) > self.limit + 1:
                    return self._dropped(len(line), line)
                if not line.isspace():  # no copy of a long line just to test it
                    return line
                continue
            if pos < self.end:  # a line's start, without its end yet
                self.size += self.end - pos
                if self.head is None:
                    self.parts.append(buf[pos:] if pos else buf)
                    if self.size > self.limit + 1:  # over the limit: keep its first bytes, drop the rest
                        self.head = b"".join(self.parts)[:SALVAGE_BYTES]
                        self.parts = []
            self.buf, self.pos, self.end = b"", 0, 0
            return None

    def _dropped(self, size: int, line: bytes = b"") -> Oversized:
        big = Oversized((self.head if self.head is not None else line)[:SALVAGE_BYTES])
        big.size = size
        self.head = None
        self.size = 0
        return big

    def _at_end(self) -> Optional[bytes]:
        """The stream ended: a last line without its newline is still a message."""
        if self.head is not None:
            return self._dropped(self.size)
        if self.parts:
            line = b"".join(self.parts)
            self.parts = []
            self.size = 0
            if len(line) > self.limit:
                return self._dropped(len(line), line)
            if not line.isspace():
                return line
        return None


def cut_lines(read: Callable[[], bytes], limit: int) -> Iterator[tuple[bytes, bool]]:
    """The lines of a stream read a piece at a time by ``read`` (b"" at its end): ``(line, cut)`` each.

    A line of at most ``limit`` bytes comes whole, without its newline, once its
    newline is read (or the stream ends). A longer one comes as its first
    ``limit`` bytes with ``cut`` set, as soon as they are read, and its rest is
    read and dropped up to its newline. Nothing but the piece in hand and the
    start of one line (``limit`` bytes at most) is held, however long the line.
    """
    start = b""  # the start of the line being read, while its newline is not in hand yet
    dropping = False  # reading past the first `limit` bytes of a line already handed on, cut
    while True:
        piece = read()
        if not piece:
            if start:
                yield start, False
            return
        pos = 0
        nl = piece.find(b"\n")
        while nl >= 0:
            if dropping:
                dropping = False
            else:
                line = start + piece[pos : min(nl, pos + limit + 1 - len(start))]  # one byte over tells a cut
                start = b""
                yield (line[:limit], True) if len(line) > limit else (line, False)
            pos = nl + 1
            nl = piece.find(b"\n", pos)
        if not dropping and pos < len(piece):
            start += piece[pos : pos + limit + 1 - len(start)]
            if len(start) > limit:
                yield start[:limit], True
                start, dropping = b"", True
