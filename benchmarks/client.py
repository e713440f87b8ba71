#!/usr/bin/env python3
"""benchmarks/client.py -- the benchmark job done with mcp_input_sync's public API.

    python client.py SCENARIO N CONCURRENCY SERVER_ARGV...

Meets the client contract of the shared harness (and of benchmarks/run.py):

* ``elicit``: legacy era (``protocol="auto"``: the legacy server rejects
  ``server/discover``), ``tools/call elicit_n {"n": N, "concurrency": CONCURRENCY}``,
  every ``elicitation/create`` is answered by :class:`BenchHandler`.
* ``mrtr``: ``protocol="modern"`` (2026-07-28); ``tools/call mrtr_n {"n": N}``; the
  library itself drives the ``input_required`` rounds through the same handler.
* ``log``: legacy; ``tools/call log_flood {"n": N}``. The handler overrides
  ``handle_log``, so the library asks the server for logs; the reported count is
  ``stats["logs_delivered"] + stats["logs_dropped"]`` (the default ``log_rate_limit``
  stays on, so most of a flood is dropped by design and counted as dropped).
* ``idle``: legacy handshake, stay connected N seconds, close.
* ``connect``: handshake and close only (the fixed cost; not in the shared contract).

Options: ``input_rate_limit=(inf, 10**9)``, ``max_rounds=10**6``,
``max_server_requests=max(8, CONCURRENCY)`` (the default 8 already covers concurrency
1 and 8; 64 outstanding requests need 64 slots, or the library refuses the excess).

``BENCH_SIZE`` (bytes, default 0): ``elicit`` asks for ``size``-byte schemas and the
handler answers with a ``size``-byte string. ``BENCH_PROFILE=PATH``: cProfile the work
phase (the ``call_tool``) in the main thread plus every thread the library starts (whole
thread lives: their share of connect and close is a handful of messages), merged into PATH.
``BENCH_TELEMETRY``: ``off``, ``sdk`` (OpenTelemetry's SDK records every span and point), or unset
(the default option, no provider: what most hosts run).

Last stdout line: one JSON object ``{"ok", "count", "server", "work_wall", "work_cpu", ...}``.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import threading
import time
from typing import Any, Optional

import mcp_input_sync as mis


def cpu_now() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


class BenchHandler(mis.InputHandler):
    """Accepts every form elicitation with a fixed answer."""

    def __init__(self, answer_text: str) -> None:
        self.answer_text = answer_text
        self.lock = threading.Lock()
        self.answered = 0

    def handle_elicitation(self, params: dict[str, Any], ctx: mis.InputContext) -> dict[str, Any]:
        with self.lock:
            self.answered += 1
        return {"action": "accept", "content": {"answer": self.answer_text}}


class LogCountingHandler(BenchHandler):
    """Also receives server logs: overriding ``handle_log`` makes the library ask for them."""

    def __init__(self, answer_text: str) -> None:
        super().__init__(answer_text)
        self.logs_seen = 0

    def handle_log(self, entry: dict[str, Any], ctx: mis.InputContext) -> None:
        self.logs_seen += 1  # runs on the single notification thread


def tool_summary(result: Any) -> Any:
    return json.loads(result["content"][0]["text"])


def settle_log_counts(client: mis.Client, n: int, limit_s: float) -> tuple[Any, float]:
    """Wait (bounded) until delivered + dropped reaches ``n``: delivery runs on another thread."""
    start = time.perf_counter()
    pause = threading.Event()
    while True:
        stats = client.stats
        if stats["logs_delivered"] + stats["logs_dropped"] >= n or time.perf_counter() - start > limit_s:
            return stats, time.perf_counter() - start
        pause.wait(0.002)


class ThreadProfiles:
    """cProfile every thread started after :meth:`install` (cProfile hooks one thread only).

    The timer is ``time.thread_time`` (CPU of the calling thread), so time a thread spends
    blocked in a read or a lock shows as nothing instead of as cost.
    """

    def __init__(self) -> None:
        self.main = self.make()
        self.threads: list[Any] = []

    @staticmethod
    def make() -> Any:
        """A profiler timing CPU of its own thread, not wall time: blocked reads cost nothing."""
        import cProfile

        return cProfile.Profile(time.thread_time)

    def install(self) -> None:
        original = threading.Thread.run
        profiles = self

        def run(thread: threading.Thread) -> None:
            prof = profiles.make()
            profiles.threads.append(prof)
            prof.enable()
            try:
                original(thread)
            finally:
                prof.disable()

        threading.Thread.run = run  # type: ignore[method-assign,assignment]

    def dump(self, path: str) -> None:
        import pstats

        stats: Any = None
        for prof in [self.main] + self.threads:
            try:
                if stats is None:
                    stats = pstats.Stats(prof)
                else:
                    stats.add(prof)
            except TypeError:  # a profile that recorded nothing
                pass
        if stats is not None:
            stats.dump_stats(path)


class _Dropped:
    """A span exporter that keeps nothing: what the SDK costs to record spans, not to ship them."""

    def export(self, spans: Any) -> Any:
        from opentelemetry.sdk.trace.export import SpanExportResult

        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        pass

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


def telemetry_option(mode: str) -> dict[str, Any]:
    """``BENCH_TELEMETRY``: ``off`` (``telemetry=False``), ``sdk`` (the OpenTelemetry SDK recording every span and the
    duration histogram, spans batched to an exporter that drops them), or unset (the default: no provider, nothing imported)."""
    if mode == "off":
        return {"telemetry": False}
    if mode != "sdk":
        return {}
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(BatchSpanProcessor(_Dropped()))  # type: ignore[arg-type]
    meter_provider = MeterProvider(metric_readers=[InMemoryMetricReader()])
    return {"telemetry": mis.Telemetry(tracer_provider=tracer_provider, meter_provider=meter_provider)}


def main(argv: list[str]) -> int:
    scenario, n, concurrency, server_argv = argv[0], int(argv[1]), int(argv[2]), argv[3:]
    size = int(os.environ.get("BENCH_SIZE", "0"))
    profile_path = os.environ.get("BENCH_PROFILE")
    handler: BenchHandler = (LogCountingHandler if scenario == "log" else BenchHandler)("a" * size if size else "ok")
    max_server_requests = max(8, concurrency)
    report: dict[str, Any] = {"ok": False, "client": "lib", "scenario": scenario, "n": n,
                              "max_server_requests": max_server_requests}
    rc = 1
    client: Optional[mis.Client] = None
    profiles = ThreadProfiles() if profile_path else None
    if profiles is not None:
        profiles.install()
    try:
        client = mis.connect_stdio(
            server_argv,
            handler=handler,
            protocol="modern" if scenario == "mrtr" else "auto",
            input_rate_limit=(float("inf"), 10**9),
            max_rounds=10**6,
            max_server_requests=max_server_requests,
            **telemetry_option(os.environ.get("BENCH_TELEMETRY", "")),
        )
        report["protocol"] = client.protocol_version
        t0, c0 = time.perf_counter(), cpu_now()
        if profiles is not None:
            profiles.main.enable()
        if scenario == "elicit":
            args: dict[str, Any] = {"n": n, "concurrency": concurrency}
            if size:
                args["size"] = size
            result = client.call_tool("elicit_n", args)
            report.update(count=handler.answered, server=tool_summary(result))
        elif scenario == "mrtr":
            result = client.call_tool("mrtr_n", {"n": n})
            report.update(count=handler.answered, server=tool_summary(result))
        elif scenario == "log":
            result = client.call_tool("log_flood", {"n": n})
            stats, drain_s = settle_log_counts(client, n, 5.0)
            report.update(count=stats["logs_delivered"] + stats["logs_dropped"], server=tool_summary(result),
                          logs_delivered=stats["logs_delivered"], logs_dropped=stats["logs_dropped"],
                          notifications_dropped=stats["notifications_dropped"],
                          handle_log_calls=getattr(handler, "logs_seen", None), log_drain_wait=drain_s)
        elif scenario == "idle":
            threading.Event().wait(n)
            report.update(count=0)
        elif scenario == "connect":
            report.update(count=0)
        else:
            raise SystemExit(f"unknown scenario {scenario!r}")
        if profiles is not None:
            profiles.main.disable()
        report.update(ok=True, work_wall=time.perf_counter() - t0, work_cpu=cpu_now() - c0)
        report["threads"] = threading.active_count()
        rc = 0
    except BaseException as exc:  # noqa: BLE001 -- the contract line must be printed
        report["error"] = repr(exc)[:500]
    finally:
        if client is not None:
            client.close()  # closes the server's stdin and reaps it
            report["stats"] = {k: v for k, v in client.stats.items() if k != "refused"}
            report["refused"] = {k: dict(v) for k, v in client.stats["refused"].items()}
        if profiles is not None and profile_path:
            profiles.dump(profile_path)
        report["self_cpu"] = cpu_now()
        print(json.dumps(report), flush=True)
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
