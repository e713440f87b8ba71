"""Smoke tests of benchmarks/: every client script and the runner work on tiny cases.

Nothing here is timed and no duration is asserted: the benchmark's numbers are
produced by ``python benchmarks/run.py``, not by the test suite. Every client
runs in a subprocess with a bounded timeout.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

BENCH = Path(__file__).resolve().parent.parent / "benchmarks"
SERVER = BENCH / "server.py"
CLIENTS = {"raw": "raw_client.py", "sdk": "sdk_client.py", "lib": "client.py"}
LIMIT_S = 60.0


def run_client(client: str, scenario: str, n: int, concurrency: int = 1, modern: bool = False,
               rusage: Path | None = None) -> dict[str, Any]:
    server = [sys.executable, str(SERVER)] + (["--modern"] if modern else [])
    if rusage is not None:
        server += ["--rusage-file", str(rusage)]
    argv = [sys.executable, str(BENCH / CLIENTS[client]), scenario, str(n), str(concurrency)] + server
    done = subprocess.run(argv, check=False, capture_output=True, text=True, timeout=LIMIT_S,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stdout[-800:] + done.stderr[-800:]
    last = done.stdout.strip().splitlines()[-1]
    line: dict[str, Any] = json.loads(last)
    assert line["ok"] is True, line
    return line


@pytest.mark.parametrize("client", sorted(CLIENTS))
@pytest.mark.parametrize(
    ("scenario", "n", "concurrency", "modern"),
    [("elicit", 5, 3, False), ("mrtr", 5, 1, True), ("log", 5, 1, False), ("idle", 1, 1, False)],
)
def test_client_meets_the_contract(client: str, scenario: str, n: int, concurrency: int, modern: bool,
                                   tmp_path: Path) -> None:
    rusage = tmp_path / "server-rusage.json"
    line = run_client(client, scenario, n, concurrency, modern, rusage)
    assert isinstance(line["work_wall"], float) and isinstance(line["work_cpu"], float)
    if scenario == "idle":
        assert line["count"] == 0
    else:
        assert line["count"] == n
        assert line["server"]["count"] == n
        if scenario != "log":
            assert line["server"]["accepted"] == n
    usage = json.loads(rusage.read_text())  # the server wrote its rusage at exit
    assert set(usage) >= {"pid", "utime", "stime", "maxrss_kb"}


@pytest.mark.parametrize("client", ["raw", "lib"])
def test_connect_only_scenario(client: str) -> None:
    assert run_client(client, "connect", 0)["count"] == 0


def test_lib_log_count_is_delivered_plus_dropped() -> None:
    # More than the default log burst: most entries are dropped by design and counted.
    line = run_client("lib", "log", 400)
    assert line["logs_delivered"] + line["logs_dropped"] == 400 == line["count"]


def test_message_size_elicitation(tmp_path: Path) -> None:
    argv = [sys.executable, str(BENCH / CLIENTS["lib"]), "elicit", "3", "1", sys.executable, str(SERVER)]
    done = subprocess.run(argv, check=False, capture_output=True, text=True, timeout=LIMIT_S,
                          stdin=subprocess.DEVNULL, env={**os.environ, "BENCH_SIZE": "2000"})
    assert done.returncode == 0, done.stderr[-800:]
    line = json.loads(done.stdout.strip().splitlines()[-1])
    assert line["server"]["answer_bytes"] == 3 * 2000


def run_runner(tmp_path: Path, *args: str) -> dict[str, Any]:
    out = tmp_path / "out"
    argv = [sys.executable, str(BENCH / "run.py"), "--quick", "--out", str(out), *args]
    done = subprocess.run(argv, check=False, capture_output=True, text=True, timeout=240, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-1000:]
    assert "runs valid" in (out / "table.txt").read_text()
    data: dict[str, Any] = json.loads((out / "runs.json").read_text())
    assert data["runs"] and all(r["ok"] for r in data["runs"])
    return data


def test_runner_quick(tmp_path: Path) -> None:
    # The sdk column is left out to keep this fast; sdk_client.py has its own tests above.
    data = run_runner(tmp_path, "--parts", "stdio", "--clients", "raw,lib", "--scaling", "--sizes", "s1k")
    seen = {(r["case"], r["client"]) for r in data["runs"]}
    for case in ("e1", "e8", "mrtr", "log", "idle", "fixed", "c1", "c8", "c64", "s1k"):
        for client in ("raw", "lib"):
            assert (case, client) in seen


def test_http_cases_quick_runs_each_case_for_the_floor_and_the_library(tmp_path: Path) -> None:
    out = tmp_path / "http.json"
    argv = [sys.executable, str(BENCH / "http_cases.py"), "--quick", "--clients", "floor,lib",
            "--n", "echo=20", "--n", "elicit=5", "--n", "mrtr=5", "--json", str(out)]
    done = subprocess.run(argv, check=False, capture_output=True, text=True, timeout=240, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-1000:]
    rows = json.loads(out.read_text())["rows"]
    assert {(r["case"], r["client"]) for r in rows} == {(c, k) for c in ("echo", "elicit", "mrtr") for k in ("floor", "lib")}
    assert all(r["ok_runs"] == r["runs"] == 1 for r in rows)


def test_curves_quick_draws_the_pool_and_listing_curves(tmp_path: Path) -> None:
    argv = [sys.executable, str(BENCH / "curves.py"), "--quick", "--curves", "pool,list", "--out", str(tmp_path)]
    done = subprocess.run(argv, check=False, capture_output=True, text=True, timeout=240, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-1000:]
    assert "0 failed runs" in done.stdout
    assert (tmp_path / "curve-pool.svg").read_text().startswith("<svg") and (tmp_path / "curves.json").exists()


def test_http_threads_quick_runs_the_library_beside_the_sdk_on_one_shared_client(tmp_path: Path) -> None:
    # many threads on one client: every answer checked, no pool warning from the library (nothing timed)
    out = tmp_path / "threads.json"
    argv = [sys.executable, str(BENCH / "http_threads.py"), "--quick", "--threads", "12", "--calls", "2", "--json", str(out)]
    done = subprocess.run(argv, check=False, capture_output=True, text=True, timeout=240, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-1000:]
    rows = json.loads(out.read_text())["rows"]
    assert {r["client"] for r in rows} == {"lib", "lib10", "sdk"} and all(r["ok_runs"] == r["runs"] == 1 for r in rows)
    assert all(r["pool_warnings"] == 0 and r["conns"] >= 1 for r in rows)


def test_calls_counts_calls_per_round_trip_for_both_eras(tmp_path: Path) -> None:
    # small N; the counts are only checked for shape (whole, positive), never against a target
    out = tmp_path / "calls.json"
    argv = [sys.executable, str(BENCH / "calls.py"), "--rounds", "3,8", "--functions", "--json", str(out)]
    done = subprocess.run(argv, check=False, capture_output=True, text=True, timeout=240, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-1000:]
    assert "legacy (2025-11-25)" in done.stdout and "modern (2026-07-28)" in done.stdout
    assert done.stdout.count("by module (library frames") == 2
    data = json.loads(out.read_text())
    assert data["rounds"] == [3, 8] and [era["era"] for era in data["eras"]] == ["legacy", "modern"]
    for era in data["eras"]:
        for key in ("python", "c", "library", "modules", "module_to_module"):
            assert isinstance(era[key], int) and era[key] > 0, (era["era"], key, era[key])
        assert era["library"] <= era["python"]
        threads = era["threads"]
        assert threads["reader"]["python"] + threads["caller"]["python"] == era["python"]
        assert threads["reader"]["c"] + threads["caller"]["c"] == era["c"]
        rows = era["by_module"]
        assert rows and all(r["module"].startswith("mcp_input_sync") and isinstance(r["calls"], int) for r in rows)
        assert [r["calls"] for r in rows] == sorted((r["calls"] for r in rows), reverse=True)
        assert sum(r["calls"] for r in rows) == era["library"] == sum(era["layers"].values())


def test_calls_keeps_each_functions_whole_calls_and_sets_the_timed_fraction_apart() -> None:
    sys.path.insert(0, str(BENCH))
    try:
        import calls
    finally:
        sys.path.remove(str(BENCH))
    # 400 rounds: a function called twice a round, a timer that ticked 13 times, set-up that cancels out
    low = {"twice": 10, "tick": 2, "setup": 7}
    high = {"twice": 810, "tick": 15, "setup": 7}
    whole, rest = calls.per_round(low, high, 400)
    assert whole == {"twice": 2}
    assert set(rest) == {"tick"} and abs(rest["tick"] - 13 / 400) < 1e-12


@pytest.mark.skipif(
    not (Path.home() / ".cache" / "mcp-input-sync-peers" / "venv-fastmcp" / "bin" / "python").exists(),
    reason="run peers/setup.sh to install FastMCP (pinned)",
)
def test_soak_smoke_run_reports_no_duplicate_and_flat_resources() -> None:
    # a few seconds of the soak: the servers, the gateway, the report; the real runs are minutes long
    argv = [sys.executable, str(BENCH / "soak.py"), "--seconds", "8", "--threads", "4", "--seed", "7"]
    done = subprocess.run(argv, check=False, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "duplicates seen by the servers: work 0, form 0, progress 0" in done.stdout
    assert "verdict: flat; the library's threads after close: none" in done.stdout
