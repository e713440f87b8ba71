"""The environment of stdio servers (issue #22, item 6): an allow-list of this process's variables plus the
server's own ``env``, unless the caller widens it (``inherit_env=True``, a file's ``"inheritEnv": true``)."""

from __future__ import annotations

import json
import os
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

import mcp_input_sync as mis
from mcp_input_sync.transports.stdio import DEFAULT_ENV_VARS, server_environment

from .test_everything import EVERYTHING, NODE22

SECRET = "MY_CLOUD_SECRET"

#: A raw stdio server whose one tool returns its environment as JSON.
ENV_SERVER = textwrap.dedent(
    """
    import json, os, sys

    for line in sys.stdin:
        message = json.loads(line)
        if message.get("method") == "initialize":
            result = {"protocolVersion": message["params"]["protocolVersion"], "capabilities": {"tools": {}},
                      "serverInfo": {"name": "env", "version": "1"}}
        elif message.get("method") == "tools/call":
            result = {"content": [{"type": "text", "text": json.dumps(dict(os.environ))}]}
        else:
            continue
        print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}), flush=True)
    """
)


@pytest.fixture
def secret(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(SECRET, "s3cr3t-value")
    monkeypatch.setenv("BASH_FUNC_x%%", "() { echo hi; }")
    return "s3cr3t-value"


@pytest.fixture
def env_server(tmp_path: Path) -> list[str]:
    script = tmp_path / "env_server.py"
    script.write_text(ENV_SERVER)
    return [sys.executable, str(script)]


def seen(client: mis.Client, tool: str = "env") -> dict[str, str]:
    text = client.call_tool(tool)["content"][0]["text"]
    found: dict[str, str] = json.loads(text)
    return found


def test_the_allow_list_is_the_sdks(secret: str, monkeypatch: pytest.MonkeyPatch) -> None:
    sdk = pytest.importorskip("mcp.client.stdio")
    assert set(sdk.DEFAULT_INHERITED_ENV_VARS) <= set(DEFAULT_ENV_VARS)  # Windows: the TypeScript SDK's PROGRAMFILES too
    if sys.platform != "win32":
        assert DEFAULT_ENV_VARS == ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER")
    monkeypatch.setenv("SHELL", "() { evil; }")  # a shell function is never passed on
    env = server_environment({"TOKEN": "t"})
    assert SECRET not in env and "SHELL" not in env and env["TOKEN"] == "t"
    assert env["PATH"] == os.environ["PATH"]
    assert server_environment(None, inherit_env=True)[SECRET] == secret
    assert server_environment({"PATH": "/only"})["PATH"] == "/only"  # env wins


def test_connect_stdio_passes_the_allow_list_and_env_unless_told_to_inherit(secret: str, env_server: list[str]) -> None:
    with mis.connect_stdio(env_server, env={"API_KEY": "k-1"}, protocol="legacy") as client:
        env = seen(client)
    assert SECRET not in env and env["API_KEY"] == "k-1" and env["PATH"] == os.environ["PATH"]
    assert set(env) - {"API_KEY", *DEFAULT_ENV_VARS} <= {"PWD", "SHLVL", "_", "LC_CTYPE", "__CF_USER_TEXT_ENCODING"}
    with mis.connect_stdio(env_server, inherit_env=True, protocol="legacy") as client:
        assert seen(client)[SECRET] == secret


def test_a_configuration_file_server_gets_the_allow_list_and_may_ask_for_more(secret: str, env_server: list[str]) -> None:
    command, script = env_server
    config = {"mcpServers": {
        "plain": {"command": command, "args": [script], "env": {"REGION": "eu"}},
        "wide": {"command": command, "args": [script], "inheritEnv": True},
    }}
    servers = mis.load_config(config)
    assert not servers["plain"].inherit_env and servers["wide"].inherit_env  # type: ignore[attr-defined]
    assert "inherit_env=True" in repr(servers["wide"]) and "inherit_env" not in repr(servers["plain"])
    with mis.connect_all(config, protocol="legacy") as group:
        plain = json.loads(group.call_tool("plain/env")["content"][0]["text"])
        wide = json.loads(group.call_tool("wide/env")["content"][0]["text"])
    assert SECRET not in plain and plain["REGION"] == "eu"
    assert wide[SECRET] == secret


def test_inherit_env_must_be_a_boolean() -> None:
    with pytest.raises(mis.ConfigError) as caught:
        mis.load_config({"mcpServers": {"x": {"command": "run", "inheritEnv": "yes"}}})
    assert caught.value.key == "inheritEnv"


@pytest.mark.skipif(not (NODE22.exists() and EVERYTHING.exists()), reason="run peers/setup.sh to install server-everything")
def test_server_everything_does_not_see_a_secret_of_the_parent(secret: str) -> None:
    argv = [str(NODE22), str(EVERYTHING), "stdio"]
    with mis.connect_stdio(argv, discover_timeout=2) as client:
        env: Any = seen(client, "get-env")
    assert SECRET not in env and env["PATH"] == os.environ["PATH"]
    with mis.connect_stdio(argv, inherit_env=True, discover_timeout=2) as client:
        assert seen(client, "get-env")[SECRET] == secret


def test_a_command_typed_after_the_double_dash_gets_the_whole_environment(
    secret: str, env_server: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    from mcp_input_sync.__main__ import main

    assert main(["call", "--protocol", "legacy", "env", "--", *env_server]) == 0
    assert json.loads(capsys.readouterr().out)[SECRET] == secret  # as if the user had run it
