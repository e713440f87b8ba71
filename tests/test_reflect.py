"""Tests for ``mcp_input_sync.reflect``: text cleaning and log entry sanitising."""

from __future__ import annotations

import json
import sys
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_input_sync import reflect

# The rule of docs/safety.md#logs, written out from the Unicode Character
# Database 15.1 (not from the library's own table).
CF_15_1: list[tuple[int, int]] = [
    (0x00AD, 0x00AD), (0x0600, 0x0605), (0x061C, 0x061C), (0x06DD, 0x06DD), (0x070F, 0x070F),
    (0x0890, 0x0891), (0x08E2, 0x08E2), (0x180E, 0x180E), (0x200B, 0x200F), (0x202A, 0x202E),
    (0x2060, 0x2064), (0x2066, 0x206F), (0xFEFF, 0xFEFF), (0xFFF9, 0xFFFB), (0x110BD, 0x110BD),
    (0x110CD, 0x110CD), (0x13430, 0x1343F), (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A),
    (0xE0001, 0xE0001), (0xE0020, 0xE007F),
]
# DerivedCoreProperties.txt 15.1, Default_Ignorable_Code_Point.
DEFAULT_IGNORABLE_15_1: list[tuple[int, int]] = [
    (0x00AD, 0x00AD), (0x034F, 0x034F), (0x061C, 0x061C), (0x115F, 0x1160), (0x17B4, 0x17B5),
    (0x180B, 0x180F), (0x200B, 0x200F), (0x202A, 0x202E), (0x2060, 0x206F), (0x3164, 0x3164),
    (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF), (0xFFA0, 0xFFA0), (0xFFF0, 0xFFF8), (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A), (0xE0000, 0xE0FFF),
]
OTHERS: list[tuple[int, int]] = [
    (0x0000, 0x001F), (0x007F, 0x009F),  # Cc
    (0x2028, 0x2029),  # Zl, Zp
    (0xD800, 0xDFFF),  # Cs
    (0xE000, 0xF8FF), (0xF0000, 0xFFFFD), (0x100000, 0x10FFFD),  # Co
    (0xFDD0, 0xFDEF), *((p + 0xFFFE, p + 0xFFFF) for p in range(0, 0x110000, 0x10000)),  # noncharacters
]
DELETED_RANGES: list[tuple[int, int]] = CF_15_1 + DEFAULT_IGNORABLE_15_1 + OTHERS
DELETED: frozenset[int] = frozenset(c for a, b in DELETED_RANGES for c in range(a, b + 1))
KEPT_IN_LINES = frozenset({0x09, 0x0A})


def reference(value: str, limit: int, lines: bool = False) -> str:
    """Obviously correct (slow) model of ``reflect.text``."""
    kept = KEPT_IN_LINES if lines else frozenset()
    return "".join(ch for ch in value if ord(ch) not in DELETED or ord(ch) in kept)[:limit]


def test_the_library_table_is_the_rule() -> None:
    table = frozenset(c for a, b in reflect.HIDDEN_RANGES for c in range(a, b + 1))
    assert table == DELETED
    previous = -1
    for first, last in reflect.HIDDEN_RANGES:  # sorted and disjoint
        assert previous < first <= last
        previous = last


def test_every_hidden_category_of_this_python_is_deleted() -> None:
    hidden = {"Cc", "Cf", "Cs", "Co", "Zl", "Zp"}
    missing = [hex(c) for c in range(sys.maxunicode + 1) if unicodedata.category(chr(c)) in hidden and c not in DELETED]
    assert missing == []


# ---------------------------------------------------------------------------
# text(): one row per deleted range, both ends, plus the neighbours kept.

@pytest.mark.parametrize(("first", "last"), sorted(set(DELETED_RANGES)))
def test_each_range_is_deleted_whole(first: int, last: int) -> None:
    every = "".join(chr(c) for c in range(first, min(last, first + 5000) + 1))
    assert reflect.text("a" + every + "b", 10**6) == "ab"
    assert reflect.text(chr(first), 10) == ""
    assert reflect.text(chr(last), 10) == ""
    # the same inside non-ASCII text (the regex path) and beside a code point above U+FFFF
    assert reflect.text("é" + every + "ü", 10**6) == "éü"
    assert reflect.text("🙂" + every + chr(last) + "ü", 10**6) == "🙂ü"


