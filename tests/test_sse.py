"""The event-stream decoder, against the WHATWG HTML "server-sent events" rules.

The spec's own examples, line ends, the BOM, each field's rules, dispatch and
end-of-stream rules, size limits, MCP priming events; then a differential
property test against a direct whole-stream port of the spec, and chunking
invariance (any split of a stream decodes like the whole).
"""

from __future__ import annotations

import re
from typing import Optional

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_input_sync._protocol.sse import Event, SSEDecoder, SSEEventTooLarge, SSELimitError, SSELineTooLong


def decode(stream: bytes, **options: object) -> list[Event]:
    """Feed ``stream`` whole, then close."""
    decoder = SSEDecoder(**options)  # type: ignore[arg-type]
    events = decoder.feed(stream)
    assert decoder.close() == []
    return events


def decode_bytewise(stream: bytes, **options: object) -> list[Event]:
    decoder = SSEDecoder(**options)  # type: ignore[arg-type]
    events: list[Event] = []
    for i in range(len(stream)):
        events += decoder.feed(stream[i : i + 1])
    assert decoder.close() == []
    return events


def data_of(events: list[Event]) -> list[str]:
    return [e.data for e in events]


# ---------------------------------------------------------------------------- the spec's examples


def test_spec_example_multi_line_data_is_joined_with_lf() -> None:
    stream = b"data: YHOO\ndata: +2\ndata: 10\n\n"
    assert decode(stream) == [Event("YHOO\n+2\n10")]
    assert decode_bytewise(stream) == [Event("YHOO\n+2\n10")]


def test_spec_example_comment_ids_and_the_leading_space() -> None:
    stream = b": test stream\n\ndata: first event\nid: 1\n\ndata:second event\nid\n\ndata:  third event\n\n"
    decoder = SSEDecoder()
    events = decoder.feed(stream)
    assert events == [Event("first event", id="1"), Event("second event"), Event(" third event")]
    assert decoder.last_event_id == ""  # the bare "id" line reset it


def test_spec_example_comment_only_stream_fires_nothing() -> None:
    assert decode(b": test stream\n\n") == []
    assert decode(b":\n:another comment\n\n\n") == []
    assert decode(b": test stream\n\n", emit_empty=True) == []


def test_spec_example_empty_data_lines_and_an_unterminated_event() -> None:
    stream = b"data\n\ndata\ndata\n\ndata:"
    assert data_of(decode(stream)) == ["", "\n"]  # the last "data:" never ends


def test_spec_example_one_space_after_the_colon_is_dropped() -> None:
    assert decode(b"data:test\n\ndata: test\n\n") == [Event("test"), Event("test")]
    assert data_of(decode(b"data:  two\n\ndata:\ttab\n\n")) == [" two", "\ttab"]


def test_spec_example_event_types() -> None:
    stream = b"event: add\ndata: 73857293\n\nevent: remove\ndata: 2153\n\nevent: add\ndata: 113411\n\n"
    assert decode(stream) == [Event("73857293", "add"), Event("2153", "remove"), Event("113411", "add")]


# ---------------------------------------------------------------------------- line ends


@pytest.mark.parametrize("eol", [b"\n", b"\r", b"\r\n"], ids=["LF", "CR", "CRLF"])
def test_each_line_end(eol: bytes) -> None:
    stream = b"event: e" + eol + b"data: a" + eol + b"data: b" + eol + eol + b"data: c" + eol + eol
    assert decode(stream) == [Event("a\nb", "e"), Event("c")]
    assert decode_bytewise(stream) == [Event("a\nb", "e"), Event("c")]


def test_mixed_line_ends() -> None:
    stream = b"data: a\rdata: b\r\ndata: c\n\r\ndata: d\r\r\ndata: e\n\r"
    assert data_of(decode(stream)) == ["a\nb\nc", "d", "e"]
    assert data_of(decode_bytewise(stream)) == ["a\nb\nc", "d", "e"]


