#!/usr/bin/env python3
"""benchmarks/run.py -- one command for the whole client benchmark of mcp_input_sync.

    python benchmarks/run.py [--reps 5] [--cases e1,e8,mrtr,log,idle,fixed] [--clients raw,sdk,lib]
                             [--scaling] [--quick] [--out DIR] [--timeout 60] [--profile]
                             [--parts stdio,http,curves]

--parts chooses what runs (all three by default; --quick runs stdio and http, small,
in under a minute): stdio is this runner's own table; http is http_cases.py (plain
calls, elicitation round trips over SSE and 2026-07-28 rounds over Streamable HTTP,
beside the http.client floor and the SDK); curves is curves.py (how cost grows, with
its plots written to OUT).

Runs the three clients of this folder (raw_client.py: the physical limit; sdk_client.py:
the official SDK; client.py: this library) against server.py, interleaved: in every
repetition each case runs every client back to back, and the client order rotates from
one repetition to the next, so each client/raw ratio compares runs seconds apart.

Main cases (defaults; --quick shrinks them to a smoke test)
    e1     legacy elicitation round trips, n=2000, concurrency 1
    e8     the same with 8 outstanding requests
    mrtr   2026-07-28 input_required rounds, n=500 (server --modern)
    log    log flood, n=50 000 notifications then a ping
    idle   connection open 5 s, no traffic ("unit" = client CPU per second open)
    fixed  start, imports, connect and close only (its cpu is the fixed cost)
--scaling adds, for lib and raw only:
    c1, c8, c64        elicitation n=2000 at 1, 8, 64 outstanding requests
    s1k, s100k, s1m    elicitation with 1 KB / 100 KB / 1 MB schemas AND answers
                       (n = 2000 / 200 / 20)

Measured per run (from outside the client process)
    wall     client start to exit (interpreter start, imports, spawn, handshake, work, close)
    cpu      user+sys of the client alone: os.wait4() rusage of the client (which includes the
             server it reaped) minus the server's own rusage, written by server.py at exit.
             This runner is a child subreaper: a server the client did not reap is reaped here
             and then not subtracted.
    rss      peak RSS of the client process: VmHWM from /proc/PID/status, polled every 20 ms
    threads  peak number of threads of the client process (/proc/PID/task, same poll)
    rate     N / server-side elapsed seconds (round trips, rounds or log messages per second)
    phase    CPU the client reports for its work phase (first tools/call to final result)
    unit     phase CPU per item in microseconds (per second open in ms for idle)
Ratios ("x" columns) are the median over repetitions of client/raw in the same repetition.
Beside rate x and phase x, (min-max) gives the lowest and highest of those per-repetition ratios.

Output: a text table on stdout and in OUT/table.txt, every run in OUT/runs.json, each run's
stdout/stderr under OUT/runs/. OUT defaults to ~/.cache/mcp_input_sync-bench/<stamp>.
Exit status 1 when any run is invalid (non-zero exit, no ok line, count != N, server count
or accepted != N, timeout).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Optional

from probes import become_subreaper, children_of_me, peak_rss_kb, thread_count

HERE = Path(__file__).resolve().parent
SERVER = HERE / "server.py"
CLIENT_FILES = {"raw": "raw_client.py", "sdk": "sdk_client.py", "lib": "client.py"}
POLL_S = 0.02


@dataclass(frozen=True)
class Case:
    key: str
    scenario: str
    n: int
    concurrency: int = 1
    modern: bool = False
    size: int = 0
    clients: Optional[tuple[str, ...]] = None  # None: every selected client
    title: str = ""


@dataclass
class Run:
    client: str
    case: str
    rep: int
    ok: bool = False
    why: str = ""
    wall: float = float("nan")
    cpu: float = float("nan")
    rss_mb: float = float("nan")
    threads: float = float("nan")
    rate: float = float("nan")
    phase_cpu: float = float("nan")
    unit: float = float("nan")
    server_cpu: float = float("nan")
    result: dict[str, Any] = field(default_factory=dict)


# ---------------------------------------------------------------------------- process probes (probes.py)

def reap_leftovers(grace_s: float) -> set[int]:
    """Reap whatever children are left (orphaned servers); SIGKILL them after ``grace_s``."""
    reaped: set[int] = set()
    deadline = time.perf_counter() + grace_s
    killed = False
    while True:
        try:
            pid, _status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return reaped
        if pid:
            reaped.add(pid)
            continue
        if not killed and time.perf_counter() > deadline:
            for pid in children_of_me():  # only processes started by this runner
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            killed = True
        time.sleep(0.01)


# ---------------------------------------------------------------------------- one run

def run_client(name: str, cmd: list[str], case: Case, rep: int, work: Path, timeout: float,
               python: str) -> Run:
    tag = f"{case.key}-{name}-{rep}"
    rusage_path = work / f"server-{tag}.json"
    server_argv = [python, str(SERVER)] + (["--modern"] if case.modern else []) + ["--rusage-file", str(rusage_path)]
    argv = cmd + [case.scenario, str(case.n), str(case.concurrency)] + server_argv
    env = dict(os.environ)
    env.pop("BENCH_PROFILE", None)
    env["BENCH_SIZE"] = str(case.size)
    run = Run(name, case.key, rep)
    out_path, err_path = work / f"{tag}.out", work / f"{tag}.err"
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        started = time.perf_counter()
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=env,
                                start_new_session=True)
        rss_kb = threads = 0
        timed_out = False
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            rss_kb = max(rss_kb, peak_rss_kb(proc.pid))
            threads = max(threads, thread_count(proc.pid))
            if not timed_out and time.perf_counter() - started > timeout:
                timed_out = True
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(POLL_S)
        run.wall = time.perf_counter() - started
        exit_code = os.waitstatus_to_exitcode(status)
        proc.returncode = exit_code
    orphans = reap_leftovers(3.0)
    total = usage.ru_utime + usage.ru_stime
    try:
        srv = json.loads(rusage_path.read_text())
    except (OSError, ValueError):
        srv = None
    if srv is None:
        run.cpu = total  # upper bound: the server never reported
        run.result["cpu_includes_server"] = True
    else:
        run.server_cpu = srv["utime"] + srv["stime"]
        run.cpu = total if srv["pid"] in orphans else total - run.server_cpu
    run.rss_mb = rss_kb / 1024 if rss_kb else float("nan")
    run.threads = threads or float("nan")
    lines = [ln for ln in out_path.read_text(errors="replace").splitlines() if ln.lstrip().startswith("{")]
    try:
        res: dict[str, Any] = json.loads(lines[-1]) if lines else {}
    except ValueError:
        res = {}
    run.result.update(res)
    run.phase_cpu = float(res.get("work_cpu", float("nan")))
    problems = []
    if timed_out:
        problems.append(f"timeout after {timeout:.0f}s")
    if exit_code != 0:
        problems.append(f"exit {exit_code}")
    if not res.get("ok"):
        problems.append(f"not ok: {str(res.get('error', 'no JSON line'))[:160]}")
    elif case.scenario in ("elicit", "mrtr", "log"):
        summary = res.get("server") or {}
        if res.get("count") != case.n or summary.get("count") != case.n:
            problems.append(f"count client={res.get('count')} server={summary.get('count')} want {case.n}")
        if case.scenario != "log" and summary.get("accepted") != case.n:
            problems.append(f"accepted={summary.get('accepted')} want {case.n}")
        if summary.get("elapsed"):
            run.rate = case.n / summary["elapsed"]
    if case.scenario == "idle":
        run.unit = run.phase_cpu / case.n * 1e3  # ms of CPU per second open
    elif case.n:
        run.unit = run.phase_cpu / case.n * 1e6  # µs of CPU per item
    if problems:
        run.why = "; ".join(problems)
        run.result["stderr_tail"] = err_path.read_text(errors="replace")[-600:]
    else:
        run.ok = True
    return run


# ---------------------------------------------------------------------------- table

def median(values: list[float]) -> float:
    xs = [v for v in values if v == v]
    return statistics.median(xs) if xs else float("nan")


def num(x: float, digits: int = 2) -> str:
    if x != x:
        return "-"
    if abs(x) >= 10000:
        return f"{x:,.0f}"
    if abs(x) >= 100:
        return f"{x:.0f}"
    return f"{x:.{digits}f}"


RATIO_KEYS = ("wall", "cpu", "rate", "rss_mb", "phase_cpu")


def spread(ratios: list[float], digits: int) -> str:
    """The lowest and highest of a case's per-repetition ratios: on a shared machine one
    repetition's ratio can land well off the median (e8's rate ran 0.17 to 0.57 in one five-repetition run)."""
    known = [x for x in ratios if x == x]
    if len(known) < 2:
        return ""
    return f"{min(known):.{digits}f}-{max(known):.{digits}f}"


def render(runs: list[Run], cases: list[Case], clients: list[str]) -> str:
    head = (f"{'case':<6} {'client':<6} {'ok':>5} {'wall s':>7} {'cpu s':>7} {'rss MB':>7} {'thr':>4} "
            f"{'rate/s':>9} {'phase s':>8} {'unit':>8} | {'wall x':>7} {'cpu x':>7} {'rate x':>7} {'(min-max)':>11} "
            f"{'rss x':>6} {'phase x':>7} {'(min-max)':>11}")
    lines = [head, "-" * len(head)]
    for case in cases:
        names = [c for c in clients if case.clients is None or c in case.clients]
        reps = sorted({r.rep for r in runs if r.case == case.key})
        for name in names:
            mine = [r for r in runs if r.case == case.key and r.client == name]
            good = [r for r in mine if r.ok]
            ratios: dict[str, list[float]] = {k: [] for k in RATIO_KEYS}
            for rep in reps:
                a = next((r for r in good if r.rep == rep), None)
                b = next((r for r in runs if r.case == case.key and r.client == "raw" and r.rep == rep and r.ok),
                         None)
                if a is None or b is None:
                    continue
                for key in RATIO_KEYS:
                    x, y = getattr(a, key), getattr(b, key)
                    floor = 1e-3 if key == "phase_cpu" else 0.0  # a ~0 s phase (fixed) has no ratio
                    ratios[key].append(x / y if x == x and y == y and y > floor else float("nan"))
            row = (f"{case.key:<6} {name:<6} {len(good):>2}/{len(mine):<2} {num(median([r.wall for r in good])):>7} "
                   f"{num(median([r.cpu for r in good]), 3):>7} {num(median([r.rss_mb for r in good]), 1):>7} "
                   f"{num(median([r.threads for r in good]), 0):>4} {num(median([r.rate for r in good]), 0):>9} "
                   f"{num(median([r.phase_cpu for r in good]), 4):>8} {num(median([r.unit for r in good]), 1):>8} |")
            if name != "raw":
                row += (f" {num(median(ratios['wall'])):>7} {num(median(ratios['cpu'])):>7} "
                        f"{num(median(ratios['rate']), 3):>7} {spread(ratios['rate'], 3):>11} "
                        f"{num(median(ratios['rss_mb'])):>6} "
                        f"{num(median(ratios['phase_cpu'])):>7} {spread(ratios['phase_cpu'], 2):>11}")
            lines.append(row)
        lines.append("")
    return "\n".join(lines)


# ---------------------------------------------------------------------------- profile

def profile_lib(python: str, case: Case, timeout: float, top: int) -> str:
    """cProfile the lib client's work phase for ``case``; top functions of mcp_input_sync by tottime."""
    import pstats

    with tempfile.TemporaryDirectory(prefix="bench-prof-") as tmp:
        prof = Path(tmp) / "work.prof"
        argv = ([python, str(HERE / CLIENT_FILES["lib"]), case.scenario, str(case.n), str(case.concurrency),
                 python, str(SERVER)] + (["--modern"] if case.modern else []))
        env = dict(os.environ, BENCH_PROFILE=str(prof), BENCH_SIZE=str(case.size))
        done = subprocess.run(argv, check=False, capture_output=True, text=True, timeout=timeout, env=env)
        if done.returncode != 0 or not prof.exists():
            return f"profile {case.key}: client failed: {done.stdout[-300:]} {done.stderr[-300:]}"
        stats = pstats.Stats(str(prof))
        table: Any = stats.stats  # type: ignore[attr-defined]
        total = sum(v[2] for v in table.values())
        lib_rows = [(v[2], v[3], v[1], f"{Path(k[0]).name}:{k[1]}({k[2]})") for k, v in table.items()
                    if "mcp_input_sync" in k[0]]
        lib_total = sum(r[0] for r in lib_rows)
        other = sorted(((v[2], k[2] if k[0] == "~" else f"{Path(k[0]).name}:{k[1]}({k[2]})") for k, v in table.items()
                        if "mcp_input_sync" not in k[0]), reverse=True)[:6]
        out = [f"profile lib {case.key} (n={case.n}): profiled tottime {total:.3f}s, inside mcp_input_sync "
               f"{lib_total:.3f}s ({100 * lib_total / total if total else 0:.0f}%)",
               f"  {'tottime':>8} {'cumtime':>8} {'calls':>8}  function (mcp_input_sync)"]
        for tt, ct, calls, label in sorted(lib_rows, reverse=True)[:top]:
            out.append(f"  {tt:8.3f} {ct:8.3f} {calls:8d}  {label}")
        out.append("  biggest outside the library: " + ", ".join(f"{label} {tt:.3f}s" for tt, label in other))
        return "\n".join(out)


