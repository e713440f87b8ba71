#!/usr/bin/env python3
"""benchmarks/raw_client.py -- the reference "physical limit" client: no MCP library at all.

    python raw_client.py SCENARIO N CONCURRENCY SERVER_ARGV...

One thread, one loop: readline -> json.loads -> (reply: json.dumps -> write -> flush).
Every ``elicitation/create`` gets an immediate fixed accept. SCENARIO is one of
``elicit``, ``mrtr``, ``log``, ``idle`` (N seconds), or ``connect`` (handshake and close
only: the fixed cost). The last stdout line is the benchmark contract's JSON object
(see benchmarks/README.md).

Environment: ``BENCH_SIZE`` (bytes, default 0) makes ``elicit`` ask the server for
``size``-byte schemas and answer with a ``size``-byte string.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from typing import IO, Any

MODERN = "2026-07-28"
CAPS: dict[str, Any] = {"elicitation": {"form": {}}}
MODERN_META: dict[str, Any] = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientInfo": {"name": "bench-raw", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": CAPS,
}


def cpu_now() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


class RawConnection:
    """A child server on pipes, driven synchronously from one thread."""

    def __init__(self, argv: list[str], answer: dict[str, Any]) -> None:
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.tx: IO[bytes] = self.proc.stdin
        self.rx: IO[bytes] = self.proc.stdout
        self.answer = answer
        self.ids = 0
        self.elicitations = 0
        self.logs = 0

    def send(self, msg: dict[str, Any]) -> None:
        self.tx.write(json.dumps(msg).encode() + b"\n")
        self.tx.flush()

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Send one request and serve the server until its response arrives."""
        self.ids += 1
        want = self.ids
        self.send({"jsonrpc": "2.0", "id": want, "method": method, "params": params})
        readline, loads = self.rx.readline, json.loads
        while True:
            line = readline()
            if not line:
                raise EOFError("the server closed its stdout")
            msg = loads(line)
            method_in = msg.get("method")
            if method_in is None:
                if msg.get("id") == want:
                    if "error" in msg:
                        raise RuntimeError(f"{method} failed: {msg['error']}")
                    result: dict[str, Any] = msg["result"]
                    return result
            elif method_in == "notifications/message":
                self.logs += 1
            elif "id" in msg:
                self.serve(msg["id"], method_in)

    def serve(self, rid: Any, method: str) -> None:
        if method == "elicitation/create":
            self.elicitations += 1
            self.send({"jsonrpc": "2.0", "id": rid, "result": self.answer})
        elif method == "ping":
            self.send({"jsonrpc": "2.0", "id": rid, "result": {}})
        else:
            self.send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": f"no {method}"}})

    def handshake(self) -> None:
        self.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": CAPS,
                                    "clientInfo": {"name": "bench-raw", "version": "1"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def close(self) -> None:
        self.tx.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def summary(result: dict[str, Any]) -> Any:
    return json.loads(result["content"][0]["text"])


def main(argv: list[str]) -> int:
    scenario, n, concurrency, server_argv = argv[0], int(argv[1]), int(argv[2]), argv[3:]
    size = int(os.environ.get("BENCH_SIZE", "0"))
    answer = {"action": "accept", "content": {"answer": "a" * size if size else "ok"}}
    report: dict[str, Any] = {"ok": False, "client": "raw", "scenario": scenario, "n": n}
    conn = RawConnection(server_argv, answer)
    try:
        if scenario == "mrtr":
            conn.request("server/discover", {"_meta": MODERN_META})
        else:
            conn.handshake()
        t0, c0 = time.perf_counter(), cpu_now()
        if scenario == "elicit":
            args: dict[str, Any] = {"n": n, "concurrency": concurrency}
            if size:
                args["size"] = size
            res = conn.request("tools/call", {"name": "elicit_n", "arguments": args})
            report.update(count=conn.elicitations, server=summary(res))
        elif scenario == "log":
            res = conn.request("tools/call", {"name": "log_flood", "arguments": {"n": n}})
            report.update(count=conn.logs, server=summary(res))
        elif scenario == "mrtr":
            params: dict[str, Any] = {"name": "mrtr_n", "arguments": {"n": n}, "_meta": MODERN_META}
            rounds = 0
            while True:
                res = conn.request("tools/call", params)
                if res.get("resultType") != "input_required":
                    break
                rounds += 1
                params = {"name": "mrtr_n", "arguments": {"n": n}, "_meta": MODERN_META,
                          "inputResponses": {key: answer for key in res.get("inputRequests") or {}}}
                if "requestState" in res:
                    params["requestState"] = res["requestState"]
            report.update(count=rounds, server=summary(res))
        elif scenario == "idle":
            time.sleep(n)
            report.update(count=0)
        elif scenario == "connect":
            report.update(count=0)
        else:
            raise SystemExit(f"unknown scenario {scenario!r}")
        report.update(ok=True, work_wall=time.perf_counter() - t0, work_cpu=cpu_now() - c0)
    finally:
        conn.close()
        report["self_cpu"] = cpu_now()
        print(json.dumps(report), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
