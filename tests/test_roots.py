"""Table and property tests for the roots normalisation (_protocol/roots.py)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_input_sync._protocol.roots import RootsInvalid, normalise_roots, remove_dot_segments

KEPT = [
    ("file:///", "file:///"),
    ("file:///home/me/project", "file:///home/me/project"),
    ("file:///home/me/project/", "file:///home/me/project/"),
    ("file:///a/./b/../c", "file:///a/c"),
    ("file:///a/./b/../c/", "file:///a/c/"),
    ("file:///a/%2e%2E/b", "file:///b"),
    ("file:///a/%2E/b", "file:///a/b"),
    ("file:///a/.%2e/b", "file:///b"),
    ("file:///a/%2Fb", "file:///a/%2Fb"),
    ("file:///a/%2F..%2Fb", "file:///a/%2F..%2Fb"),
    ("file:///a/%252e%252e/b", "file:///a/%252e%252e/b"),
    ("file:///a%20b/c", "file:///a%20b/c"),
    ("FILE://LOCALHOST/x", "file:///x"),
    ("file://localhost/x/y/", "file:///x/y/"),
    ("File://LocalHost/", "file:///"),
    ("file:///../../etc", "file:///etc"),
    ("file:///..", "file:///"),
    ("file:///a/..", "file:///"),
    ("file:///a/.", "file:///a/"),
    ("file:///a/b/..", "file:///a/"),
    ("file:///a/...", "file:///a/..."),
    ("file:///a/.hidden/..x", "file:///a/.hidden/..x"),
    ("file:///a//b", "file:///a//b"),
    ("file:///C:/Users/me", "file:///C:/Users/me"),
    ("file:///C:/Users/../Windows", "file:///C:/Windows"),
    ("file:///home/caf\u00e9", "file:///home/caf\u00e9"),
]


@pytest.mark.parametrize(("uri", "expected"), KEPT)
def test_kept(uri: str, expected: str) -> None:
    roots, dropped = normalise_roots({"roots": [{"uri": uri}]})
    assert roots == [{"uri": expected}]
    assert dropped == []


DROPPED = [
    ("file://server/share", "remote host"),
    ("file://example.com/x", "remote host"),
    ("file://localhost:80/x", "remote host"),
    ("file://user@localhost/x", "remote host"),
    ("file://%6Cocalhost/x", "remote host"),
    ("file://127.0.0.1/x", "remote host"),
    ("https://x/y", "not a file URI"),
    ("http://localhost/x", "not a file URI"),
    ("files:///x", "not a file URI"),
    ("data:,x", "not a file URI"),
    ("file:relative", "not a file:// URI"),
    ("file:relative/../x", "not a file:// URI"),
    ("file:/abs/path", "not a file:// URI"),
    ("/home/me", "not an absolute URI"),
    ("relative/path", "not an absolute URI"),
    ("", "not an absolute URI"),
    ("file://", "not absolute"),
    ("file://localhost", "not absolute"),
    ("file:///a\nb", "control or whitespace"),
    ("file:///a\x00", "control or whitespace"),
    ("file:///a\u202eb", "control or whitespace"),
    ("file:///a b", "control or whitespace"),
    ("file:///a\u00a0b", "control or whitespace"),
    ("file:///a\\..\\..\\b", "backslash"),
    ("file:///x?y", "query or fragment"),
    ("file:///x#y", "query or fragment"),
    ("file:///x/?", "query or fragment"),
    ("file:////server/share", "starts with '//'"),
    ("file:///a/..//b", "starts with '//'"),
    ("file:///%2e%2e//b", "starts with '//'"),
]


@pytest.mark.parametrize(("uri", "reason"), DROPPED)
def test_dropped(uri: str, reason: str) -> None:
    roots, dropped = normalise_roots({"roots": [{"uri": uri, "name": "n"}]})
    assert roots == []
    assert len(dropped) == 1
    assert dropped[0].startswith("roots[0]: ")
    assert reason in dropped[0]
    if uri:
        assert uri not in dropped[0]


def test_order_names_meta_and_other_fields_kept() -> None:
    meta = {"k": [1, 2]}
    result = {
        "roots": [
            {"uri": "file:///b/./x", "name": "B", "_meta": meta},
            {"uri": "https://remote/x", "name": "R"},
            {"uri": "file://localhost/a", "name": "A", "extra": None},
            {"uri": "file://server/s"},
            {"uri": "file:///c/", "name": "C"},
        ],
        "_meta": {"ignored": True},
    }
    roots, dropped = normalise_roots(result)
    assert roots == [
        {"uri": "file:///b/x", "name": "B", "_meta": meta},
        {"uri": "file:///a", "name": "A", "extra": None},
        {"uri": "file:///c/", "name": "C"},
    ]
    assert roots[0]["_meta"] is meta
    assert list(roots[0]) == ["uri", "name", "_meta"]
    assert dropped == ["roots[1]: not a file URI", "roots[3]: remote host in file URI"]
    # the handler's objects are not mutated
    assert result["roots"][0]["uri"] == "file:///b/./x"  # type: ignore[index]


def test_empty_roots() -> None:
    assert normalise_roots({"roots": []}) == ([], [])


@pytest.mark.parametrize(
    "result",
    [
        None,
        [],
        "roots",
        [{"uri": "file:///x"}],
        {},
        {"roots": None},
        {"roots": {"uri": "file:///x"}},
        {"roots": ("file:///x",)},
        {"roots": ["file:///x"]},
        {"roots": [{"uri": "file:///x"}, None]},
        {"roots": [{"name": "no uri"}]},
        {"roots": [{"uri": None}]},
        {"roots": [{"uri": 1}]},
        {"roots": [{"uri": b"file:///x"}]},
        {"roots": [{"uri": "file:///ok"}, {"uri": ["file:///x"]}]},
        {"Roots": [{"uri": "file:///x"}]},
    ],
)
def test_malformed_result(result: Any) -> None:
    with pytest.raises(RootsInvalid):
        normalise_roots(result)


def test_roots_invalid_is_value_error() -> None:
    assert issubclass(RootsInvalid, ValueError)


@pytest.mark.parametrize(
    ("path", "expected"),
    [  # RFC 3986 section 5.2.4 and 5.4 examples
        ("/a/b/c/./../../g", "/a/g"),
        ("mid/content=5/../6", "mid/6"),
        ("/./g", "/g"),
        ("/../g", "/g"),
        ("/g.", "/g."),
        ("/.g", "/.g"),
        ("/g..", "/g.."),
        ("/..g", "/..g"),
        ("/b/c/./../g", "/b/g"),
        ("/b/c/./g/.", "/b/c/g/"),
        ("/b/c/g/./h", "/b/c/g/h"),
        ("/b/c/g/../h", "/b/c/h"),
        ("/b/c/g;x=1/./y", "/b/c/g;x=1/y"),
        ("/b/c/g;x=1/../y", "/b/c/y"),
        (".", ""),
        ("..", ""),
        ("../a", "a"),
        ("", ""),
    ],
)
def test_remove_dot_segments(path: str, expected: str) -> None:
    assert remove_dot_segments(path) == expected


def test_a_long_path_is_normalised() -> None:
    uri = "file:///" + "a/../" * 20_000 + "b/./" * 20_000 + "c"
    roots, _ = normalise_roots({"roots": [{"uri": uri}]})
    assert roots[0]["uri"] == "file:///" + "b/" * 20_000 + "c"


_CLEAN_PIECES = ["a", "b", "/", ".", "..", "%2e", "%2E", "%2F", "%25", "/../", "/./", "//", ":", "@", "\u00e9"]
_DIRTY_PIECES = ["?", "#", "\\", " ", "\n", "\u202e"]
_PATHISH = st.one_of(
    st.lists(st.sampled_from(_CLEAN_PIECES), max_size=25),
    st.lists(st.sampled_from(_CLEAN_PIECES + _DIRTY_PIECES), max_size=25),
).map("".join)

_URIS = st.one_of(
    st.text(max_size=30),
    st.builds(str.__add__, st.just("file:///"), _PATHISH),
    st.builds(
        lambda prefix, host, path: prefix + host + path,
        st.sampled_from(["file://", "FILE://", "file:", "file:/", "https://", "File://"]),
        st.sampled_from(["", "", "localhost", "LocalHost", "server", "localhost:1"]),
        st.builds(str.__add__, st.sampled_from(["/", "/", "/", ""]), _PATHISH),
    ),
)


@settings(max_examples=500, deadline=None)
@given(st.lists(_URIS, max_size=6))
def test_normalising_is_idempotent(uris: list[str]) -> None:
    result = {"roots": [{"uri": uri, "name": str(i)} for i, uri in enumerate(uris)]}
    roots, dropped = normalise_roots(result)
    assert len(roots) + len(dropped) == len(uris)
    for root in roots:
        assert root["uri"].startswith("file:///")
        assert not root["uri"].startswith("file:////")
        path = root["uri"][len("file://") :]
        assert remove_dot_segments(path) == path
    names = [root["name"] for root in roots]
    assert names == sorted(names, key=int)  # order kept
    again, dropped_again = normalise_roots({"roots": roots})
    assert again == roots
    assert dropped_again == []
