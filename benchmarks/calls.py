#!/usr/bin/env python3
"""benchmarks/calls.py -- calls per round trip: a deterministic measure beside the timings.

    python benchmarks/calls.py [--rounds 200,600] [--eras legacy,modern] [--functions] [--top 8] [--json PATH]
    python benchmarks/calls.py child ERA N        (one counted client run; internal)

Timings on a shared machine move from one run to the next; the number of calls a
round trip makes does not. For each era a real stdio client (the library's public
API: ``connect_stdio``, ``call_tool`` and the handler of ``client.py``) drives
``server.py`` in a process of its own, once with N=200 rounds and once with N=600.
``sys.setprofile`` (the calling thread) and ``threading.setprofile`` (every thread
started after it: the library's reader, stderr, watchdog, worker and notification
threads) count every call made while ``call_tool`` runs. The per-round figure is the
difference of the two runs divided by 400 (``--rounds LOW,HIGH``: HIGH - LOW), so the
call's set-up and its end cancel out.

Eras
    legacy  ``elicit_n {n, concurrency: 1}`` on the legacy server (``protocol="auto"``: the
            server rejects ``server/discover``): one ``elicitation/create`` round trip, from
            the line read to the answer written
    modern  ``mrtr_n {n}`` on ``server.py --modern`` (``protocol="modern"``): one 2026-07-28
            ``input_required`` round, from the round's result read to the retry written

What is counted
    python calls   profile ``call`` events: a Python function entered (a generator or a
                   comprehension counts, as each is a frame of its own)
    C calls        profile ``c_call`` events: a builtin function or method called from Python
                   (``dict.get``, ``lock.__exit__``, ``time.monotonic``, a pipe's ``write``)
    library        Python calls into ``mcp_input_sync.*`` frames; the breakdown by module and
                   the layers count only these
    modules        modules whose functions a round trip enters (any module: the library's,
                   the handler's, the standard library's)
    module-to-module
                   Python calls whose caller frame is in another module than the function called
    threads        ``reader`` (``mcp-input-sync-reader-<n>``), ``caller`` (the thread that called
                   ``call_tool``), ``others`` (every other thread, by role: ``mcp-input-sync-watchdog``...)
    layers         of the library's calls: protocol (``mcp_input_sync._protocol.*``), I/O
                   (``mcp_input_sync.transports.*``), coordination (the rest of the library)

The figures count the reader's and the caller's threads, where a round is carried.
Every round does the same work there, so each function's calls per round is a whole
number; the figures take each function's count to its nearest whole number, the same
from one run to the next. What a thread does because time passed (a parked reader's
poll, the watchdog's tick that sweeps finished deadlines in a batch) adds fractions
that move from run to run; they are shown apart, per era, and left out of the
figures: the fractions on the reader and the caller as the timed residue, every other
thread as ``others, timed``.

Pin the measured copy of the library as the other benchmarks do (the path is printed):

    git archive HEAD mcp_input_sync | tar -x -C /tmp/snap
    PYTHONPATH=/tmp/snap python benchmarks/calls.py

``--functions`` names the functions behind each module's count; ``--json PATH`` also
writes every figure to PATH (``--json -``: to stdout, instead of the table).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
from collections import defaultdict
from pathlib import Path
from types import FrameType
from typing import Any, Callable, Optional

BENCH = Path(__file__).resolve().parent
SERVER = BENCH / "server.py"
LIB = "mcp_input_sync"
READER_ROLE = "mcp-input-sync-reader"
ERAS = {
    "legacy": "legacy elicitation round trip (elicit_n, concurrency 1, stdio)",
    "modern": "2026-07-28 round (mrtr_n, the library drives the rounds, stdio)",
}
LIMIT_S = 300.0

# One counted call: (thread, caller module, callee module, function); C calls have no callee module.
PyKey = tuple[str, str, str, str]
CKey = tuple[str, str, str]


# --------------------------------------------------------------------------- the child: one counted run

class CallCounter:
    """A profile function for every thread: counts calls while :attr:`on` is true.

    Each thread keeps its own tables (a ``threading.local``), so counting takes no
    lock and one thread's counts never mix with another's. The profile function runs
    with profiling switched off by the interpreter, so what it calls is not counted.
    """

    def __init__(self) -> None:
        self.on = False
        self.local = threading.local()
        self.tables: list[tuple[str, dict[tuple[str, str, str], int], dict[tuple[str, str], int]]] = []
        self.main = threading.main_thread()

    def _tables(self) -> tuple[dict[tuple[str, str, str], int], dict[tuple[str, str], int]]:
        try:
            found: tuple[dict[tuple[str, str, str], int], dict[tuple[str, str], int]] = self.local.tables
            return found
        except AttributeError:
            thread = threading.current_thread()
            name = "caller" if thread is self.main else thread.name
            py: dict[tuple[str, str, str], int] = defaultdict(int)
            c: dict[tuple[str, str], int] = defaultdict(int)
            self.local.tables = (py, c)
            self.tables.append((name, py, c))
            return py, c

    def hook(self, frame: FrameType, event: str, arg: Any) -> None:
        if not self.on:
            return
        if event == "call":
            back = frame.f_back
            caller = back.f_globals.get("__name__", "?") if back is not None else "<thread>"
            code = frame.f_code
            name = getattr(code, "co_qualname", code.co_name)  # co_qualname: Python 3.11+
            self._tables()[0][(caller, frame.f_globals.get("__name__", "?"), name)] += 1
        elif event == "c_call":
            module = getattr(arg, "__module__", None)
            name = getattr(arg, "__qualname__", None) or getattr(arg, "__name__", "?")
            full = f"{module}.{name}" if isinstance(module, str) else str(name)
            self._tables()[1][(frame.f_globals.get("__name__", "?"), full)] += 1


def child(era: str, n: int) -> int:
    """One client run of ``n`` rounds, counted during ``call_tool``; prints one JSON line."""
    import mcp_input_sync as mis
    from client import BenchHandler, tool_summary

    counter = CallCounter()
    handler = BenchHandler("ok")
    server = [sys.executable, str(SERVER)] + (["--modern"] if era == "modern" else [])
    threading.setprofile(counter.hook)  # every thread the client starts from here on
    sys.setprofile(counter.hook)
    try:
        with mis.connect_stdio(server, handler=handler, protocol="modern" if era == "modern" else "auto",
                               input_rate_limit=(float("inf"), 10**9), max_rounds=10**6,
                               max_server_requests=8) as client:
            protocol = client.protocol_version
            tool, args = ("mrtr_n", {"n": n}) if era == "modern" else ("elicit_n", {"n": n, "concurrency": 1})
            counter.on = True
            result = client.call_tool(tool, args)
            counter.on = False
    finally:
        counter.on = False
        sys.setprofile(None)
        threading.setprofile(None)
    summary = tool_summary(result)
    ok = handler.answered == n and summary.get("count") == n and summary.get("accepted") == n
    py: list[list[Any]] = []
    c: list[list[Any]] = []
    for thread, py_table, c_table in counter.tables:
        py.extend([thread, *key, count] for key, count in py_table.items())
        c.extend([thread, *key, count] for key, count in c_table.items())
    print(json.dumps({"ok": ok, "era": era, "n": n, "protocol": protocol, "answered": handler.answered,
                      "server": summary, "library": os.path.dirname(mis.__file__), "py": py, "c": c}))
    return 0 if ok else 1


# --------------------------------------------------------------------------- the parent: differences

def thread_kind(role: str) -> str:
    """``reader``, ``caller`` or ``others`` for a thread role (see :func:`thread_role`)."""
    if role == "caller":
        return "caller"
    if role == READER_ROLE:
        return "reader"
    return "others"


def thread_role(name: str) -> str:
    """``mcp-input-sync-watchdog-3`` -> ``mcp-input-sync-watchdog``: a role, not one thread."""
    head, _, tail = name.rpartition("-")
    return head if head and tail.isdigit() else name


def run_child(era: str, n: int, python: str, timeout: float) -> dict[str, Any]:
    argv = [python, str(Path(__file__).resolve()), "child", era, str(n)]
    done = subprocess.run(argv, check=False, capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        raise SystemExit(f"calls.py child {era} {n} failed (exit {done.returncode}):\n"
                         f"{done.stdout[-1500:]}\n{done.stderr[-1500:]}")
    line: dict[str, Any] = json.loads(lines[-1])
    return line


def per_round(low: dict[Any, int], high: dict[Any, int], rounds: int) -> tuple[dict[Any, int], dict[Any, float]]:
    """Per key: the whole calls per round, and what is left over (the timed part).

    Every round does the same work, so each function's calls per round on a thread is a
    whole number; what a thread does because time passed (a poll, a watchdog tick, a
    parked reader's wake-up) adds a small fraction that moves from run to run. The whole
    part is the figure; the fractions are summed apart as the timed residue.
    """
    whole: dict[Any, int] = {}
    rest: dict[Any, float] = {}
    for key in set(low) | set(high):
        exact = (high.get(key, 0) - low.get(key, 0)) / rounds
        calls = round(exact)
        if calls:
            whole[key] = calls
        if exact != calls:
            rest[key] = exact - calls
    return whole, rest


def tables(run: dict[str, Any]) -> tuple[dict[PyKey, int], dict[CKey, int]]:
    """The child's rows, keyed by thread *role* (a pool's threads are one role)."""
    py: dict[PyKey, int] = defaultdict(int)
    c: dict[CKey, int] = defaultdict(int)
    for thread, caller, callee, func, count in run["py"]:
        py[(thread_role(thread), caller, callee, func)] += count
    for thread, caller, func, count in run["c"]:
        c[(thread_role(thread), caller, func)] += count
    return py, c


def is_lib(module: str) -> bool:
    return module == LIB or module.startswith(LIB + ".")


def layer(module: str) -> str:
    if module.startswith(LIB + "._protocol"):
        return "protocol"
    if module.startswith(LIB + ".transports"):
        return "io"
    return "coordination"


def summarise(era: str, low_run: dict[str, Any], high_run: dict[str, Any]) -> dict[str, Any]:
    """One era's figures per round trip from the low and the high run.

    The figures count the reader's and the caller's threads, where a round is carried
    (whole calls per round: see :func:`per_round`). Every other thread (the watchdog's
    ticks, workers, notifications) is given apart and exactly, as ``others``: what it
    does per round depends on when its timer fires, so it is not a figure.
    """
    rounds = high_run["n"] - low_run["n"]
    py_low, c_low = tables(low_run)
    py_high, c_high = tables(high_run)
    py_whole, py_rest = per_round(py_low, py_high, rounds)
    c_whole, c_rest = per_round(c_low, c_high, rounds)

    def carried(key: Any) -> bool:
        return thread_kind(key[0]) != "others"

    py = {k: v for k, v in py_whole.items() if carried(k)}
    c = {k: v for k, v in c_whole.items() if carried(k)}

    def total(items: dict[Any, int], keep: Callable[[Any], bool] = lambda key: True) -> int:
        return sum(v for k, v in items.items() if keep(k))

    threads: dict[str, dict[str, int]] = {}
    for kind in ("reader", "caller"):
        mine_py = {k: v for k, v in py.items() if thread_kind(k[0]) == kind}
        mine_c = {k: v for k, v in c.items() if thread_kind(k[0]) == kind}
        threads[kind] = {"python": total(mine_py), "c": total(mine_c),
                         "library": total(mine_py, lambda k: is_lib(k[2]))}
    others: dict[str, dict[str, float]] = defaultdict(lambda: {"python": 0.0, "c": 0.0})
    for field, whole, rest in (("python", py_whole, py_rest), ("c", c_whole, c_rest)):
        for k in set(whole) | set(rest):
            if not carried(k):
                others[k[0]][field] += whole.get(k, 0) + rest.get(k, 0.0)
    residue = {"python": sum(x for k, x in py_rest.items() if carried(k)),
               "c": sum(x for k, x in c_rest.items() if carried(k))}

    modules: dict[str, int] = defaultdict(int)
    functions: dict[tuple[str, str], int] = defaultdict(int)
    edges: dict[tuple[str, str], int] = defaultdict(int)
    layers = {"protocol": 0, "io": 0, "coordination": 0}
    for (_thread, caller, callee, func), v in py.items():
        modules[callee] += v
        if caller != callee and caller != "<thread>":
            edges[(caller, callee)] += v
        if is_lib(callee):
            functions[(callee, func)] += v
            layers[layer(callee)] += v
    c_names: dict[str, int] = defaultdict(int)
    for (_thread, _caller, func), v in c.items():
        c_names[func] += v

    def ranked(items: dict[Any, int]) -> list[tuple[Any, int]]:
        return sorted(((k, v) for k, v in items.items() if v), key=lambda kv: (-kv[1], str(kv[0])))

    lib_modules = {m: v for m, v in modules.items() if is_lib(m)}
    return {
        "era": era,
        "title": ERAS[era],
        "protocol": high_run["protocol"],
        "rounds": [low_run["n"], high_run["n"]],
        "python": total(py),
        "c": total(c),
        "library": total(py, lambda k: is_lib(k[2])),
        "modules": len([m for m, v in modules.items() if v]),
        "library_modules": len([m for m, v in lib_modules.items() if v]),
        "module_to_module": total(edges),
        "library_module_to_module": total(edges, lambda k: is_lib(k[0]) and is_lib(k[1])),
        "threads": threads,
        "others": {"python": round(sum(v["python"] for v in others.values()), 2),
                   "c": round(sum(v["c"] for v in others.values()), 2)},
        "other_threads": {role: {k: round(x, 2) for k, x in v.items()} for role, v in sorted(others.items())},
        "residue": {k: round(x, 2) for k, x in residue.items()},
        "layers": layers,
        "by_module": [{"module": m, "calls": v} for m, v in ranked(lib_modules)],
        "other_modules": [{"module": m, "calls": v} for m, v in ranked(modules) if not is_lib(m)],
        "by_function": [{"module": m, "function": f, "calls": v} for (m, f), v in ranked(functions)],
        "edges": [{"from": a, "to": b, "calls": v} for (a, b), v in ranked(edges)],
        "c_calls": [{"function": f, "calls": v} for f, v in ranked(c_names)],
    }


def measure(eras: list[str], rounds: tuple[int, int], python: str, timeout: float) -> dict[str, Any]:
    """Both runs of every era, and each era's figures."""
    results = []
    library = ""
    for era in eras:
        low, high = (run_child(era, n, python, timeout) for n in rounds)
        library = high["library"]
        results.append(summarise(era, low, high))
    return {"rounds": list(rounds), "library": library, "python": sys.version.split()[0], "eras": results}