@pytest.mark.parametrize(
    "kept",
    [0x20, 0x7E, 0xA0, 0xAC, 0xAE, 0x0378, 0x061B, 0x061D, 0x1161, 0x180A, 0x2000, 0x200A, 0x2010,
     0x2027, 0x202F, 0x205F, 0x2800, 0x3000, 0x3163, 0x3165, 0xF900, 0xFDCF, 0xFDF0, 0xFE10, 0xFEFE,
     0xFF00, 0xFFA1, 0xFFFC, 0xFFFD, 0x10000, 0x1343F + 1, 0x1F642, 0x1FFFD, 0xDFFFD, 0xE1000, 0xEFFFD],
)
def test_neighbours_and_others_are_kept(kept: int) -> None:
    assert reflect.text(chr(kept), 10) == chr(kept)
    assert reflect.text("x" + chr(kept) + "\x00", 10) == "x" + chr(kept)


def test_exactly_the_listed_code_points_are_deleted() -> None:
    everything = "".join(chr(c) for c in range(sys.maxunicode + 1))
    cleaned = reflect.text(everything, sys.maxunicode + 1)
    assert len(cleaned) == sys.maxunicode + 1 - len(DELETED)
    assert not any(ord(ch) in DELETED for ch in cleaned)
    lines = reflect.text(everything, sys.maxunicode + 1, lines=True)
    assert lines == reference(everything, sys.maxunicode + 1, lines=True)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("one\ntwo\tthree", "one\ntwo\tthree"),
        ("crlf\r\nnext", "crlf\nnext"),
        ("\x1b[2J\u2028\u2029\x85\x0b\x0c", "[2J"),
        ("é\nü\u200b", "é\nü"),
    ],
)
def test_lines_keeps_line_feeds_and_tabs_only(value: str, expected: str) -> None:
    assert reflect.text(value, 100, lines=True) == expected
    assert reflect.text(value, 100) == expected.replace("\n", "").replace("\t", "")


@pytest.mark.parametrize(
    ("value", "limit", "expected"),
    [
        ("hello", 0, ""),
        ("hello", 3, "hel"),
        ("hello", 5, "hello"),
        ("hello", 50, "hello"),
        ("\x1b[31mred\x1b[0m", 5, "[31mr"),  # deletion happens before the cut
        ("\u202egnp.exe", 4, "gnp."),
        ("🙂🙂🙂", 2, "🙂🙂"),  # code points, not UTF-16 units or bytes
        ("e\u0301e\u0301", 3, "e\u0301e"),  # combining marks count separately
        ("", 10, ""),
    ],
)
def test_limit_cuts_after_deleting(value: str, limit: int, expected: str) -> None:
    assert reflect.text(value, limit) == expected


@pytest.mark.parametrize("fill", ["a", "é", "\u200b", "a\u200b", "\x00é"])
@pytest.mark.parametrize("limit", [0, 1, 100, 4096, 5000])
def test_long_strings_match_the_model(fill: str, limit: int) -> None:
    value = fill * 20_000 + "tail\u2066end"
    assert reflect.text(value, limit) == reference(value, limit)


def test_huge_string_is_cut_cheaply_and_correctly() -> None:
    value = "\u200b" * 3_000_000 + "x" * 10 + "é" * 10_000
    assert reflect.text(value, 4096) == reference(value, 4096)


@pytest.mark.parametrize(
    ("value", "limit", "error"),
    [(b"bytes", 3, TypeError), (None, 3, TypeError), ("s", 1.5, TypeError),
     ("s", True, TypeError), ("s", -1, ValueError)],
)
def test_bad_arguments(value: object, limit: object, error: type[Exception]) -> None:
    with pytest.raises(error):
        reflect.text(value, limit)  # type: ignore[arg-type]


interesting = st.one_of(
    st.characters(),
    st.sampled_from([chr(c) for a, b in DELETED_RANGES for c in (a, b)]),
    st.sampled_from(["\u00a0", "\u061b", "\u2027", "\u202f", "\u2800", "\U000e1000", "\n", "\t", "🙂"]),
)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=interesting, max_size=60), st.integers(min_value=0, max_value=80))
def test_idempotent_and_matches_model(value: str, limit: int) -> None:
    once = reflect.text(value, limit)
    assert not any(ord(ch) in DELETED for ch in once)  # never a forbidden code point
    assert len(once) <= limit  # never past its limit
    assert reflect.text(once, limit) == once  # idempotent
    assert once == reference(value, limit)


