#!/usr/bin/env python3
"""benchmarks/http_cases.py -- client CPU per unit of work over Streamable HTTP, side by side.

    python benchmarks/http_cases.py [--reps 3] [--quick] [--cases echo,elicit,mrtr]
                                    [--clients floor,raw,lib,sdk] [--profile] [--json PATH]
    python benchmarks/http_cases.py client CLIENT CASE URL N WARM     (one client run; internal)

One server (http_server.py, started once) and, for every case, each client in a
process of its own. A client connects, does WARM units of the case (warm-up), then
measures ``time.process_time()`` (every thread of its process) and wall time around N
units, checks the answers and prints one JSON line
``{"ok", "client", "case", "n", "count", "cpu", "wall", "server"}``.

Cases (unit: what one of the N is)
    echo         legacy (2025-11-25) ``tools/call echo``, JSON answer            unit: call
    elicit       legacy ``tools/call elicit_n {n: N}``: N ``elicitation/create``
                 requests on the call's SSE stream, one at a time, each answered
                 by a separate POST                                              unit: round trip
    mrtr         2026-07-28 ``tools/call mrtr_n {n: N}``: N ``input_required``
                 results, each answered by a retry with ``inputResponses``       unit: round
    echo_modern  (not by default) ``tools/call echo`` at 2026-07-28               unit: call

Clients
    floor   ``http.client`` by hand (one keep-alive connection; for elicit a second one
            for the answers): the floor of any Python HTTP client
    raw     ``requests.Session.post`` of the same JSON (echo only)
    lib     mcp_input_sync: ``connect_http(url, protocol="legacy"|"modern")`` and an
            ``InputHandler`` that accepts every elicitation
    sdk     the official SDK (mcp 2.3.0): ``mcp.Client(url, mode="legacy"|"auto")`` with an
            elicitation callback; for mrtr its own ``input_required`` driver
            (``input_required_max_rounds``)

Interleaving: in every repetition each case runs every client back to back; the
client order rotates from one repetition to the next. The table gives medians and
the spread (min-max over repetitions) of CPU per unit, and the ratios client/floor
and client/sdk as the median of per-repetition ratios, and ``conns``, the TCP connections
the server accepted during the client's run (``GET /bench/stats`` before and after; a
client that reuses its keep-alive connections opens a handful). ``--quick``: one repetition,
small N (well under a minute). ``--profile``: also cProfile the lib client's elicit
and mrtr work phases (every thread, CPU timer) and print the top functions grouped
by where they live.

Entry points for benchmarks/run.py: :func:`run_http_cases` (the rows as data),
:func:`render` (the table) and :func:`main`.
"""

from __future__ import annotations

import argparse
import json
import os
import select
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

HERE = Path(__file__).resolve().parent
SERVER = HERE / "http_server.py"
ACCEPT = "application/json, text/event-stream"
LEGACY = "2025-11-25"
MODERN = "2026-07-28"
META_VERSION = "io.modelcontextprotocol/protocolVersion"
ANSWER = {"action": "accept", "content": {"answer": "ok"}}
CLIENTS = ("floor", "raw", "lib", "sdk")

Json = dict[str, Any]


@dataclass(frozen=True)
class Case:
    key: str
    title: str
    unit: str
    n: int
    quick_n: int
    warm: int
    quick_warm: int
    modern: bool
    clients: tuple[str, ...]


CASES: dict[str, Case] = {
    "echo": Case("echo", "legacy tools/call echo, JSON answer", "call", 2000, 300, 50, 10, False,
                 ("floor", "raw", "lib", "sdk")),
    "elicit": Case("elicit", "legacy elicitation round trip: request on the call's SSE stream, answer POSTed",
                   "round trip", 1000, 150, 10, 3, False, ("floor", "lib", "sdk")),
    "mrtr": Case("mrtr", "2026-07-28 input_required round: JSON result, retry with inputResponses",
                 "round", 1000, 150, 10, 3, True, ("floor", "lib", "sdk")),
    "echo_modern": Case("echo_modern", "2026-07-28 tools/call echo, JSON answer", "call", 2000, 300, 50, 10, True,
                        ("floor", "lib", "sdk")),
}
DEFAULT_CASES = ("echo", "elicit", "mrtr")


def summary_of(text: str) -> Json:
    try:
        value = json.loads(text)
    except ValueError:
        return {"text": text[:200]}
    return value if isinstance(value, dict) else {"value": value}


