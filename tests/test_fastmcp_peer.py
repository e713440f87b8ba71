"""FastMCP 4.1.6 servers answering through the library, in both eras, over stdio and HTTP; and a configuration
file naming FastMCP and the reference filesystem server, opened through connect_all and the command line.

The server is tests/peers/fastmcp_server.py on FastMCP's own stack (its
venv is made by peers/setup.sh, pinned). In the 2025-11-25 era its tools ask
through server-to-client requests: Context elicitation with dataclass,
pydantic and primitive answers, sampling, roots, logs and progress. In the
2026-07-28 era its ``mrtr_*`` tools answer ``input_required`` and the
library runs the rounds; FastMCP's ``ctx.elicit`` is refused there by FastMCP
itself (it says so in an ``isError`` result).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, Iterator

import pytest

import mcp_input_sync as mis

from .harness import PEERS_DIR
from .http_peers import http_peer
from .test_filesystem_peer import COMMAND as FILESYSTEM_COMMAND
from .test_filesystem_peer import FILESYSTEM, NODE, wait_allowed
from .test_oauth_fastmcp import FASTMCP_PYTHON

SERVER = [str(FASTMCP_PYTHON), str(PEERS_DIR / "fastmcp_server.py")]
REPO = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(not FASTMCP_PYTHON.exists(), reason="run peers/setup.sh to install FastMCP (pinned)")


class Answers(mis.InputHandler):
    """Answers FastMCP's forms by their fields, samples "hi", gives one root, keeps logs and progress."""

    def __init__(self, root: str = "file:///tmp") -> None:
        self.root = root
        self.logs: list[Any] = []
        self.server_ids: set[str] = set()
        self.lock = threading.Condition()

    def handle_elicitation(self, params: dict[str, Any], ctx: mis.InputContext) -> dict[str, Any]:
        with self.lock:
            self.server_ids.add(ctx.server_id)
        fields = set((params.get("requestedSchema") or {}).get("properties") or {})
        if fields == {"name", "age"}:
            return {"action": "accept", "content": {"name": "Ada", "age": 36}}
        if fields == {"city", "nights"}:
            return {"action": "accept", "content": {"city": "Porto", "nights": 3}}
        if fields == {"value"}:
            return {"action": "accept", "content": {"value": 7}}
        if fields == {"name"}:
            return {"action": "accept", "content": {"name": "Grace"}}
        return {"action": "decline"}

    def handle_sampling(self, params: dict[str, Any], ctx: mis.InputContext) -> dict[str, Any]:
        return {"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "test-model"}

    def list_roots(self, ctx: mis.InputContext) -> dict[str, Any]:
        return {"roots": [{"uri": self.root, "name": "root"}]}

    def handle_log(self, entry: dict[str, Any], ctx: mis.InputContext) -> None:
        with self.lock:
            self.logs.append(entry)
            self.lock.notify_all()

    def wait_logs(self, count: int) -> int:
        """Logs arrive on the notification thread, after the call's answer: wait (bounded) for ``count``."""
        with self.lock:
            self.lock.wait_for(lambda: len(self.logs) >= count, timeout=10)
            return len(self.logs)


def text(result: dict[str, Any]) -> str:
    return str(result["content"][0]["text"])


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    with http_peer("fastmcp_server.py", python=str(FASTMCP_PYTHON), seconds=60) as url:
        yield url


def open_client(transport: str, protocol: str, http_url: str, handler: mis.InputHandler) -> mis.Client:
    if transport == "stdio":
        return mis.connect_stdio(SERVER, handler=handler, protocol=protocol, timeout=30.0)
    return mis.connect_http(http_url, handler=handler, protocol=protocol, timeout=30.0)


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_legacy_era_elicitation_sampling_roots_logs_and_progress(transport: str, http_url: str) -> None:
    handler = Answers()
    progress: list[dict[str, Any]] = []
    with open_client(transport, "legacy", http_url, handler) as client:
        assert client.era == "legacy"
        assert text(client.call_tool("elicit_dataclass", {})) == "accepted name=Ada age=36"
        assert text(client.call_tool("elicit_pydantic", {})) == "accepted city=Porto nights=3"
        assert text(client.call_tool("elicit_primitive", {})) == "accepted value=7"
        assert text(client.call_tool("sample", {})) == "sampled: hi"
        assert text(client.call_tool("roots", {})) == "file:///tmp"
        result = client.call_tool("log_and_progress", {}, progress=progress.append)
        assert text(result) == "done"
    assert [p["progress"] for p in progress] == [1, 2, 3] and {p["total"] for p in progress} == {3}
    assert handler.wait_logs(3) == 3


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_modern_era_input_required_rounds(transport: str, http_url: str) -> None:
    handler = Answers()
    with open_client(transport, "modern", http_url, handler) as client:
        assert client.era == "modern" and client.protocol_version == "2026-07-28"
        assert text(client.call_tool("mrtr_form", {})) == "hello Grace"
        assert text(client.call_tool("mrtr_sampling", {})) == "sampled: hi"
        assert text(client.call_tool("echo", {"text": "ping"})) == "ping"
        with pytest.raises(mis.ClientError) as info:  # FastMCP refuses ctx.elicit in this era itself
            client.call_tool("elicit_dataclass", {})
        assert (info.value.kind, info.value.check) == ("protocol", "era")
        assert info.value.data["result"]["isError"] is True and 'protocol="legacy"' in info.value.message


def test_era_detection_prefers_the_handshake_era_for_fastmcp_over_http(http_url: str) -> None:
    with mis.connect_http(http_url, handler=Answers()) as client:
        assert client.protocol_version == "2025-11-25"
    with mis.connect_http(http_url, handler=Answers(), protocol="prefer-modern") as client:
        assert client.protocol_version == "2026-07-28"


# ---------------------------------------------------------------------------- a configuration file naming real servers


@pytest.fixture
def config_file(tmp_path: Path, http_url: str) -> Path:
    (tmp_path / "files").mkdir()
    (tmp_path / "files" / "hello.txt").write_text("hello from the filesystem server")
    servers: dict[str, Any] = {
        "fast": {"command": SERVER[0], "args": SERVER[1:]},
        "fast-http": {"type": "http", "url": http_url},
    }
    if NODE.exists() and FILESYSTEM.exists():
        servers["files"] = {"command": FILESYSTEM_COMMAND[0], "args": FILESYSTEM_COMMAND[1:]}
    path = tmp_path / ".mcp.json"
    path.write_text(json.dumps({"mcpServers": servers}))
    return path


def test_a_configuration_file_of_real_servers_through_connect_all(config_file: Path) -> None:
    files = config_file.parent / "files"
    handler = Answers(root=files.resolve().as_uri())
    with mis.connect_all(config_file, handler=handler, protocol="legacy", timeout=30.0) as group:
        names = {tool["name"] for tool in group.list_tools()}
        assert {"fast/elicit_pydantic", "fast-http/elicit_pydantic"} <= names
        assert text(group.call_tool("fast/elicit_pydantic")) == "accepted city=Porto nights=3"
        assert text(group.call_tool("fast-http/elicit_primitive")) == "accepted value=7"
        if "files" in group:
            wait_allowed(group["files"], [files])
            read = group.call_tool("files/read_text_file", {"path": str(files / "hello.txt")})
            assert text(read) == "hello from the filesystem server"
    assert {"fast", "fast-http"} <= handler.server_ids  # one handler, told apart by ctx.server_id


def test_a_configuration_file_of_real_servers_through_the_command_line(config_file: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "mcp_input_sync", *args], capture_output=True, text=True, timeout=120,
                              cwd=config_file.parent, env=env, stdin=subprocess.DEVNULL)

    done = cli("tools", "--protocol", "legacy")  # ./.mcp.json, found by itself: no terminal to say yes at
    assert done.returncode == 2 and "server 'fast' would run a command" in done.stderr, done.stderr
    done = cli("tools", "--protocol", "legacy", "--trust-config")
    assert done.returncode == 0, done.stderr
    assert "using .mcp.json" in done.stderr
    rows = [line.split()[:2] for line in done.stdout.splitlines()]
    assert ["fast", "elicit_dataclass"] in rows and ["fast-http", "echo"] in rows
    answers = config_file.parent / "answers.json"
    answers.write_text(json.dumps({"city": "Lisbon", "nights": 4}))
    done = cli("call", "--protocol", "legacy", "--trust-config", "--answers", str(answers), "fast/elicit_pydantic", "{}")
    assert done.returncode == 0 and done.stdout.splitlines()[0] == "accepted city=Lisbon nights=4", done.stderr
    done = cli("call", "--config", str(config_file), "--server", "fast-http", "echo", '{"text": "over http"}')
    assert done.returncode == 0 and done.stdout.splitlines()[0] == "over http", done.stderr