@settings(max_examples=200, deadline=None)
@given(
    st.text(alphabet=interesting, max_size=60),
    st.integers(min_value=0, max_value=40),
    st.integers(min_value=0, max_value=40),
)
def test_shorter_limit_is_a_prefix(value: str, n: int, extra: int) -> None:
    assert reflect.text(value, n) == reflect.text(value, n + extra)[:n]


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=interesting, max_size=60), st.integers(min_value=0, max_value=80))
def test_lines_matches_model(value: str, limit: int) -> None:
    once = reflect.text(value, limit, lines=True)
    assert once == reference(value, limit, lines=True)
    assert reflect.text(once, limit, lines=True) == once


# ---------------------------------------------------------------------------
# dumps() and tree()

json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False),
              st.text(alphabet=interesting, max_size=20)),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(alphabet=interesting, max_size=8), inner, max_size=4)),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(json_values, st.sampled_from([None, 2]), st.booleans())
def test_dumps_is_faithful_json_without_hidden_code_points(value: object, indent: int | None, sort_keys: bool) -> None:
    out = reflect.dumps(value, indent=indent, sort_keys=sort_keys)
    assert json.loads(out) == value  # valid and faithful
    assert all(ord(ch) not in DELETED or ch == "\n" for ch in out)  # a line feed only between members


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("\u202e\u200b\x9b\x7f", '"\\u202e\\u200b\\u009b\\u007f"'),
        ("tag\U000e0041", '"tag\\udb40\\udc41"'),
        ("lone \ud800", '"lone \\ud800"'),
        ({"é": "日本"}, '{"é": "日本"}'),
    ],
)
def test_dumps_escapes(value: object, expected: str) -> None:
    assert reflect.dumps(value) == expected


def test_tree_cleans_every_string_and_key() -> None:
    value = {"a\u200b": ["x\ny\u202e\x1b[2J", float("inf"), float("nan"), {"k\u00ad": 1}], "b": "z" * 10_000}
    assert reflect.tree(value, lines=True) == {"a": ["x\ny[2J", None, None, {"k": 1}], "b": "z" * 10_000}
    assert reflect.tree(value, limit=3) == {"a": ["xy[", None, None, {"k": 1}], "b": "zzz"}
    assert reflect.tree([[[1]]], max_depth=2) == [["…"]]
    with pytest.raises(ValueError):
        reflect.tree({}, limit=-1)
    with pytest.raises(TypeError):
        reflect.tree({}, max_depth=True)


# ---------------------------------------------------------------------------
# log_entry()

@pytest.mark.parametrize("level", list(reflect.LEVELS))
def test_known_levels_are_kept(level: str) -> None:
    assert reflect.log_entry({"level": level, "data": "x"}) == {"level": level, "data": "x"}


@pytest.mark.parametrize(
    "level", ["INFO", "Warning", "warn", "fatal", "", " info", 3, None, ["error"], {"a": 1}]
)
def test_other_levels_become_info(level: object) -> None:
    assert reflect.log_entry({"level": level, "data": 1}) == {"level": "info", "data": 1}


def test_missing_level_and_data() -> None:
    assert reflect.log_entry({}) == {"level": "info", "data": None}


@pytest.mark.parametrize(
    ("logger", "expected"),
    [
        ("db", {"logger": "db"}),
        ("\x1b[2Jdb\u202e", {"logger": "[2Jdb"}),
        ("L" * 300, {"logger": "L" * 256}),
        ("", {"logger": ""}),
        (7, {}),
        (None, {}),
        (["x"], {}),
    ],
)
def test_logger(logger: object, expected: dict[str, object]) -> None:
    entry = reflect.log_entry({"level": "debug", "logger": logger, "data": "d"})
    assert entry == {"level": "debug", **expected, "data": "d"}


def test_other_keys_dropped_and_input_untouched() -> None:
    params = {"level": "error", "data": {"k": "v"}, "_meta": {"x": 1}, "extra": "boom"}
    entry = reflect.log_entry(params)
    assert entry == {"level": "error", "data": {"k": "v"}}
    assert params["extra"] == "boom"
    assert entry is not None and entry["data"] is not params["data"]