def test_lf_cr_is_two_line_ends() -> None:
    assert data_of(decode(b"data: a\n\r")) == ["a"]


def test_crlf_split_across_chunks_is_one_line_end() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\r") == []
    assert decoder.feed(b"\ndata: b\r") == []
    assert decoder.feed(b"") == []  # an empty chunk keeps the pending CR
    assert decoder.feed(b"\n") == []
    assert decoder.feed(b"\r") == [Event("a\nb")]
    assert decoder.feed(b"\ndata: c\n\n") == [Event("c")]


def test_a_cr_after_a_split_cr_is_a_blank_line() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\r") == []
    assert decoder.feed(b"\r\n") == [Event("a")]


def test_an_event_ended_by_cr_is_dispatched_without_waiting_for_more_bytes() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: live\r\r") == [Event("live")]


def test_a_trailing_cr_at_eof_still_ends_the_event() -> None:
    assert decode(b"data: x\r\r") == [Event("x")]


# ---------------------------------------------------------------------------- BOM and UTF-8


def test_a_leading_bom_is_skipped() -> None:
    assert decode(b"\xef\xbb\xbfdata: x\n\n") == [Event("x")]
    assert decode_bytewise(b"\xef\xbb\xbfdata: x\n\n") == [Event("x")]


def test_only_one_bom_is_skipped() -> None:
    # The second U+FEFF belongs to the field name, which is then unknown.
    assert decode(b"\xef\xbb\xbf\xef\xbb\xbfdata: x\n\ndata: y\n\n") == [Event("y")]


def test_a_bom_after_the_start_is_text() -> None:
    assert decode(b"\n\xef\xbb\xbfdata: x\n\n") == []
    assert decode(b"data: \xef\xbb\xbfx\n\n") == [Event("\ufeffx")]


def test_a_bom_split_over_chunks_and_a_false_bom_start() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"\xef") == []
    assert decoder.feed(b"\xbb") == []
    assert decoder.feed(b"\xbfdata: x\n\n") == [Event("x")]
    decoder = SSEDecoder()
    assert decoder.feed(b"\xef\xbb") == []
    assert decoder.feed(b"data: x\n\n") == []  # "\ufffddata" is an unknown field
    assert decoder.feed(b"data: y\n\n") == [Event("y")]


def test_utf8_split_inside_a_sequence() -> None:
    text = "data: h\u00e9llo \u20ac \U0001f600\n\n".encode()
    assert decode_bytewise(text) == [Event("h\u00e9llo \u20ac \U0001f600")]


def test_invalid_utf8_is_replaced_and_never_swallows_a_line_end() -> None:
    assert decode(b"data: a\xffb\n\n") == [Event("a\ufffdb")]
    assert decode(b"data: a\xe2\x82\ndata: b\n\n") == [Event("a\ufffd\nb")]
    assert decode(b"data: a\xe2\x82\r\r") == [Event("a\ufffd")]
    assert decode(b"event: \xc3\n data: x\n\n") == []  # " data" is not "data"


# ---------------------------------------------------------------------------- fields


def test_id_persists_across_events_and_is_exposed_on_each() -> None:
    decoder = SSEDecoder()
    events = decoder.feed(b"id: 7\ndata: a\n\ndata: b\n\nid: 8\ndata: c\n\n")
    assert [(e.data, e.id) for e in events] == [("a", "7"), ("b", "7"), ("c", "8")]
    assert decoder.last_event_id == "8"


def test_an_id_with_nul_is_ignored() -> None:
    decoder = SSEDecoder()
    events = decoder.feed(b"id: 1\n\ndata: a\nid: 2\x003\n\n")
    assert events == [Event("a", id="1")]
    assert decoder.last_event_id == "1"


def test_an_empty_id_clears_the_last_event_id() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"id: 1\ndata: a\n\nid:\ndata: b\n\n") == [Event("a", id="1"), Event("b")]
    assert decoder.last_event_id == ""