# --------------------------------------------------------------------------- the table

def short(module: str) -> str:
    return module[len(LIB) + 1:] if module.startswith(LIB + ".") else module


def pair(python: float, c: float) -> str:
    if isinstance(python, int) and isinstance(c, int):
        return f"{python}/{c}"
    return f"{python:.2f}/{c:.2f}"


def render(data: dict[str, Any], functions: bool = False, top: int = 8) -> str:
    low, high = data["rounds"]
    out = [f"Calls per round trip: N={high} minus N={low} rounds, divided by {high - low} "
           f"(sys.setprofile + threading.setprofile; Python {data['python']})",
           f"library measured: {data['library']}", "",
           f"{'':21} {'python':>6} {'C':>5} {'library':>7} {'modules':>7} {'mod->mod':>8}  "
           f"{'reader':>7} {'caller':>7}"]
    for era in data["eras"]:
        t = era["threads"]
        out.append(f"{era['era'] + ' (' + era['protocol'] + ')':21} {era['python']:>6} {era['c']:>5} "
                   f"{era['library']:>7} {era['modules']:>7} {era['module_to_module']:>8}  "
                   f"{pair(t['reader']['python'], t['reader']['c']):>7} "
                   f"{pair(t['caller']['python'], t['caller']['c']):>7}")
    out += ["",
            "Whole calls per round on the reader's and the caller's threads, the same every run; reader and",
            "caller: python/C on each. Every other thread (the watchdog's ticks, workers) is given below each",
            "era as 'others, timed': exact, but it moves with when a timer fires, so it is not a figure."]
    for era in data["eras"]:
        out += ["", f"== {era['title']}, protocol {era['protocol']}",
                f"   {era['python']} Python calls ({era['library']} in the library), {era['c']} C calls; "
                f"{era['modules']} modules ({era['library_modules']} of the library), "
                f"{era['module_to_module']} module-to-module calls ({era['library_module_to_module']} "
                f"library to library)"]
        t = era["threads"]
        out.append(f"   reader thread {pair(t['reader']['python'], t['reader']['c'])}, caller's thread "
                   f"{pair(t['caller']['python'], t['caller']['c'])} (python/C)")
        if era["other_threads"]:
            out.append("   others, timed, python/C: " + ", ".join(
                f"{role} {pair(v['python'], v['c'])}" for role, v in era["other_threads"].items()))
        res = era["residue"]
        if res["python"] or res["c"]:
            out.append(f"   left out on the reader and caller, timed (a parked reader's polls): "
                       f"{pair(res['python'], res['c'])}")
        lay = era["layers"]
        out.append(f"   library calls by layer: protocol {lay['protocol']}, I/O {lay['io']}, "
                   f"coordination {lay['coordination']}")
        out.append("   by module (library frames, calls per round):")
        for row in era["by_module"]:
            line = f"     {row['calls']:>4}  {short(row['module'])}"
            if functions:
                named = [f for f in era["by_function"] if f["module"] == row["module"]]
                line += ": " + ", ".join(f["function"] + (f" x{f['calls']}" if f["calls"] != 1 else "")
                                         for f in named)
            out.append(line)
        if era["other_modules"]:
            out.append("   outside the library: " + ", ".join(
                f"{r['module']} {r['calls']}" for r in era["other_modules"]))
        out.append("   busiest module-to-module calls: " + ", ".join(
            f"{short(e['from'])} -> {short(e['to'])} {e['calls']}" for e in era["edges"][:top]))
        out.append("   C calls: " + ", ".join(f"{r['function']} {r['calls']}" for r in era["c_calls"][:top]))
    return "\n".join(out)


