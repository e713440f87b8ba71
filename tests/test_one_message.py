"""One message per error (issue #32, item 5): the library's records are the host's to show.

Without logging set up, a library record used to reach stderr through
Python's last-resort handler, so a script printed a warning and then raised
the same text, and the command line printed the library's line and then its
own. The package's logger now has a ``NullHandler``, and what the caller
gets as an exception is logged at INFO, not WARNING.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

import mcp_input_sync as mis
from mcp_input_sync.testing import FakeServer

REPO = Path(__file__).resolve().parents[1]
EXITS = [sys.executable, "-c", "import sys; sys.exit(3)"]


def run(*argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(list(argv), capture_output=True, text=True, timeout=60, env=env, stdin=subprocess.DEVNULL, cwd=REPO)


def test_a_script_without_logging_set_up_prints_the_error_once() -> None:
    script = (
        "import sys, mcp_input_sync as mis\n"
        f"mis.connect_stdio({EXITS!r}, timeout=10)\n"
    )
    done = run(sys.executable, "-c", script)
    assert done.returncode == 1 and "ClientError" in done.stderr
    assert done.stderr.count("the server closed the connection") == 1, done.stderr


def test_the_command_line_prints_its_own_message_once() -> None:
    done = run(sys.executable, "-m", "mcp_input_sync", "call", "anything", "--", *EXITS)
    assert done.returncode == 4
    assert done.stderr.count("the server closed the connection") == 1, done.stderr


def test_the_package_logger_has_a_null_handler_and_leaves_the_level_to_the_host() -> None:
    logger = logging.getLogger("mcp_input_sync")
    assert any(isinstance(h, logging.NullHandler) for h in logger.handlers)
    assert logger.level == logging.NOTSET and logger.propagate  # a host's logging config still sees every record


def test_a_call_that_fails_with_the_connection_is_logged_at_info_and_an_unheard_end_at_warning(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="mcp_input_sync")
    with pytest.raises(mis.ClientError):
        mis.connect_stdio(EXITS, timeout=10)  # the handshake's caller gets the error
    ended = [r for r in caplog.records if "closed the connection" in r.getMessage()]
    assert [r.levelno for r in ended] == [logging.INFO]
    caplog.clear()
    fake = FakeServer()
    with fake.client() as client:
        client.ping()
        fake.peer.close()  # the server goes away while nobody waits: only the log says so
        assert mis_wait(lambda: client.state is mis.ClientState.CLOSED)
    ended = [r for r in caplog.records if "closed the connection" in r.getMessage()]
    assert [r.levelno for r in ended] == [logging.WARNING]
    fake.close()


def test_a_2026_07_28_refusal_the_caller_gets_is_logged_at_info(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="mcp_input_sync")
    fake = FakeServer("modern")

    @fake.tool
    def sample(call: object) -> str:
        return str(call.sample("hi"))  # type: ignore[attr-defined]

    with fake, fake.client() as client:  # the handler declares no sampling: the round is refused
        with pytest.raises(mis.ClientError) as refused:
            client.call_tool("sample")
    assert refused.value.check == "capability"
    noted = [r for r in caplog.records if "refused sampling request" in r.getMessage()]
    assert noted and all(r.levelno == logging.INFO for r in noted)


def mis_wait(predicate: object, seconds: float = 10.0) -> bool:
    from .harness import wait_until

    return wait_until(predicate, seconds)  # type: ignore[arg-type]