def test_an_id_alone_updates_the_last_event_id_but_emits_nothing() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"id: 42\n\n") == []
    assert decoder.last_event_id == "42"
    assert decoder.feed(b"data: x\n\n") == [Event("x", id="42")]


def test_the_last_event_id_changes_only_at_dispatch() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: x\nid: 5\n") == []
    assert decoder.last_event_id == ""
    assert decoder.feed(b"\n") == [Event("x", id="5")]
    assert decoder.last_event_id == "5"


def test_the_last_event_id_can_be_seeded_for_a_resumed_stream() -> None:
    decoder = SSEDecoder(last_event_id="s-9")
    assert decoder.last_event_id == "s-9"
    assert decoder.feed(b"data: x\n\n") == [Event("x", id="s-9")]
    with pytest.raises(ValueError):
        SSEDecoder(last_event_id="a\x00b")


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (b"retry: 3000", 3000),
        (b"retry:0", 0),
        (b"retry: 0007", 7),
        (b"retry: 18446744073709551615", 2**64 - 1),
        (b"retry: " + b"0" * 100 + b"5", 5),
    ],
)
def test_retry_takes_ascii_digits(line: bytes, expected: int) -> None:
    decoder = SSEDecoder()
    assert decoder.feed(line + b"\ndata: x\n\n") == [Event("x", retry=expected)]
    assert decoder.retry == expected


@pytest.mark.parametrize(
    "line",
    [
        b"retry:",
        b"retry: ",
        b"retry:  1000",  # a second space is part of the value
        b"retry: 10a",
        b"retry: -1",
        b"retry: +1",
        b"retry: 1.5",
        b"retry: 1e3",
        b"retry: 1000 ",
        "retry: \u0661\u0662".encode(),  # Arabic-Indic digits are not ASCII digits
        "retry: \uff11".encode(),  # fullwidth digit
        b"retry: 18446744073709551616",  # beyond 64 bits: ignored, as Chromium does
        b"retry: " + b"9" * 100_000,
        b"Retry: 5",
    ],
)
def test_retry_ignores_anything_but_ascii_digits(line: bytes) -> None:
    decoder = SSEDecoder()
    decoder.feed(b"retry: 1\n\n")
    assert decoder.feed(line + b"\ndata: x\n\n") == [Event("x")]
    assert decoder.retry == 1


def test_retry_is_none_until_given_and_kept_across_events() -> None:
    decoder = SSEDecoder()
    assert decoder.retry is None
    assert decoder.feed(b"retry: 500\ndata: a\n\ndata: b\n\n") == [Event("a", retry=500), Event("b")]
    assert decoder.retry == 500


def test_unknown_fields_are_ignored_and_names_are_case_sensitive() -> None:
    stream = b"foo: bar\nData: no\nDATA: no\nEvent: no\nID: 9\ndata : no\n data: no\ndata: yes\n\n"
    decoder = SSEDecoder()
    assert decoder.feed(stream) == [Event("yes")]
    assert decoder.last_event_id == ""


def test_a_field_without_colon_has_an_empty_value() -> None:
    assert decode(b"data\n\n") == [Event("")]
    assert decode(b"event: x\nevent\ndata: a\n\n") == [Event("a")]  # empty type means "message"
    decoder = SSEDecoder()
    decoder.feed(b"id: 3\n\nid\n\n")
    assert decoder.last_event_id == ""


def test_only_the_first_colon_splits() -> None:
    assert decode(b"data: a: b:c\n\n") == [Event("a: b:c")]
    assert decode(b"data::x\n\n") == [Event(":x")]


def test_the_last_event_type_line_wins() -> None:
    assert decode(b"event: a\nevent: b\ndata: x\n\n") == [Event("x", "b")]


# ---------------------------------------------------------------------------- dispatch


def test_a_block_without_data_emits_nothing_and_resets_the_type() -> None:
    assert decode(b"event: ping\n\ndata: x\n\n") == [Event("x")]


