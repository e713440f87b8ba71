#!/usr/bin/env python3
"""benchmarks/http_threads.py -- many threads sharing one HTTP client: rate, CPU, connections, pool warnings.

    python benchmarks/http_threads.py [--reps 3] [--quick] [--threads 32,64] [--calls 50]
                                      [--clients lib,lib10,sdk] [--before DIR] [--json PATH]
    python benchmarks/http_threads.py client CLIENT URL THREADS CALLS WARM     (one client run; internal)

The setup docs/web.md recommends for a server over HTTP: one client shared by
every request thread. One server (http_server.py, started once; ``echo`` answers
JSON at once) and, for each thread count, each client in a process of its own.
A client connects, makes WARM calls one after another (warm-up), then THREADS
threads (or tasks) released together make CALLS ``tools/call echo`` each, all
on the one client. It measures ``time.process_time()`` (every thread of its
process) and wall time around that phase, checks every answer, counts the log
records at WARNING and above (and among them urllib3's "Connection pool is
full, discarding connection"), and prints one JSON line
``{"ok", "client", "threads", "calls", "cpu", "wall", "bad", "pool_warnings", "warnings"}``.

Clients
    lib     mcp_input_sync: ``connect_http(url, protocol="legacy")``, its default ``pool_size`` (64); threads
    lib10   the same with ``pool_size=10``: requests' default, what the library kept before ``pool_size``
    sdk     the official SDK (mcp 2.3.0): ``streamable_http_client(url)`` (its default httpx client:
            at most 100 connections, 20 kept idle) and one ``ClientSession``; asyncio tasks
    before  (with ``--before DIR``) ``lib`` run from another copy of the package, on ``PYTHONPATH=DIR``:
            a snapshot of an earlier commit (``git archive HEAD~1 mcp_input_sync | tar -x -C DIR``)

Interleaving: in every repetition each thread count runs every client back to
back; the client order rotates from one repetition to the next. The table gives
medians over repetitions (and min-max): calls/s over the phase, client CPU per
call, ``conns``, the TCP connections the server accepted during the whole client
run (``GET /bench/stats`` before and after: connect, warm-up, work, close), and
the warnings. ``--quick``: one repetition, few calls (well under a minute).

Entry points: :func:`run_threads` (the rows as data), :func:`render` (the table) and :func:`main`.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Optional

from http_cases import Server

CLIENTS = ("lib", "lib10", "sdk")
#: The clients the runner knows: ``before`` runs only with ``--before``.
KNOWN = (*CLIENTS, "before")
FULL = "Connection pool is full"

Json = dict[str, Any]


# ============================================================================ the clients (child processes)


class Warnings(logging.Handler):
    """Counts the records at WARNING and above that reach the root logger, and urllib3's pool warnings among them."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.count = self.pool = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.count += 1
        self.pool += FULL in record.getMessage()


def lib_client(url: str, threads: int, calls: int, warm: int, pool_size: Optional[int]) -> Json:
    import mcp_input_sync as mis

    seen = Warnings()
    logging.getLogger().addHandler(seen)
    sized = {} if pool_size is None else {"pool_size": pool_size}
    bad: list[int] = []
    with mis.connect_http(url, protocol="legacy", **sized) as client:
        for k in range(warm):
            client.call_tool("echo", {"text": str(k)})
        go = threading.Event()

        def work() -> None:
            go.wait(60)
            wrong = 0
            for k in range(calls):
                wrong += client.call_tool("echo", {"text": str(k)})["content"][0]["text"] != str(k)
            bad.append(wrong)

        workers = [threading.Thread(target=work) for _ in range(threads)]
        for worker in workers:
            worker.start()
        c0, w0 = time.process_time(), time.perf_counter()
        go.set()
        for worker in workers:
            worker.join(300)
        cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    missing = (threads - len(bad)) * calls  # a thread that failed or never ended
    return {"ok": True, "cpu": cpu, "wall": wall, "bad": sum(bad) + missing, "pool_warnings": seen.pool, "warnings": seen.count,
            "library": str(Path(mis.__file__).parent)}


