"""The command line, run as subprocesses against the embedded demo server over stdio.

Exit codes: 0 ok, 1 tool error, 2 usage, 3 input refused or incomplete,
4 connection or protocol error. Every run is bounded by a timeout.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any, Optional

import pytest

REPO = Path(__file__).resolve().parents[1]
TIMEOUT = 60
SERVER = ["--", sys.executable, "-m", "mcp_input_sync._demo_server"]


def cli(*args: str, stdin: Optional[str] = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mcp_input_sync", *args],
        input=stdin,
        stdin=subprocess.DEVNULL if stdin is None else None,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        cwd=REPO,
    )


def answers(tmp_path: Path, data: Any, name: str = "answers.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return str(path)


FULL = {"budget": 900, "pace": "relaxed", "_sampling_text": "See the tiles.", "_roots": ["/srv/trips", "/tmp"]}


def test_call_with_full_answers_exits_0(tmp_path: Path) -> None:
    done = cli("call", "--answers", answers(tmp_path, FULL), "plan_trip", '{"city": "Porto"}', *SERVER)
    assert done.returncode == 0, done.stderr
    text = done.stdout.strip()
    assert text.startswith("Trip to Porto.")
    for part in ("file:///srv/trips, file:///tmp", "2 traveller(s)", "budget 900", "relaxed pace", "See the tiles."):
        assert part in text
    # the dialog goes to stderr, stdout holds only the result
    assert "  form " in done.stderr and "  sampling " in done.stderr and "  progress " in done.stderr
    assert "  log " in done.stderr and "  roots " in done.stderr


def test_call_json_output(tmp_path: Path) -> None:
    done = cli("call", "--json", "--answers", answers(tmp_path, FULL), "plan_trip", *SERVER)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["isError"] is False and "Lisbon" in result["content"][0]["text"]


def test_unknown_answer_keys_are_ignored_and_defaults_fill_the_rest(tmp_path: Path) -> None:
    data = {"budget": 10, "nonsense": 1, "_sampling_text": "x"}
    done = cli("call", "--answers", answers(tmp_path, data), "plan_trip", *SERVER)
    assert done.returncode == 0, done.stderr
    assert "2 traveller(s), budget 10, starting any day, normal pace" in done.stdout
    assert "Roots: not offered by the client" in done.stdout  # no _roots: no roots capability


def test_required_field_without_value_or_default_exits_3(tmp_path: Path) -> None:
    # 2025-06-18 forms carry no defaults, so budget has neither
    done = cli("call", "--protocol", "2025-06-18", "--answers", answers(tmp_path, {"_sampling_text": "x"}), "plan_trip", *SERVER)
    assert done.returncode == 3, done.stderr
    assert "declined" in done.stdout
    assert "budget" in done.stderr


def test_invalid_answer_value_declines_and_exits_3(tmp_path: Path) -> None:
    done = cli("call", "--answers", answers(tmp_path, {"travellers": 0, "_sampling_text": "x"}), "plan_trip", *SERVER)
    assert done.returncode == 3
    assert "below the minimum" in done.stderr


@pytest.mark.parametrize(("action", "word"), [("decline", "declined"), ("cancel", "cancelled")])
def test_action_decline_or_cancel_exits_3(tmp_path: Path, action: str, word: str) -> None:
    done = cli("call", "--answers", answers(tmp_path, {**FULL, "_action": action}), "plan_trip", *SERVER)
    assert done.returncode == 3
    assert word in done.stdout


def test_sampling_is_refused_without_sampling_text(tmp_path: Path) -> None:
    data = {k: v for k, v in FULL.items() if k != "_sampling_text"}
    done = cli("call", "--answers", answers(tmp_path, data), "plan_trip", *SERVER)
    assert done.returncode == 3
    assert "sampling/createMessage failed" in done.stdout
    assert "refused" in done.stderr


def test_url_is_declined_unless_accepted(tmp_path: Path) -> None:
    declined = cli("call", "--answers", answers(tmp_path, {}), "book_hotel", *SERVER)
    assert declined.returncode == 3
    assert "not accepted" in declined.stdout
    accepted = cli("call", "--answers", answers(tmp_path, {"_url": "accept"}), "book_hotel", '{"city": "Faro"}', *SERVER)
    assert accepted.returncode == 0, accepted.stderr
    assert "Hotel in Faro held" in accepted.stdout
    assert "host: checkout.example.com" in accepted.stderr
    assert "never opens links" in accepted.stderr


def test_tool_error_exits_1() -> None:
    done = cli("call", "echo", "{}", *SERVER)
    assert done.returncode == 1
    assert "'text' must be a string" in done.stdout


def test_echo_ok_and_progress_of_a_long_call() -> None:
    assert cli("call", "echo", '{"text": "hi\\nthere"}', *SERVER).stdout == "hi\nthere\n"
    done = cli("call", "pack_bags", '{"items": 3, "delay": 0}', *SERVER)
    assert done.returncode == 0
    assert "3/3 packed the charger" in done.stderr


def test_yes_accepts_defaults_declines_urls_and_refuses_sampling_without_a_model() -> None:
    done = cli("call", "--yes", "plan_trip", *SERVER)
    assert done.returncode == 3
    assert "sampling" in done.stderr
    booked = cli("call", "--yes", "book_hotel", *SERVER)  # a URL is accepted only at the prompt or by "_url": "accept"
    assert booked.returncode == 3 and "-> decline (--yes)" in booked.stderr, booked.stderr


def test_typed_answers_on_a_pipe() -> None:
    # form: fill, travellers default, budget 700, start empty, pace 1 (relaxed); sampling: approve, reply
    typed = "f\n\n700\n\n1\na\nThe river.\n"
    done = cli("call", "plan_trip", *SERVER, stdin=typed)
    assert done.returncode == 0, done.stderr
    assert "budget 700" in done.stdout and "relaxed pace" in done.stdout and "The river." in done.stdout
    declined = cli("call", "book_hotel", *SERVER, stdin="n\n")
    assert declined.returncode == 3


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["nonsense"],
        ["call", "echo"],  # no server
        ["call", "--url", "https://a.example/mcp", "echo", *SERVER],  # two servers
        ["call", "echo", "not json", *SERVER],
        ["call", "echo", "[1, 2]", *SERVER],
        ["call", "--protocol", "bogus", "echo", "{}", *SERVER],
        ["call", "--yes", "--answers", "x.json", "echo", *SERVER],
        ["call", "--answers", "/nonexistent/answers.json", "echo", *SERVER],
        ["tools"],
        ["demo", *SERVER],
    ],
)
def test_usage_errors_exit_2(args: list[str]) -> None:
    done = cli(*args)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "usage" in done.stderr


@pytest.mark.parametrize("data", [[1], {"_action": "maybe"}, {"_url": True}, {"_sampling_text": 1}, {"_roots": "/tmp"}])
def test_bad_answers_files_exit_2(tmp_path: Path, data: Any) -> None:
    done = cli("call", "--answers", answers(tmp_path, data), "echo", '{"text": "x"}', *SERVER)
    assert done.returncode == 2
    assert "usage" in done.stderr


def test_connection_errors_exit_4() -> None:
    missing = cli("call", "echo", "--", str(REPO / "no-such-server"))
    assert missing.returncode == 4
    assert "cannot connect" in missing.stderr
    silent = cli("tools", "--", sys.executable, "-c", "pass")
    assert silent.returncode == 4
    garbage = cli("prompts", "--protocol", "legacy", "--timeout", "2", "--", sys.executable, "-c", "print('hello'); import sys; sys.stdin.read()")
    assert garbage.returncode == 4
    wrong = cli("call", "--protocol", "legacy", "echo", "--", sys.executable, "-c", WRONG_VERSION_SERVER)
    assert wrong.returncode == 4
    assert "cannot connect" in wrong.stderr


WRONG_VERSION_SERVER = """
import json, sys
for line in sys.stdin:
    message = json.loads(line)
    if message.get("method") == "initialize":
        result = {"protocolVersion": "1999-01-01", "capabilities": {}, "serverInfo": {"name": "old", "version": "0"}}
        print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}), flush=True)
