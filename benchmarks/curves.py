#!/usr/bin/env python3
"""benchmarks/curves.py -- how the client's cost grows: five curves, the library beside the SDK.

    python benchmarks/curves.py [--quick] [--curves threads,size,list,many,pool] [--out DIR]
                                [--python PY] [--sdk-python PY] [--timeout S]
    python benchmarks/curves.py worker KIND CLIENT PARAMS_JSON        (one measured run; internal)

Every point is a fresh process of this file (``worker``) doing one job with one
client kind, against curve_server.py (stdio; one thread, replies encoded once) or
http_server.py (Streamable HTTP, standard library). The worker measures its own
work phases with ``time.process_time()`` (every thread of the process; the
servers are other processes) and wall time, and reads its ``VmRSS``, ``VmHWM``
and thread count from ``/proc/self`` at the points that matter. From outside,
the runner polls the worker's ``VmHWM`` and ``/proc/PID/task`` every 20 ms, as
run.py does, for the peak RSS and the peak thread count of the whole run.

Clients: ``lib`` (mcp_input_sync), ``sdk`` (the official SDK, ``mcp.Client``, async),
``raw`` (no MCP library: one thread writing request lines and reading
``readline`` + ``json.loads``; the physical floor).

Curves (x: what varies; full sizes, --quick in brackets)
    threads  x = 1, 4, 16, 64 host threads sharing one stdio client, each calling
             ``echo``; 6000 calls in all, the median of 3 repetitions [1200, once].
             sdk: as many asyncio tasks on one ``Client``; raw: one thread keeping x
             requests outstanding. calls/s, client CPU per call, and for lib its
             system CPU and context switches per call.
    size     x = 1 KB, 100 KB, 1 MB, 10 MB text result of the ``blob`` tool
             (n = 2000, 200, 30, 6 [200, 20, 5, 1]). CPU per MB of result; raw also
             gives the cost of ``json.loads`` alone; peak RSS above the connected
             baseline. The library's default ``limits["message_bytes"]`` (16 MiB)
             admits the 10 MB result, so no limit is raised. One more point, lib and
             sdk [lib]: a single 24 MB result, over that limit (the lib refuses it,
             the connection stays usable; the SDK has no limit).
    list     x = 1000, 3000, 10 000 tools [10 000], 100 per page: one whole listing
             (lib ``list_tools()`` follows the cursors; sdk and raw loop over
             ``nextCursor``); median of 3 listings [1]: CPU and wall.
    many     x = 10, 50 clients [50] open at once in one process, over stdio (each
             its own server process) and over HTTP (one http_server.py): RSS and
             threads per client above the first client, idle CPU over 3 s [1 s].
    pool     x = max_size 1, 2, 4, 8 of a ``ClientPool`` of stdio clients, 8 host
             threads calling ``echo`` through it, 4000 calls, median of 3 [400, once];
             beside it, the same 8 threads on one shared client (no pool). lib only:
             the SDK has no pool.

Output: the tables on stdout and in OUT/curves.txt, every number in OUT/curves.json,
one SVG line chart per plot in OUT/ (hand-written SVG: no plotting package needed).
OUT defaults to ~/.cache/mcp_input_sync-bench/curves-<stamp>/. Exit status 1 when
any run failed.

Entry points for run.py: :func:`run_curves` (the data; with ``out_dir`` also the SVG
files and curves.json), :func:`render` (the tables; also named ``render_curves``),
:func:`write_plots` and :func:`main`.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import select
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Optional

from probes import become_subreaper, children_of_me, peak_rss_kb, thread_count

HERE = Path(__file__).resolve().parent
CURVE_SERVER = HERE / "curve_server.py"
HTTP_SERVER = HERE / "http_server.py"
POLL_S = 0.02
CURVES = ("threads", "size", "list", "many", "pool")
MB = 1_000_000

Json = dict[str, Any]


# ============================================================================ sizes

def plan(quick: bool) -> Json:
    """Every size the curves use; ``quick`` keeps the whole run under a minute."""
    if quick:
        return {
            "threads": {"xs": [1, 4, 16, 64], "calls": 1200, "warm": 20, "reps": 1},
            "size": {"xs": [1_000, 100_000, 1_000_000, 10_000_000], "n": {1_000: 200, 100_000: 20,
                                                                      1_000_000: 5, 10_000_000: 1},
                     "over": 24_000_000, "over_clients": ["lib"]},
            "list": {"xs": [10_000], "page": 100, "reps": 1},
            "many": {"xs": [50], "idle": 1.0, "transports": ["stdio", "http"]},
            "pool": {"xs": [1, 2, 4, 8], "threads": 8, "calls": 400, "reps": 1},
        }
    return {
        "threads": {"xs": [1, 4, 16, 64], "calls": 6000, "warm": 100, "reps": 3},
        "size": {"xs": [1_000, 100_000, 1_000_000, 10_000_000], "n": {1_000: 2000, 100_000: 200,
                                                                  1_000_000: 30, 10_000_000: 6},
                 "over": 24_000_000, "over_clients": ["lib", "sdk"]},
        "list": {"xs": [1_000, 3_000, 10_000], "page": 100, "reps": 3},
        "many": {"xs": [10, 50], "idle": 3.0, "transports": ["stdio", "http"]},
        "pool": {"xs": [1, 2, 4, 8], "threads": 8, "calls": 4000, "reps": 3},
    }


# ============================================================================ worker side

def self_status() -> Json:
    """This process's VmRSS and VmHWM (MB) and thread count, from /proc/self."""
    found: Json = {"rss_mb": float("nan"), "hwm_mb": float("nan"), "threads": 0}
    try:
        with open("/proc/self/status", "rb") as fh:
            for line in fh:
                if line.startswith(b"VmRSS:"):
                    found["rss_mb"] = int(line.split()[1]) / 1024
                elif line.startswith(b"VmHWM:"):
                    found["hwm_mb"] = int(line.split()[1]) / 1024
                elif line.startswith(b"Threads:"):
                    found["threads"] = int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return found


def server_argv(extra: Optional[list[str]] = None) -> list[str]:
    return [sys.executable, str(CURVE_SERVER)] + (extra or [])


def quiet_sdk_warnings() -> None:
    import warnings

    try:
        from mcp.shared.exceptions import MCPDeprecationWarning

        warnings.filterwarnings("ignore", category=MCPDeprecationWarning)
    except ImportError:  # pragma: no cover - other SDK versions
        pass