# ============================================================================ the clients (child processes)


class Work:
    """What one client run reports; ``run`` measures the work phase."""

    def __init__(self, client: str, case: str, n: int) -> None:
        self.report: Json = {"ok": False, "client": client, "case": case, "n": n}

    def run(self, body: Callable[[], tuple[int, Json]], before: Optional[Callable[[], None]] = None,
            after: Optional[Callable[[], None]] = None) -> None:
        if before is not None:
            before()
        c0, w0 = time.process_time(), time.perf_counter()
        count, server = body()
        cpu, wall = time.process_time() - c0, time.perf_counter() - w0
        if after is not None:
            after()
        self.report.update(ok=True, count=count, server=server, cpu=cpu, wall=wall)


class Floor:
    """``http.client`` by hand: the cheapest a Python client can do each exchange."""

    def __init__(self, url: str, modern: bool) -> None:
        import http.client
        from urllib.parse import urlsplit

        parts = urlsplit(url)
        self.path = parts.path or "/"
        host = parts.hostname or "127.0.0.1"
        self.connect: Callable[[], Any] = lambda: http.client.HTTPConnection(host, parts.port)
        self.conn = self.connect()
        self.answers: Any = None  # a second connection, for answers POSTed while a stream is open
        self.headers = {"Accept": ACCEPT, "Content-Type": "application/json"}
        self.modern = modern
        self.ids = 0
        if modern:
            self.headers["MCP-Protocol-Version"] = MODERN
            self.post(self.conn, {"jsonrpc": "2.0", "id": self.next_id(), "method": "server/discover",
                                  "params": {"_meta": {META_VERSION: MODERN}}}, self.headers)
        else:
            response, _ = self.post(self.conn, {"jsonrpc": "2.0", "id": self.next_id(), "method": "initialize", "params": {
                "protocolVersion": LEGACY, "capabilities": {"elicitation": {"form": {}}},
                "clientInfo": {"name": "floor", "version": "1"}}}, self.headers)
            self.headers["Mcp-Session-Id"] = response.getheader("Mcp-Session-Id")
            self.headers["MCP-Protocol-Version"] = LEGACY
            self.post(self.conn, {"jsonrpc": "2.0", "method": "notifications/initialized"}, self.headers)

    def next_id(self) -> int:
        self.ids += 1
        return self.ids

    def post(self, conn: Any, msg: Json, headers: dict[str, str]) -> tuple[Any, bytes]:
        conn.request("POST", self.path, json.dumps(msg), headers)
        response = conn.getresponse()
        return response, response.read()

    def call_headers(self, name: str) -> dict[str, str]:
        if not self.modern:
            return self.headers
        return dict(self.headers, **{"Mcp-Method": "tools/call", "Mcp-Name": name})

    def params(self, name: str, args: Json) -> Json:
        params: Json = {"name": name, "arguments": args}
        if self.modern:
            params["_meta"] = {META_VERSION: MODERN}
        return params

    def echo(self, k: int) -> None:
        headers = self.call_headers("echo")
        _, body = self.post(self.conn, {"jsonrpc": "2.0", "id": self.next_id(), "method": "tools/call",
                                        "params": self.params("echo", {"text": str(k)})}, headers)
        if json.loads(body)["result"]["content"][0]["text"] != str(k):
            raise AssertionError("echo answered the wrong text")

    def elicit(self, n: int) -> tuple[int, Json]:
        """``elicit_n``: read the SSE stream as it arrives, POST each answer on the second connection."""
        if self.answers is None:
            self.answers = self.connect()
        call_id = self.next_id()
        self.conn.request("POST", self.path, json.dumps({"jsonrpc": "2.0", "id": call_id, "method": "tools/call",
                                                         "params": self.params("elicit_n", {"n": n})}), self.headers)
        response = self.conn.getresponse()
        if not response.getheader("Content-Type", "").startswith("text/event-stream"):
            raise AssertionError(f"elicit_n answered {response.status} {response.getheader('Content-Type')}")
        count, result, pending = 0, None, b""
        while True:
            chunk = response.read1(65536)
            if not chunk:
                break
            pending += chunk
            while True:
                end = pending.find(b"\n\n")
                if end < 0:
                    break
                event, pending = pending[:end], pending[end + 2:]
                data = b"\n".join(line[6:] if line.startswith(b"data: ") else line[5:]
                                  for line in event.split(b"\n") if line.startswith(b"data:"))
                if not data:
                    continue
                msg = json.loads(data)
                if msg.get("method") == "elicitation/create":
                    count += 1
                    reply, _ = self.post(self.answers, {"jsonrpc": "2.0", "id": msg["id"], "result": ANSWER}, self.headers)
                    if reply.status != 202:
                        raise AssertionError(f"an answer got HTTP {reply.status}")
                elif msg.get("id") == call_id:
                    result = msg["result"]
        if result is None:
            raise AssertionError("the stream ended without the tool result")
        return count, summary_of(result["content"][0]["text"])

    def mrtr(self, n: int) -> tuple[int, Json]:
        """``mrtr_n``: retry with ``inputResponses`` and the echoed ``requestState`` until complete."""
        headers = self.call_headers("mrtr_n")
        base = self.params("mrtr_n", {"n": n})
        params, count = base, 0
        while True:
            _, body = self.post(self.conn, {"jsonrpc": "2.0", "id": self.next_id(), "method": "tools/call", "params": params},
                                headers)
            result = json.loads(body)["result"]
            if result.get("resultType") != "input_required":
                return count, summary_of(result["content"][0]["text"])
            asked = result["inputRequests"]
            count += len(asked)
            params = dict(base, inputResponses={key: ANSWER for key in asked}, requestState=result["requestState"])