def test_blank_lines_alone_emit_nothing() -> None:
    assert decode(b"\n\n\r\n\r\r") == []


def test_only_one_trailing_lf_is_removed() -> None:
    assert decode(b"data: a\ndata\n\n") == [Event("a\n")]
    assert decode(b"data\ndata\ndata\n\n") == [Event("\n\n")]


def test_data_lines_keep_inner_whitespace() -> None:
    assert decode(b"data:   \n\n") == [Event("  ")]


# ---------------------------------------------------------------------------- end of stream


def test_an_incomplete_event_at_eof_is_discarded() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\n\nid: 2\ndata: b\n") == [Event("a")]
    assert decoder.close() == []
    assert decoder.last_event_id == ""  # the id of an event that never ended is not applied


def test_an_unterminated_last_line_is_discarded() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\n\ndata: b") == [Event("a")]
    assert decoder.close() == []


def test_close_is_idempotent_and_feed_after_close_is_refused() -> None:
    decoder = SSEDecoder()
    assert decoder.close() == []
    assert decoder.close() == []
    with pytest.raises(ValueError):
        decoder.feed(b"data: x\n\n")


def test_feed_takes_bytes_like_only() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(bytearray(b"data: a\n\n")) == [Event("a")]
    assert decoder.feed(memoryview(b"data: b\n\n")) == [Event("b")]
    with pytest.raises(TypeError):
        decoder.feed("data: c\n\n")  # type: ignore[arg-type]


def test_events_are_frozen() -> None:
    event = Event("x")
    with pytest.raises(AttributeError):
        event.data = "y"


# ---------------------------------------------------------------------------- limits


def test_a_line_at_the_limit_is_accepted() -> None:
    line = b"data: " + b"x" * 94  # 100 bytes
    assert decode(line + b"\r\n\r\n", max_line=100) == [Event("x" * 94)]
    assert decode_bytewise(line + b"\r\n\r\n", max_line=100) == [Event("x" * 94)]


def test_a_long_line_is_refused_before_its_end_arrives() -> None:
    decoder = SSEDecoder(max_line=100)
    assert decoder.feed(b"data: ok\n\n: comment ") == [Event("ok")]
    with pytest.raises(SSELineTooLong) as caught:
        for _ in range(100):  # never ends: the decoder must refuse, not buffer on
            decoder.feed(b"y" * 10)
    assert caught.value.events == []
    assert isinstance(caught.value, ValueError)
    assert sum(len(p) for p in decoder._pending) <= 100  # nothing kept after the fault


def test_a_long_line_in_one_chunk_keeps_the_events_before_it() -> None:
    decoder = SSEDecoder(max_line=100)
    with pytest.raises(SSELineTooLong) as caught:
        decoder.feed(b"data: a\n\n: " + b"z" * 200 + b"\ndata: b\n\n")
    assert caught.value.events == [Event("a")]
    with pytest.raises(SSELineTooLong):  # the stream stays unusable
        decoder.feed(b"data: c\n\n")


def test_a_long_line_completed_across_chunks_is_refused() -> None:
    decoder = SSEDecoder(max_line=10)
    decoder.feed(b"data: 1234")
    with pytest.raises(SSELineTooLong):
        decoder.feed(b"5\n")


def test_event_data_at_the_limit_is_accepted() -> None:
    stream = b"data: 1234\ndata: 5678\ndata:\n\n"  # "1234\n5678\n": 10 bytes
    assert decode(stream, max_event=10) == [Event("1234\n5678\n")]
    with pytest.raises(SSEEventTooLarge):
        decode(stream, max_event=9)