class Phase:
    """Wall and process CPU around one work phase (and its system CPU and context switches)."""

    def __init__(self) -> None:
        self.r0 = resource.getrusage(resource.RUSAGE_SELF)
        self.t0 = time.perf_counter()
        self.c0 = time.process_time()
        self.wall = self.cpu = self.sys = 0.0
        self.switches = 0

    def stop(self) -> "Phase":
        self.wall = time.perf_counter() - self.t0
        self.cpu = time.process_time() - self.c0
        r1 = resource.getrusage(resource.RUSAGE_SELF)
        self.sys = r1.ru_stime - self.r0.ru_stime
        self.switches = (r1.ru_nvcsw - self.r0.ru_nvcsw) + (r1.ru_nivcsw - self.r0.ru_nivcsw)
        return self

    def per_call(self, x: int, n: int, threads: int, bad: int) -> Json:
        """The row of a phase of ``n`` calls made by ``x`` threads (or tasks, or outstanding requests)."""
        return {"x": x, "n": n, "wall": self.wall, "cpu": self.cpu, "rate": n / self.wall,
                "cpu_us": self.cpu / n * 1e6, "sys_us": self.sys / n * 1e6, "switches": self.switches / n,
                "threads": threads, "bad": bad}


def median_row(rows: list[Json]) -> Json:
    """The repetition with the median rate; ``rates`` keeps them all."""
    ranked = sorted(rows, key=lambda r: r["rate"])
    row = dict(ranked[len(ranked) // 2])
    row["rates"] = [r["rate"] for r in rows]
    row["bad"] = sum(r["bad"] for r in rows)
    return row


# ---------------------------------------------------------------------------- raw client

class RawClient:
    """No MCP library: request lines out, ``readline`` + ``json.loads`` in, one thread."""

    def __init__(self, argv: list[str]) -> None:
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.w = self.proc.stdin
        self.r = self.proc.stdout
        self.next_id = 0
        self.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                    "clientInfo": {"name": "raw", "version": "1"}})
        self.w.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        self.w.flush()
        self.decode_cpu = 0.0  # process CPU spent in json.loads alone (``timed_loads``)

    def send(self, method: str, params: Json) -> int:
        self.next_id += 1
        self.w.write(json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params},
                                separators=(",", ":")).encode() + b"\n")
        self.w.flush()
        return self.next_id

    def read(self) -> Json:
        line = self.r.readline()
        if not line:
            raise EOFError("server closed")
        msg: Json = json.loads(line)
        return msg

    def timed_read(self) -> Json:
        line = self.r.readline()
        if not line:
            raise EOFError("server closed")
        c0 = time.process_time()
        msg: Json = json.loads(line)
        self.decode_cpu += time.process_time() - c0
        return msg

    def request(self, method: str, params: Json) -> Json:
        self.send(method, params)
        msg = self.read()
        if "result" not in msg:
            raise RuntimeError(f"{method}: {msg}")
        result: Json = msg["result"]
        return result

    def close(self) -> None:
        self.w.close()
        self.proc.wait(10)
        self.r.close()


def lib_connect(argv: list[str], **options: Any) -> Any:
    import mcp_input_sync as mis

    return mis.connect_stdio(argv, **options)


def sdk_stdio(argv: list[str]) -> Any:
    from mcp import Client, StdioServerParameters

    return Client(StdioServerParameters(command=argv[0], args=argv[1:]), cache=None)


def echo_ok(result: Any, sdk: bool) -> bool:
    if sdk:
        return bool(result.content and result.content[0].text == "hi")
    return bool(result["content"][0]["text"] == "hi")


# ---------------------------------------------------------------------------- threads

def threads_lib(p: Json) -> Json:
    client = lib_connect(server_argv())
    rows = []
    try:
        for _ in range(p["warm"]):
            client.call_tool("echo", {"text": "hi"})
        idle_threads = self_status()["threads"]
        for x in p["xs"]:
            rows.append(median_row([host_threads(x, p["calls"], lambda: client.call_tool("echo", {"text": "hi"}), False)
                                    for _ in range(p["reps"])]))
    finally:
        client.close()
    return {"rows": rows, "threads_idle_client": idle_threads}


