"""The command line with configuration files: --config, --server, server/tool names, and ./.mcp.json found by itself."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DEMO = {"command": sys.executable, "args": ["-m", "mcp_input_sync._demo_server"]}
FULL = {"budget": 900, "pace": "relaxed", "_sampling_text": "See the tiles.", "_roots": ["/srv/trips", "/tmp"]}


def cli(folder: Path, *args: str, env: Any = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mcp_input_sync", *args],
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60, cwd=folder,
        env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})},
    )


def write(folder: Path, servers: dict[str, Any], name: str = "servers.json") -> Path:
    path = folder / name
    path.write_text(json.dumps({"mcpServers": servers}))
    return path


def test_tools_lists_every_servers_tools_as_a_table_and_as_json(tmp_path: Path) -> None:
    path = write(tmp_path, {"north": DEMO, "south": DEMO})
    done = cli(tmp_path, "tools", "--config", str(path))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["SERVER", "TOOL", "DESCRIPTION"]
    assert any(line.split()[:2] == ["north", "echo"] for line in lines) and any(line.split()[:2] == ["south", "plan_trip"] for line in lines)
    done = cli(tmp_path, "tools", "--config", str(path), "--json")
    listed = json.loads(done.stdout)
    assert {tool["name"] for tool in listed["tools"]} >= {"north/echo", "south/echo"} and listed["errors"] == {}


def test_call_picks_the_server_by_option_by_prefix_or_as_the_only_one(tmp_path: Path) -> None:
    path = write(tmp_path, {"north": DEMO, "south": DEMO})
    done = cli(tmp_path, "call", "--config", str(path), "--server", "south", "echo", '{"text": "by option"}')
    assert done.returncode == 0 and done.stdout.strip() == "by option", done.stderr
    done = cli(tmp_path, "call", "--config", str(path), "north/echo", '{"text": "by prefix"}')
    assert done.returncode == 0 and done.stdout.strip() == "by prefix", done.stderr
    done = cli(tmp_path, "call", "--config", str(path), "echo", '{"text": "?"}')
    assert done.returncode == 2 and "--server NAME" in done.stderr
    single = write(tmp_path, {"only": DEMO}, "single.json")
    assert cli(tmp_path, "call", "--config", str(single), "echo", '{"text": "only"}').stdout.strip() == "only"


def test_the_answers_options_work_with_a_configuration_file(tmp_path: Path) -> None:
    path = write(tmp_path, {"trips": DEMO})
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps(FULL))
    done = cli(tmp_path, "call", "--config", str(path), "--answers", str(answers), "plan_trip", '{"city": "Porto"}')
    assert done.returncode == 0, done.stderr
    done = cli(tmp_path, "call", "--config", str(path), "--yes", "plan_trip", '{"city": "Porto"}')
    assert done.returncode == 3 and "sampling: --yes and no model" in done.stderr  # as with -- COMMAND


def test_without_a_server_the_usual_files_are_found_and_named(tmp_path: Path) -> None:
    write(tmp_path, {"only": DEMO}, "mcp.json")
    done = cli(tmp_path, "call", "--trust-config", "echo", '{"text": "found"}')
    assert done.returncode == 0 and done.stdout.strip() == "found" and "using mcp.json" in done.stderr
    write(tmp_path, {"dot": DEMO}, ".mcp.json")
    assert "using .mcp.json" in cli(tmp_path, "tools").stderr
    empty = tmp_path / "empty"
    empty.mkdir()
    done = cli(empty, "tools")
    assert done.returncode == 2 and "no .mcp.json or mcp.json here" in done.stderr


def test_a_server_that_fails_is_reported_and_the_rest_listed(tmp_path: Path) -> None:
    path = write(tmp_path, {"good": DEMO, "broken": {"command": str(tmp_path / "nothing-here")}})
    done = cli(tmp_path, "tools", "--config", str(path))
    assert done.returncode == 4 and "server 'broken'" in done.stderr
    assert any(line.split()[:2] == ["good", "echo"] for line in done.stdout.splitlines())


def test_a_bad_file_is_a_usage_error_that_names_the_variable_and_server(tmp_path: Path) -> None:
    path = write(tmp_path, {"api": {"url": "https://x.example/mcp", "headers": {"Authorization": "Bearer ${NO_SUCH_TOKEN}"}}})
    done = cli(tmp_path, "tools", "--config", str(path))
    assert done.returncode == 2 and "NO_SUCH_TOKEN" in done.stderr and "'api'" in done.stderr
    assert cli(tmp_path, "tools", "--config", str(path), "--url", "http://127.0.0.1:9/mcp").returncode == 2


def test_a_file_found_by_itself_says_what_it_will_run_and_an_empty_one_is_refused(tmp_path: Path) -> None:
    write(tmp_path, {"only": DEMO}, ".mcp.json")
    done = cli(tmp_path, "tools")
    assert f"server 'only' runs: {shlex.join([DEMO['command'], *DEMO['args']])}" in done.stderr
    empty = write(tmp_path, {}, "empty.json")
    done = cli(tmp_path, "tools", "--config", str(empty))
    assert done.returncode == 2 and "names no server" in done.stderr


def test_a_command_reads_only_the_servers_it_uses(tmp_path: Path) -> None:
    # the other server's variable is not set and its input cannot be asked: neither matters to a call of north/echo
    other = {"url": "https://x.example/mcp", "headers": {"A": "${NO_SUCH_TOKEN}", "B": "${input:never}"}}
    path = write(tmp_path, {"north": DEMO, "other": other})
    done = cli(tmp_path, "call", "--config", str(path), "north/echo", '{"text": "only north"}')
    assert done.returncode == 0 and done.stdout.strip() == "only north", done.stderr
    done = cli(tmp_path, "resources", "--config", str(path))  # every server's: the other fails alone
    assert done.returncode == 4 and done.stdout.split() == ["SERVER", "URI", "NAME", "DESCRIPTION"], done.stderr
    assert "server 'other'" in done.stderr and "NO_SUCH_TOKEN" in done.stderr and "--server NAME" not in done.stderr