def test_a_large_event_is_refused_when_its_data_crosses_the_limit() -> None:
    decoder = SSEDecoder(max_event=1000)
    assert decoder.feed(b"data: small\n\n") == [Event("small")]
    with pytest.raises(SSEEventTooLarge) as caught:
        for _ in range(100):  # never dispatched: refused before the blank line
            decoder.feed(b"data: " + b"x" * 99 + b"\n")
    assert isinstance(caught.value, SSELimitError) and isinstance(caught.value, ValueError)
    with pytest.raises(SSEEventTooLarge):
        decoder.feed(b"\n")


def test_the_event_limit_is_per_event() -> None:
    stream = b"data: " + b"x" * 60 + b"\n\n"
    assert len(decode(stream * 10, max_event=60)) == 10


def test_limits_must_be_sane() -> None:
    with pytest.raises(ValueError):
        SSEDecoder(max_line=0)
    with pytest.raises(ValueError):
        SSEDecoder(max_event=-1)


# ---------------------------------------------------------------------------- MCP priming events


def test_a_priming_event_with_an_empty_data_field_is_always_emitted() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"id: prime-1\ndata:\n\n") == [Event("", id="prime-1")]
    assert decoder.last_event_id == "prime-1"


def test_data_less_events_with_id_or_retry_are_emitted_only_with_emit_empty() -> None:
    stream = b"id: p1\n\nretry: 2500\n\nid: p2\nretry: 10\nevent: prime\n\n"
    plain = SSEDecoder()
    assert plain.feed(stream) == []
    assert (plain.last_event_id, plain.retry) == ("p2", 10)
    primed = SSEDecoder(emit_empty=True)
    assert primed.feed(stream) == [
        Event("", id="p1"),
        Event("", id="p1", retry=2500),
        Event("", "prime", id="p2", retry=10),
    ]
    assert (primed.last_event_id, primed.retry) == ("p2", 10)


def test_emit_empty_ignores_blocks_that_carry_nothing() -> None:
    stream = b": keep-alive\n\nevent: x\n\nfoo: 1\n\nretry: nope\n\nid: a\x00b\n\n\n\n"
    assert decode(stream, emit_empty=True) == []


def test_emit_empty_sees_an_id_that_clears_the_last_event_id() -> None:
    assert decode(b"id: 1\n\nid\n\n", emit_empty=True) == [Event("", id="1"), Event("")]


def test_emit_empty_does_not_change_events_with_data() -> None:
    stream = b"id: 1\ndata: a\n\ndata:\n\n"
    assert decode(stream, emit_empty=True) == decode(stream) == [Event("a", id="1"), Event("", id="1")]


# ---------------------------------------------------------------------------- properties


def reference(stream: bytes, emit_empty: bool = False) -> tuple[list[Event], str, Optional[int]]:
    """A direct port of the spec over the whole stream (decode, split, process)."""
    text = stream.decode("utf-8", "replace")
    if text.startswith("\ufeff"):
        text = text[1:]
    lines = re.split("\r\n|\r|\n", text)[:-1]  # the last piece never ended
    events: list[Event] = []
    data, kind, id_buffer, last_id = "", "", "", ""
    retry: Optional[int] = None
    block_id, block_retry = False, None
    for line in lines:
        if line == "":
            last_id = id_buffer
            if data == "":
                if emit_empty and (block_id or block_retry is not None):
                    events.append(Event("", kind or "message", id_buffer or None, block_retry))
            else:
                events.append(Event(data[:-1] if data.endswith("\n") else data, kind or "message", id_buffer or None, block_retry))
            data, kind, block_id, block_retry = "", "", False, None
            continue
        if line.startswith(":"):
            continue
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "event":
            kind = value
        elif name == "data":
            data += value + "\n"
        elif name == "id":
            if "\x00" not in value:
                id_buffer, block_id = value, True
        elif name == "retry":
            if re.fullmatch("[0-9]+", value) and int(value) < 2**64:
                retry = block_retry = int(value)
    return events, last_id, retry