def host_threads(x: int, calls: int, call: Callable[[], Any], sdk: bool) -> Json:
    """``x`` threads released together, ``calls // x`` calls each; the phase covers release to last join."""
    per = max(1, calls // x)
    go = threading.Event()
    bad: list[int] = []

    def work() -> None:
        go.wait(60)
        wrong = 0
        for _ in range(per):
            if not echo_ok(call(), sdk):
                wrong += 1
        bad.append(wrong)

    workers = [threading.Thread(target=work) for _ in range(x)]
    for t in workers:
        t.start()
    during = self_status()["threads"]
    phase = Phase()
    go.set()
    for t in workers:
        t.join(120)
    phase.stop()
    return phase.per_call(x, per * x, during, sum(bad) + (x - len(bad)) * per)


def threads_sdk(p: Json) -> Json:
    import anyio

    quiet_sdk_warnings()
    rows: list[Json] = []

    async def job() -> None:
        async with sdk_stdio(server_argv()) as client:
            for _ in range(p["warm"]):
                await client.call_tool("echo", {"text": "hi"})
            for x in p["xs"]:
                per = max(1, p["calls"] // x)
                reps = []
                for _ in range(p["reps"]):
                    bad = [0]

                    async def work() -> None:
                        for _ in range(per):
                            if not echo_ok(await client.call_tool("echo", {"text": "hi"}), True):
                                bad[0] += 1

                    phase = Phase()
                    async with anyio.create_task_group() as tg:
                        for _ in range(x):
                            tg.start_soon(work)
                    phase.stop()
                    reps.append(phase.per_call(x, per * x, self_status()["threads"], bad[0]))
                rows.append(median_row(reps))

    anyio.run(job)
    return {"rows": rows}


def threads_raw(p: Json) -> Json:
    raw = RawClient(server_argv())
    rows = []
    params = {"name": "echo", "arguments": {"text": "hi"}}
    try:
        for _ in range(p["warm"]):
            raw.request("tools/call", params)
        for x in p["xs"]:
            n = max(1, p["calls"] // x) * x
            reps = []
            for _ in range(p["reps"]):
                bad = sent = 0
                phase = Phase()
                for _ in range(min(x, n)):
                    raw.send("tools/call", params)
                    sent += 1
                for _ in range(n):
                    msg = raw.read()
                    if msg.get("result", {}).get("content", [{}])[0].get("text") != "hi":
                        bad += 1
                    if sent < n:
                        raw.send("tools/call", params)
                        sent += 1
                phase.stop()
                reps.append(phase.per_call(x, n, 1, bad))
            rows.append(median_row(reps))
    finally:
        raw.close()
    return {"rows": rows}


# ---------------------------------------------------------------------------- size

def size_row(size: int, n: int, phase: Phase, base: Json, bad: int) -> Json:
    end = self_status()
    return {"x": size, "n": n, "wall": phase.wall, "cpu": phase.cpu, "cpu_ms_per_mb": phase.cpu / (n * size / MB) * 1e3,
            "wall_ms_per_call": phase.wall / n * 1e3, "rss_base_mb": base["rss_mb"], "hwm_mb": end["hwm_mb"],
            "extra_mb": end["hwm_mb"] - base["rss_mb"], "extra_per_msg": (end["hwm_mb"] - base["rss_mb"]) * 2**20 / size,
            "bad": bad}


def size_lib(p: Json) -> Json:
    size, n = p["x"], p["n"]
    client = lib_connect(server_argv())
    try:
        client.call_tool("blob", {"size": 1000})
        base = self_status()
        bad = 0
        phase = Phase()
        for _ in range(n):
            result = client.call_tool("blob", {"size": size})
            bad += len(result["content"][0]["text"]) != size
            del result
        phase.stop()
        row = size_row(size, n, phase, base, bad)
    finally:
        client.close()
    return {"rows": [row]}


def size_sdk(p: Json) -> Json:
    import anyio

    quiet_sdk_warnings()
    size, n = p["x"], p["n"]
    rows: list[Json] = []

    async def job() -> None:
        async with sdk_stdio(server_argv()) as client:
            await client.call_tool("blob", {"size": 1000})
            base = self_status()
            bad = 0
            phase = Phase()
            for _ in range(n):
                result = await client.call_tool("blob", {"size": size})
                bad += len(result.content[0].text) != size
                del result
            phase.stop()
            rows.append(size_row(size, n, phase, base, bad))

    anyio.run(job)
    return {"rows": rows}


def over_lib(p: Json) -> Json:
    """One result over the default ``limits["message_bytes"]``: refused, memory bounded, client still usable."""
    import mcp_input_sync as mis

    size = p["x"]
    client = lib_connect(server_argv())
    try:
        client.call_tool("blob", {"size": 1000})
        base = self_status()
        phase = Phase()
        error = ""
        try:
            client.call_tool("blob", {"size": size})
        except mis.ClientError as exc:
            error = f"{exc.kind}/{getattr(exc, 'check', None)}"
        phase.stop()
        row = size_row(size, 1, phase, base, 0)
        row.update(refused=error, usable_after=echo_ok(client.call_tool("echo", {"text": "hi"}), False))
        row["bad"] = int(not error or not row["usable_after"])
    finally:
        client.close()
    return {"rows": [row]}


def over_sdk(p: Json) -> Json:
    """The same result through the SDK, which sets no message limit."""
    out = size_sdk({"x": p["x"], "n": 1})
    out["rows"][0].update(refused="", usable_after=True)
    return out


def size_raw(p: Json) -> Json:
    size, n = p["x"], p["n"]
    raw = RawClient(server_argv())
    try:
        raw.request("tools/call", {"name": "blob", "arguments": {"size": 1000}})
        base = self_status()
        bad = 0
        raw.decode_cpu = 0.0
        phase = Phase()
        for _ in range(n):
            raw.send("tools/call", {"name": "blob", "arguments": {"size": size}})
            msg = raw.timed_read()
            bad += len(msg["result"]["content"][0]["text"]) != size
            del msg
        phase.stop()
        row = size_row(size, n, phase, base, bad)
        row["decode_ms_per_mb"] = raw.decode_cpu / (n * size / MB) * 1e3
    finally:
        raw.close()
    return {"rows": [row]}


# ---------------------------------------------------------------------------- list

def list_row(x: int, runs: list[Phase], bad: int) -> Json:
    return {"x": x, "reps": len(runs), "cpu": statistics.median(r.cpu for r in runs),
            "wall": statistics.median(r.wall for r in runs), "wall_min": min(r.wall for r in runs),
            "cpu_us_per_tool": statistics.median(r.cpu for r in runs) / x * 1e6,
            "hwm_mb": self_status()["hwm_mb"], "bad": bad}


def list_argv(p: Json) -> list[str]:
    return server_argv(["--tools", str(p["x"]), "--page", str(p["page"])])


def list_lib(p: Json) -> Json:
    want = p["x"] + 2
    client = lib_connect(list_argv(p))
    runs, bad = [], 0
    try:
        for _ in range(p["reps"]):
            phase = Phase()
            tools = client.list_tools()
            runs.append(phase.stop())
            bad += len(tools) != want
            del tools
        row = list_row(p["x"], runs, bad)
    finally:
        client.close()
    return {"rows": [row]}


def list_sdk(p: Json) -> Json:
    import anyio

    quiet_sdk_warnings()
    want = p["x"] + 2
    rows: list[Json] = []

    async def job() -> None:
        async with sdk_stdio(list_argv(p)) as client:
            runs, bad = [], 0
            for _ in range(p["reps"]):
                phase = Phase()
                tools: list[Any] = []
                cursor: Optional[str] = None
                while True:
                    page = await client.list_tools(cursor=cursor)
                    tools.extend(page.tools)
                    cursor = page.next_cursor
                    if cursor is None:
                        break
                runs.append(phase.stop())
                bad += len(tools) != want
                del tools
            rows.append(list_row(p["x"], runs, bad))

    anyio.run(job)
    return {"rows": rows}


def list_raw(p: Json) -> Json:
    want = p["x"] + 2
    raw = RawClient(list_argv(p))
    runs, bad = [], 0
    try:
        for _ in range(p["reps"]):
            phase = Phase()
            tools: list[Any] = []
            cursor: Optional[str] = None
            while True:
                page = raw.request("tools/list", {} if cursor is None else {"cursor": cursor})
                tools.extend(page["tools"])
                cursor = page.get("nextCursor")
                if cursor is None:
                    break
            runs.append(phase.stop())
            bad += len(tools) != want
            del tools
        row = list_row(p["x"], runs, bad)
    finally:
        raw.close()
    return {"rows": [row]}


# ---------------------------------------------------------------------------- many

def many_row(p: Json, imports: Json, first: Json, opened: Json, open_phase: Phase, idle_phase: Phase,
             after_idle: Json, close_wall: float, protocol: str) -> Json:
    k = p["x"] - 1  # the clients after the first: the first also pays the lazy imports
    return {"x": p["x"], "transport": p["transport"], "protocol": protocol,
            "rss_imports_mb": imports["rss_mb"], "rss_first_mb": first["rss_mb"] - imports["rss_mb"],
            "rss_all_mb": opened["rss_mb"], "rss_per_client_kb": (opened["rss_mb"] - first["rss_mb"]) * 1024 / k,
            "threads_first": first["threads"] - imports["threads"], "threads_all": opened["threads"],
            "threads_per_client": (opened["threads"] - first["threads"]) / k,
            "open_wall_per_client_ms": open_phase.wall / k * 1e3, "open_cpu_per_client_ms": open_phase.cpu / k * 1e3,
            "idle_s": idle_phase.wall, "idle_cpu_ms_per_s": idle_phase.cpu / idle_phase.wall * 1e3,
            "idle_cpu_us_per_s_per_client": idle_phase.cpu / idle_phase.wall / p["x"] * 1e6,
            "rss_growth_idle_kb": (after_idle["rss_mb"] - opened["rss_mb"]) * 1024,
            "close_wall_s": close_wall, "bad": 0}


def many_lib(p: Json) -> Json:
    import mcp_input_sync as mis

    imports = self_status()
    opener: Callable[[], Any]
    if p["transport"] == "stdio":
        opener = lambda: mis.connect_stdio(server_argv())  # noqa: E731
    else:
        opener = lambda: mis.connect_http(p["url"])  # noqa: E731
    clients = [opener()]
    try:
        first = self_status()
        open_phase = Phase()
        for _ in range(p["x"] - 1):
            clients.append(opener())
        open_phase.stop()
        opened = self_status()
        idle = Phase()
        threading.Event().wait(p["idle"])
        idle.stop()
        after_idle = self_status()
        protocol = str(clients[0].protocol_version)
    finally:
        t0 = time.perf_counter()
        for c in clients:
            c.close()
        close_wall = time.perf_counter() - t0
    return {"rows": [many_row(p, imports, first, opened, open_phase, idle, after_idle, close_wall, protocol)]}


def many_sdk(p: Json) -> Json:
    from contextlib import AsyncExitStack

    import anyio
    from mcp import Client

    quiet_sdk_warnings()
    rows: list[Json] = []

    def make() -> Any:
        if p["transport"] == "stdio":
            return sdk_stdio(server_argv())
        return Client(p["url"], cache=None)

    async def job() -> None:
        imports = self_status()
        stack = AsyncExitStack()
        await stack.__aenter__()
        try:
            c0 = await stack.enter_async_context(make())
            first = self_status()
            open_phase = Phase()
            for _ in range(p["x"] - 1):
                await stack.enter_async_context(make())
            open_phase.stop()
            opened = self_status()
            idle = Phase()
            await anyio.sleep(p["idle"])
            idle.stop()
            after_idle = self_status()
            protocol = str(c0.protocol_version)
        finally:
            t0 = time.perf_counter()
            await stack.aclose()
            close_wall = time.perf_counter() - t0
        rows.append(many_row(p, imports, first, opened, open_phase, idle, after_idle, close_wall, protocol))

    anyio.run(job)
    return {"rows": rows}


# ---------------------------------------------------------------------------- pool

def pool_lib(p: Json) -> Json:
    import contextlib

    import mcp_input_sync as mis

    rows = []
    for m in p["xs"]:
        pool = mis.ClientPool(lambda: mis.connect_stdio(server_argv()), max_size=m)
        try:
            with contextlib.ExitStack() as stack:  # open all m clients before the clock starts
                for _ in range(m):
                    stack.enter_context(pool.lease()).call_tool("echo", {"text": "hi"})
            row = median_row([host_threads(p["threads"], p["calls"], lambda: pool.call_tool("echo", {"text": "hi"}), False)
                              for _ in range(p["reps"])])
            row.update(x=m, pool_size=pool.size)
            rows.append(row)
        finally:
            pool.close()
    client = mis.connect_stdio(server_argv())
    try:
        client.call_tool("echo", {"text": "hi"})
        shared = median_row([host_threads(p["threads"], p["calls"], lambda: client.call_tool("echo", {"text": "hi"}),
                                          False) for _ in range(p["reps"])])
    finally:
        client.close()
    return {"rows": rows, "shared": shared}


WORKERS: dict[tuple[str, str], Callable[[Json], Json]] = {
    ("threads", "lib"): threads_lib, ("threads", "sdk"): threads_sdk, ("threads", "raw"): threads_raw,
    ("size", "lib"): size_lib, ("size", "sdk"): size_sdk, ("size", "raw"): size_raw,
    ("over", "lib"): over_lib, ("over", "sdk"): over_sdk,
    ("list", "lib"): list_lib, ("list", "sdk"): list_sdk, ("list", "raw"): list_raw,
    ("many", "lib"): many_lib, ("many", "sdk"): many_sdk,
    ("pool", "lib"): pool_lib,
}


def worker_main(kind: str, client: str, params: str) -> int:
    out: Json = {"ok": False, "kind": kind, "client": client}
    try:
        out.update(WORKERS[(kind, client)](json.loads(params)))
        bad = sum(int(r.get("bad", 0)) for r in out.get("rows", []))
        out["ok"] = bad == 0
        if bad:
            out["error"] = f"{bad} wrong answers"
    except BaseException as exc:  # noqa: BLE001 -- the JSON line must be printed
        out["error"] = repr(exc)[:400]
    out["end"] = self_status()
    print(json.dumps(out), flush=True)
    return 0 if out["ok"] else 1


# ============================================================================ runner side

def reap_orphans(skip: set[int], grace_s: float) -> int:
    """Reap servers re-parented to us (not ``skip``: the HTTP server); SIGKILL them after ``grace_s``."""
    deadline = time.perf_counter() + grace_s
    left = [pid for pid in children_of_me() if pid not in skip]
    count = len(left)
    while left:
        for pid in list(left):
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                done = pid
            if done:
                left.remove(pid)
        if left and time.perf_counter() > deadline:
            for pid in left:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            deadline = float("inf")
        if left:
            time.sleep(0.01)
    return count


def run_worker(python: str, kind: str, client: str, params: Json, timeout: float, skip: set[int]) -> Json:
    """One worker process, polled from outside for its peak RSS and threads."""
    argv = [python, str(Path(__file__).resolve()), "worker", kind, client, json.dumps(params)]
    started = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True, env=dict(os.environ, PYTHONWARNINGS="ignore"))
    assert proc.stdout is not None and proc.stderr is not None
    out_fd, err_fd = proc.stdout.fileno(), proc.stderr.fileno()
    chunks: dict[int, list[bytes]] = {out_fd: [], err_fd: []}
    open_fds = set(chunks)
    hwm = threads = 0
    timed_out = False
    while True:
        ready, _, _ = select.select(list(open_fds), [], [], POLL_S) if open_fds else ([], [], [])
        for fd in ready:
            data = os.read(fd, 65536)
            if data:
                chunks[fd].append(data)
            else:
                open_fds.discard(fd)
        pid, status, _usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        hwm = max(hwm, peak_rss_kb(proc.pid))
        threads = max(threads, thread_count(proc.pid))
        if not timed_out and time.perf_counter() - started > timeout:
            timed_out = True
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if not open_fds:
            time.sleep(POLL_S)
    proc.returncode = os.waitstatus_to_exitcode(status)
    orphans = reap_orphans(skip, 3.0)  # first: an orphaned server may hold the stderr pipe open
    for fd in list(open_fds):  # what is left in the pipes
        while select.select([fd], [], [], 1.0)[0]:
            data = os.read(fd, 65536)
            if not data:
                break
            chunks[fd].append(data)
    proc.stdout.close()
    proc.stderr.close()
    stdout = b"".join(chunks[out_fd]).decode(errors="replace")
    stderr = b"".join(chunks[err_fd]).decode(errors="replace")
    lines = [ln for ln in stdout.splitlines() if ln.startswith("{")]
    try:
        res: Json = json.loads(lines[-1]) if lines else {"ok": False, "error": "no JSON line"}
    except ValueError:
        res = {"ok": False, "error": "bad JSON line"}
    if timed_out:
        res.update(ok=False, error=f"timeout after {timeout:.0f} s")
    if proc.returncode != 0 and res.get("ok"):
        res.update(ok=False, error=f"exit {proc.returncode}")
    if not res.get("ok"):
        res["stderr_tail"] = stderr[-800:]
    res["outside"] = {"wall": time.perf_counter() - started, "hwm_mb": hwm / 1024 if hwm else float("nan"),
                      "threads_peak": threads, "orphans_reaped": orphans}
    return res


class HttpServer:
    """http_server.py in a process of its own, for the ``many`` curve."""

    def __init__(self, python: str) -> None:
        self.proc = subprocess.Popen([python, str(HTTP_SERVER), "--port", "0"], stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], 15)
        line = self.proc.stdout.readline().decode() if ready else ""
        if not line.startswith("LISTENING"):
            self.close()
            raise RuntimeError(f"http_server.py did not start: {line!r}")
        self.url = f"http://127.0.0.1:{int(line.split()[1])}/mcp"

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


def precompile(python: str) -> None:
    """The library's bytecode, as ``pip install`` writes it, so no worker measures the compiler."""
    code = "import compileall, os, mcp_input_sync as m; compileall.compile_dir(os.path.dirname(m.__file__), quiet=1)"
    subprocess.run([python, "-c", code], check=False, timeout=120, stdout=subprocess.DEVNULL)


def run_curves(quick: bool, python: str, sdk_python: Optional[str] = None, out_dir: Optional[Path] = None, *,
               curves: Optional[list[str]] = None, timeout: Optional[float] = None,
               log: Callable[[str], None] = print) -> Json:
    """Run the curves; returns ``{"meta": ..., CURVE: {"xs": [...], "runs": {client: worker JSON}, ...}}``.

    ``python`` runs the servers and the lib and raw workers, ``sdk_python`` (default
    ``python``) the sdk workers; ``curves`` picks some of :data:`CURVES`. With
    ``out_dir`` the SVG plots and ``curves.json`` are written there (``meta["plots"]``
    names the plots). ``meta["failures"]`` lists the runs that failed.
    """
    chosen = list(curves or CURVES)
    unknown = [c for c in chosen if c not in CURVES]
    if unknown:
        raise ValueError(f"unknown curves {unknown}")
    sizes = plan(quick)
    limit = timeout or (60.0 if quick else 180.0)
    sdk_py = sdk_python or python
    interp = {"lib": python, "raw": python, "sdk": sdk_py}
    become_subreaper()
    precompile(python)
    began = time.perf_counter()
    data: Json = {"meta": {"quick": quick, "python": python, "sdk_python": sdk_py, "cpus": os.cpu_count(),
                           "stamp": time.strftime("%Y%m%d-%H%M%S"), "plan": sizes}}
    failures: list[str] = []

    def one(kind: str, client: str, params: Json, skip: Optional[set[int]] = None) -> Json:
        res = run_worker(interp[client], kind, client, params, limit, skip or set())
        tag = f"{kind} {client} {json.dumps({k: v for k, v in params.items() if k not in ('url',)})}"
        if not res.get("ok"):
            failures.append(f"{tag}: {res.get('error')}")
        log(f"  {'ok  ' if res.get('ok') else 'FAIL'} {res['outside']['wall']:6.2f}s {tag}"
            + ("" if res.get("ok") else f"  {res.get('error')}"))
        return res

    if "threads" in chosen:
        p = sizes["threads"]
        data["threads"] = {"runs": {c: one("threads", c, p) for c in ("raw", "lib", "sdk")}, "xs": p["xs"]}
    if "size" in chosen:
        p = sizes["size"]
        runs: dict[str, list[Json]] = {c: [] for c in ("raw", "lib", "sdk")}
        for x in p["xs"]:
            for c in runs:
                runs[c].append(one("size", c, {"x": x, "n": p["n"][x]}))
        over = {c: one("over", c, {"x": p["over"]}) for c in p["over_clients"]}
        data["size"] = {"runs": runs, "xs": p["xs"], "over": over}
    if "list" in chosen:
        p = sizes["list"]
        runs = {c: [] for c in ("raw", "lib", "sdk")}
        for x in p["xs"]:
            for c in runs:
                runs[c].append(one("list", c, {"x": x, "page": p["page"], "reps": p["reps"]}))
        data["list"] = {"runs": runs, "xs": p["xs"], "page": p["page"]}
    if "many" in chosen:
        p = sizes["many"]
        runs = {}
        http = HttpServer(python) if "http" in p["transports"] else None
        try:
            for transport in p["transports"]:
                for c in ("lib", "sdk"):
                    key = f"{c}-{transport}"
                    runs[key] = []
                    for x in p["xs"]:
                        params = {"x": x, "transport": transport, "idle": p["idle"],
                                  "url": http.url if http else ""}
                        runs[key].append(one("many", c, params, {http.proc.pid} if http else set()))
        finally:
            if http is not None:
                http.close()
        data["many"] = {"runs": runs, "xs": p["xs"], "idle": p["idle"]}
    if "pool" in chosen:
        p = sizes["pool"]
        data["pool"] = {"runs": {"lib": one("pool", "lib", p)}, "xs": p["xs"], "threads": p["threads"]}
    data["meta"]["took_s"] = time.perf_counter() - began
    data["meta"]["failures"] = failures
    if out_dir is not None:
        out_dir = Path(out_dir)
        data["meta"]["plots"] = [str(path) for path in write_plots(data, out_dir)]
        (out_dir / "curves.json").write_text(json.dumps(data, indent=1, default=str))
    return data


# ============================================================================ tables

def num(x: Any, digits: int = 2) -> str:
    if not isinstance(x, (int, float)) or x != x:
        return "-"
    if abs(x) >= 10000:
        return f"{x:,.0f}"
    if abs(x) >= 100:
        return f"{x:.0f}"
    return f"{x:.{digits}f}"


def rows_of(run: Optional[Json]) -> list[Json]:
    return list(run.get("rows", [])) if run and run.get("ok") else []


def row_at(runs: Any, x: Any) -> Optional[Json]:
    """The row for ``x`` from one worker JSON (many rows) or a list of them (one row each)."""
    for run in runs if isinstance(runs, list) else [runs]:
        for row in rows_of(run):
            if row["x"] == x:
                return row
    return None


def size_label(x: int) -> str:
    return f"{x // MB} MB" if x >= MB else f"{x // 1000} KB"


def table(head: list[str], body: list[list[str]]) -> str:
    widths = [max([len(h)] + [len(row[i]) for row in body]) for i, h in enumerate(head)]

    def line(cells: list[str]) -> str:
        return "  ".join(c.rjust(w) for c, w in zip(cells, widths))

    return "\n".join([line(head), "-" * len(line(head))] + [line(row) for row in body])


def cell(row: Optional[Json], key: str, digits: int = 1, scale: float = 1.0) -> str:
    """One number of a row, or "-" when the run failed."""
    return "-" if row is None else num(row[key] * scale, digits)


def ratio(a: Optional[Json], b: Optional[Json], key: str) -> str:
    if a is None or b is None or not b.get(key):
        return "-"
    return num(a[key] / b[key])


TRIO = ("raw", "lib", "sdk")


def trio(d: Json, x: Any) -> dict[str, Optional[Json]]:
    return {c: row_at(d["runs"][c], x) for c in TRIO}


def render_threads(d: Json) -> list[str]:
    body = []
    for x in d["xs"]:
        r = trio(d, x)
        lib = r["lib"]
        body.append([str(x)] + [cell(r[c], "rate", 0) for c in TRIO] + [cell(r[c], "cpu_us") for c in TRIO]
                    + [cell(lib, "sys_us"), cell(lib, "switches"), "-" if lib is None else str(lib["threads"]),
                       ratio(lib, r["sdk"], "rate")])
    idle = d["runs"]["lib"].get("threads_idle_client", "-")
    return ["", "## threads: host threads sharing one stdio client, echo calls (sdk: asyncio tasks on one Client; "
                f"raw: x requests outstanding); the lib process has {idle} threads with no caller",
            table(["threads", "raw call/s", "lib call/s", "sdk call/s", "raw us/call", "lib us/call", "sdk us/call",
                   "lib sys us", "lib csw/call", "lib thr", "lib/sdk rate"], body)]


def render_size(d: Json) -> list[str]:
    body = []
    for x in d["xs"]:
        r = trio(d, x)
        body.append([size_label(x), cell(r["raw"], "decode_ms_per_mb", 2)]
                    + [cell(r[c], "cpu_ms_per_mb", 2) for c in TRIO] + [cell(r[c], "wall_ms_per_call", 2) for c in TRIO]
                    + [cell(r[c], "extra_mb") for c in TRIO]
                    + [ratio(r["lib"], r["raw"], "cpu_ms_per_mb"), ratio(r["lib"], r["sdk"], "cpu_ms_per_mb")])
    out = ["", "## size: one tool result of x bytes of text; CPU ms per MB of result (loads: json.loads alone); "
               "+MB: peak RSS above the connected client",
           table(["size", "loads ms/MB", "raw ms/MB", "lib ms/MB", "sdk ms/MB", "raw ms/call", "lib ms/call",
                  "sdk ms/call", "raw +MB", "lib +MB", "sdk +MB", "lib/raw", "lib/sdk"], body)]
    over_body = []
    for c, run in d.get("over", {}).items():
        rows = rows_of(run)
        if not rows:
            over_body.append([c] + ["-"] * 5 + [f"FAILED {run.get('error')}"])
            continue
        o = rows[0]
        over_body.append([c, size_label(o["x"]), o["refused"] or "accepted", cell(o, "wall", 0, 1e3),
                          cell(o, "cpu", 0, 1e3), cell(o, "extra_mb"), str(o["usable_after"])])
    if over_body:
        out += ["", "## size beyond the library's default limits['message_bytes'] (16 MiB): one result",
                table(["client", "size", "outcome", "wall ms", "cpu ms", "+MB", "usable after"], over_body)]
    return out


def render_list(d: Json) -> list[str]:
    body = []
    for x in d["xs"]:
        r = trio(d, x)
        body.append([str(x)] + [cell(r[c], "cpu", 1, 1e3) for c in TRIO] + [cell(r[c], "wall", 1, 1e3) for c in TRIO]
                    + [cell(r[c], "cpu_us_per_tool") for c in TRIO] + [ratio(r["lib"], r["sdk"], "cpu")])
    return ["", f"## list: tools/list of x tools, {d['page']} per page, one whole listing (median)",
            table(["tools", "raw cpu ms", "lib cpu ms", "sdk cpu ms", "raw wall ms", "lib wall ms", "sdk wall ms",
                   "raw us/tool", "lib us/tool", "sdk us/tool", "lib/sdk cpu"], body)]


def render_many(d: Json) -> list[str]:
    body = []
    for key, runs in d["runs"].items():
        for x in d["xs"]:
            m = row_at(runs, x)
            if m is None:
                body.append([key, str(x)] + ["-"] * 9)
                continue
            body.append([key, str(x), m["protocol"], cell(m, "rss_first_mb"), cell(m, "rss_per_client_kb", 0),
                         cell(m, "rss_all_mb"), cell(m, "threads_per_client", 2), str(m["threads_all"]),
                         cell(m, "open_wall_per_client_ms"), cell(m, "idle_cpu_us_per_s_per_client"),
                         cell(m, "close_wall_s", 2)])
    return ["", f"## many: x idle clients open at once in one process, idle {d['idle']:g} s (per client: above "
                "the first client, which also pays lazy imports)",
            table(["client", "x", "protocol", "first +MB", "KB/client", "RSS MB", "thr/client", "threads",
                   "open ms/cl", "idle us/s/cl", "close s"], body)]


def render_pool(d: Json) -> list[str]:
    run = d["runs"]["lib"]
    body = []
    for x in d["xs"]:
        p = row_at(run, x)
        body.append([str(x), cell(p, "rate", 0), cell(p, "cpu_us"), "-" if p is None else str(p["pool_size"]),
                     "-" if p is None else str(p["threads"])])
    shared = run.get("shared") if run.get("ok") else None
    if shared:
        body.append(["shared", cell(shared, "rate", 0), cell(shared, "cpu_us"), "1", str(shared["threads"])])
    return ["", f"## pool: {d['threads']} host threads calling echo through ClientPool(max_size=x) of stdio clients "
                "(shared: the same threads on one client, no pool)",
            table(["max_size", "call/s", "us/call", "open", "threads"], body)]


def render(data: Json) -> str:
    """The tables, one per curve (x down, clients across), and the failed runs."""
    meta = data["meta"]
    out = [f"# mcp_input_sync curves {meta['stamp']} ({'quick' if meta['quick'] else 'full'}, "
           f"{meta.get('took_s', 0):.0f} s, {meta['cpus']} CPUs); python {meta['python']}"]
    for key, fn in (("threads", render_threads), ("size", render_size), ("list", render_list),
                    ("many", render_many), ("pool", render_pool)):
        if key in data:
            out += fn(data[key])
    fails = meta.get("failures") or []
    out += ["", f"{len(fails)} failed runs" + "".join(f"\n  FAILED {f}" for f in fails)]
    if meta.get("plots"):
        out.append("plots: " + ", ".join(meta["plots"]))
    return "\n".join(out)


#: The name benchmarks/run.py imports.
render_curves = render


# ============================================================================ plots

COLORS = {"lib": "#d62728", "sdk": "#1f77b4", "raw": "#2ca02c", "json.loads": "#7f7f7f"}
EXTRA_COLORS = ["#9467bd", "#ff7f0e", "#8c564b", "#17becf"]


def svg_chart(title: str, xlabel: str, ylabel: str, series: dict[str, list[tuple[float, float]]],
              logx: bool = True, logy: bool = False, xticks: Optional[list[tuple[float, str]]] = None) -> str:
    """A small SVG line chart: one polyline with dots per series, axes with ticks, a legend."""
    import math

    w, h, left, right, top, bottom = 640, 400, 70, 130, 40, 50
    pts = [(x, y) for s in series.values() for x, y in s if y == y and y > 0]
    if not pts:
        return f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="60"><text x="10" y="30">{title}: no data</text></svg>'

    def fx(v: float) -> float:
        return math.log10(v) if logx else v

    def fy(v: float) -> float:
        return math.log10(v) if logy else v

    xs, ys = [fx(x) for x, _ in pts], [fy(y) for _, y in pts]
    x0, x1 = min(xs), max(xs)
    y0, y1 = (min(ys), max(ys)) if logy else (0.0, max(ys) * 1.1)
    if x1 == x0:
        x0, x1 = x0 - 1, x1 + 1
    if y1 == y0:
        y0, y1 = y0 - 1, y1 + 1
    if logy:
        y0, y1 = math.floor(y0), math.ceil(y1)

    def sx(v: float) -> float:
        return left + (fx(v) - x0) / (x1 - x0) * (w - left - right)

    def sy(v: float) -> float:
        return h - bottom - (fy(v) - y0) / (y1 - y0) * (h - top - bottom)

    o = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12">',
         f'<rect width="{w}" height="{h}" fill="white"/>',
         f'<text x="{w / 2}" y="22" text-anchor="middle" font-size="14">{title}</text>',
         f'<line x1="{left}" y1="{h - bottom}" x2="{w - right}" y2="{h - bottom}" stroke="black"/>',
         f'<line x1="{left}" y1="{top}" x2="{left}" y2="{h - bottom}" stroke="black"/>',
         f'<text x="{(left + w - right) / 2}" y="{h - 12}" text-anchor="middle">{xlabel}</text>',
         f'<text x="16" y="{(top + h - bottom) / 2}" text-anchor="middle" '
         f'transform="rotate(-90 16 {(top + h - bottom) / 2})">{ylabel}</text>']
    for xv, label in xticks or sorted({(x, num(x, 0)) for x, _ in pts}):
        o.append(f'<line x1="{sx(xv):.1f}" y1="{h - bottom}" x2="{sx(xv):.1f}" y2="{h - bottom + 5}" stroke="black"/>'
                 f'<text x="{sx(xv):.1f}" y="{h - bottom + 18}" text-anchor="middle">{label}</text>')
    yticks = ([10.0 ** k for k in range(int(y0), int(y1) + 1)] if logy
              else [y1 / 1.1 * k / 4 for k in range(5)])
    for yv in yticks:
        if not logy or yv > 0:
            yy = h - bottom - ((fy(yv) if logy else yv) - y0) / (y1 - y0) * (h - top - bottom)
            o.append(f'<line x1="{left - 5}" y1="{yy:.1f}" x2="{w - right}" y2="{yy:.1f}" stroke="#ddd"/>'
                     f'<text x="{left - 8}" y="{yy + 4:.1f}" text-anchor="end">{f"{yv:g}" if logy else num(yv, 0 if yv >= 10 else 2)}</text>')
    extra = iter(EXTRA_COLORS)
    for i, (name, s) in enumerate(series.items()):
        color = COLORS.get(name) or next(extra, "black")
        good = [(x, y) for x, y in s if y == y and y > 0]
        if not good:
            continue
        o.append(f'<polyline fill="none" stroke="{color}" stroke-width="2" points="'
                 + " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in good) + '"/>')
        o += [f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="3" fill="{color}"/>' for x, y in good]
        ly = top + 10 + 18 * i
        o.append(f'<line x1="{w - right + 10}" y1="{ly}" x2="{w - right + 30}" y2="{ly}" stroke="{color}" '
                 f'stroke-width="2"/><text x="{w - right + 35}" y="{ly + 4}">{name}</text>')
    o.append("</svg>")
    return "\n".join(o) + "\n"


def write_plots(data: Json, out_dir: Path) -> list[Path]:
    """One SVG per plot into ``out_dir``; returns the paths written."""
    charts: dict[str, str] = {}

    def curve(d: Json, client: str, key: str, scale: float = 1.0) -> list[tuple[float, float]]:
        pts = []
        for x in d["xs"]:
            r = row_at(d["runs"][client], x)
            if r is not None:
                pts.append((float(x), float(r[key]) * scale))
        return pts

    if "threads" in data:
        d = data["threads"]
        ticks = [(float(x), str(x)) for x in d["xs"]]
        charts["curve-threads-rate.svg"] = svg_chart(
            "echo calls/s, host threads sharing one stdio client", "host threads (sdk: asyncio tasks)", "calls/s",
            {c: curve(d, c, "rate") for c in ("raw", "lib", "sdk")}, xticks=ticks)
        charts["curve-threads-cpu.svg"] = svg_chart(
            "client CPU per echo call", "host threads (sdk: asyncio tasks)", "CPU us/call",
            {c: curve(d, c, "cpu_us") for c in ("raw", "lib", "sdk")}, xticks=ticks)
    if "size" in data:
        d = data["size"]
        ticks = [(float(x), size_label(x)) for x in d["xs"]]
        series = {c: curve(d, c, "cpu_ms_per_mb") for c in ("raw", "lib", "sdk")}
        series["json.loads"] = curve(d, "raw", "decode_ms_per_mb")
        charts["curve-size-cpu.svg"] = svg_chart("client CPU per MB of tool result", "result size",
                                                 "CPU ms per MB", series, xticks=ticks, logy=True)
        charts["curve-size-rss.svg"] = svg_chart(
            "peak RSS above the connected client", "result size", "MB",
            {c: curve(d, c, "extra_mb") for c in ("raw", "lib", "sdk")}, xticks=ticks, logy=True)
    if "list" in data and len(data["list"]["xs"]) > 1:
        d = data["list"]
        charts["curve-list.svg"] = svg_chart(
            f"CPU of one whole tools/list, {d['page']} per page", "tools", "CPU ms",
            {c: curve(d, c, "cpu", 1e3) for c in ("raw", "lib", "sdk")},
            xticks=[(float(x), str(x)) for x in d["xs"]])
    if "many" in data:
        d = data["many"]
        ticks = [(float(x), str(x)) for x in d["xs"]]
        for key, label, unit in (("rss_all_mb", "RSS of the process", "MB"),
                                 ("threads_all", "threads of the process", "threads")):
            charts[f"curve-many-{key.split('_')[0]}.svg"] = svg_chart(
                f"{label}, x idle clients open", "clients open", unit,
                {k: curve(d, k, key) for k in d["runs"]}, logx=False, xticks=ticks)
    if "pool" in data:
        d = data["pool"]
        charts["curve-pool.svg"] = svg_chart(
            f"echo calls/s, {d['threads']} threads through ClientPool", "max_size", "calls/s",
            {"lib": curve(d, "lib", "rate")}, xticks=[(float(x), str(x)) for x in d["xs"]])
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, text in charts.items():
        path = out_dir / name
        path.write_text(text)
        paths.append(path)
    return paths


# ============================================================================ main

def main(argv: Optional[list[str]] = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["worker"]:
        return worker_main(args[1], args[2], args[3])
    doc = __doc__ or ""
    ap = argparse.ArgumentParser(description=doc.split("\n")[1], epilog=doc,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="small sizes: the whole run in under a minute")
    ap.add_argument("--curves", default=",".join(CURVES), help="subset of " + ",".join(CURVES))
    ap.add_argument("--python", default=sys.executable, help="interpreter for the servers and the lib/raw clients")
    ap.add_argument("--sdk-python", default=os.environ.get("SDK_PY"), help="interpreter with mcp==2.3.0")
    ap.add_argument("--timeout", type=float, default=None, help="seconds per worker (60 quick, 180 full)")
    ap.add_argument("--out", default=os.environ.get("BENCH_OUT"), help="output folder")
    a = ap.parse_args(args)
    out_dir = Path(a.out) if a.out else (Path.home() / ".cache" / "mcp_input_sync-bench"
                                         / f"curves-{time.strftime('%Y%m%d-%H%M%S')}")
    print(f"curves: {a.curves} ({'quick' if a.quick else 'full'}); out {out_dir}", flush=True)
    data = run_curves(a.quick, a.python, a.sdk_python, out_dir, curves=[c for c in a.curves.split(",") if c],
                      timeout=a.timeout, log=lambda s: print(s, flush=True))
    report = render(data)
    print("\n" + report, flush=True)
    (out_dir / "curves.txt").write_text(report + "\n")
    print(f"results: {out_dir}/curves.txt, curves.json, {len(data['meta']['plots'])} SVG plots", flush=True)
    return 1 if data["meta"]["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
