"""Fuzzing the event-stream decoder (issue #8).

Budgets: see tests/fuzz_profiles.py (``MIS_FUZZ=long`` for the long run).

What each property proves:

* ``test_any_bytes_any_split_same_outcome``: for any byte string (biased
  towards event-stream syntax: field names, colons, every line end, BOM,
  NUL, invalid UTF-8), any split into chunks and any ``max_line`` /
  ``max_event`` / ``emit_empty``, the chunked decoder yields exactly what the
  whole-stream decoder yields: the same events, the same ``last_event_id``
  and ``retry``, and, when a limit is crossed, the same error class with the
  same events completed before the fault (the events returned by earlier
  ``feed`` calls plus ``exc.events``). Nothing but ``SSELimitError`` ever
  escapes, and once failed every later ``feed`` raises the same class.
* ``test_limits_are_honoured``: every emitted event's data fits
  ``max_event`` (counted in received bytes, valid UTF-8 input) and no data
  line is longer than ``max_line``; after every ``feed`` the incomplete line
  held is at most ``max_line`` bytes and the event being built at most
  ``max_event`` bytes (memory stays bounded whatever the chunking); a stream with no line longer than
  ``max_line`` never raises ``SSELineTooLong``.
* ``test_feed_after_close_and_bytes_like``: ``close`` is idempotent and a
  later ``feed`` raises ``ValueError``; ``bytearray``/``memoryview`` chunks
  decode like ``bytes``.
"""

from __future__ import annotations

from typing import Optional, Union

from hypothesis import given
from hypothesis import strategies as st

from mcp_input_sync._protocol.sse import (
    Event,
    SSEDecoder,
    SSEEventTooLarge,
    SSELimitError,
    SSELineTooLong,
)

from .fuzz_profiles import PURE

_TOKENS = [
    b"data",
    b"data:",
    b"data: ",
    b"event:",
    b"event: ping",
    b"id:",
    b"id: 7",
    b"id\x00",
    b"retry:",
    b"retry: 3000",
    b"retry: 18446744073709551616",
    b"retry: 0018446744073709551615",
    b":",
    b": comment",
    b" ",
    b"\n",
    b"\r",
    b"\r\n",
    b"\n\n",
    b"\r\r",
    b"\xef\xbb\xbf",
    b"\xef\xbb",
    b"\xff",
    b"\xc3",
    b"\xe2\x82",
    b"\xf0\x9f\x98\x80",
    b"\x00",
    b"x",
    b"hello world",
    b"DATA",
]

streams = st.one_of(
    st.binary(max_size=200),
    st.lists(st.one_of(st.sampled_from(_TOKENS), st.binary(max_size=8)), max_size=60).map(b"".join),
)


@st.composite
def splits(draw: st.DrawFn, stream: bytes) -> list[bytes]:
    """``stream`` cut at any points (empty chunks included)."""
    cuts = sorted(draw(st.lists(st.integers(0, len(stream)), max_size=12)))
    chunks, start = [], 0
    for cut in cuts:
        chunks.append(stream[start:cut])
        start = cut
    chunks.append(stream[start:])
    return chunks


Outcome = tuple[list[Event], str, Optional[int], Optional[type]]


def run(chunks: list[Union[bytes, bytearray, memoryview]], **options: object) -> Outcome:
    decoder = SSEDecoder(**options)  # type: ignore[arg-type]
    max_line = options.get("max_line", 16 << 20)
    max_event = options.get("max_event", 16 << 20)
    events: list[Event] = []
    for chunk in chunks:
        try:
            events += decoder.feed(chunk)
            # Bounded memory: an incomplete line and the event being built stay within the limits.
            assert decoder._pending_len <= max_line  # type: ignore[operator]
            assert sum(len(b) for b in decoder._pending) == decoder._pending_len
            assert decoder._data_len <= max_event  # type: ignore[operator]
        except SSELimitError as exc:
            events += exc.events
            # A failed stream stays failed, with the same kind of error and no events.
            for later in (b"", b"data: x\n\n"):
                try:
                    decoder.feed(later)
                except SSELimitError as again:
                    assert type(again) is type(exc)
                    assert again.events == []
                else:
                    raise AssertionError("feed after a limit error did not raise")
            return events, decoder.last_event_id, decoder.retry, type(exc)
    assert decoder.close() == []
    assert decoder.close() == []
    return events, decoder.last_event_id, decoder.retry, None


options = st.fixed_dictionaries(
    {},
    optional={
        "max_line": st.integers(1, 40),
        "max_event": st.integers(0, 60),
        "emit_empty": st.booleans(),
        "last_event_id": st.text(max_size=4).filter(lambda s: "\x00" not in s),
    },
)


@PURE
@given(data=st.data(), stream=streams, opts=options)
def test_any_bytes_any_split_same_outcome(data: st.DataObject, stream: bytes, opts: dict[str, object]) -> None:
    whole = run([stream], **opts)
    chunks = data.draw(splits(stream))
    assert b"".join(chunks) == stream
    assert run(list(chunks), **opts) == whole
    # Byte by byte is the extreme split.
    assert run([stream[i : i + 1] for i in range(len(stream))], **opts) == whole
    for event in whole[0]:
        assert isinstance(event.data, str) and isinstance(event.event, str)
        assert event.id is None or (event.id != "" and "\x00" not in event.id)
        assert event.retry is None or 0 <= event.retry <= (1 << 64) - 1


@PURE
@given(stream=streams, max_line=st.integers(1, 40), max_event=st.integers(0, 60), data=st.data())
def test_limits_are_honoured(stream: bytes, max_line: int, max_event: int, data: st.DataObject) -> None:
    chunks = data.draw(splits(stream))
    events, _, _, failure = run(list(chunks), max_line=max_line, max_event=max_event)
    try:
        valid_utf8 = stream.decode("utf-8") is not None
    except UnicodeDecodeError:
        valid_utf8 = False
    for event in events:
        if valid_utf8:
            assert len(event.data.encode("utf-8")) <= max_event
            for line in event.data.split("\n"):
                assert len(line.encode("utf-8")) <= max_line
    body = stream[3:] if stream.startswith(b"\xef\xbb\xbf") else stream
    longest = max((len(line) for line in body.splitlines()), default=0)
    if longest <= max_line:
        assert failure is not SSELineTooLong
    if failure is None:
        # Without an error every complete line was within the limit.
        complete = body.splitlines()[:-1] if body and body[-1:] not in (b"\n", b"\r") else body.splitlines()
        assert all(len(line) <= max_line for line in complete)
    else:
        assert failure in (SSELineTooLong, SSEEventTooLarge)


@PURE
@given(stream=streams, data=st.data())
def test_feed_after_close_and_bytes_like(stream: bytes, data: st.DataObject) -> None:
    chunks = data.draw(splits(stream))
    as_bytes = run(list(chunks))
    kinds = data.draw(st.lists(st.sampled_from([bytes, bytearray, memoryview]), min_size=len(chunks), max_size=len(chunks)))
    mixed: list[Union[bytes, bytearray, memoryview]] = [k(c) for k, c in zip(kinds, chunks)]
    assert run(mixed) == as_bytes
    decoder = SSEDecoder()
    decoder.feed(stream[: len(stream) // 2])
    assert decoder.close() == [] and decoder.close() == []
    try:
        decoder.feed(b"data: x\n\n")
    except ValueError:
        pass
    else:
        raise AssertionError("feed after close did not raise")