def sdk_client(url: str, threads: int, calls: int, warm: int) -> Json:
    import anyio
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    seen = Warnings()
    logging.getLogger().addHandler(seen)
    report: Json = {}

    async def go() -> None:
        async with streamable_http_client(url) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            for k in range(warm):
                await session.call_tool("echo", {"text": str(k)})
            bad = [0]

            async def work() -> None:
                for k in range(calls):
                    result: Any = await session.call_tool("echo", {"text": str(k)})
                    bad[0] += result.content[0].text != str(k)

            c0, w0 = time.process_time(), time.perf_counter()
            async with anyio.create_task_group() as group:
                for _ in range(threads):
                    group.start_soon(work)
            report.update(cpu=time.process_time() - c0, wall=time.perf_counter() - w0, bad=bad[0])

    anyio.run(go)
    return {"ok": True, **report, "pool_warnings": seen.pool, "warnings": seen.count}


def client_main(argv: list[str]) -> int:
    name, url, threads, calls, warm = argv[0], argv[1], int(argv[2]), int(argv[3]), int(argv[4])
    report: Json = {"ok": False, "client": name, "threads": threads, "calls": threads * calls}
    try:
        if name == "sdk":
            report.update(sdk_client(url, threads, calls, warm))
        else:
            report.update(lib_client(url, threads, calls, warm, 10 if name == "lib10" else None))
    except BaseException as exc:  # noqa: BLE001 - the JSON line must be printed
        report.update(ok=False, error=repr(exc)[:500])
    print(json.dumps(report), flush=True)
    return 0 if report.get("ok") else 1


# ============================================================================ the runner


def run_one(python: str, client: str, url: str, threads: int, calls: int, warm: int, timeout: float,
            before: Optional[str] = None) -> Json:
    """One client process (``before``: on ``PYTHONPATH``); its JSON line, with ``why`` set when the run is not valid."""
    argv = [python, str(Path(__file__).resolve()), "client", client, url, str(threads), str(calls), str(warm)]
    env = None if before is None else {**os.environ, "PYTHONPATH": before}
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL, env=env)
    except subprocess.TimeoutExpired:
        return {"ok": False, "client": client, "threads": threads, "why": f"timeout after {timeout:.0f} s"}
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    report: Json = json.loads(lines[-1]) if lines else {"ok": False, "client": client, "threads": threads}
    if not report.get("ok"):
        report["why"] = str(report.get("error") or f"exit {done.returncode}: {done.stderr.strip()[-300:]}")
    elif report["bad"]:
        report.update(ok=False, why=f"{report['bad']} wrong or missing answers")
    elif before is not None and not str(report.get("library", "")).startswith(str(Path(before).resolve())):
        report.update(ok=False, why=f"the package came from {report.get('library')}, not from {before}")
    else:
        report.update(rate=report["calls"] / report["wall"], cpu_us=report["cpu"] / report["calls"] * 1e6)
    return report


def median(values: list[float]) -> Optional[float]:
    return statistics.median(values) if values else None


def run_threads(reps: int = 3, quick: bool = False, python: str = sys.executable, sdk_python: Optional[str] = None,
                counts: Optional[list[int]] = None, calls: Optional[int] = None, clients: Optional[list[str]] = None,
                timeout: float = 300.0, before: Optional[str] = None, log: Callable[[str], None] = print) -> list[Json]:
    """Start the server, run reps x thread counts x clients interleaved, return one row per thread count and client.

    ``before``: a folder holding an earlier copy of the package, for the ``before`` client (added when given).
    """
    names = [c for c in (clients or CLIENTS) if c in CLIENTS] + (["before"] if before else [])
    counts = counts or [32, 64]
    per = calls or (5 if quick else 50)
    warm = 5 if quick else 50
    server = Server(python)
    runs: list[Json] = []
    try:
        log(f"http threads: server {server.url}; threads {counts} x {per} calls each; {reps} rep(s); clients {','.join(names)}")
        for rep in range(reps):
            for threads in counts:
                shift = rep % len(names)
                for client in names[shift:] + names[:shift]:
                    opened = server.connections()
                    r = run_one((sdk_python or python) if client == "sdk" else python, client, server.url, threads, per, warm, timeout,
                                before if client == "before" else None)
                    r.update(rep=rep, threads=threads, conns=server.connections() - opened - 1)  # the stats request is one
                    runs.append(r)
                    if r.get("ok"):
                        log(f"  rep {rep} {threads:3d} threads {client:<6} {r['rate']:8.0f} calls/s {r['cpu_us']:8.0f} us/call  "
                            f"{r['conns']:4d} conns {r['pool_warnings']:4d} pool warnings")
                    else:
                        log(f"  rep {rep} {threads:3d} threads {client:<6} FAIL {r.get('why')}")
    finally:
        server.stop()
    rows = []
    for threads in counts:
        for client in names:
            mine = [r for r in runs if r["threads"] == threads and r["client"] == client]
            good = [r for r in mine if r.get("ok")]
            rows.append({
                "threads": threads, "client": client, "calls": per * threads, "runs": len(mine), "ok_runs": len(good),
                **{key: median([r[key] for r in good]) for key in ("rate", "cpu_us", "conns", "pool_warnings", "warnings")},
                **{f"{key}_all": [round(r[key], 1) for r in good] for key in ("rate", "cpu_us", "conns", "pool_warnings", "warnings")},
                "failures": sorted({r.get("why", "") for r in mine if not r.get("ok")}),
            })
    return rows


