"""Roots only where the person gave them (issue 32): the terminal handler and the CLI offer no folder by default.

server-filesystem replaces the folders named on its command line with the
client's roots, so a default root (the current folder) would widen what it
may read. Without ``roots=``, ``--root`` or an answers ``_roots`` the client
declares no ``roots`` capability: the server never asks and keeps its
folder. The server decides on its own after ``initialized``, so the checks
wait (bounded) for what it says on stderr, its evidence of having decided,
before looking: from Python on its logger, from the CLI through
``tests/peers/settled_relay.py``, which holds the CLI's call until then.
"""

from __future__ import annotations

import io
import logging
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, Iterator, Optional

import pytest

import mcp_input_sync as mis
from mcp_input_sync.terminal import TerminalHandler
from mcp_input_sync.testing import ClientRefused, FakeServer

from .test_filesystem_peer import COMMAND, FILESYSTEM, NODE

REPO = Path(__file__).resolve().parents[1]
RELAY = [sys.executable, str(Path(__file__).parent / "peers" / "settled_relay.py")]
#: What server-filesystem says on stderr once it has decided its folders after ``initialized``.
SETTLED = ("Client does not support MCP Roots|Updated allowed directories from MCP roots|No valid root directories"
           "|Client returned no roots set|Failed to request initial roots")
#: The bound of every wait on the server (real seconds).
BOUND = 30.0

peer = pytest.mark.skipif(not (NODE.exists() and FILESYSTEM.exists()), reason="run peers/setup.sh to install server-filesystem")


@pytest.fixture
def place(tmp_path: Path) -> Iterator[Path]:
    """``tmp_path`` holds ``fsroot/inside.txt``, ``outside.txt`` and ``other/note.txt``: the server gets ``fsroot``."""
    for folder in ("fsroot", "other"):
        (tmp_path / folder).mkdir()
    (tmp_path / "fsroot" / "inside.txt").write_text("inside")
    (tmp_path / "outside.txt").write_text("SECRET")
    (tmp_path / "other" / "note.txt").write_text("other")
    yield tmp_path.resolve()