def main(argv: Optional[list[str]] = None) -> int:
    args_in = sys.argv[1:] if argv is None else argv
    if args_in[:1] == ["child"]:
        return child(args_in[1], int(args_in[2]))
    doc = __doc__ or ""
    ap = argparse.ArgumentParser(description=doc.split("\n")[1], epilog=doc,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", default="200,600", help="the low and the high N (200,600)")
    ap.add_argument("--eras", default="legacy,modern", help="subset of legacy,modern")
    ap.add_argument("--functions", action="store_true", help="name the functions of each module")
    ap.add_argument("--top", type=int, default=8, help="how many module-to-module edges and C functions to name")
    ap.add_argument("--python", default=sys.executable, help="interpreter for the client and the server")
    ap.add_argument("--timeout", type=float, default=LIMIT_S, help="seconds per counted run")
    ap.add_argument("--json", default=None, help="also write the figures to this file ('-': stdout, no table)")
    args = ap.parse_args(args_in)
    low, high = (int(x) for x in args.rounds.split(","))
    if not 0 <= low < high:
        ap.error("--rounds LOW,HIGH with 0 <= LOW < HIGH")
    eras = [e for e in args.eras.split(",") if e]
    unknown = [e for e in eras if e not in ERAS]
    if unknown:
        ap.error(f"unknown era {unknown[0]!r}: choose from {','.join(ERAS)}")
    data = measure(eras, (low, high), args.python, args.timeout)
    if args.json == "-":
        print(json.dumps(data, indent=1))
        return 0
    print(render(data, functions=args.functions, top=args.top))
    if args.json:
        Path(args.json).write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
