"""An incremental decoder for ``text/event-stream`` (Server-Sent Events).

Pure: no threads, no I/O, no clock, stdlib only. The transport feeds it the
bytes it reads and acts on the :class:`Event` objects it gets back.

Contract (the WHATWG HTML "event stream interpretation" rules):

* :meth:`SSEDecoder.feed` takes any chunk of bytes and returns the events the
  chunk completed, in order. Chunks may be split anywhere (inside a UTF-8
  sequence, between CR and LF, inside the leading BOM): any split of a stream
  yields the same events, ``last_event_id`` and ``retry`` as feeding it
  whole. A line ended by a lone CR is processed at once (an event ended by
  CR CR is dispatched without waiting for more bytes); an LF that then starts
  the next chunk is taken as the second half of a CRLF and skipped.
* Lines end with CRLF, LF or CR. One UTF-8 BOM at the very start of the
  stream is skipped. Text is UTF-8 with invalid sequences replaced by U+FFFD.
  A line starting with ``:`` is a comment. Otherwise the field name runs to
  the first ``:`` and the value follows, less one leading space; a line with
  no ``:`` is a field name with an empty value. Field names are
  case-sensitive:

  - ``event`` sets the event type buffer;
  - ``data`` appends the value and a LF to the data buffer;
  - ``id`` sets the last event ID buffer, unless the value holds U+0000
    (then the line is ignored); ``id`` with an empty value clears it;
  - ``retry`` sets the reconnection time (:attr:`SSEDecoder.retry`, in ms)
    when the value is one or more ASCII digits, else the line is ignored.
    Values above 2**64 - 1 are ignored too (as Chromium does): no server
    means them, and parsing an unbounded digit string is itself a cost;
  - any other field is ignored.

* An empty line dispatches. :attr:`SSEDecoder.last_event_id` (the spec's
  "last event ID string", the value for a ``Last-Event-ID`` header) takes
  the last event ID buffer, which itself persists from event to event. Then,
  if the data buffer is empty, the data and type buffers are reset and
  nothing is emitted (but see ``emit_empty``); otherwise one trailing LF is
  removed from the data and an :class:`Event` is emitted with type
  ``event`` (``"message"`` when the type buffer is empty). ``data:`` alone
  is a non-empty buffer and so emits an event with ``data == ""``.
* :attr:`Event.id` is the last event ID buffer at dispatch, ``None`` when
  empty; :attr:`Event.retry` is the valid ``retry`` value given since the
  previous dispatch, else ``None``.
* ``emit_empty=True`` also emits an event (``data == ""``) for a block with
  no ``data`` line but with an ``id`` line that took effect or a valid
  ``retry`` line: MCP's 2025-11-25 "priming" events (an event ID and empty
  data) become visible. Blocks of only comments, ``event`` or unknown fields
  still emit nothing.
* :meth:`SSEDecoder.close` marks the end of the stream: an incomplete line
  or event is discarded (per the spec, so an ``id`` inside an event that
  never completed does not reach ``last_event_id``); it returns ``[]``, is
  idempotent, and a later :meth:`~SSEDecoder.feed` raises ``ValueError``.
* Limits: a line (without its line end) longer than ``max_line`` bytes
  raises :class:`SSELineTooLong` as soon as its length is known to exceed
  the limit, so at most ``max_line`` bytes plus one chunk are ever held for
  it. An event whose data (the emitted ``data``, counted in received UTF-8
  bytes) would exceed ``max_event`` raises :class:`SSEEventTooLarge` when the
  ``data`` line that crosses the limit is read. Both are ``ValueError``
  subclasses carrying ``events``: the events the failing ``feed`` call
  completed before the fault. After either, the stream is unusable: each
  later ``feed`` raises the same kind of error (with no events).
* Linear time: each byte is scanned once by ``bytes.splitlines`` and copied
  a bounded number of times, so a 1 MB single-line event fed in 64 KB chunks
  costs one pass, not one pass per chunk.

Decoding each line on its own gives the same text as decoding the stream
whole: CR and LF are ASCII, never part of a UTF-8 sequence, and Python's
decoder replaces the maximal invalid subpart, so an invalid sequence never
swallows the line end that follows it.
"""

from __future__ import annotations

from typing import Optional

from .record import Record

