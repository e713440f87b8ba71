#!/usr/bin/env python3
"""benchmarks/sdk_client.py -- the benchmark job done with the official MCP Python SDK (mcp 2.3.0).

    python sdk_client.py SCENARIO N CONCURRENCY SERVER_ARGV...

This is the code a user of the SDK would write: ``mcp.Client`` over stdio with
``mode="auto"`` (it probes ``server/discover``; the legacy server rejects it and the SDK
falls back to ``initialize``, the ``--modern`` server accepts it), an async elicitation
callback returning a fixed accept and an async logging callback that counts. For
``mrtr`` the SDK's own ``input_required`` loop answers every round. Scenarios and the
output line are those of benchmarks/raw_client.py (``BENCH_SIZE`` included).
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
import warnings
from typing import Any

import anyio
import mcp_types
from mcp import Client, StdioServerParameters

try:
    from mcp.shared.exceptions import MCPDeprecationWarning

    warnings.filterwarnings("ignore", category=MCPDeprecationWarning)
except ImportError:  # pragma: no cover - other SDK versions
    pass

COUNTS = {"elicitations": 0, "logs": 0}


def cpu_now() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def make_callbacks(answer_text: str) -> tuple[Any, Any]:
    accept = mcp_types.ElicitResult(action="accept", content={"answer": answer_text})

    async def on_elicitation(context: Any, params: Any) -> Any:
        COUNTS["elicitations"] += 1
        return accept

    async def on_log(params: Any) -> None:
        COUNTS["logs"] += 1

    return on_elicitation, on_log


def text_summary(result: Any) -> Any:
    return json.loads(result.content[0].text)


async def job(scenario: str, n: int, concurrency: int, server_argv: list[str], report: dict[str, Any]) -> None:
    size = int(os.environ.get("BENCH_SIZE", "0"))
    on_elicitation, on_log = make_callbacks("a" * size if size else "ok")
    params = StdioServerParameters(command=server_argv[0], args=server_argv[1:])
    async with Client(params, mode="auto", elicitation_callback=on_elicitation, logging_callback=on_log,
                      client_info=mcp_types.Implementation(name="bench-sdk", version="1"), cache=None,
                      input_required_max_rounds=n + 10) as client:
        report["protocol"] = client.protocol_version
        t0, c0 = time.perf_counter(), cpu_now()
        if scenario == "elicit":
            args: dict[str, Any] = {"n": n, "concurrency": concurrency}
            if size:
                args["size"] = size
            result = await client.call_tool("elicit_n", args)
            report.update(count=COUNTS["elicitations"], server=text_summary(result))
        elif scenario == "mrtr":
            if client.protocol_version != "2026-07-28":
                raise RuntimeError(f"negotiated {client.protocol_version}, not 2026-07-28")
            result = await client.call_tool("mrtr_n", {"n": n})
            report.update(count=COUNTS["elicitations"], server=text_summary(result))
        elif scenario == "log":
            result = await client.call_tool("log_flood", {"n": n})
            report.update(count=COUNTS["logs"], server=text_summary(result))
        elif scenario == "idle":
            await anyio.sleep(n)
            report.update(count=0)
        elif scenario == "connect":
            report.update(count=0)
        else:
            raise SystemExit(f"unknown scenario {scenario!r}")
        report.update(ok=True, work_wall=time.perf_counter() - t0, work_cpu=cpu_now() - c0)


def main(argv: list[str]) -> int:
    scenario, n, concurrency, server_argv = argv[0], int(argv[1]), int(argv[2]), argv[3:]
    report: dict[str, Any] = {"ok": False, "client": "sdk", "scenario": scenario, "n": n}
    rc = 0
    try:
        anyio.run(job, scenario, n, concurrency, server_argv, report)
    except BaseException as exc:  # noqa: BLE001 -- the contract line must be printed
        report["error"] = repr(exc)[:500]
        report["ok"] = False
        rc = 1
    finally:
        report["self_cpu"] = cpu_now()
        print(json.dumps(report), flush=True)
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