def _cell(row: Json, key: str, digits: int = 0) -> str:
    value, every = row[key], row[f"{key}_all"]
    if value is None:
        return "-"
    spread = f" ({min(every):.{digits}f}-{max(every):.{digits}f})" if len(every) > 1 and min(every) != max(every) else ""
    return f"{value:.{digits}f}{spread}"


def render(rows: list[Json]) -> str:
    head = f"{'threads':>7} {'client':<6} {'ok':>5} {'calls/s':>18} {'cpu us/call':>18} {'conns':>14} {'pool warnings':>14} {'warnings':>8}"
    lines = [head, "-" * len(head)]
    for row in rows:
        lines.append(f"{row['threads']:>7} {row['client']:<6} {row['ok_runs']:>2}/{row['runs']:<2} {_cell(row, 'rate'):>18} "
                     f"{_cell(row, 'cpu_us'):>18} {_cell(row, 'conns'):>14} {_cell(row, 'pool_warnings'):>14} {_cell(row, 'warnings'):>8}"
                     + ("   n/a: " + "; ".join(row["failures"])[:200] if row["failures"] else ""))
    lines.append("")
    lines.append("  every thread (sdk: task) makes its calls on the one client; calls/s and cpu: the work phase, "
                 "after connect and warm-up; median (min-max) of the repetitions")
    lines.append("  conns: TCP connections the server accepted during the whole client run; "
                 "pool warnings: urllib3's 'Connection pool is full' records")
    return "\n".join(lines)


def main(argv: Optional[list[str]] = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] == "client":
        return client_main(args[1:])
    doc = __doc__ or ""
    ap = argparse.ArgumentParser(description=doc.split("\n")[1], epilog=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=None, help="repetitions (3; 1 with --quick)")
    ap.add_argument("--quick", action="store_true", help="few calls, one repetition: well under a minute")
    ap.add_argument("--threads", default="32,64", help="thread counts, e.g. 8,32,64")
    ap.add_argument("--calls", type=int, default=None, help="calls per thread (50; 5 with --quick)")
    ap.add_argument("--clients", default=",".join(CLIENTS), help=f"subset of {','.join(CLIENTS)}")
    ap.add_argument("--python", default=sys.executable, help="interpreter for the server and the lib clients")
    ap.add_argument("--sdk-python", default=os.environ.get("SDK_PY"), help="interpreter with mcp==2.3.0")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per client run")
    ap.add_argument("--before", default=None, metavar="DIR", help="also run the lib client from the package copy in DIR")
    ap.add_argument("--json", default=None, help="write the rows to this file")
    a = ap.parse_args(args)
    clients = [c for c in a.clients.split(",") if c]
    if [c for c in clients if c not in CLIENTS]:
        ap.error(f"unknown clients: {[c for c in clients if c not in CLIENTS]}")
    reps = a.reps if a.reps is not None else (1 if a.quick else 3)
    began = time.perf_counter()
    rows = run_threads(reps, a.quick, a.python, a.sdk_python, [int(x) for x in a.threads.split(",") if x], a.calls, clients, a.timeout,
                       a.before)
    print(f"\n# threads sharing one HTTP client, {reps} rep(s) interleaved, {time.perf_counter() - began:.0f} s\n" + render(rows), flush=True)
    if a.json:
        Path(a.json).write_text(json.dumps({"rows": rows}, indent=1))
    return 0 if rows and all(r["ok_runs"] == r["runs"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