__all__ = ["Event", "SSEDecoder", "SSEEventTooLarge", "SSELimitError", "SSELineTooLong"]

_BOM = b"\xef\xbb\xbf"
_MIB = 1 << 20
_CR = 0x0D
_LF = 0x0A
_COLON = 0x3A
#: Largest accepted ``retry`` value (ms); larger digit strings are ignored.
_MAX_RETRY = (1 << 64) - 1
_MAX_RETRY_DIGITS = len(str(_MAX_RETRY))


class Event(Record):
    """One dispatched event.

    Attributes:
        data: the data lines joined with LF.
        event: the event type; ``"message"`` when none was given.
        id: the last event ID in effect at dispatch (it persists across
            events), ``None`` when empty.
        retry: the valid ``retry`` value (ms) given in this event's lines,
            else ``None``.
    """

    __slots__ = ("data", "event", "id", "retry")

    def __init__(self, data: str, event: str = "message", id: Optional[str] = None, retry: Optional[int] = None) -> None:  # noqa: A002 - the SSE field's name
        setattr_ = object.__setattr__
        setattr_(self, "data", data)
        setattr_(self, "event", event)
        setattr_(self, "id", id)
        setattr_(self, "retry", retry)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"Event is read-only: cannot set {name!r}")


class SSELimitError(ValueError):
    """A size limit was exceeded; the stream cannot be decoded further.

    ``events`` holds the events completed by the failing ``feed`` call before
    the fault, in order. The message never quotes the stream.
    """

    def __init__(self, message: str, events: Optional[list[Event]] = None) -> None:
        super().__init__(message)
        self.events: list[Event] = [] if events is None else events


class SSELineTooLong(SSELimitError):
    """A line is longer than the decoder's ``max_line`` bytes."""


class SSEEventTooLarge(SSELimitError):
    """An event's data is larger than the decoder's ``max_event`` bytes."""


def _parse_retry(value: bytes) -> Optional[int]:
    """The reconnection time in ``value`` (ASCII digits only), else None."""
    if not value or not value.isdigit():  # bytes.isdigit: ASCII digits only
        return None
    significant = value.lstrip(b"0")
    if len(significant) > _MAX_RETRY_DIGITS:
        return None
    number = int(significant) if significant else 0
    return number if number <= _MAX_RETRY else None