def floor_client(case: Case, url: str, n: int, warm: int) -> Json:
    work = Work("floor", case.key, n)
    floor = Floor(url, case.modern)
    if case.key in ("echo", "echo_modern"):
        for k in range(warm):
            floor.echo(k)

        def calls() -> tuple[int, Json]:
            for k in range(n):
                floor.echo(k)
            return n, {"count": n, "accepted": n}

        work.run(calls)
    elif case.key == "elicit":
        if warm:
            floor.elicit(warm)
        work.run(lambda: floor.elicit(n))
    else:
        if warm:
            floor.mrtr(warm)
        work.run(lambda: floor.mrtr(n))
    return work.report


def raw_client(case: Case, url: str, n: int, warm: int) -> Json:
    """``requests.Session.post``: what a requests-based client pays at least (echo only)."""
    import requests

    if case.key != "echo":
        raise SystemExit("raw does the echo case only")
    work = Work("raw", case.key, n)
    session = requests.Session()
    headers = {"Accept": ACCEPT, "Content-Type": "application/json"}
    first = session.post(url, data=json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}), headers=headers)
    headers.update({"Mcp-Session-Id": first.headers["Mcp-Session-Id"], "MCP-Protocol-Version": LEGACY})
    session.post(url, data=json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}), headers=headers)

    def echo(k: int) -> None:
        body = session.post(url, data=json.dumps({"jsonrpc": "2.0", "id": k + 1, "method": "tools/call", "params": {
            "name": "echo", "arguments": {"text": str(k)}}}), headers=headers).json()
        if body["result"]["content"][0]["text"] != str(k):
            raise AssertionError("echo answered the wrong text")

    for k in range(warm):
        echo(k)

    def calls() -> tuple[int, Json]:
        for k in range(n):
            echo(k)
        return n, {"count": n, "accepted": n}

    work.run(calls)
    return work.report


class ThreadProfiler:
    """cProfile on the main thread (enabled around the work phase) and on every thread started later.

    The timer is ``time.thread_time``: a thread blocked in a read or a lock costs nothing.
    """

    def __init__(self) -> None:
        import cProfile

        self.make: Callable[[], Any] = lambda: cProfile.Profile(time.thread_time)
        self.main = self.make()
        self.others: list[Any] = []

    def install(self) -> None:
        import threading

        plain_run = threading.Thread.run
        others, make = self.others, self.make

        def run(thread: threading.Thread) -> None:
            profile = make()
            others.append(profile)
            profile.enable()
            try:
                plain_run(thread)
            finally:
                profile.disable()

        threading.Thread.run = run  # type: ignore[method-assign,assignment]

    def dump(self, path: str) -> None:
        import pstats

        merged: Any = None
        for profile in [self.main, *self.others]:
            try:
                merged = pstats.Stats(profile) if merged is None else merged.add(profile)
            except TypeError:  # a profile that recorded nothing
                continue
        if merged is not None:
            merged.dump_stats(path)