@pytest.mark.parametrize("params", [None, [], "text", 3, ["level", "info"]])
def test_non_dict_params(params: object) -> None:
    assert reflect.log_entry(params) is None


def test_data_strings_and_keys_cleaned() -> None:
    data = {
        "msg\u200b": "a\x00b" + "c" * 5000,
        "list": ["\u2066x\u2069", 1, 2.5, True, None, {"\ufeffk": "\x85v"}],
        "k" * 5000: "long key",
    }
    entry = reflect.log_entry({"level": "info", "data": data})
    assert entry is not None
    out = entry["data"]
    assert out == {
        "msg": "ab" + "c" * 4094,
        "list": ["x", 1, 2.5, True, None, {"k": "v"}],
        "k" * 4096: "long key",
    }


def test_data_scalar_string_cleaned() -> None:
    assert reflect.log_entry({"data": "x\r\ny" * 2000}) == {
        "level": "info",
        "data": ("xy" * 2000)[:4096],
    }


def test_colliding_keys_first_wins() -> None:
    entry = reflect.log_entry({"data": {"a": 1, "a\u200b": 2}})
    assert entry == {"level": "info", "data": {"a": 1}}


def test_non_json_values_from_python() -> None:
    entry = reflect.log_entry({"data": {1: ("t", b"raw"), None: {1.5: object()}}})
    assert entry == {"level": "info", "data": {"1": ["t", "<bytes>"], "null": {"1.5": "<object>"}}}


def nest(depth: int, leaf: object = "leaf") -> object:
    value: object = leaf
    for _ in range(depth):
        value = [value]
    return value


def depth_of(value: object) -> int:
    """Container depth, ``data`` itself counting as 1."""
    depth = 0
    while isinstance(value, (list, dict)):
        depth += 1
        value = value[0] if isinstance(value, list) else next(iter(value.values()))
    return depth


@pytest.mark.parametrize(
    ("depth", "kept_depth", "leaf"),
    [(1, 1, "leaf"), (15, 15, "leaf"), (16, 16, "leaf"), (17, 16, "…"), (40, 16, "…")],
)
def test_depth_limit(depth: int, kept_depth: int, leaf: str) -> None:
    entry = reflect.log_entry({"data": nest(depth)})
    assert entry is not None
    out = entry["data"]
    assert depth_of(out) == kept_depth
    for _ in range(kept_depth):
        assert isinstance(out, list)
        out = out[0]
    assert out == leaf


def test_depth_limit_with_dicts_and_siblings() -> None:
    data: object = {"x": 1}
    for _ in range(16):
        data = {"d": data, "s": "kept"}
    # data is now 17 dict levels; the innermost {"x": 1} is level 17.
    entry = reflect.log_entry({"data": data})
    assert entry is not None
    out = entry["data"]
    for _ in range(15):
        assert isinstance(out, dict) and out["s"] == "kept"
        out = out["d"]
    assert out == {"d": "…", "s": "kept"}


@pytest.mark.parametrize(
    ("max_depth", "expected"),
    [(0, "…"), (1, ["…", 1]), (2, [["…"], 1]), (3, [[["deep"]], 1])],
)
def test_custom_max_depth(max_depth: int, expected: object) -> None:
    entry = reflect.log_entry({"data": [[["deep"]], 1]}, max_depth=max_depth)
    assert entry == {"level": "info", "data": expected}


def test_bad_max_depth() -> None:
    with pytest.raises(ValueError):
        reflect.log_entry({}, max_depth=-1)
    with pytest.raises(TypeError):
        reflect.log_entry({}, max_depth="16")  # type: ignore[arg-type]


def test_hostile_deep_nesting_does_not_blow_the_stack() -> None:
    lists = nest(100_000)
    entry = reflect.log_entry({"level": "alert", "data": lists})
    assert entry is not None
    assert depth_of(entry["data"]) == 16
    dicts: object = "x"
    for _ in range(100_000):
        dicts = {"k": dicts}
    entry = reflect.log_entry({"data": dicts}, max_depth=1_000_000)
    assert entry is not None
    assert depth_of(entry["data"]) == 100_000


def test_order_preserved_in_wide_containers() -> None:
    data = [[i, {"v": i}] for i in range(1000)]
    entry = reflect.log_entry({"data": data})
    assert entry == {"level": "info", "data": data}