"""


def test_listing_sub_commands() -> None:
    tools = cli("tools", *SERVER)
    assert tools.returncode == 0
    assert tools.stdout.splitlines()[0] == "tools: 4"
    assert "  plan_trip   Plans a trip:" in tools.stdout  # the description's first line, not the title; in a column
    listed = json.loads(cli("tools", "--json", *SERVER).stdout)
    assert [t["name"] for t in listed["tools"]] == ["plan_trip", "book_hotel", "pack_bags", "echo"]
    for what in ("resources", "prompts"):
        done = cli(what, *SERVER)
        assert done.returncode == 0
        assert done.stdout.strip() == f"(the server offers no {what})"


def test_demo_yes_walks_through_every_kind_of_request() -> None:
    done = cli("demo", "--yes")
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    for marker in ("  log ", "  roots ", "  form ", "  sampling ", "  url ", "host: checkout.example.com",
                   "  progress ", "5/5 packed", "answered 3 server requests", "answered 4 server requests in all"):
        assert marker in out, (marker, out)
    assert out.count("result (ok)") == 3


def test_unreachable_url_exits_4() -> None:
    done = cli("tools", "--timeout", "5", "--url", "http://127.0.0.1:9/mcp")
    assert done.returncode == 4
    assert "cannot connect" in done.stderr


def test_console_script() -> None:
    script = Path(sys.executable).parent / "mcp-input-sync"
    if not script.exists():
        pytest.skip("the console script is not installed next to this interpreter")
    done = subprocess.run([str(script), "tools", *SERVER], capture_output=True, text=True, timeout=TIMEOUT, stdin=subprocess.DEVNULL)
    assert done.returncode == 0 and "tools: 4" in done.stdout
