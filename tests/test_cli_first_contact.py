"""The command line on first contact (issue 22, item 8): what a program reads on a pipe, read and prompt,
key=value arguments, headers, the message limit, listings, folded notices, logs, --yes and URLs, --verbose.

Fast tests run ``main()`` in this process against a FakeServer (``_connect`` replaced) or a subprocess
against the embedded demo server; the peers (server-everything, FastMCP) where the issue names them.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator, Optional

import pytest

from mcp_input_sync import __main__ as cli_main
from mcp_input_sync import _cli_output as output
from mcp_input_sync._cli_config import masked_argv
from mcp_input_sync.terminal import TerminalHandler
from mcp_input_sync.testing import FakeServer

from .test_everything import EVERYTHING, NODE22
from .test_fastmcp_peer import SERVER as FASTMCP
from .test_oauth_fastmcp import FASTMCP_PYTHON

REPO = Path(__file__).resolve().parents[1]
DEMO = ["--", sys.executable, "-m", "mcp_input_sync._demo_server"]
EVERYTHING_CMD = ["--", str(NODE22), str(EVERYTHING), "stdio"]
needs_everything = pytest.mark.skipif(not (NODE22.exists() and EVERYTHING.exists()), reason="run peers/setup.sh")


def cli(*args: str, cwd: Path = REPO, env: Optional[dict[str, str]] = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "mcp_input_sync", *args], stdin=subprocess.DEVNULL, capture_output=True,
                          timeout=60, cwd=cwd, env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})})


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


# ---------------------------------------------------------------------------- in process, against a FakeServer


class Fakes:
    """Stands for one server the command line reaches: each command gets a fresh FakeServer (one client each)
    serving what was added here."""

    def __init__(self) -> None:
        self.steps: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []
        self.servers: list[FakeServer] = []

    def add_tool(self, *args: Any, **kwargs: Any) -> None:
        self.steps.append(("add_tool", args, kwargs))

    def add_resource(self, *args: Any, **kwargs: Any) -> None:
        self.steps.append(("add_resource", args, kwargs))

    def add_prompt(self, *args: Any, **kwargs: Any) -> None:
        self.steps.append(("add_prompt", args, kwargs))

    def connect(self, args: Any, command: Any, handler: Any, parser: Any) -> Any:
        server = FakeServer(era="legacy")
        self.servers.append(server)
        for name, positional, named in self.steps:
            getattr(server, name)(*positional, **named)
        return server.client(handler=handler)


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[Fakes]:
    fakes = Fakes()
    monkeypatch.setattr(cli_main, "_connect", fakes.connect)
    yield fakes
    for server in fakes.servers:
        server.close()


def run(capfd: pytest.CaptureFixture[str], *words: str) -> tuple[int, str, str]:
    code = cli_main.main([*words, "--", "unused"])
    out, err = capfd.readouterr()
    return code, out, err


SCHEMA = {"type": "object", "properties": {
    "count": {"type": "integer"}, "ratio": {"type": "number"}, "loud": {"type": "boolean"}, "tags": {"type": "array"},
    "opts": {"type": "object"}, "maybe": {"anyOf": [{"type": "integer"}, {"type": "null"}]}, "name": {"type": "string"}}}


def test_key_value_arguments_are_typed_by_the_tools_schema(fake: Fakes, capfd: pytest.CaptureFixture[str]) -> None:
    fake.add_tool("show", lambda call: json.dumps(call.arguments, sort_keys=True), input_schema=SCHEMA)
    code, out, err = run(capfd, "call", "show", "count=3", "ratio=2.5", "loud=true", "tags=[1,2]", 'opts={"a":1}', "maybe=null",
                         "name=007", "extra=x=y")
    assert code == 0, err
    assert json.loads(out) == {"count": 3, "ratio": 2.5, "loud": True, "tags": [1, 2], "opts": {"a": 1}, "maybe": None,
                               "name": "007", "extra": "x=y"}
    code, out, err = run(capfd, "call", "show", '{"name": "from json", "count": 1}', "count=2")
    assert code == 0 and json.loads(out) == {"name": "from json", "count": 2}


@pytest.mark.parametrize(("word", "said"), [("count=three", "'count': 'three' is not an integer"), ("loud=yes", "'loud': 'yes' is not true or false"),
                                           ("tags={}", "is not a JSON array"), ("maybe=x", "is not an integer or null"),
                                           ("nonsense", "neither KEY=VALUE"), ("count=1 count=2", "given twice")])
def test_an_argument_that_cannot_be_typed_is_a_usage_error_naming_it(fake: Fakes, capfd: pytest.CaptureFixture[str], word: str, said: str) -> None:
    fake.add_tool("show", lambda call: "never", input_schema=SCHEMA)
    code, _, err = run(capfd, "call", "show", *word.split())
    assert code == 2 and said in err, err


def test_a_piped_result_is_the_tools_exact_text_and_a_terminal_gets_it_cleaned() -> None:
    raw = "a\tb\u200bc\x07d\u202ee\u2028f\r\n" + "x" * 120_000 + "\n"
    pipe = io.BytesIO()
    stream = io.TextIOWrapper(pipe, encoding="utf-8")
    output.print_result({"content": [{"type": "text", "text": raw}]}, stream)
    assert pipe.getvalue() == (raw + "\n").encode("utf-8")  # nothing cut, nothing removed, tabs kept
    tty = Tty()
    output.print_result({"content": [{"type": "text", "text": raw}]}, tty)
    assert tty.getvalue().startswith("a    bcdef\nxxx") and "\x07" not in tty.getvalue() and "\u202e" not in tty.getvalue()
    lone = io.BytesIO()
    wrapper = io.TextIOWrapper(lone, encoding="utf-8")
    output.write_text("\ud800!", wrapper)
    assert lone.getvalue() == "\ufffd!\n".encode("utf-8")  # UTF-8 cannot carry a lone surrogate


def test_structured_content_is_printed_once(fake: Fakes, capfd: pytest.CaptureFixture[str]) -> None:
    value = {"temperature": 22, "city": "Porto"}
    fake.add_tool("both", lambda call: {"content": [{"type": "text", "text": json.dumps(value)}], "structuredContent": value})
    fake.add_tool("wrapped", lambda call: {"content": [{"type": "text", "text": "done"}], "structuredContent": {"result": "done"}})
    fake.add_tool("only", lambda call: {"content": [], "structuredContent": value})
    assert run(capfd, "call", "both")[1] == json.dumps(value) + "\n"
    assert run(capfd, "call", "wrapped")[1] == "done\n"
    assert json.loads(run(capfd, "call", "only")[1]) == value
    assert json.loads(run(capfd, "call", "--json", "wrapped")[1])["structuredContent"] == {"result": "done"}


def test_read_writes_text_and_a_blobs_bytes_and_prompt_prints_the_messages(fake: Fakes, capfd: pytest.CaptureFixture[str]) -> None:
    fake.add_resource("note://a", "line one\n\tline two")
    fake.add_prompt("greet", lambda args: f"Hello {args['who']}, in {args.get('lang', 'en')}", arguments=[{"name": "who", "required": True}])
    code, out, _ = run(capfd, "read", "note://a")
    assert code == 0 and out == "line one\n\tline two\n"
    code, out, _ = run(capfd, "prompt", "greet", "who=Ada", "lang=pt")
    assert code == 0 and out == "user:\nHello Ada, in pt\n"
    code, out, _ = run(capfd, "prompt", "--json", "greet", '{"who": "Bo"}')
    assert json.loads(out)["messages"][0]["content"]["text"] == "Hello Bo, in en"
    code, _, err = run(capfd, "read", "note://missing")
    assert code == 4 and "not found" in err.lower()


def test_a_blobs_bytes_go_to_a_pipe_as_they_are_and_a_terminal_gets_a_note(capsys: pytest.CaptureFixture[str]) -> None:
    pipe = io.BytesIO()
    blob = {"contents": [{"uri": "x://1", "blob": "iVBORwD/", "mimeType": "image/png"}]}
    stream = io.TextIOWrapper(pipe, encoding="utf-8")
    assert output.print_contents(blob, stream) is None
    assert pipe.getvalue() == b"\x89PNG\x00\xff"
    tty = Tty()
    assert output.print_contents({"contents": [{"uri": "x://1", "blob": "AAEC", "mimeType": "image/png"}]}, tty, sys.stderr) is None
    assert tty.getvalue() == "" and "binary (3 bytes, image/png)" in capsys.readouterr().err
    assert output.print_contents({"contents": [{"uri": "x://1", "blob": "**"}]}) == "the server sent a blob that is not base64"


def test_listings_show_the_descriptions_first_line(fake: Fakes, capfd: pytest.CaptureFixture[str]) -> None:
    fake.add_tool("add", lambda call: "3", description="Adds two numbers.\nMore detail here.")
    code, out, _ = run(capfd, "tools")
    assert code == 0 and "  add  Adds two numbers." in out and "More detail" not in out


def test_logs_print_level_logger_and_message_and_repeated_notices_fold() -> None:
    out = io.StringIO()
    handler = TerminalHandler(stdout=out)
    ctx: Any = None
    handler.handle_log({"level": "info", "logger": "fastmcp", "data": {"extra": None, "msg": "step 1 of 3"}}, ctx)
    handler.handle_log({"level": "warning", "data": {"message": "low disk", "free": 3}}, ctx)
    handler.handle_log({"level": "debug", "logger": "x", "data": [1, 2]}, ctx)
    for _ in range(5):
        handler.handle_notification("notifications/tools/list_changed", {}, ctx)
    handler.handle_notification("notifications/resources/updated", {"uri": "a://b"}, ctx)
    handler.handle_notification("notifications/resources/updated", {"uri": "a://b"}, ctx)
    handler.fold_done()
    lines = out.getvalue().splitlines()
    assert lines[:3] == ["  log        [info] fastmcp: step 1 of 3", '  log        [warning] low disk {"free": 3}', "  log        [debug] x: [1, 2]"]
    assert lines[3:] == ["  notice     notifications/tools/list_changed", "             (the same notice 4 more times)",
                         '  notice     notifications/resources/updated {"uri": "a://b"}', "             (the same notice 1 more time)"]


def test_yes_and_answers_decline_a_url_alike(tmp_path: Path) -> None:
    yes = cli("call", "--yes", "book_hotel", *DEMO)
    empty = tmp_path / "answers.json"
    empty.write_text("{}")
    answered = cli("call", "--answers", str(empty), "book_hotel", *DEMO)
    assert yes.returncode == answered.returncode == 3
    assert b"-> decline (--yes)" in yes.stderr and b"-> decline (answers file)" in answered.stderr
    with pytest.raises(ValueError):
        TerminalHandler(yes_urls="maybe")


def test_version_and_usage_errors_of_the_new_options(capfd: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        cli_main.main(["--version"])
    assert done.value.code == 0 and capfd.readouterr().out.startswith("mcp-input-sync 0.")
    assert cli_main.main(["tools", "--header", "X-A: 1", "--", "server"]) == 2
    assert "--header goes with --url" in capfd.readouterr().err
    assert cli_main.main(["tools", "--max-message-bytes", "0", "--", "server"]) == 2
    for bad in ("Authorization Bearer s3cret-token", "X-A: s3cret\nInjected: 1", ": s3cret-token"):
        assert cli_main.main(["tools", "--url", "http://127.0.0.1:9/mcp", "--header", bad]) == 2
        assert "s3cret" not in capfd.readouterr().err


def test_the_message_limit_can_be_raised() -> None:
    text = "y" * 5000
    small = cli("call", "--max-message-bytes", "2000", "echo", f"text={text}", *DEMO)
    assert small.returncode == 4, small.stderr
    big = cli("call", "--max-message-bytes", "100000", "echo", f"text={text}", *DEMO)
    assert big.returncode == 0 and big.stdout == (text + "\n").encode()


def test_a_piped_call_writes_the_exact_text_end_to_end() -> None:
    raw = "tab\there\u200b and a bell \x07 " + "z" * 100_050
    done = cli("call", "echo", json.dumps({"text": raw}), *DEMO)
    assert done.returncode == 0 and done.stdout == (raw + "\n").encode("utf-8")


def test_verbose_shows_the_servers_stderr_as_it_comes() -> None:
    chatty = "import sys, runpy; print('starting up: cache warm', file=sys.stderr, flush=True); runpy.run_module('mcp_input_sync._demo_server', run_name='__main__')"
    done = cli("call", "--verbose", "echo", "text=hi", "--", sys.executable, "-c", chatty)
    assert done.returncode == 0 and done.stdout == b"hi\n"
    assert b"  stderr     " in done.stderr and b": starting up: cache warm" in done.stderr
    quiet = cli("call", "echo", "text=hi", "--", sys.executable, "-c", chatty)
    assert b"cache warm" not in quiet.stderr
    dying = "import sys; print('fatal: OPENWEATHER_API_KEY is not set', file=sys.stderr, flush=True); sys.exit(2)"
    done = cli("tools", "--verbose", "--timeout", "10", "--", sys.executable, "-c", dying)
    assert done.returncode == 4 and b"fatal: OPENWEATHER_API_KEY is not set" in done.stderr


def test_a_found_configuration_file_shows_the_whole_argv_with_secrets_masked(tmp_path: Path) -> None:
    server = {"command": sys.executable, "args": ["-m", "mcp_input_sync._demo_server", "--api-key", "sk-live-1234567890abcdef",
                                                  "--token=ghp_abcdefghijklmnop1234", "--region", "${REGION}"], "env": {"REGION": "eu"}}
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {"demo": server}}))
    done = cli("tools", cwd=tmp_path, env={"REGION": "eu"})
    err = done.stderr.decode()
    assert "-m mcp_input_sync._demo_server --api-key '***' '--token=***' --region '${REGION}'" in err, err
    assert "sk-live" not in err and "ghp_" not in err and "shown as ***" in err
    assert masked_argv(["srv", "https://ada:pw@host/x", "Authorization: Bearer abc", "--author", "Ada", "--port", "80"]) == [
        "srv", "https://ada:***@host/x", "Authorization: ***", "--author", "Ada", "--port", "80"]


def test_error_text_keeps_the_lines_of_a_servers_stderr_tail() -> None:
    shown = cli_main._error_text("[transport] the server exited with status 2\n  fatal: no key\x1b[31m")
    assert shown == "[transport] the server exited with status 2\n  fatal: no key[31m"


# ---------------------------------------------------------------------------- the peers


@needs_everything
def test_tools_advertises_what_call_advertises_on_server_everything() -> None:
    listed = cli("tools", "--json", *EVERYTHING_CMD)
    assert listed.returncode == 0, listed.stderr
    names = {tool["name"] for tool in json.loads(listed.stdout)["tools"]}
    assert {"trigger-elicitation-request", "trigger-sampling-request"} <= names and len(names) >= 16
    assert "get-roots-list" not in names  # no --root: no roots declared, by `call` either (tests/test_roots_given.py)


@needs_everything
def test_server_everything_read_prompt_key_values_and_folded_notices() -> None:
    done = cli("call", "--verbose", "get-sum", "a=2", "b=3.5", *EVERYTHING_CMD)  # routine notices: only with --verbose
    assert done.returncode == 0 and done.stdout == b"The sum of 2 and 3.5 is 5.5.\n", done.stderr
    assert done.stderr.count(b"notice     notifications/tools/list_changed") == 1 and b"more time" in done.stderr
    done = cli("call", "get-structured-content", "location=New York", *EVERYTHING_CMD)
    assert done.returncode == 0 and len(done.stdout.splitlines()) == 1 and json.loads(done.stdout)["temperature"] is not None
    done = cli("prompt", "args-prompt", "city=Porto", *EVERYTHING_CMD)
    assert done.returncode == 0 and b"Porto" in done.stdout and done.stdout.startswith(b"user:\n")
    blob = cli("read", "demo://resource/dynamic/blob/1", *EVERYTHING_CMD)
    assert blob.returncode == 0 and blob.stdout.startswith(b"Resource 1: This is a base64 blob")
    text = cli("read", "demo://resource/dynamic/text/2", *EVERYTHING_CMD)
    assert text.returncode == 0 and b"Resource 2" in text.stdout


@pytest.mark.skipif(not FASTMCP_PYTHON.exists(), reason="run peers/setup.sh to install FastMCP (pinned)")
def test_fastmcp_logs_print_as_level_logger_and_message() -> None:
    done = cli("call", "--protocol", "legacy", "log_and_progress", "--", *FASTMCP)
    assert done.returncode == 0, done.stderr
    assert b"  log        [info] fastmcp-peer: step 1/3" in done.stderr and b'"msg"' not in done.stderr
    assert done.stdout == b"done\n"  # the text; the {"result": "done"} beside it is not printed a second time