class Settled(logging.Handler):
    """Watches a stdio server's stderr logger for the line saying it decided its folders."""

    def __init__(self, server_id: str) -> None:
        super().__init__(logging.INFO)
        self.said = threading.Event()
        self.lines: list[str] = []
        self.level_was = logging.NOTSET
        self.logger = logging.getLogger(f"mcp_input_sync.server.{server_id}")

    def emit(self, record: logging.LogRecord) -> None:
        line = record.getMessage()
        self.lines.append(line)
        if any(part in line for part in SETTLED.split("|")):
            self.said.set()

    def __enter__(self) -> "Settled":
        self.level_was = self.logger.level
        self.logger.setLevel(logging.INFO)
        self.logger.addHandler(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        self.logger.removeHandler(self)
        self.logger.setLevel(self.level_was)

    def wait(self) -> list[str]:
        assert self.said.wait(BOUND), f"server-filesystem never said what it did after initialized: {self.lines}"
        return self.lines


def allowed(client: mis.Client) -> list[str]:
    text = client.call_tool("list_allowed_directories", {})["content"][0]["text"]
    return [line for line in text.splitlines()[1:] if line]


def read(client: mis.Client, path: Path) -> dict[str, Any]:
    result: dict[str, Any] = client.call_tool("read_text_file", {"path": str(path)})
    return result


def cli(place: Path, *words: str, root: Optional[str] = None) -> subprocess.CompletedProcess[str]:
    """``mcp-input-sync call --yes -v ... -- relay node server-filesystem <place>/fsroot``, run in ``place``."""
    roots = ["--root", root] if root is not None else []
    return subprocess.run(
        [sys.executable, "-m", "mcp_input_sync", "call", "--yes", "-v", "--timeout", str(BOUND), *roots, *words,
         "--", *RELAY, SETTLED, "--", *COMMAND, str(place / "fsroot")],
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=2 * BOUND, cwd=place,
    )


# ---------------------------------------------------------------------------- from Python


@peer
def test_a_terminal_handler_keeps_server_filesystem_in_its_folder(place: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(place)  # the folder the old default offered: the parent of fsroot
    out = io.StringIO()
    handler = TerminalHandler(assume_yes=True, stdout=out)
    with Settled("fs") as settled, mis.connect_stdio([*COMMAND, str(place / "fsroot")], handler=handler, server_id="fs") as client:
        said = settled.wait()
        assert "roots" not in client.capabilities(str(client.protocol_version))
        assert any("does not support MCP Roots" in line for line in said), said
        assert allowed(client) == [str(place / "fsroot")]
        refused = read(client, place / "outside.txt")
        assert refused.get("isError") is True and "denied" in refused["content"][0]["text"].lower() and "SECRET" not in str(refused)
        assert read(client, place / "fsroot" / "inside.txt")["content"][0]["text"] == "inside"
        assert client.stats["served"] == 0 and dict(client.stats["refused"]) == {}  # no roots/list came at all
    assert "  roots " not in out.getvalue()


@peer
def test_roots_given_in_python_are_still_offered(place: Path) -> None:
    out = io.StringIO()
    handler = TerminalHandler(assume_yes=True, stdout=out, roots=[place / "other"])
    with Settled("fs") as settled, mis.connect_stdio([*COMMAND, str(place / "fsroot")], handler=handler, server_id="fs") as client:
        settled.wait()
        assert allowed(client) == [str(place / "other")]
        assert read(client, place / "other" / "note.txt")["content"][0]["text"] == "other"
        assert read(client, place / "fsroot" / "inside.txt").get("isError") is True
        assert client.stats["served"] == 1
    assert f"-> {(place / 'other').as_uri()}" in out.getvalue()


# ---------------------------------------------------------------------------- from the command line


@peer
def test_the_cli_without_root_cannot_read_outside_the_servers_folder(place: Path) -> None:
    done = cli(place, "read_text_file", f"path={place / 'outside.txt'}")
    assert done.returncode == 1, done.stdout + done.stderr  # the tool's own error: access denied
    assert "denied" in done.stdout.lower() and "SECRET" not in done.stdout
    assert "does not support MCP Roots" in done.stderr and "relay: the server asked roots/list" not in done.stderr
    assert "  roots " not in done.stderr
    listed = cli(place, "list_allowed_directories")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.split() == ["Allowed", "directories:", str(place / "fsroot")]


@peer
def test_the_cli_offers_the_folders_of_root(place: Path) -> None:
    listed = cli(place, "list_allowed_directories", root="other")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.split() == ["Allowed", "directories:", str(place / "other")]
    assert "relay: the server asked roots/list" in listed.stderr and f"-> {(place / 'other').as_uri()}" in listed.stderr


# ---------------------------------------------------------------------------- the capability, in memory


@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_the_roots_capability_follows_what_was_given(era: str) -> None:
    given: list[tuple[dict[str, Any], Optional[dict[str, Any]]]] = [
        ({}, None),
        ({"roots": ["/srv/a"]}, {"uri": "file:///srv/a", "name": "a"}),
        ({"answers": {"_roots": ["/srv/b"]}}, {"uri": "file:///srv/b", "name": "b"}),
        ({"answers": {}, "roots": ["/srv/c"]}, {"uri": "file:///srv/c", "name": "c"}),  # answers without _roots keep roots=
        ({"answers": {"_roots": []}, "roots": ["/srv/d"]}, None),  # an answers _roots replaces them, even empty
    ]
    for options, root in given:
        handler = TerminalHandler(stdout=io.StringIO(), **options)
        with FakeServer(era=era) as fake:

            @fake.tool
            def ask(call: Any) -> str:
                try:
                    return repr(call.roots())
                except ClientRefused as refused:
                    return f"refused {refused.code}"

            with fake.client(handler=handler) as client:
                try:
                    text = client.call_tool("ask")["content"][0]["text"]
                except mis.ClientError as exc:  # modern: a round asking for what was not declared fails the call
                    text = f"refused {exc.code}"
                client.notify_roots_changed()
                client.ping()
            assert ("roots" in (fake.client_capabilities or {})) is (root is not None), (options, fake.client_capabilities)
            assert text == (repr([root]) if root is not None else "refused -32601"), (options, text)
            changed = fake.requests_seen("notifications/roots/list_changed")
            assert len(changed) == (1 if root is not None and era == "legacy" else 0), options