NAMES = st.sampled_from(["data", "data", "data", "event", "id", "retry", "", "dat", "Data", "foo", "\ufeffdata"])
VALUES = st.one_of(
    st.text(alphabet=st.characters(codec="utf-8", exclude_characters="\r\n"), max_size=12),
    st.from_regex(r"[0-9]{1,4}", fullmatch=True),
    st.sampled_from(["", " ", "  x", "\x00", "a\x00", "\ufeff", "\u00e9\u20ac\U0001f600", "12a"]),
)
EOLS = st.sampled_from(["\n", "\r", "\r\n"])


@st.composite
def line_bytes(draw: st.DrawFn) -> bytes:
    kind = draw(st.integers(0, 9))
    if kind <= 1:
        body = ""  # a blank line: dispatch
    elif kind == 2:
        body = ":" + draw(VALUES)  # a comment
    elif kind == 3:
        body = draw(NAMES)  # a field without colon
    else:
        body = draw(NAMES) + draw(st.sampled_from([":", ": ", ":  "])) + draw(VALUES)
    raw = body.encode()
    if draw(st.integers(0, 15)) == 0:  # now and then, invalid UTF-8
        raw += draw(st.sampled_from([b"\xff", b"\xe2\x82", b"\xc3", b"\xed\xa0\x80", b"\xf0\x9f"]))
    return raw + draw(EOLS).encode()


@st.composite
def streams(draw: st.DrawFn) -> bytes:
    stream = b"".join(draw(st.lists(line_bytes(), max_size=25)))
    prefix = draw(st.sampled_from([b"", b"", b"\xef\xbb\xbf", b"\xef\xbb\xbf\xef\xbb\xbf", b"\xef\xbb"]))
    tail = draw(st.sampled_from([b"", b"", b"data: unterminated", b"id: 99\n", b"\r"]))
    return prefix + stream + tail


def chunked(stream: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({min(c, len(stream)) for c in cuts})
    bounds = [0, *points, len(stream)]
    return [stream[a:b] for a, b in zip(bounds, bounds[1:])]


def run(chunks: list[bytes], emit_empty: bool = False) -> tuple[list[Event], str, Optional[int]]:
    decoder = SSEDecoder(emit_empty=emit_empty)
    events: list[Event] = []
    for chunk in chunks:
        events += decoder.feed(chunk)
    events += decoder.close()
    return events, decoder.last_event_id, decoder.retry


@settings(max_examples=400)
@given(streams(), st.booleans())
def test_the_decoder_matches_a_direct_port_of_the_spec(stream: bytes, emit_empty: bool) -> None:
    assert run([stream], emit_empty) == reference(stream, emit_empty)


@settings(max_examples=200)
@given(st.binary(max_size=200).map(lambda b: b.replace(b"x", b"data:").replace(b"y", b"\n")), st.booleans())
def test_the_decoder_matches_the_port_on_arbitrary_bytes(stream: bytes, emit_empty: bool) -> None:
    assert run([stream], emit_empty) == reference(stream, emit_empty)


@settings(max_examples=400)
@given(streams(), st.lists(st.integers(0, 2000), max_size=30), st.booleans())
def test_any_split_decodes_like_the_whole_stream(stream: bytes, cuts: list[int], emit_empty: bool) -> None:
    assert run(chunked(stream, cuts), emit_empty) == run([stream], emit_empty)


@settings(max_examples=50)
@given(streams())
def test_byte_by_byte_decodes_like_the_whole_stream(stream: bytes) -> None:
    assert run([stream[i : i + 1] for i in range(len(stream))]) == run([stream])


# ---------------------------------------------------------------------------- size
# (speed is measured by the benchmarks, never asserted in tests)


def test_an_eight_megabyte_line_in_64k_chunks_decodes_whole() -> None:
    size = 8 << 20
    stream = b"data: " + b"x" * size + b"\n\n"
    decoder = SSEDecoder()
    events: list[Event] = []
    for i in range(0, len(stream), 64 * 1024):
        events += decoder.feed(stream[i : i + 64 * 1024])
    assert len(events) == 1 and len(events[0].data) == size
