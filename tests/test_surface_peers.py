"""The client's surface against real servers, in both eras, over stdio and HTTP: completion, set_log_level,
request(), meta=, listing pages, the -32020 resend and output schemas.

server-everything (its completable prompt and resource template; it speaks the
handshake era only), an SDK 2.3.0 server (tests/peers/sdk_surface_server.py) and
a FastMCP 4.1.6 server (tests/peers/fastmcp_surface_server.py), each era forced.
"""

from __future__ import annotations

import json
import logging
import sys
import threading
from contextlib import contextmanager
from typing import Any, Callable, Iterator

import pytest

import mcp_input_sync as mis

from .harness import PEERS_DIR
from .http_peers import http_peer
from .test_everything import EVERYTHING, NODE22, connect  # noqa: F401  (connect: the stdio and HTTP fixture)
from .test_oauth_fastmcp import FASTMCP_PYTHON

JsonDict = dict[str, Any]
WAIT = 10.0
TEAM = {"type": "ref/prompt", "name": "team"}
ENVELOPE = ["io.modelcontextprotocol/clientCapabilities", "io.modelcontextprotocol/clientInfo", "io.modelcontextprotocol/protocolVersion"]

needs_everything = pytest.mark.skipif(not (NODE22.exists() and EVERYTHING.exists()), reason="run peers/setup.sh to install server-everything")


class Logs(mis.InputHandler):
    """Keeps the log entries (they arrive on the notification thread)."""

    def __init__(self) -> None:
        self.entries: list[JsonDict] = []
        self.changed = threading.Condition()

    def handle_log(self, entry: JsonDict, ctx: mis.InputContext) -> None:
        with self.changed:
            self.entries.append(entry)
            self.changed.notify_all()

    def wait(self, count: int, levels: tuple[str, ...] = ()) -> list[JsonDict]:
        """The entries once ``count`` have come and every one of ``levels`` among them (bounded)."""

        def done() -> bool:
            return len(self.entries) >= count and set(levels) <= {entry.get("level") for entry in self.entries}

        with self.changed:
            self.changed.wait_for(done, timeout=WAIT)
            return list(self.entries)


def text(result: JsonDict) -> str:
    return "".join(block.get("text", "") for block in result["content"])


# ---------------------------------------------------------------------------- server-everything


@needs_everything
def test_everything_completes_its_completable_prompt_and_its_resource_template(connect: Any) -> None:  # noqa: F811
    with connect(Logs()) as client:
        ref = {"type": "ref/prompt", "name": "completable-prompt"}
        assert client.complete(ref, "department", "E")["values"] == ["Engineering"]
        team = client.complete(ref, "name", "", context={"department": "Engineering"})
        assert team["values"] and all(isinstance(v, str) for v in team["values"])
        template = {"type": "ref/resource", "uri": "demo://resource/dynamic/text/{resourceId}"}
        assert "1" in client.complete(template, "resourceId", "1")["values"]


@needs_everything
def test_everything_structured_content_pages_meta_levels_and_request(connect: Any) -> None:  # noqa: F811
    handler = Logs()
    with connect(handler) as client:
        result = client.call_tool("get-structured-content", {"location": "Chicago"}, meta={"com.example/trace": "t1"})
        assert set(result["structuredContent"]) >= {"temperature", "conditions"}  # checked against its draft-07 schema
        page = client.list_tools_page()
        assert {t["name"] for t in page["tools"]} >= {"echo", "get-structured-content"}
        assert client.request("ping") == {}
        assert client.request("prompts/list")["prompts"]
        client.set_log_level("debug")
        client.call_tool("toggle-simulated-logging", {})
        assert handler.wait(1)


# ---------------------------------------------------------------------------- the SDK and FastMCP servers

Connect = Callable[..., mis.Client]


@contextmanager
def opener(kind: str, transport: str, era: str) -> Iterator[Connect]:
    if kind == "fastmcp" and not FASTMCP_PYTHON.exists():
        pytest.skip("run peers/setup.sh to install FastMCP (pinned)")
    python = str(FASTMCP_PYTHON) if kind == "fastmcp" else sys.executable
    script = f"{kind}_surface_server.py"
    if transport == "stdio":
        yield lambda **options: mis.connect_stdio([python, str(PEERS_DIR / script)], protocol=era, **options)
        return
    with http_peer(script, python=python) as url:
        yield lambda **options: mis.connect_http(url, protocol=era, **options)


PEERS = [(k, t, e) for k in ("sdk", "fastmcp") for t in ("stdio", "http") for e in ("legacy", "modern")]


@pytest.mark.parametrize("kind,transport,era", PEERS, ids=["-".join(p) for p in PEERS])
def test_completion_meta_output_schemas_and_levels(kind: str, transport: str, era: str) -> None:
    handler = Logs()
    with opener(kind, transport, era) as open_client, open_client(handler=handler) as client:
        assert client.era == era
        assert client.complete(TEAM, "department", "E")["values"] == ["Engineering"]
        assert client.complete(TEAM, "name", "", context={"department": "Engineering"})["values"] == ["Ada", "Alan", "Grace"]
        assert client.call_tool("weather", {"city": "Oslo"})["structuredContent"] == {"temperature": 21.5, "conditions": "sunny in Oslo"}
        keys = json.loads(text(client.call_tool("show_meta", {}, meta={"com.example/trace": "t1"})))
        assert "com.example/trace" in keys
        assert set(ENVELOPE) <= set(keys) if era == "modern" else not any(k.startswith("io.modelcontextprotocol/") for k in keys)
        client.set_log_level("warning")
        assert text(client.call_tool("levels", {})) == "logged"
        # a server that does not filter sends debug and info first: wait for the two that must come
        levels = [entry["level"] for entry in handler.wait(2, ("warning", "error"))]
        assert "warning" in levels and "error" in levels
        if era == "modern" or kind == "fastmcp":  # the SDK's handshake era does not filter by the level
            assert "debug" not in levels and "info" not in levels
        first = client.list_tools_page()
        assert "weather" in {t["name"] for t in first["tools"]}


@pytest.mark.parametrize("kind", ["sdk", "fastmcp"])
def test_a_first_call_to_a_tool_with_an_x_mcp_header_is_resent_once_after_a_listing(kind: str, caplog: pytest.LogCaptureFixture) -> None:
    with opener(kind, "http", "modern") as open_client, open_client() as client:
        with caplog.at_level(logging.INFO, logger="mcp_input_sync"):
            assert text(client.call_tool("region", {"region": "eu", "query": "q"})) == "eu: q"
            assert text(client.call_tool("region", {"region": "us", "query": "r"})) == "us: r"
    resent = [r for r in caplog.records if "-32020" in r.getMessage()]
    assert len(resent) == 1  # the first call only: the listing taught the header


def test_fastmcp_structured_content_that_breaks_its_schema_is_refused_unless_the_check_is_off() -> None:
    with opener("fastmcp", "stdio", "legacy") as open_client:
        with open_client() as client:
            with pytest.raises(mis.ClientError) as info:
                client.call_tool("bad_weather", {})
            assert (info.value.kind, info.value.check) == ("protocol", "output")
            assert info.value.data["structuredContent"] == {"temperature": "warm"}
        with open_client(validate_output=False) as client:
            assert client.call_tool("bad_weather", {})["structuredContent"] == {"temperature": "warm"}