def lib_client(case: Case, url: str, n: int, warm: int) -> Json:
    profile_path = os.environ.get("HTTP_BENCH_PROFILE")
    profiler = ThreadProfiler() if profile_path else None
    if profiler is not None:
        profiler.install()  # before any library thread starts
    import threading

    import mcp_input_sync as mis

    class Accepting(mis.InputHandler):
        def __init__(self) -> None:
            self.answered = 0
            self.lock = threading.Lock()

        def handle_elicitation(self, params: Json, ctx: mis.InputContext) -> Json:
            with self.lock:
                self.answered += 1
            return {"action": "accept", "content": {"answer": "ok"}}

    work = Work("lib", case.key, n)
    handler = Accepting()
    with mis.connect_http(url, handler=handler, protocol="modern" if case.modern else "legacy",
                          input_rate_limit=(float("inf"), 10**9), max_rounds=10**6) as client:
        work.report["protocol"] = client.protocol_version

        def echo(k: int) -> None:
            if client.call_tool("echo", {"text": str(k)})["content"][0]["text"] != str(k):
                raise AssertionError("echo answered the wrong text")

        def tool(name: str, count: int) -> Json:
            result = client.call_tool(name, {"n": count})
            return summary_of(result["content"][0]["text"])

        if case.key in ("echo", "echo_modern"):
            for k in range(warm):
                echo(k)

            def body() -> tuple[int, Json]:
                for k in range(n):
                    echo(k)
                return n, {"count": n, "accepted": n}
        else:
            name = "elicit_n" if case.key == "elicit" else "mrtr_n"
            if warm:
                tool(name, warm)

            def body() -> tuple[int, Json]:
                before = handler.answered
                server = tool(name, n)
                return handler.answered - before, server

        work.run(body, profiler.main.enable if profiler else None, profiler.main.disable if profiler else None)
    if profiler is not None and profile_path:
        profiler.dump(profile_path)
    return work.report


def sdk_client(case: Case, url: str, n: int, warm: int) -> Json:
    import asyncio
    import warnings

    import mcp_types
    from mcp import Client

    try:
        from mcp.shared.exceptions import MCPDeprecationWarning

        warnings.filterwarnings("ignore", category=MCPDeprecationWarning)
    except ImportError:  # pragma: no cover - other SDK versions
        pass
    work = Work("sdk", case.key, n)
    accept = mcp_types.ElicitResult(action="accept", content={"answer": "ok"})
    answered = [0]

    async def on_elicitation(context: Any, params: Any) -> Any:
        answered[0] += 1
        return accept

    async def go() -> None:
        async with Client(url, mode="auto" if case.modern else "legacy", elicitation_callback=on_elicitation,
                          client_info=mcp_types.Implementation(name="bench-sdk", version="1"), cache=None,
                          input_required_max_rounds=max(n, warm) + 10) as client:
            work.report["protocol"] = client.protocol_version
            if case.modern and client.protocol_version != MODERN:
                raise RuntimeError(f"negotiated {client.protocol_version}, not {MODERN}")

            async def echo(k: int) -> None:
                result: Any = await client.call_tool("echo", {"text": str(k)})
                if result.content[0].text != str(k):
                    raise AssertionError("echo answered the wrong text")

            async def tool(name: str, count: int) -> Json:
                result: Any = await client.call_tool(name, {"n": count})
                return summary_of(result.content[0].text)

            if case.key in ("echo", "echo_modern"):
                for k in range(warm):
                    await echo(k)
                c0, w0 = time.process_time(), time.perf_counter()
                for k in range(n):
                    await echo(k)
                count, server = n, {"count": n, "accepted": n}
            else:
                name = "elicit_n" if case.key == "elicit" else "mrtr_n"
                if warm:
                    await tool(name, warm)
                before = answered[0]
                c0, w0 = time.process_time(), time.perf_counter()
                server = await tool(name, n)
                count = answered[0] - before
            work.report.update(ok=True, count=count, server=server, cpu=time.process_time() - c0,
                               wall=time.perf_counter() - w0)

    asyncio.run(go())
    return work.report


CLIENT_RUNS: dict[str, Callable[[Case, str, int, int], Json]] = {
    "floor": floor_client, "raw": raw_client, "lib": lib_client, "sdk": sdk_client,
}


