"""A stdio server's own words (issue #22, item 2): when it ends the connection, the error names its exit
status and ends with its last lines of stderr, cleaned and bounded; nothing of the kind elsewhere."""

from __future__ import annotations

import logging
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

import mcp_input_sync as mis
from mcp_input_sync._session import QUOTED_STDERR_LINES, last_words
from mcp_input_sync.testing import FakeServer

from .harness import SDK_SERVER

#: A raw stdio server: answers initialize, then fails as its argument says.
RAW = textwrap.dedent(
    """
    import json, os, signal, sys

    mode = sys.argv[1]
    for line in sys.stdin:
        message = json.loads(line)
        if message.get("method") == "initialize":
            result = {"protocolVersion": message["params"]["protocolVersion"], "capabilities": {"tools": {}},
                      "serverInfo": {"name": "raw", "version": "1"}}
            print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}), flush=True)
        elif message.get("method") == "tools/call":
            if mode == "traceback":
                def load(path):
                    raise ValueError(f"no config at {path}")
                load("/etc/app.toml")
            if mode == "noisy":
                for i in range(100):
                    sys.stderr.write(f"line {i}\\n")
                sys.stderr.write("\\x1b[31mred\\x1b[0m \\u202egnp.exe\\n")
                sys.exit(5)
            if mode == "signal":
                sys.stderr.write("about to be killed\\n")
                sys.stderr.flush()
                os.kill(os.getpid(), signal.SIGKILL)
    """
)


@pytest.fixture
def raw(tmp_path: Path) -> list[str]:
    script = tmp_path / "raw_server.py"
    script.write_text(RAW)
    return [sys.executable, str(script)]


def test_a_server_that_dies_at_start_says_why_in_the_connect_error(tmp_path: Path) -> None:
    script = tmp_path / "weather.py"
    script.write_text("import sys\nsys.stderr.write('fatal: OPENWEATHER_API_KEY is not set\\n')\nsys.exit(2)\n")
    for protocol in ("auto", "legacy"):
        with pytest.raises(mis.ClientError) as caught:
            mis.connect_stdio([sys.executable, str(script)], protocol=protocol)
        error = caught.value
        assert error.kind == "transport"
        assert "the server closed the connection" in error.message
        assert "the server exited with status 2" in error.message
        assert error.message.endswith("its stderr ended with:\n  fatal: OPENWEATHER_API_KEY is not set")
        assert error.data == {"exit_status": 2}


def test_a_crash_mid_call_ends_with_the_traceback(raw: list[str]) -> None:
    with mis.connect_stdio([*raw, "traceback"], protocol="legacy") as client:
        with pytest.raises(mis.ClientError) as caught:
            client.call_tool("anything")
    error = caught.value
    assert error.kind == "transport" and error.message.startswith("tools/call failed: the server closed the connection")
    assert "the server exited with status 1" in error.message
    assert "Traceback (most recent call last):" in error.message
    assert error.message.endswith("  ValueError: no config at /etc/app.toml")
    assert client.state is mis.ClientState.CLOSED


def test_the_quoted_tail_is_bounded_and_cleaned(raw: list[str]) -> None:
    with mis.connect_stdio([*raw, "noisy"], protocol="legacy") as client:
        with pytest.raises(mis.ClientError) as caught:
            client.call_tool("anything")
    message = caught.value.message
    quoted = message.split("its stderr ended with:\n", 1)[1].splitlines()
    assert len(quoted) == QUOTED_STDERR_LINES
    assert quoted[0] == "  line 91" and quoted[-2] == "  line 99"
    assert "\x1b" not in message and "\u202e" not in message and quoted[-1].startswith("  ") and "red" in quoted[-1]
    assert "status 5" in message


def test_a_server_killed_by_a_signal_is_named_so(raw: list[str]) -> None:
    with mis.connect_stdio([*raw, "signal"], protocol="legacy") as client:
        with pytest.raises(mis.ClientError) as caught:
            client.call_tool("anything")
    assert "the server was killed by signal 9 (SIGKILL)" in caught.value.message
    assert caught.value.message.endswith("  about to be killed")
    assert caught.value.data == {"exit_status": -9}