# ---------------------------------------------------------------------------- main

def build_cases(a: argparse.Namespace) -> list[Case]:
    q = a.quick
    ne, nm, nl = (20, 10, 300) if q else (a.n_elicit, a.n_mrtr, a.n_log)
    idle = 1 if q else a.idle_s
    main_cases = {
        "e1": Case("e1", "elicit", ne, 1, title=f"legacy elicitation, n={ne}, concurrency 1"),
        "e8": Case("e8", "elicit", ne, 8, title=f"legacy elicitation, n={ne}, concurrency 8"),
        "mrtr": Case("mrtr", "mrtr", nm, modern=True, title=f"2026-07-28 input_required rounds, n={nm}"),
        "log": Case("log", "log", nl, title=f"log flood, n={nl} (lib: delivered + dropped)"),
        "idle": Case("idle", "idle", idle, title=f"idle connection, {idle} s (unit: ms CPU per s)"),
        "fixed": Case("fixed", "connect", 0, title="start + imports + connect + close only"),
    }
    cases = [main_cases[k] for k in a.cases.split(",") if k]
    if a.scaling:
        pair = ("raw", "lib")
        for conc in (1, 8, 64):
            cases.append(Case(f"c{conc}", "elicit", ne, conc, clients=pair,
                              title=f"scaling: elicitation n={ne}, concurrency {conc}"))
        for label, size, n in (("s1k", 1_000, 2000), ("s100k", 100_000, 200), ("s1m", 1_000_000, 20)):
            n = max(2, n // 100) if q else n
            if label in a.sizes.split(","):
                cases.append(Case(label, "elicit", n, 1, size=size, clients=pair,
                                  title=f"scaling: {size}-byte schema and answer, n={n}"))
    return cases


def precompile(python: str) -> None:
    """Write the library's bytecode, as ``pip install`` does.

    With ``PYTHONDONTWRITEBYTECODE`` set (or a read-only checkout of an
    editable install) every client start would otherwise compile the
    library's sources again, and the fixed cost would measure the compiler.
    The SDK, installed from a wheel, already has its bytecode.
    """
    code = "import compileall, os, mcp_input_sync as m; compileall.compile_dir(os.path.dirname(m.__file__), quiet=1)"
    subprocess.run([python, "-c", code], check=False, timeout=120, stdout=subprocess.DEVNULL)


def run_stdio(a: argparse.Namespace, cases: list[Case], clients: list[str], commands: dict[str, list[str]],
              work: Path, stamp: str) -> tuple[list[Run], str]:
    """The stdio part: every case x client x repetition, interleaved; the runs and the table."""
    began = time.perf_counter()
    if not a.quick:  # page cache and .pyc files
        warm = Case("warm", "elicit", 20)
        for name in clients:
            w = run_client(name, commands[name], warm, 0, work, a.timeout, a.python)
            print(f"  warm-up {name:<4} {'ok' if w.ok else 'FAIL ' + w.why}", flush=True)
    runs: list[Run] = []
    for rep in range(a.reps):
        for case in cases:
            names = [c for c in clients if case.clients is None or c in case.clients]
            shift = rep % len(names)
            for name in names[shift:] + names[:shift]:
                r = run_client(name, commands[name], case, rep, work, a.timeout, a.python)
                runs.append(r)
                print(f"  rep {rep} {case.key:<6} {name:<4} {'ok  ' if r.ok else 'FAIL'} wall {r.wall:6.2f}s "
                      f"cpu {r.cpu:6.3f}s rss {r.rss_mb:5.1f}MB thr {r.threads:>3} rate {num(r.rate, 0):>9}/s"
                      + (f"  {r.why}" if r.why else ""), flush=True)
    took = time.perf_counter() - began
    header = [f"# mcp_input_sync client benchmark {stamp}: {a.reps} reps interleaved, {took:.0f} s; medians; "
              f"x = median of per-rep ratios client/raw",
              f"# python {a.python}; server {SERVER}"]
    header += [f"#   {c.key:<6} {c.title}" for c in cases]
    report = "\n".join(header) + "\n" + render(runs, cases, clients)
    if a.profile:
        n_log = 300 if a.quick else a.n_log
        n_e1 = 20 if a.quick else a.n_elicit
        report += "\n" + profile_lib(a.python, Case("e1", "elicit", n_e1), a.timeout, 15)
        report += "\n\n" + profile_lib(a.python, Case("log", "log", n_log), a.timeout, 15) + "\n"
    bad = [r for r in runs if not r.ok]
    report += f"\n{len(runs) - len(bad)}/{len(runs)} runs valid" + "".join(
        f"\n  INVALID {r.case} {r.client} rep {r.rep}: {r.why}" for r in bad)
    return runs, report


def main(argv: Optional[list[str]] = None) -> int:
    doc = __doc__ or ""
    ap = argparse.ArgumentParser(description=doc.split("\n")[1], epilog=doc,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--cases", default="e1,e8,mrtr,log,idle,fixed")
    ap.add_argument("--clients", default="raw,sdk,lib", help="subset of raw,sdk,lib (raw is always run)")
    ap.add_argument("--scaling", action="store_true", help="add the concurrency and message-size cases")
    ap.add_argument("--sizes", default="s1k,s100k,s1m", help="which message-size cases --scaling runs")
    ap.add_argument("--quick", action="store_true", help="tiny sizes, 1 rep, no warm-up: a smoke test")
    ap.add_argument("--n-elicit", type=int, default=2000)
    ap.add_argument("--n-mrtr", type=int, default=500)
    ap.add_argument("--n-log", type=int, default=50000)
    ap.add_argument("--idle-s", type=int, default=5)
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds per run")
    ap.add_argument("--python", default=sys.executable, help="interpreter for the server and the clients")
    ap.add_argument("--sdk-python", default=os.environ.get("SDK_PY"), help="interpreter with mcp==2.3.0")
    ap.add_argument("--profile", action="store_true", help="also cProfile the lib's e1 and log work phases")
    ap.add_argument("--parts", default=None, help="subset of stdio,http,curves (default: all; stdio,http with --quick)")
    ap.add_argument("--out", default=os.environ.get("BENCH_OUT"),
                    help="output folder (default ~/.cache/mcp_input_sync-bench/<stamp>)")
    a = ap.parse_args(argv)
    if a.quick and "--reps" not in (argv if argv is not None else sys.argv[1:]):
        a.reps = 1
    parts = set((a.parts or ("stdio,http" if a.quick else "stdio,http,curves")).split(","))
    if parts - {"stdio", "http", "curves"}:
        ap.error(f"unknown parts {sorted(parts - {'stdio', 'http', 'curves'})}")

    precompile(a.python)
    cases = build_cases(a)
    chosen = ["raw"] + [c for c in a.clients.split(",") if c and c != "raw"]
    unknown = [c for c in chosen if c not in CLIENT_FILES]
    if unknown:
        ap.error(f"unknown clients {unknown}")
    commands = {c: [a.sdk_python if c == "sdk" and a.sdk_python else a.python, str(HERE / CLIENT_FILES[c])]
                for c in chosen}
    clients = list(commands)

    stamp = time.strftime("%Y%m%d-%H%M%S")
    out_dir = Path(a.out) if a.out else Path.home() / ".cache" / "mcp_input_sync-bench" / stamp
    work = out_dir / "runs"
    work.mkdir(parents=True, exist_ok=True)
    become_subreaper()
    print(f"bench: clients {','.join(clients)}; {len(cases)} cases x {a.reps} reps; out {out_dir}", flush=True)
    runs: list[Run] = []
    report = ""
    if "stdio" in parts:
        runs, report = run_stdio(a, cases, clients, commands, work, stamp)
    if "http" in parts:
        from http_cases import render as render_http
        from http_cases import run_http_cases

        began = time.perf_counter()
        rows = run_http_cases(a.reps if a.reps <= 3 else 3, a.quick, a.python, a.sdk_python)
        report += (f"\n\n# HTTP: client CPU per unit, {time.perf_counter() - began:.0f} s; x = median of per-rep "
                   f"ratios to the http.client floor and to the SDK\n" + render_http(rows))
        bad_http = [r for r in rows if r["ok_runs"] != r["runs"]]
        report += "".join(f"\n  INVALID http {r['case']} {r['client']}: {r.get('failures')}" for r in bad_http)
    else:
        bad_http = []
    if "curves" in parts:
        from curves import render_curves, run_curves

        data = run_curves(a.quick, a.python, a.sdk_python, out_dir)
        report += "\n\n" + render_curves(data)
        bad_curves = list(data.get("meta", {}).get("failures") or [])
        report += "".join(f"\n  INVALID curve run: {failure}" for failure in bad_curves)
    else:
        bad_curves = []
    print("\n" + report, flush=True)
    (out_dir / "table.txt").write_text(report + "\n")
    (out_dir / "runs.json").write_text(json.dumps(
        {"stamp": stamp, "argv": sys.argv, "commands": {k: shlex.join(v) for k, v in commands.items()},
         "cases": [asdict(c) for c in cases], "runs": [asdict(r) for r in runs]}, indent=1, default=str))
    print(f"results: {out_dir}/table.txt and runs.json", flush=True)
    return 1 if bad_http or bad_curves or any(not r.ok for r in runs) else 0


if __name__ == "__main__":
    sys.exit(main())
