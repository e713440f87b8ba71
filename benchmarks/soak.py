#!/usr/bin/env python3
"""benchmarks/soak.py -- a host that keeps its clients open while their servers die, come back and turn it away.

    python benchmarks/soak.py [--minutes 10] [--ci] [--seconds S] [--threads 16] [--seed N] [--fastmcp-python PATH] [--tracemalloc]

One process, two clients of the library's public API: one to a FastMCP server
over stdio (``reconnect=True``), one to a FastMCP server over HTTP through a
busy gateway (tests/gateway.py) that answers about one POST in twenty 429 or
503 itself, with or without ``Retry-After``. ``--threads`` threads call tools
(``work``, never safe to send twice; ``lookup``, read-only), answer forms
(``form``), follow progress (``progress``) and read a resource, on either
client, for ``--minutes`` (``--ci``: one minute; ``--seconds``: a smoke run).
Meanwhile a chaos thread, every 5 to 20 s, kills the stdio server (SIGKILL)
or stops the HTTP server and starts it again on the same port.

The servers (benchmarks/soak_server.py) append every tool run to one log, so
a ``work`` that ran twice is seen whatever server process ran it. At the end
it prints the calls made and failed by kind, the reconnects and retries (from
the library's INFO log), the duplicates, and the process's threads, file
descriptors and RSS after the warm-up and at the end (with the clients still
open), then closes the clients. Exit 0 when no ``work``, ``form`` or
``progress`` ran twice, the threads, descriptors and memory stayed flat and
no thread of the library outlived ``close()``;
1 otherwise; 2 when the run hung (a hard bound of the duration plus 120 s).
``--tracemalloc`` also prints where the memory that grew between the warm-up
and the end was allocated (slower: a diagnosis, not a measure).
"""

from __future__ import annotations

import argparse
import collections
import gc
import logging
import os
import random
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Optional

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import mcp_input_sync as mis  # noqa: E402
from tests.gateway import Gateway, Seen  # noqa: E402
from tests.http_peers import PeerProcess, free_port  # noqa: E402

SERVER = ROOT / "benchmarks" / "soak_server.py"
FASTMCP_PYTHON = Path.home() / ".cache" / "mcp-input-sync-peers" / "venv-fastmcp" / "bin" / "python"
#: Tools a client must never run twice: each ran twice is a duplicate.
ONCE = ("work", "form", "progress")
#: How much the end may exceed the start and still be flat.
FLAT_THREADS, FLAT_FDS, FLAT_RSS_MB = 4, 8, 10.0


class Confirms(mis.InputHandler):
    """Answers every form: ``ok`` true."""

    def handle_elicitation(self, params: dict[str, Any], ctx: mis.InputContext) -> dict[str, Any]:
        return {"action": "accept", "content": {"ok": True}}


class Heard(logging.Handler):
    """Counts the library's reconnects and retries from its INFO log records."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.reconnects = 0
        self.retries = 0

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if "connected to server" in message and " again (" in message:
            self.reconnects += 1
        elif "sent again in" in message:
            self.retries += 1


def usage() -> tuple[int, int, float]:
    """This process's threads, open file descriptors and RSS in MB."""
    rss = 0.0
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1]) / 1024
    return threading.active_count(), len(os.listdir("/proc/self/fd")), rss