class SSEDecoder:
    """Decode one event stream incrementally; see the module docstring.

    Args:
        max_line: longest accepted line in bytes, line end excluded.
        max_event: largest accepted event data in bytes.
        emit_empty: also emit data-less events that carried ``id`` or
            ``retry`` (MCP priming events).
        last_event_id: the last event ID to start from (the value sent as
            ``Last-Event-ID`` when this stream was opened to resume another);
            it seeds both the buffer and :attr:`last_event_id`.
    """

    def __init__(
        self,
        *,
        max_line: int = 16 * _MIB,
        max_event: int = 16 * _MIB,
        emit_empty: bool = False,
        last_event_id: str = "",
    ) -> None:
        if max_line < 1:
            raise ValueError("max_line must be at least 1")
        if max_event < 0:
            raise ValueError("max_event must not be negative")
        if "\x00" in last_event_id:
            raise ValueError("last_event_id must not contain U+0000")
        self._max_line = max_line
        self._max_event = max_event
        self._emit_empty = emit_empty
        # Byte level.
        self._head: Optional[bytes] = b""  # bytes seen while the BOM is undecided; None after
        self._pending: list[bytes] = []  # fragments of the incomplete current line
        self._pending_len = 0
        self._skip_lf = False  # the last byte seen was a CR that ended a line
        # Event level.
        self._data: list[str] = []  # data values; the data buffer is "\n".join(...) + "\n"
        self._data_len = 0  # len in received bytes of "\n".join(values)
        self._type = ""
        self._id_buffer = last_event_id
        self._last_event_id = last_event_id
        self._retry: Optional[int] = None
        self._block_id = False  # an id line took effect since the last dispatch
        self._block_retry: Optional[int] = None
        self._failed: Optional[SSELimitError] = None
        self._closed = False

    @property
    def last_event_id(self) -> str:
        """The last event ID as of the latest dispatch ("" when none)."""
        return self._last_event_id

    @property
    def retry(self) -> Optional[int]:
        """The last valid ``retry`` value seen, in ms (None when none)."""
        return self._retry

    def feed(self, chunk: bytes | bytearray | memoryview) -> list[Event]:
        """Decode ``chunk``; return the events it completed, in order."""
        if not isinstance(chunk, (bytes, bytearray, memoryview)):
            raise TypeError(f"feed() takes bytes, not {type(chunk).__name__}")
        if self._closed:
            raise ValueError("feed() after close()")
        if self._failed is not None:
            raise type(self._failed)(str(self._failed))
        data = chunk if isinstance(chunk, bytes) else bytes(chunk)
        if self._head is not None:
            head = self._head + data
            if len(head) < len(_BOM) and _BOM.startswith(head):
                self._head = head
                return []
            self._head = None
            data = head[len(_BOM) :] if head.startswith(_BOM) else head
        out: list[Event] = []
        if not data:
            return out
        try:
            self._feed_lines(data, out)
        except SSELimitError as exc:
            exc.events = out
            self._failed = exc
            self._pending = []
            self._data = []
            raise
        return out

    def close(self) -> list[Event]:
        """End of stream: discard any incomplete line or event; return []."""
        self._closed = True
        self._head = None
        self._pending = []
        self._pending_len = 0
        self._data = []
        self._data_len = 0
        self._type = ""
        self._block_id = False
        self._block_retry = None
        return []

    # ------------------------------------------------------------------ lines

    def _feed_lines(self, data: bytes, out: list[Event]) -> None:
        parts = data.splitlines(keepends=True)  # splits on CRLF, CR, LF only
        start = 0
        if self._skip_lf:
            self._skip_lf = False
            if parts[0] == b"\n":
                start = 1
        max_line = self._max_line
        for index in range(start, len(parts)):
            part = parts[index]
            last = part[-1]
            if last == _LF:
                eol = 2 if len(part) > 1 and part[-2] == _CR else 1
            elif last == _CR:
                eol = 1
            else:  # no line end: only the final part can be incomplete
                self._pending_len += len(part)
                if self._pending_len > max_line:
                    raise SSELineTooLong(f"an event-stream line is longer than {max_line} bytes")
                self._pending.append(part)
                return
            length = len(part) - eol
            if self._pending:
                if self._pending_len + length > max_line:
                    raise SSELineTooLong(f"an event-stream line is longer than {max_line} bytes")
                self._pending.append(part[:length])
                line = b"".join(self._pending)
                self._pending = []
                self._pending_len = 0
            else:
                if length > max_line:
                    raise SSELineTooLong(f"an event-stream line is longer than {max_line} bytes")
                line = part[:length]
            self._process_line(line, out)
        self._skip_lf = parts[-1][-1] == _CR

    def _process_line(self, line: bytes, out: list[Event]) -> None:
        if not line:
            self._dispatch(out)
            return
        if line[0] == _COLON:
            return
        colon = line.find(b":")
        if colon < 0:
            name, value = line, b""
        else:
            name = line[:colon]
            start = colon + 1
            if line[start : start + 1] == b" ":
                start += 1
            value = line[start:]
        if name == b"data":
            size = self._data_len + len(value) + (1 if self._data else 0)
            if size > self._max_event:
                raise SSEEventTooLarge(f"an event's data is larger than {self._max_event} bytes")
            self._data.append(value.decode("utf-8", "replace"))
            self._data_len = size
        elif name == b"event":
            self._type = value.decode("utf-8", "replace")
        elif name == b"id":
            if b"\x00" not in value:
                self._id_buffer = value.decode("utf-8", "replace")
                self._block_id = True
        elif name == b"retry":
            retry = _parse_retry(value)
            if retry is not None:
                self._retry = retry
                self._block_retry = retry

    def _dispatch(self, out: list[Event]) -> None:
        self._last_event_id = self._id_buffer
        event_id = self._id_buffer or None
        event_type = self._type or "message"
        retry = self._block_retry
        carried = self._block_id or retry is not None
        self._type = ""
        self._block_id = False
        self._block_retry = None
        if not self._data:
            if self._emit_empty and carried:
                out.append(Event("", event_type, event_id, retry))
            return
        data = "\n".join(self._data)
        self._data = []
        self._data_len = 0
        out.append(Event(data, event_type, event_id, retry))