def test_the_sdk_server_that_exits_mid_call_is_named_with_its_status() -> None:
    with mis.connect_stdio(SDK_SERVER, protocol="legacy") as client:
        with pytest.raises(mis.ClientError) as caught:
            client.call_tool("die")
    assert caught.value.kind == "transport" and "the server exited with status 3" in caught.value.message


def test_stderr_is_logged_as_it_comes_under_the_servers_logger(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    script = tmp_path / "chatty.py"
    script.write_text("import sys\nsys.stderr.write('warming up\\n')\nsys.exit(4)\n")
    with caplog.at_level(logging.INFO, logger="mcp_input_sync.server"):
        with pytest.raises(mis.ClientError):
            mis.connect_stdio([sys.executable, str(script)], server_id="weather", protocol="legacy")
    records = [r for r in caplog.records if r.name == "mcp_input_sync.server.weather"]
    assert [r.getMessage() for r in records] == ["warming up"] and records[0].levelno == logging.INFO


def test_other_transports_and_a_silent_server_add_nothing() -> None:
    assert last_words(None, "") == ""
    assert last_words(0, "") == "; the server exited with status 0"
    assert last_words(None, "a\nb") == "; its stderr ended with:\n  a\n  b"
    fake = FakeServer()

    @fake.tool
    def crash(call: Any) -> str:
        fake.peer.close()  # the client sees the connection end
        return "never"

    with fake.client() as client:
        with pytest.raises(mis.ClientError) as caught:
            client.call_tool("crash")
    assert caught.value.kind == "transport" and "the server closed the connection" in caught.value.message
    assert "exited" not in caught.value.message and "stderr" not in caught.value.message
    assert caught.value.data is None
    fake.close()


@pytest.mark.parametrize(
    "argv, name",
    [
        (["python", "server.py"], "server"),
        (["/usr/bin/python3.12", "-u", "/srv/app/weather.py"], "weather"),
        (["python", "-m", "pkg.mod"], "pkg.mod"),
        (["python", "-c", "print(1)"], "python"),
        (["npx", "-y", "@modelcontextprotocol/server-everything@2025.1"], "server-everything"),
        (["uvx", "--from", "git+https://x", "mcp-server-fetch==1.0"], "mcp-server-fetch"),
        (["uv", "run", "--directory", "/srv", "server.py"], "server"),
        (["pipx", "run", "notes-server"], "notes-server"),
        (["node", "/opt/server-everything/dist/index.js", "stdio"], "server-everything"),
        (["/usr/local/bin/my-server", "--port", "1"], "my-server"),
        (["sleep", "30"], "sleep"),
    ],
)
def test_the_default_server_id_names_the_server_not_its_interpreter(argv: list[str], name: str) -> None:
    from mcp_input_sync.transports.stdio import StdioTransport

    transport = StdioTransport(argv)
    assert transport.default_server_id == name
    assert transport.stderr_logger == f"mcp_input_sync.server.{name}"
    assert mis.Client(transport).server_id == name


def test_the_message_limit_error_names_the_option_that_raises_it(tmp_path: Path) -> None:
    script = tmp_path / "big.py"
    script.write_text(textwrap.dedent(
        """
        import json, sys
        for line in sys.stdin:
            m = json.loads(line)
            if m.get("method") == "initialize":
                r = {"protocolVersion": m["params"]["protocolVersion"], "capabilities": {"tools": {}}, "serverInfo": {"name": "big", "version": "1"}}
            elif m.get("method") == "tools/call":
                r = {"content": [{"type": "text", "text": "x" * 3000}]}
            else:
                continue
            print(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": r}), flush=True)
        """
    ))
    with mis.connect_stdio([sys.executable, str(script)], protocol="legacy", limits={"message_bytes": 2000}) as client:
        with pytest.raises(mis.ClientError) as caught:
            client.call_tool("big")
    assert caught.value.kind == "protocol" and caught.value.check == "limit"
    assert "limits={'message_bytes': N}" in caught.value.message
    with mis.connect_stdio([sys.executable, str(script)], protocol="legacy", limits={"message_bytes": 4000}) as client:
        assert len(client.call_tool("big")["content"][0]["text"]) == 3000