def client_main(argv: list[str]) -> int:
    name, case_key, url, n, warm = argv[0], argv[1], argv[2], int(argv[3]), int(argv[4])
    report: Json = {"ok": False, "client": name, "case": case_key, "n": n}
    try:
        report = CLIENT_RUNS[name](CASES[case_key], url, n, warm)
    except BaseException as exc:  # noqa: BLE001 - the JSON line must be printed
        report["error"] = repr(exc)[:500]
    print(json.dumps(report), flush=True)
    return 0 if report.get("ok") else 1


# ============================================================================ the runner


class Server:
    """http_server.py in a process of its own, for a whole run."""

    def __init__(self, python: str, timeout: float = 10.0) -> None:
        self.proc = subprocess.Popen([python, str(SERVER), "--port", "0"], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        line = self.proc.stdout.readline() if ready else ""
        if not line.startswith("LISTENING "):
            self.stop()
            raise RuntimeError(f"the HTTP bench server did not start: {line!r}")
        self.port = int(line.split()[1])
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.cpu_note = ""

    def connections(self) -> int:
        """TCP connections the server has accepted so far."""
        import http.client

        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            conn.request("GET", "/bench/stats")
            return int(json.loads(conn.getresponse().read())["connections"])
        finally:
            conn.close()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                _, err = self.proc.communicate(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                _, err = self.proc.communicate(timeout=10)
            self.cpu_note = (err or "").strip().splitlines()[-1] if (err or "").strip() else ""


def run_one(python: str, client: str, case: Case, url: str, n: int, warm: int, timeout: float,
            env: Optional[dict[str, str]] = None) -> Json:
    """One client process; its JSON line with ``why`` set when the run is not valid."""
    argv = [python, str(Path(__file__).resolve()), "client", client, case.key, url, str(n), str(warm)]
    began = time.perf_counter()
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return {"ok": False, "client": client, "case": case.key, "n": n, "why": f"timeout after {timeout:.0f} s"}
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("{")]
    try:
        report: Json = json.loads(lines[-1]) if lines else {}
    except ValueError:
        report = {}
    report.setdefault("client", client)
    report.setdefault("case", case.key)
    report["process_wall"] = time.perf_counter() - began
    problems = []
    if not report.get("ok"):
        problems.append(str(report.get("error") or f"exit {done.returncode}: {done.stderr.strip()[-300:]}"))
    else:
        server = report.get("server") or {}
        if report.get("count") != n or server.get("count") != n or server.get("accepted") != n:
            problems.append(f"count: client {report.get('count')}, server {server.get('count')}, "
                            f"accepted {server.get('accepted')}; want {n}")
    if problems:
        report["ok"] = False
        report["why"] = "; ".join(problems)
    else:
        report["us"] = report["cpu"] / n * 1e6
        report["wall_us"] = report["wall"] / n * 1e6
    return report


def median(values: list[float]) -> Optional[float]:
    return statistics.median(values) if values else None


def rows_of(runs: list[Json], cases: list[Case], clients: list[str], reps: int) -> list[Json]:
    """The table as data: one row per case and client."""
    rows: list[Json] = []
    for case in cases:
        names = [c for c in clients if c in case.clients]
        for name in names:
            mine = [r for r in runs if r["case"] == case.key and r["client"] == name]
            good = [r for r in mine if r.get("ok")]
            us = [r["us"] for r in good]
            row: Json = {"case": case.key, "title": case.title, "unit": case.unit, "n": mine[0]["n"] if mine else None,
                         "client": name, "runs": len(mine), "ok_runs": len(good),
                         "us": median(us), "us_min": min(us) if us else None, "us_max": max(us) if us else None,
                         "us_all": [round(x, 1) for x in us], "wall_us": median([r["wall_us"] for r in good]),
                         "connections": median([r["connections"] for r in good]),
                         "failures": sorted({r.get("why", "") for r in mine if not r.get("ok")})}
            for anchor in ("floor", "sdk"):
                ratios = []
                for rep in range(reps):
                    a = next((r for r in good if r["rep"] == rep), None)
                    b = next((r for r in runs if r["case"] == case.key and r["client"] == anchor and r["rep"] == rep
                              and r.get("ok")), None)
                    if a is not None and b is not None and b["us"] > 0:
                        ratios.append(a["us"] / b["us"])
                row[f"x_{anchor}"] = median(ratios)
                row[f"x_{anchor}_all"] = [round(x, 3) for x in ratios]
            rows.append(row)
    return rows


def run_http_cases(reps: int = 3, quick: bool = False, python: str = sys.executable, sdk_python: Optional[str] = None,
                   cases: Optional[list[str]] = None, clients: Optional[list[str]] = None, timeout: float = 180.0,
                   sizes: Optional[dict[str, int]] = None, log: Callable[[str], None] = print) -> list[Json]:
    """Start the server, run reps x cases x clients interleaved, return the rows (see :func:`rows_of`).

    ``sizes`` overrides N per case key. Each row: case, title, unit, n, client, runs,
    ok_runs, us (median CPU per unit, µs), us_min, us_max, us_all, wall_us, x_floor and
    x_sdk (median of per-rep ratios, None without the anchor), x_floor_all, x_sdk_all, failures.
    """
    chosen = [CASES[k] for k in (cases or DEFAULT_CASES)]
    names = [c for c in (clients or CLIENTS) if c in CLIENTS]
    pythons = {c: (sdk_python or python) if c == "sdk" else python for c in names}
    server = Server(python)
    runs: list[Json] = []
    try:
        log(f"http bench: server {server.url}; {len(chosen)} cases x {reps} reps; clients {','.join(names)}")
        for rep in range(reps):
            for case in chosen:
                order = [c for c in names if c in case.clients]
                shift = rep % len(order) if order else 0
                n = (sizes or {}).get(case.key, case.quick_n if quick else case.n)
                warm = case.quick_warm if quick else case.warm
                for client in order[shift:] + order[:shift]:
                    opened = server.connections()
                    r = run_one(pythons[client], client, case, server.url, n, warm, timeout)
                    r["connections"] = server.connections() - opened - 1  # the stats request is one
                    r["rep"] = rep
                    runs.append(r)
                    if r.get("ok"):
                        log(f"  rep {rep} {case.key:<11} {client:<5} ok   {r['us']:8.1f} us/{case.unit} cpu  "
                            f"{r['wall_us']:8.1f} us wall  {r['connections']:5d} connections")
                    else:
                        log(f"  rep {rep} {case.key:<11} {client:<5} FAIL {r.get('why')}")
    finally:
        server.stop()
        if server.cpu_note:
            log(f"  server: {server.cpu_note}")
    return rows_of(runs, chosen, names, reps)


def fmt(x: Optional[float], digits: int = 1) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def spread(values: list[float], digits: int) -> str:
    return f"{min(values):.{digits}f}-{max(values):.{digits}f}" if len(values) > 1 else ""


def render(rows: list[Json]) -> str:
    head = (f"{'case':<11} {'client':<6} {'ok':>5} {'n':>5} {'cpu us/unit':>11} {'(min-max)':>15} {'wall us':>8} {'conns':>6} | "
            f"{'x floor':>7} {'(min-max)':>11} {'x sdk':>6} {'(min-max)':>11}")
    lines = [head, "-" * len(head)]
    seen: set[str] = set()
    for row in rows:
        if row["case"] not in seen and seen:
            lines.append("")
        seen.add(row["case"])
        line = (f"{row['case']:<11} {row['client']:<6} {row['ok_runs']:>2}/{row['runs']:<2} {row['n'] or 0:>5} "
                f"{fmt(row['us']):>11} {spread(row['us_all'], 0):>15} {fmt(row['wall_us']):>8} {fmt(row['connections'], 0):>6} | "
                f"{fmt(row['x_floor'], 2):>7} {spread(row['x_floor_all'], 2):>11} "
                f"{fmt(row['x_sdk'], 2):>6} {spread(row['x_sdk_all'], 2):>11}")
        if row["failures"]:
            line += "   n/a: " + "; ".join(row["failures"])[:200]
        lines.append(line)
    units = sorted({(r["case"], r["unit"], r["title"]) for r in rows})
    lines.append("")
    lines += [f"  {case:<11} unit = one {unit}: {title}" for case, unit, title in units]
    lines.append("  cpu: time.process_time() of the client process (all threads) over the N units, after connect "
                 "and warm-up; x: median of per-rep ratios")
    lines.append("  conns: TCP connections the server accepted during the whole client run (connect, warm-up, "
                 "work, close)")
    return "\n".join(lines)


# ============================================================================ profile


def group_of(filename: str, name: str) -> str:
    if "mcp_input_sync" in filename:
        return "mcp_input_sync"
    if any(part in filename for part in ("/requests/", "/urllib3/", "/charset_normalizer/", "/idna/")):
        return "requests/urllib3"
    if filename.endswith(("http/client.py", "socket.py", "ssl.py")) or "/email/" in filename:
        return "http.client (+email headers, socket.py)"
    if filename.endswith(("threading.py", "queue.py")) or "/concurrent/" in filename:
        return "threading"
    if "/json/" in filename:
        return "json"
    if filename == "~":
        if "_socket" in name or "select" in name or "poll" in name:
            return "socket syscalls"
        if "_thread" in name or "lock" in name.lower():
            return "threading"
        if "json" in name:
            return "json"
        return "builtins (other)"
    return "other python"


#: Groups whose functions are charged to themselves; the rest (builtins, stdlib helpers) go to their callers.
OWN_GROUPS = frozenset({"mcp_input_sync", "requests/urllib3", "http.client (+email headers, socket.py)", "threading",
                        "json", "socket syscalls"})


def charged_groups(table: Any) -> dict[str, float]:
    """Each function's tottime by group, a builtin's or stdlib helper's split over its callers' groups.

    ``str.lower`` called from ``requests.structures`` counts as requests/urllib3, say: the
    split follows the callers' share of the calls' time, up to a few levels up.
    """
    memo: dict[Any, dict[str, float]] = {}

    def owners(func: Any, depth: int, seen: frozenset[Any]) -> dict[str, float]:
        if func in memo:
            return memo[func]
        group = group_of(func[0], func[2])
        callers = table[func][4] if func in table else {}
        weights = {caller: stat[2] for caller, stat in callers.items() if caller not in seen}
        weight = sum(weights.values())
        if group in OWN_GROUPS or depth > 6 or weight <= 0:
            share = {group: 1.0}
        else:
            share = {}
            for caller, w in weights.items():
                for g, f in owners(caller, depth + 1, seen | {func}).items():
                    share[g] = share.get(g, 0.0) + f * w / weight
        if depth == 0:
            memo[func] = share
        return share

    charged: dict[str, float] = {}
    for func, stat in table.items():
        for g, f in owners(func, 0, frozenset()).items():
            charged[g] = charged.get(g, 0.0) + f * stat[2]
    return charged


def profile_lib(python: str, case: Case, url: str, n: int, timeout: float, top: int = 18,
                keep: Optional[Path] = None) -> str:
    """cProfile the lib client's work phase for ``case``: groups and the top functions by tottime.

    ``keep``: a folder to copy the merged profile to (``lib-<case>.prof``).
    """
    import pstats
    import shutil

    with tempfile.TemporaryDirectory(prefix="http-bench-prof-") as tmp:
        path = Path(tmp) / "work.prof"
        # No warm-up: the library's worker threads then start inside the work phase, so their whole
        # profiled lives are work (the main thread's profiler runs around the work phase only).
        report = run_one(python, "lib", case, url, n, 0, timeout, dict(os.environ, HTTP_BENCH_PROFILE=str(path)))
        if not report.get("ok") or not path.exists():
            return f"profile lib {case.key}: failed: {report.get('why')}"
        table: Any = pstats.Stats(str(path)).stats  # type: ignore[attr-defined]
        if keep is not None:
            keep.mkdir(parents=True, exist_ok=True)
            shutil.copy(path, keep / f"lib-{case.key}.prof")
    total = sum(v[2] for v in table.values()) or 1e-9
    groups: dict[str, float] = {}
    rows = []
    for (filename, line, name), (_cc, calls, tottime, cumtime, _callers) in table.items():
        group = group_of(filename, name)
        groups[group] = groups.get(group, 0.0) + tottime
        where = name if filename == "~" else f"{Path(filename).name}:{line}({name})"
        rows.append((tottime, cumtime, calls, group, where))
    out = [f"profile lib {case.key} (n={n}, no warm-up; cProfile inflates call-heavy code: read shares, not "
           f"absolute times): profiled tottime {total:.3f} s = {total / n * 1e6:.0f} us per {case.unit} "
           f"(process CPU of the profiled run {report['us']:.0f} us per {case.unit})"]
    out.append("  by group (own tottime): " + ", ".join(f"{g} {100 * t / total:.0f}%" for g, t in
                                                       sorted(groups.items(), key=lambda kv: -kv[1])))
    out.append("  by group (builtins and stdlib helpers charged to their callers): " + ", ".join(
        f"{g} {100 * t / total:.0f}%" for g, t in sorted(charged_groups(table).items(), key=lambda kv: -kv[1])))
    for label, names in (("send a request (_send.send: requests + urllib3 + http.client)", ("send",)),):
        inclusive = sum(v[3] for k, v in table.items() if k[0].endswith("transports/_send.py") and k[2] in names)
        out.append(f"  inclusive: {label} {100 * inclusive / total:.0f}%")
    out.append(f"  {'tottime':>8} {'us/unit':>8} {'cumtime':>8} {'calls':>8}  {'group':<24} function")
    for tottime, cumtime, calls, group, where in sorted(rows, reverse=True)[:top]:
        out.append(f"  {tottime:8.3f} {tottime / n * 1e6:8.1f} {cumtime:8.3f} {calls:8d}  {group[:24]:<24} {where}")
    lib = sorted((r for r in rows if r[3] == "mcp_input_sync"), reverse=True)[:12]
    out.append("  top inside mcp_input_sync:")
    for tottime, cumtime, calls, _group, where in lib:
        out.append(f"  {tottime:8.3f} {tottime / n * 1e6:8.1f} {cumtime:8.3f} {calls:8d}  {where}")
    return "\n".join(out)


def profile_cases(python: str, keys: list[str], quick: bool, timeout: float, keep: Optional[Path] = None) -> str:
    server = Server(python)
    try:
        return "\n\n".join(profile_lib(python, CASES[k], server.url, CASES[k].quick_n if quick else CASES[k].n, timeout,
                                       keep=keep) for k in keys)
    finally:
        server.stop()


# ============================================================================ main


def main(argv: Optional[list[str]] = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] == "client":
        return client_main(args[1:])
    doc = __doc__ or ""
    ap = argparse.ArgumentParser(description=doc.split("\n")[1], epilog=doc,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=None, help="repetitions (3; 1 with --quick)")
    ap.add_argument("--quick", action="store_true", help="small N, one repetition: well under a minute")
    ap.add_argument("--cases", default=",".join(DEFAULT_CASES), help=f"subset of {','.join(CASES)}")
    ap.add_argument("--clients", default=",".join(CLIENTS), help=f"subset of {','.join(CLIENTS)}")
    ap.add_argument("--n", action="append", default=[], metavar="CASE=N", help="N for one case, e.g. elicit=500")
    ap.add_argument("--python", default=sys.executable, help="interpreter for the server, floor, raw and lib")
    ap.add_argument("--sdk-python", default=os.environ.get("SDK_PY"), help="interpreter with mcp==2.3.0")
    ap.add_argument("--timeout", type=float, default=180.0, help="seconds per client run")
    ap.add_argument("--profile", action="store_true", help="also cProfile the lib client's elicit and mrtr work phases")
    ap.add_argument("--profile-out", default=None, help="with --profile: keep the .prof files in this folder")
    ap.add_argument("--json", default=None, help="write the rows (and the profile text) to this file")
    a = ap.parse_args(args)
    cases = [k for k in a.cases.split(",") if k]
    unknown = [k for k in cases if k not in CASES] + [c for c in a.clients.split(",") if c and c not in CLIENTS]
    if unknown:
        ap.error(f"unknown cases or clients: {unknown}")
    sizes = {k: int(v) for k, v in (item.split("=", 1) for item in a.n)}
    reps = a.reps if a.reps is not None else (1 if a.quick else 3)
    began = time.perf_counter()
    rows = run_http_cases(reps, a.quick, a.python, a.sdk_python, cases, [c for c in a.clients.split(",") if c],
                          a.timeout, sizes)
    text = (f"# HTTP client CPU per unit, {reps} rep(s) interleaved, {time.perf_counter() - began:.0f} s\n"
            + render(rows))
    print("\n" + text, flush=True)
    profile = ""
    if a.profile:
        profile = profile_cases(a.python, [k for k in ("elicit", "mrtr") if k in cases] or ["elicit", "mrtr"],
                                a.quick, a.timeout, Path(a.profile_out) if a.profile_out else None)
        print("\n" + profile, flush=True)
    if a.json:
        Path(a.json).write_text(json.dumps({"rows": rows, "profile": profile}, indent=1))
    return 0 if rows and all(r["ok_runs"] == r["runs"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
