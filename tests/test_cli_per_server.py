"""The command line of issue 32: each server of a file fails alone (item 4), advice in the command line's words
(item 6), and its smaller points (item 7): ``read`` keeps a text's own line feed, listings in columns, routine
notices only with --verbose, a hint naming the command's own word.

Every run is a subprocess with stdin closed and a bounded timeout, against the real FastMCP 4.x and SDK 2.3.0
servers (tests/peers), server-everything, or the embedded demo server where any server does.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import mcp_input_sync as mis
from mcp_input_sync import __main__ as cli_main
from mcp_input_sync._protocol import advice
from mcp_input_sync._protocol.eras import LEGACY, EraNeed, era_advice

from .harness import PEERS_DIR
from .http_peers import http_peer
from .test_everything import EVERYTHING, NODE22
from .test_oauth_fastmcp import FASTMCP_PYTHON

REPO = Path(__file__).resolve().parents[1]
DEMO = {"command": sys.executable, "args": ["-m", "mcp_input_sync._demo_server"]}
DEMO_CMD = ["--", sys.executable, "-m", "mcp_input_sync._demo_server"]
FAST = {"command": str(FASTMCP_PYTHON), "args": [str(PEERS_DIR / "fastmcp_surface_server.py")]}
SDK = {"command": sys.executable, "args": [str(PEERS_DIR / "sdk_surface_server.py")]}
#: Three entries that cannot be used, each its own way: an unset variable, a malformed entry (its name holds an
#: escape code), an oauth grant found wrong only when the server is opened.
BROKEN = {
    "unset": {"command": sys.executable, "args": ["--key", "${MIS_TEST_NEVER_SET_32}"]},
    "bad\x1b[31m": {"command": 5},
    "grant": {"url": "http://127.0.0.1:9/mcp", "oauth": {"grant": "bogus"}},
}
needs_fastmcp = pytest.mark.skipif(not FASTMCP_PYTHON.exists(), reason="run peers/setup.sh to install FastMCP (pinned)")
needs_everything = pytest.mark.skipif(not (NODE22.exists() and EVERYTHING.exists()), reason="run peers/setup.sh")


def cli(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "MIS_TEST_NEVER_SET_32"}
    return subprocess.run([sys.executable, "-m", "mcp_input_sync", *args], stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=90, cwd=cwd, env={**env, "PYTHONPATH": str(REPO)})


def write(folder: Path, servers: dict[str, Any], name: str = "servers.json") -> str:
    path = folder / name
    path.write_text(json.dumps({"mcpServers": servers}))
    return str(path)


def reported(err: str, name: str) -> list[str]:
    """The stderr lines that report server ``name`` (as the command line quotes it)."""
    return [line for line in err.splitlines() if line.startswith(f"mcp-input-sync: server '{name}")]


def rows(out: str) -> list[list[str]]:
    return [line.split() for line in out.splitlines()]


# ---------------------------------------------------------------------------- item 4: each server fails alone


@needs_fastmcp
@pytest.mark.parametrize(("command", "listed"), [
    ("tools", [["fast", "region"], ["sdk", "weather"]]),
    ("resources", [["sdk", "team://{department}/members", "members"]]),
    ("prompts", [["fast", "team", "args:"], ["sdk", "team", "args:"]]),
])
def test_a_listing_lists_the_servers_that_open_and_reports_each_that_does_not(tmp_path: Path, command: str, listed: list[list[str]]) -> None:
    path = write(tmp_path, {"fast": FAST, **BROKEN, "sdk": SDK})
    done = cli(command, "--config", path)
    assert done.returncode == 4, done.stderr
    for row in listed:
        assert any(found[: len(row)] == row for found in rows(done.stdout)), (row, done.stdout)
    # one line each, cleaned: the unset variable, the malformed entry's key, the oauth grant
    assert len(reported(done.stderr, "unset")) == 1 and "MIS_TEST_NEVER_SET_32 is not set" in reported(done.stderr, "unset")[0]
    assert len(reported(done.stderr, "bad")) == 1 and "key 'command': must be a string" in reported(done.stderr, "bad")[0]
    assert len(reported(done.stderr, "grant")) == 1 and "oauth.grant must be one of" in reported(done.stderr, "grant")[0]
    assert "\x1b" not in done.stderr and "Traceback" not in done.stderr and not reported(done.stderr, "fast") and not reported(done.stderr, "sdk")
    as_json = cli(command, "--config", path, "--json")
    assert as_json.returncode == 4
    data = json.loads(as_json.stdout)
    assert sorted(data["errors"]) == sorted(BROKEN) and {item["server"] for item in next(iter(data.values()))} <= {"fast", "sdk"}


@needs_fastmcp
def test_a_command_with_a_server_prefix_or_server_reads_only_that_servers_entry(tmp_path: Path) -> None:
    path = write(tmp_path, {**BROKEN, "fast": FAST, "sdk": SDK})
    done = cli("call", "--config", path, "fast/region", "region=eu", "query=tiles")
    assert done.returncode == 0 and done.stdout == "eu: tiles\n", done.stderr
    done = cli("read", "--config", path, "sdk/team://Sales/members")
    assert done.returncode == 0 and done.stdout == "Sam, Sue\n", done.stderr
    done = cli("read", "--config", path, "--server", "sdk", "team://Sales/members")
    assert done.returncode == 0 and done.stdout == "Sam, Sue\n", done.stderr
    done = cli("prompt", "--config", path, "fast/team", "department=Sales", "name=Sue")
    assert done.returncode == 0 and done.stdout == "user:\nSue leads Sales\n", done.stderr
    # the named server's own bad entry is the command's usage error, named
    done = cli("call", "--config", path, "unset/anything")
    assert done.returncode == 2 and "MIS_TEST_NEVER_SET_32" in done.stderr and "'unset'" in done.stderr


def test_a_found_file_shows_an_entry_that_cannot_be_used_and_the_rest_still_opens(tmp_path: Path) -> None:
    write(tmp_path, {"demo": DEMO, "bad": {"command": 5}}, ".mcp.json")
    refused = cli("tools", cwd=tmp_path)  # no terminal: the stdio server is refused, nothing runs
    assert refused.returncode == 2 and "server 'bad' cannot be used, so it runs and reaches nothing: key 'command'" in refused.stderr
    assert "server 'demo' would run a command" in refused.stderr and "server 'bad' would" not in refused.stderr
    trusted = cli("tools", "--trust-config", cwd=tmp_path)
    assert trusted.returncode == 4 and ["demo", "echo"] in [row[:2] for row in rows(trusted.stdout)], trusted.stderr
    assert len(reported(trusted.stderr, "bad")) == 1
    called = cli("call", "--trust-config", "demo/echo", "text=hi", cwd=tmp_path)
    assert called.returncode == 0 and called.stdout == "hi\n" and "'bad'" not in called.stderr


# ---------------------------------------------------------------------------- item 7: the command's own word


def test_a_hint_names_the_commands_own_word_and_listings_need_no_server(tmp_path: Path) -> None:
    path = write(tmp_path, {"north": DEMO, "south": DEMO})
    assert "(or URI as server/URI)" in cli("read", "--config", path, "note://x").stderr
    assert "(or NAME as server/name)" in cli("prompt", "--config", path, "greet").stderr
    assert "(or TOOL as server/tool)" in cli("call", "--config", path, "echo").stderr
    for command in ("resources", "prompts"):
        done = cli(command, "--config", path)
        assert done.returncode == 0 and "TOOL" not in done.stderr and rows(done.stdout)[0][0] == "SERVER", done.stderr


# ---------------------------------------------------------------------------- item 6: the command line's own advice


def test_the_command_line_names_its_flags_for_the_message_limit_the_timeout_and_the_era() -> None:
    big = cli("call", "--max-message-bytes", "2000", "echo", "text=" + "y" * 5000, *DEMO_CMD)
    assert big.returncode == 4 and "over --max-message-bytes; to accept it, pass --max-message-bytes N with a larger N" in big.stderr
    assert "limits=" not in big.stderr and "limits[" not in big.stderr
    slow = cli("call", "--timeout", "1", "pack_bags", "items=3", "delay=1", *DEMO_CMD)
    assert slow.returncode == 4 and "tools/call exceeded its --timeout of 1 s" in slow.stderr, slow.stderr
    silent = cli("tools", "--timeout", "1", "--", sys.executable, "-c", "import sys; sys.stdin.read()")
    assert silent.returncode == 4 and "did not finish the handshake within --timeout 1 s" in silent.stderr and "timeout=" not in silent.stderr
    forced = cli("tools", "--protocol", "2026-07-28", *DEMO_CMD)
    assert forced.returncode == 4 and "(--protocol 2026-07-28 asks for it; --protocol auto takes the era the server speaks)" in forced.stderr


@needs_fastmcp
def test_over_http_an_era_failure_says_to_run_the_command_again_and_python_keeps_its_words() -> None:
    with http_peer("fastmcp_server.py", python=str(FASTMCP_PYTHON), seconds=60) as url:
        learnt = cli("call", "--yes", "mrtr_form", "--url", url)
        assert learnt.returncode == 4 and "Run the command again with --protocol 2026-07-28." in learnt.stderr, learnt.stderr
        assert "sends the next calls" not in learnt.stderr and 'protocol="' not in learnt.stderr
        elicit = cli("call", "--protocol", "modern", "--yes", "elicit_primitive", "--url", url)
        assert elicit.returncode == 4 and "Run the command again with --protocol legacy." in elicit.stderr, elicit.stderr
        big = cli("call", "--max-message-bytes", "2000", "echo", "text=" + "y" * 5000, "--url", url)
        assert big.returncode == 4 and "pass --max-message-bytes N with a larger N" in big.stderr and "limits={" not in big.stderr
        # the same failure in Python: the client's own words, unchanged
        with mis.connect_http(url, timeout=30) as client:
            with pytest.raises(mis.ClientError) as caught:
                client.call_tool("mrtr_form", {})
        assert ("This client sends the next calls of 'mrtr_form' in 2026-07-28; or connect with protocol=\"2026-07-28\" "
                "(command line: --protocol 2026-07-28)") in caught.value.message


def test_python_users_keep_the_option_words_after_the_command_line_ran(capfd: pytest.CaptureFixture[str]) -> None:
    assert cli_main.main(["tools", "--max-message-bytes", "0", "--", "unused"]) == 2  # in this process: words set, then reset
    capfd.readouterr()
    assert advice.say("raise_limit", "message_bytes", limit="message_bytes") == "; to accept it, pass the client limits={'message_bytes': N} with a larger N"
    need = EraNeed(LEGACY)
    assert era_advice("ask", "2026-07-28", need, learnt=True).endswith(
        "This client sends the next calls of 'ask' in 2025-11-25; or connect with protocol=\"legacy\" (command line: --protocol legacy)")
    with mis.connect_stdio([sys.executable, "-m", "mcp_input_sync._demo_server"], limits={"message_bytes": 2000}) as client:
        with pytest.raises(mis.ClientError) as caught:
            client.call_tool("echo", {"text": "y" * 5000})
    assert "over limits['message_bytes']; to accept it, pass the client limits={'message_bytes': N} with a larger N" in caught.value.message
    with pytest.raises(ValueError, match="no advice is called 'limits'"):
        advice.speak({"limits": "x"})


# ---------------------------------------------------------------------------- item 7: output


NOTES_SERVER = '''
from mcp.server.mcpserver import MCPServer

server = MCPServer("notes")


@server.resource("notes://ended")
def ended() -> str:
    """A note that ends with a line feed, as a file does."""
    return "one\\ntwo\\n"


@server.resource("notes://open")
def unended() -> str:
    """A note that does not."""
    return "one\\ntwo"


server.run("stdio")
'''


def test_read_keeps_a_texts_own_line_feed_and_ends_one_that_has_none(tmp_path: Path) -> None:
    script = tmp_path / "notes_server.py"
    script.write_text(NOTES_SERVER)
    for uri in ("notes://ended", "notes://open"):
        done = cli("read", uri, "--", sys.executable, str(script))
        assert done.returncode == 0 and done.stdout == "one\ntwo\n", (uri, done.stdout, done.stderr)


def column_starts(lines: list[str], words: int) -> set[int]:
    """Where the text after the first ``words`` cells begins on each line (cells are apart by two spaces or more)."""
    starts = set()
    for line in lines:
        at = len(line) - len(line.lstrip())
        for _ in range(words):
            at = line.index("  ", at)
            at = len(line) - len(line[at:].lstrip())
        starts.add(at)
    return starts


@needs_everything
def test_single_server_listings_are_in_columns() -> None:
    everything = ["--", str(NODE22), str(EVERYTHING), "stdio"]
    tools = cli("tools", *everything)
    lines = tools.stdout.splitlines()
    assert tools.returncode == 0 and lines[0].startswith("tools: ") and len(lines) > 10
    assert len(column_starts(lines[1:], 1)) == 1, tools.stdout  # every description starts in the same column
    prompts = cli("prompts", *everything).stdout.splitlines()
    assert len(column_starts(prompts[1:], 1)) == 1 and len(column_starts(prompts[1:], 2)) == 1, prompts
    resources = cli("resources", *everything).stdout.splitlines()
    listed = resources[1 : resources.index(next(line for line in resources if line.startswith("resource templates:")))]
    assert len(listed) > 3 and len(column_starts(listed, 1)) == 1 and len(column_starts(listed, 2)) == 1, resources


@needs_everything
def test_routine_list_changed_notices_print_only_with_verbose() -> None:
    everything = ["--", str(NODE22), str(EVERYTHING), "stdio"]
    quiet = cli("call", "get-sum", "a=2", "b=3", *everything)
    assert quiet.returncode == 0 and quiet.stdout == "The sum of 2 and 3 is 5.\n", quiet.stderr
    assert "list_changed" not in quiet.stderr
    verbose = cli("call", "--verbose", "get-sum", "a=2", "b=3", *everything)
    assert verbose.returncode == 0 and verbose.stderr.count("notice     notifications/tools/list_changed") == 1
