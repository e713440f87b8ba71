"""The official MCP conformance runner drives ``python -m mcp_input_sync.conformance``: 19 core, 44 auth and 13 extension rows must pass.

The runner (npm ``@modelcontextprotocol/conformance`` 0.1.16 and
0.2.0-alpha.12, on Node 22) is installed by ``peers/setup.sh``, which the
README's test command runs first; ``peers/conformance.sh`` starts each of
its mock servers in a network namespace with only loopback.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PEERS = Path(os.environ.get("MIS_PEERS", Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "mcp-input-sync-peers"))


def runner_installed() -> bool:
    return (PEERS / "conformance-0.1.16").is_dir() and (PEERS / "conformance-0.2.0-alpha.12").is_dir() and shutil.which("unshare") is not None


@pytest.mark.skipif(not runner_installed(), reason="run peers/setup.sh to install the official conformance runner")
def test_the_official_conformance_runner_passes_all_19_core_rows() -> None:
    done = subprocess.run(
        ["bash", str(ROOT / "peers" / "conformance.sh"), "--only", "016", "--only", "next", sys.executable, "-m", "mcp_input_sync.conformance"],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    last = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    assert last == "19 passed, 0 failed", done.stdout[-3000:] + done.stderr[-3000:]
    assert done.returncode == 0


def auth_rows() -> dict[str, int]:
    """Each auth scenario of peers/conformance.sh with its number of rows (one per specification version)."""
    rows: dict[str, int] = {}
    text = (ROOT / "peers" / "conformance.sh").read_text()
    for line in text.splitlines():
        if line.startswith("auth:"):
            name = line.split()[0].split(":", 2)[2]
            rows[name] = rows.get(name, 0) + 1
    return rows


AUTH = auth_rows()


def test_the_auth_rows_are_the_runners_44() -> None:
    assert sum(AUTH.values()) == 44 and len(AUTH) == 27


@pytest.mark.skipif(not runner_installed(), reason="run peers/setup.sh to install the official conformance runner")
@pytest.mark.parametrize("scenario", sorted(AUTH))
def test_the_official_conformance_runner_passes_every_auth_row(scenario: str) -> None:
    passes(f"auth:*:{scenario}", AUTH[scenario], timeout=300)


def passes(only: str, rows: int, timeout: int) -> None:
    """peers/conformance.sh --only ``only`` with the project's client: ``rows`` rows, all passed."""
    done = subprocess.run(
        ["bash", str(ROOT / "peers" / "conformance.sh"), "--only", only, sys.executable, "-m", "mcp_input_sync.conformance"],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
    )
    last = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    assert last == f"{rows} passed, 0 failed", done.stdout[-3000:] + done.stderr[-3000:]
    assert done.returncode == 0


def extension_rows() -> list[str]:
    """The extension rows of peers/conformance.sh (ext:NAME on 0.2.0-alpha.12, ext:016:NAME on 0.1.16)."""
    text = (ROOT / "peers" / "conformance.sh").read_text()
    return [line.split()[0] for line in text.splitlines() if line.startswith("ext:")]


@pytest.mark.skipif(not runner_installed(), reason="run peers/setup.sh to install the official conformance runner")
def test_the_official_conformance_runner_passes_every_extension_row() -> None:
    # the machine grants (4, and 3 on 0.1.16), DPoP (2) and skills (4): every extension scenario the runner has
    rows = extension_rows()
    assert len(rows) == 13
    passes("ext:*", len(rows), timeout=600)