class Soak:
    def __init__(self, args: argparse.Namespace, folder: Path) -> None:
        self.args = args
        self.rng = random.Random(args.seed)
        self.log = folder / "runs.log"
        self.pid_file = folder / "stdio.pid"
        env = {**os.environ, "SOAK_LOG": str(self.log)}
        self.stdio_env = {"SOAK_LOG": str(self.log), "SOAK_PID": str(self.pid_file)}
        self.http = PeerProcess([args.fastmcp_python, str(SERVER)], port=free_port(), env=env)
        self.gate_lock = threading.Lock()
        self.gateway: Optional[Gateway] = None
        self.stop = threading.Event()
        self.counts: collections.Counter[tuple[str, str, str]] = collections.Counter()
        self.counts_lock = threading.Lock()
        self.chaos = collections.Counter[str]()
        self.heard = Heard()
        #: The threads still alive after the clients closed (named when they are too many).
        self.left: list[str] = []

    # ------------------------------------------------------------------ the busy gateway

    def verdict(self, seen: Seen) -> Optional[tuple[int, dict[str, str]]]:
        if seen.verb != "POST" or seen.method in ("initialize", "notifications/initialized"):
            return None
        with self.gate_lock:
            roll = self.rng.random()
        if roll < 0.02:
            return 429, {"Retry-After": "0"}
        if roll < 0.035:
            return 503, {}
        if roll < 0.05:
            return 503, {"Retry-After": "1"}
        return None

    # ------------------------------------------------------------------ callers

    def call(self, client: mis.Client, where: str, nonce: str) -> None:
        with self.gate_lock:
            action = self.rng.choice(("work", "work", "lookup", "form", "progress", "read"))
        try:
            if action == "read":
                client.read_resource("soak://status", timeout=15)
            elif action == "progress":
                client.call_tool("progress", {"nonce": nonce}, timeout=15, progress=lambda update: None)
            else:
                client.call_tool(action, {"nonce": nonce}, timeout=15)
            outcome = "ok"
        except mis.ClientError as exc:
            outcome = exc.kind if exc.check is None else f"{exc.kind}/{exc.check}"
        with self.counts_lock:
            self.counts[(where, action, outcome)] += 1

    def worker(self, number: int, clients: list[tuple[str, mis.Client]]) -> None:
        done = 0
        while not self.stop.is_set():
            where, client = clients[(number + done) % len(clients)]
            self.call(client, where, f"{number}-{done}")
            done += 1

    # ------------------------------------------------------------------ chaos

    def chaos_loop(self) -> None:
        while not self.stop.wait(self.rng.uniform(5.0, 20.0)):
            if self.rng.random() < 0.5:
                try:
                    os.kill(int(self.pid_file.read_text()), signal.SIGKILL)
                    self.chaos["stdio killed"] += 1
                except (OSError, ValueError):
                    pass
            else:
                self.http.stop()
                self.chaos["http restarted"] += 1
                if self.stop.wait(self.rng.uniform(0.2, 2.0)):
                    self.http.start()
                    return
                self.http.start()

    # ------------------------------------------------------------------ the run

    def run(self, seconds: float) -> int:
        logger = logging.getLogger("mcp_input_sync")
        logger.addHandler(self.heard)
        logger.setLevel(logging.INFO)
        logger.propagate = False
        before = usage()
        self.http.start()
        self.gateway = Gateway(self.http.url, self.verdict, keep=False)
        handler = Confirms()
        stdio = mis.connect_stdio(
            [self.args.fastmcp_python, str(SERVER)], env=self.stdio_env, handler=handler, protocol="legacy", reconnect=mis.Reconnect(attempts=5),
        )
        http = mis.connect_http(self.gateway.url, handler=handler, protocol="legacy", reconnect=mis.Reconnect(attempts=5))
        clients = [("stdio", stdio), ("http", http)]
        for _, client in clients:
            client.list_tools()  # the tools' annotations: lookup is read-only
        workers = [threading.Thread(target=self.worker, args=(n, clients), name=f"soak-{n}") for n in range(self.args.threads)]
        chaos = threading.Thread(target=self.chaos_loop, name="soak-chaos")
        began = time.monotonic()
        for thread in workers:
            thread.start()
        chaos.start()
        warm = min(10.0, seconds / 6)
        time.sleep(warm)  # a benchmark's pacing: nothing is waited for
        start = usage()
        traced = None
        if self.args.tracemalloc:
            import tracemalloc

            tracemalloc.start(8)
            traced = tracemalloc.take_snapshot()
        next_line = began + 10.0
        while time.monotonic() - began < seconds:
            time.sleep(min(1.0, max(0.0, seconds - (time.monotonic() - began))))
            if time.monotonic() >= next_line:
                next_line += 10.0
                self.progress_line(time.monotonic() - began)
        self.stop.set()
        hard = time.monotonic() + 120.0
        for thread in [*workers, chaos]:
            thread.join(max(0.0, hard - time.monotonic()))
        if any(thread.is_alive() for thread in [*workers, chaos]):
            print("HUNG: a worker did not come back within 120 s of the end", flush=True)
            return 2
        gc.collect()
        end = usage()
        if traced is not None:
            import tracemalloc

            grown = tracemalloc.take_snapshot().compare_to(traced, "traceback")
            print("memory grown since the warm-up, by where it was allocated (--tracemalloc):")
            for stat in grown[:8]:
                print(f"  {stat.size_diff / 1024:+9.1f} KiB {stat.count_diff:+7d} blocks")
                for line in stat.traceback.format()[-6:]:
                    print(f"      {line}")
            tracemalloc.stop()
        states = {where: client.state.name for where, client in clients}
        for _, client in clients:
            client.close()
        self.gateway.close()
        self.http.stop()
        settle = time.monotonic() + 5.0  # the gateway's handler threads end with their last streams
        for thread in threading.enumerate():
            if thread is not threading.current_thread() and not thread.name.startswith("MainThread"):
                thread.join(max(0.0, settle - time.monotonic()))
        gc.collect()
        after = usage()
        self.left = sorted(t.name for t in threading.enumerate() if t is not threading.main_thread())
        return self.report(time.monotonic() - began, before, start, end, after, states)

    def progress_line(self, elapsed: float) -> None:
        with self.counts_lock:
            made = sum(self.counts.values())
            failed = sum(n for (_, _, outcome), n in self.counts.items() if outcome != "ok")
        threads, fds, rss = usage()
        print(
            f"[{elapsed:6.0f} s] calls {made}, failed {failed}, reconnects {self.heard.reconnects}, retries {self.heard.retries}, "
            f"chaos {dict(self.chaos)}; threads {threads}, fds {fds}, RSS {rss:.1f} MB",
            flush=True,
        )

    def report(self, elapsed: float, before: tuple[int, int, float], start: tuple[int, int, float], end: tuple[int, int, float],
               after: tuple[int, int, float], states: dict[str, str]) -> int:
        runs: collections.Counter[tuple[str, str]] = collections.Counter()
        if self.log.exists():
            for line in self.log.read_text().splitlines():
                tool, _, nonce = line.partition(" ")
                runs[(tool, nonce)] += 1
        twice = collections.Counter(tool for (tool, _), n in runs.items() if n > 1)
        print(f"\nsoak: {elapsed / 60:.1f} min, {self.args.threads} threads, seed {self.args.seed}; chaos {dict(self.chaos)}")
        by_outcome: collections.Counter[str] = collections.Counter()
        print(f"{'client':7} {'call':9} {'made':>7} {'ok':>7}  failed by kind")
        for where in ("stdio", "http"):
            for action in ("work", "lookup", "form", "progress", "read"):
                rows = {outcome: n for (w, a, outcome), n in self.counts.items() if w == where and a == action}
                made = sum(rows.values())
                failed = ", ".join(f"{outcome} {n}" for outcome, n in sorted(rows.items()) if outcome != "ok")
                print(f"{where:7} {action:9} {made:7} {rows.get('ok', 0):7}  {failed or '-'}")
                for outcome, n in rows.items():
                    by_outcome[outcome] += n
        total = sum(by_outcome.values())
        print(f"calls made {total}, failed {total - by_outcome['ok']} ({', '.join(f'{k} {v}' for k, v in sorted(by_outcome.items()) if k != 'ok') or 'none'})")
        print(f"reconnects {self.heard.reconnects}, retries {self.heard.retries}; client states at the end {states}")
        print(f"duplicates seen by the servers: {', '.join(f'{tool} {twice[tool]}' for tool in (*ONCE, 'lookup'))} (must be 0 for {', '.join(ONCE)})")
        print(f"{'':22} {'threads':>8} {'fds':>6} {'RSS MB':>8}")
        for label, (threads, fds, rss) in (("before the clients", before), ("after the warm-up", start), ("at the end, open", end),
                                           ("after close()", after)):
            print(f"{label:22} {threads:8} {fds:6} {rss:8.1f}")
        flat = end[0] - start[0] <= FLAT_THREADS and end[1] - start[1] <= FLAT_FDS and end[2] - start[2] <= FLAT_RSS_MB
        back = not [name for name in self.left if name.startswith("mcp-input-sync")]  # the library's threads all ended
        duplicated = sum(twice[tool] for tool in ONCE)
        verdict = "flat" if flat else "NOT FLAT"
        print(f"threads left after close(): {', '.join(self.left) or 'none'}")
        print(f"verdict: {verdict}; the library's threads after close: {'none' if back else 'SOME LEFT'}; duplicates {duplicated}")
        return 0 if flat and back and duplicated == 0 and total > 0 else 1


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--ci", action="store_true", help="one minute")
    parser.add_argument("--seconds", type=float, default=None, help="a smoke run of this many seconds")
    parser.add_argument("--threads", type=int, default=16)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--fastmcp-python", default=str(FASTMCP_PYTHON), help="an interpreter with FastMCP (peers/setup.sh)")
    parser.add_argument("--tracemalloc", action="store_true", help="print where the memory that grew was allocated")
    args = parser.parse_args(argv)
    if not Path(args.fastmcp_python).exists():
        print(f"no FastMCP interpreter at {args.fastmcp_python}: run peers/setup.sh", file=sys.stderr)
        return 1
    seconds = args.seconds if args.seconds is not None else 60.0 if args.ci else args.minutes * 60.0
    watchdog = threading.Timer(seconds + 240.0, lambda: os._exit(2))  # the whole run, bounded
    watchdog.daemon = True
    watchdog.start()
    with tempfile.TemporaryDirectory(prefix="mcp-soak-") as folder:
        return Soak(args, Path(folder)).run(seconds)


if __name__ == "__main__":
    sys.exit(main())
