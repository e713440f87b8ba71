"""Faults over a real stdio pipe (issue #8): a faulty server process, no mocks.

Every test talks to ``peers/fault_server.py`` (raw JSON lines, stdlib only)
through ``mis.connect_stdio``. The server counts the answers it receives per
request id and, when its stdin ends, writes them to ``$FAULT_REPORT``, so
"every id answered exactly once" is checked on the server's side, answers
written during ``close()`` included. Figures a test measures are printed
(``-s`` shows them), kept in ``FIGURES`` and, when ``$FAULT_FIGURES`` names a
file, appended to it as JSON lines.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import tracemalloc
from pathlib import Path
from typing import Any, Callable, Optional

import pytest

import mcp_input_sync as mis

from .harness import PEERS_DIR, tool_text, wait_until

JsonDict = dict[str, Any]
FAULT = [sys.executable, str(PEERS_DIR / "fault_server.py")]
FORM = {"message": "m", "requestedSchema": {"type": "object", "properties": {"answer": {"type": "string"}}}}
WAIT = 10.0
NO_BUDGET = (float("inf"), 1)  # the input budget off: these tests are about the cap, not the rate
FIGURES: dict[str, Any] = {}


def figure(name: str, value: Any) -> None:
    """Record a measured figure: printed (``-s``), and appended to ``$FAULT_FIGURES`` as a JSON line if set."""
    FIGURES[name] = value
    print(f"FIGURE {name} = {value}")
    path = os.environ.get("FAULT_FIGURES")
    if path:
        with open(path, "a") as f:
            f.write(json.dumps({"figure": name, "value": value}, default=str) + "\n")


def library_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("mcp-input-sync-") and t.is_alive()]


class Box:
    def __init__(self) -> None:
        self.value: Any = None
        self.error: Optional[BaseException] = None
        self.ended_at: Optional[float] = None
        self.thread: Optional[threading.Thread] = None

    def join(self, seconds: float = WAIT) -> "Box":
        assert self.thread is not None
        self.thread.join(seconds)
        assert not self.thread.is_alive(), "the call did not end"
        return self


def in_thread(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Box:
    box = Box()

    def run() -> None:
        try:
            box.value = fn(*args, **kwargs)
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            box.error = exc
        box.ended_at = time.monotonic()

    box.thread = threading.Thread(target=run, name="fault-test-caller", daemon=True)
    box.thread.start()
    return box


class Notes(mis.InputHandler):
    """Answers forms at once; records notifications and logs."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.logs: list[JsonDict] = []
        self.logged = threading.Event()

    def handle_elicitation(self, params: JsonDict, ctx: mis.InputContext) -> JsonDict:
        return {"action": "accept", "content": {"answer": "ok"}}

    def handle_notification(self, method: str, params: JsonDict, ctx: mis.InputContext) -> None:
        if method == "notifications/fault/started":
            self.started.set()

    def handle_log(self, entry: JsonDict, ctx: mis.InputContext) -> None:
        self.logs.append(entry)
        self.logged.set()


@pytest.fixture
def report(tmp_path: Path) -> Path:
    return tmp_path / "answers.json"


def connect(handler: Optional[mis.InputHandler] = None, report: Optional[Path] = None, **options: Any) -> mis.Client:
    env = {"FAULT_REPORT": str(report)} if report is not None else {}
    return mis.connect_stdio(FAULT, handler=handler if handler is not None else Notes(), env=env, **options)


def read_report(path: Path) -> JsonDict:
    assert wait_until(path.exists), "the server wrote no report"
    return json.loads(path.read_text())  # type: ignore[no-any-return]


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def echo_works(client: mis.Client, text: str = "still here") -> None:
    assert tool_text(client.call_tool("echo", {"text": text}, timeout=WAIT)) == text


# ---------------------------------------------------------------------------- the server dies or goes deaf


def test_fault_server_killed_mid_call_raises_transport_within_2s() -> None:
    handler = Notes()
    client = connect(handler)
    try:
        pid = int(tool_text(client.call_tool("pid")))
        box = in_thread(client.call_tool, "hang", timeout=60)
        assert handler.started.wait(WAIT)
        killed_at = time.monotonic()
        os.kill(pid, signal.SIGKILL)
        box.join()
        assert isinstance(box.error, mis.ClientError) and box.error.kind == "transport", box.error
        assert box.ended_at is not None
        elapsed = box.ended_at - killed_at
        figure("killed_mid_call_to_transport_error_s", round(elapsed, 3))
        assert elapsed < 2.0  # issue #8: the call raises transport within 2 s
        assert client.state is mis.ClientState.CLOSED
        with pytest.raises(mis.ClientError) as later:
            client.call_tool("echo", {"text": "x"})
        # a later call says why the client closed, not only that it did
        assert later.value.kind == "closed" and "killed by signal 9" in later.value.message, later.value
    finally:
        client.close()
    with pytest.raises(mis.ClientError) as after_close:
        client.call_tool("echo", {"text": "x"})
    assert later.value.message.startswith("the client is closed: ") and after_close.value.kind == "closed"


def test_fault_server_closing_stdout_but_staying_alive_fails_the_call_and_is_killed_at_close() -> None:
    handler = Notes()
    client = connect(handler)
    pid = int(tool_text(client.call_tool("pid")))
    try:
        started = time.monotonic()
        with pytest.raises(mis.ClientError) as info:
            client.call_tool("close_stdout", timeout=60)
        assert info.value.kind == "transport"
        figure("stdout_closed_to_transport_error_s", round(time.monotonic() - started, 3))
        assert client.state is mis.ClientState.CLOSED
    finally:
        closing = time.monotonic()
        client.close(timeout=5.0)
        figure("stdout_closed_close_returned_s", round(time.monotonic() - closing, 3))
    # it ignored stdin EOF and SIGTERM: the shutdown escalated to SIGKILL and reaped it
    assert wait_until(lambda: gone(pid), 5.0)
    assert wait_until(lambda: not library_threads(), 5.0), [t.name for t in library_threads()]


def test_fault_a_partial_answer_then_eof_fails_the_call_with_transport() -> None:
    client = connect()
    try:
        with pytest.raises(mis.ClientError) as info:
            client.call_tool("raw", {"chunks": ['{"jsonrpc": "2.0", "id": 2, "result": {"content": [{"type": "te'], "then": "exit"}, timeout=60)
        assert info.value.kind == "transport"
    finally:
        client.close()


# ---------------------------------------------------------------------------- garbage on stdout

GARBAGE = {
    "not_json": ["this is not json\n", "{\n", "}{\n", "{'single': 'quotes'}\n", "NaN\n"],
    "not_an_object": ["[1, 2]\n", "42\n", '"text"\n', "null\n", "true\n", "[]\n"],
    "invalid_utf8": ["\xff\xfe\n", '{"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "\xc3\x28"}}\n', "\xed\xa0\x80\n"],
    "bad_jsonrpc": [
        '{"jsonrpc": "2.0"}\n',
        '{"jsonrpc": "2.0", "id": {"a": 1}, "result": {}}\n',
        '{"jsonrpc": "2.0", "id": [1], "method": "elicitation/create"}\n',
        '{"jsonrpc": "2.0", "method": 42}\n',
        '{"jsonrpc": "2.0", "id": 1.5, "result": {}}\n',
        '{"jsonrpc": "2.0", "id": null, "error": "not an object"}\n',
        '{"jsonrpc": "2.0", "method": "notifications/cancelled", "params": "x"}\n',
        '{"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": {}, "progress": "x"}}\n',
    ],
    "blank_and_control": ["\n", "   \n", "\r\n", "\x00\x00\x00\n", "\x1b[2J\x07\n", "\x85\n"],
    "split_garbage": ["not ", "json ", "at all", "\n", '{"jsonrpc": ', '"2.0"}\n'],
}


@pytest.mark.parametrize("kind", sorted(GARBAGE))
def test_fault_garbage_lines_are_ignored_and_later_calls_work(kind: str, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="mcp_input_sync"):
        with connect() as client:
            # "deep": a line of 200 000 nested arrays, deeper than the JSON decoder can go
            args = {"chunks": GARBAGE[kind], "deep": 200_000 if kind == "not_an_object" else 0, "then": "answer"}
            assert tool_text(client.call_tool("raw", args, timeout=WAIT)) == "after raw"
            echo_works(client)
            assert client.state is mis.ClientState.OPEN
    assert not [r for r in caplog.records if r.exc_info], "a line made the client log an exception"


def test_fault_huge_junk_line_and_huge_log_are_survived() -> None:
    handler = Notes()
    with connect(handler) as client:
        tracemalloc.start()
        try:
            base, _ = tracemalloc.get_traced_memory()
            started = time.monotonic()
            assert tool_text(client.call_tool("junk", {"size": 16_000_000}, timeout=30)) == "after junk"
            figure("junk_16MB_line_s", round(time.monotonic() - started, 3))
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        figure("junk_16MB_line_peak_MB", round((peak - base) / 1e6, 1))
        assert tool_text(client.call_tool("big_log", {"size": 4_000_000}, timeout=30)) == "after log"
        assert handler.logged.wait(WAIT)
        (entry,) = handler.logs
        assert entry["data"] == "L" * 4096  # sanitised to 4 096 characters
        echo_works(client)


def test_fault_an_endless_line_does_not_grow_client_memory_without_bound() -> None:
    # a 40 MB line is over limits["message_bytes"] (16 MiB): dropped, never held whole
    size = 40_000_000
    with connect() as client:
        tracemalloc.start()
        try:
            base, _ = tracemalloc.get_traced_memory()
            try:
                assert tool_text(client.call_tool("junk", {"size": size}, timeout=30)) == "after junk"
            finally:
                _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        figure("junk_40MB_line_peak_MB", round((peak - base) / 1e6, 1))
        assert peak - base < size  # the client never holds the whole line
        echo_works(client)


@pytest.mark.parametrize("piece", [1, 7, 4096])
def test_fault_an_answer_written_in_pieces_is_reassembled(piece: int) -> None:
    with connect() as client:
        text = "pieces \u00e9\u4e2d " * 20
        assert tool_text(client.call_tool("split", {"text": text, "piece": piece}, timeout=WAIT)) == text
        echo_works(client)


def test_fault_a_large_request_to_a_server_that_reads_is_not_mistaken_for_a_deaf_one() -> None:
    with connect() as client:
        started = time.monotonic()
        try:
            text = "x" * 4_000_000
            assert tool_text(client.call_tool("echo", {"text": text}, timeout=30)) == text
        finally:
            figure("large_request_4MB_s", round(time.monotonic() - started, 3))
        echo_works(client)


# ---------------------------------------------------------------------------- forged and duplicate responses


def test_fault_responses_to_unknown_ids_and_duplicates_are_ignored() -> None:
    with connect() as client:
        # forged answers for the next ids the client will use, for "1" (a string), null and
        # "nobody"; then the real answer, then a duplicate result and a duplicate error
        assert tool_text(client.call_tool("forge", {"text": "real", "ahead": 5}, timeout=WAIT)) == "real"
        for i in range(5):  # the ids the forged answers named: each call gets its own answer
            echo_works(client, f"echo {i}")
        assert client.state is mis.ClientState.OPEN


# ---------------------------------------------------------------------------- cancellation races


def test_fault_server_cancel_racing_the_callback_answer_gets_at_most_one_answer(report: Path, caplog: pytest.LogCaptureFixture) -> None:
    saw_cancel: set[str] = set()
    lock = threading.Lock()
    counts = {"entered": 0, "returned": 0}

    class Racing(mis.InputHandler):
        def handle_elicitation(self, params: JsonDict, ctx: mis.InputContext) -> JsonDict:
            with lock:
                counts["entered"] += 1
                n = counts["entered"]
            try:
                if n % 2:  # answer at once, racing the cancel the server already sent
                    answer = {"action": "accept", "content": {"answer": "fast"}}
                else:  # answer the instant the cancel is seen
                    ctx.wait_cancelled(WAIT)
                    answer = {"action": "accept", "content": {"answer": "late"}}
                if ctx.cancelled:  # seen cancelled before answering: this answer must be dropped
                    with lock:
                        saw_cancel.add(str(params["message"]))
                return answer
            finally:
                with lock:
                    counts["returned"] += 1

    n = 300
    with caplog.at_level(logging.ERROR, logger="mcp_input_sync"):
        client = connect(Racing(), report, input_rate_limit=NO_BUDGET)
        try:
            for _ in range(3):
                ids = json.loads(tool_text(client.call_tool("ask", {"n": n // 3, "params": FORM, "cancel": True, "tag": True}, timeout=WAIT)))
                assert len(ids) == n // 3
            # every callback has returned before close(), so no token below was set by close()
            assert wait_until(lambda: counts["returned"] == counts["entered"])
            echo_works(client)
        finally:
            client.close()
    got = read_report(report)
    answered = got["answered"]
    assert len(got["sent"]) == n
    assert all(count == 1 for count in answered.values()), {k: c for k, c in answered.items() if c != 1}
    assert got["unknown"] == 0
    # the server cancelled them all: a callback that saw its token set got no answer on the wire
    assert not [r for r in saw_cancel if r in answered]
    figure("cancel_race_requests", n)
    figure("cancel_race_callbacks_run_saw_cancel", (counts["entered"], len(saw_cancel)))
    figure("cancel_race_answers_by_code", got["codes"])
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], [r.getMessage() for r in caplog.records]


def test_fault_client_cancelling_its_call_while_the_response_arrives() -> None:
    outcomes = {"answered": 0, "cancelled": 0}
    with connect() as client:
        for i in range(150):
            cancel = threading.Event()
            go = threading.Barrier(2, timeout=WAIT)

            def setter(go: threading.Barrier = go, cancel: threading.Event = cancel) -> None:
                go.wait()
                cancel.set()

            thread = threading.Thread(target=setter, name="fault-test-canceller", daemon=True)
            thread.start()
            go.wait()
            try:
                result = client.call_tool("echo", {"text": f"t{i}"}, cancel=cancel, timeout=WAIT)
            except mis.ClientError as exc:
                assert exc.kind == "cancelled", exc
                outcomes["cancelled"] += 1
            else:
                assert tool_text(result) == f"t{i}"  # never another call's (late) answer
                outcomes["answered"] += 1
            thread.join(WAIT)
        echo_works(client)
        assert client.state is mis.ClientState.OPEN
    figure("own_cancel_race_outcomes", outcomes)
    assert outcomes["answered"] + outcomes["cancelled"] == 150


# ---------------------------------------------------------------------------- the flood


class Counting(mis.InputHandler):
    """Counts callbacks at once; the first ``cap`` wait for each other so the cap is reached."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.lock = threading.Lock()
        self.now = 0
        self.max = 0
        self.calls = 0
        self.gate = threading.Event()
        self.max_threads = 0

    def handle_elicitation(self, params: JsonDict, ctx: mis.InputContext) -> JsonDict:
        with self.lock:
            self.now += 1
            self.calls += 1
            self.max = max(self.max, self.now)
            if self.now == self.cap:
                self.gate.set()
        self.gate.wait(WAIT)
        threads = len(library_threads())
        with self.lock:
            self.max_threads = max(self.max_threads, threads)
            self.now -= 1
        return {"action": "accept", "content": {"answer": "ok"}}


def test_fault_10000_legacy_requests_as_fast_as_the_pipe_takes_them(report: Path, caplog: pytest.LogCaptureFixture) -> None:
    cap = 8
    n = 10_000
    handler = Counting(cap)
    caplog.set_level(logging.ERROR, logger="mcp_input_sync")  # 10 000 "busy" warnings are not the point
    client = connect(handler, report, input_rate_limit=NO_BUDGET, max_server_requests=cap)
    sampling = threading.Event()
    seen_threads = [0]

    def sample() -> None:
        while not sampling.wait(0.005):
            seen_threads[0] = max(seen_threads[0], len(library_threads()))

    sampler = threading.Thread(target=sample, name="fault-test-sampler", daemon=True)
    try:
        before = len(library_threads())
        sampler.start()
        tracemalloc.start()
        base, _ = tracemalloc.get_traced_memory()
        started = time.monotonic()
        try:
            out = json.loads(tool_text(client.call_tool("flood", {"n": n, "params": FORM}, timeout=60, max_total_timeout=120)))
        finally:
            _, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
            sampling.set()
            sampler.join(WAIT)
        elapsed = time.monotonic() - started
        stats = client.stats
        served = stats["served"]
        busy = stats["refused"].get("elicitation", {}).get("busy", 0)
    finally:
        client.close()
    got = read_report(report)
    figure("flood_n", n)
    figure("flood_seconds", round(elapsed, 2))
    figure("flood_max_concurrent_callbacks", handler.max)
    figure("flood_codes", out["codes"])
    figure("flood_server_max_outstanding", out["max_outstanding"])
    figure("flood_client_peak_traced_MB", round((peak - base) / 1e6, 2))
    figure("flood_library_threads_before_max", (before, seen_threads[0], handler.max_threads))
    # every id answered exactly once, seen from the server, after close too
    assert out["answered"] == n and out["twice"] == 0 and out["unknown"] == 0
    assert len(got["sent"]) == n and all(got["answered"].get(r) == 1 for r in got["sent"])
    assert got["unknown"] == 0
    # the cap holds, and is reached
    assert handler.max == cap
    assert out["codes"].get("ok", 0) == served == handler.calls and out["codes"].get("-32000", 0) == busy
    assert served + busy == n
    # memory stays bounded: the client never buffers the flood (generous bounds)
    assert (peak - base) < 50e6
    assert out["max_outstanding"] < n // 2
    # no thread explosion: at most the cap of workers besides the fixed threads
    assert max(seen_threads[0], handler.max_threads) <= before + cap + 2


def test_fault_close_during_a_flood_and_hanging_calls_returns_within_its_timeout(report: Path, caplog: pytest.LogCaptureFixture) -> None:
    class Patient(mis.InputHandler):
        """Holds its slot until cancelled (cooperative), so the flood meets a full cap."""

        def __init__(self) -> None:
            self.entered = threading.Semaphore(0)
            self.saw_cancel = 0
            self.lock = threading.Lock()

        def handle_elicitation(self, params: JsonDict, ctx: mis.InputContext) -> JsonDict:
            self.entered.release()
            if ctx.wait_cancelled(WAIT):
                with self.lock:
                    self.saw_cancel += 1
            return {"action": "accept", "content": {"answer": "late"}}

    handler = Patient()
    caplog.set_level(logging.ERROR, logger="mcp_input_sync")
    client = connect(handler, report, input_rate_limit=NO_BUDGET)
    flood = in_thread(client.call_tool, "flood", {"n": 5000, "params": FORM}, timeout=60)
    hanging = [in_thread(client.call_tool, "hang", timeout=60) for _ in range(3)]
    for _ in range(8):
        assert handler.entered.acquire(timeout=WAIT)
    assert wait_until(lambda: client.stats["refused"].get("elicitation", {}).get("busy", 0) >= 100)
    started = time.monotonic()
    client.close(timeout=3.0)
    took = time.monotonic() - started
    figure("close_during_flood_s", round(took, 3))
    assert took < 3.0 + 0.5
    for box in [flood, *hanging]:
        box.join()
        assert isinstance(box.error, mis.ClientError) and box.error.kind == "closed", box.error
    assert handler.saw_cancel == 8
    assert client.stats["stuck_callbacks"] == 0
    assert not library_threads(), [t.name for t in library_threads()]
    got = read_report(report)
    assert all(count == 1 for count in got["answered"].values())
    codes = got["codes"]
    figure("close_during_flood_answers", codes)
    # the 8 callbacks' requests, answered at close, and those read while closing
    assert codes.get("-32603", 0) >= 8


# ---------------------------------------------------------------------------- callbacks that ignore cancellation

STUCK_CHILD = textwrap.dedent(
    """
    import json, logging, sys, threading, time
    import mcp_input_sync as mis

    FAULT, REPORT = sys.argv[1:3]
    FORM = {"message": "m", "requestedSchema": {"type": "object", "properties": {"answer": {"type": "string"}}}}
    entered = threading.Semaphore(0)

    class Forever(mis.InputHandler):
        def handle_elicitation(self, params, ctx):
            entered.release()
            threading.Event().wait()  # ignores its token forever

        def handle_notification(self, method, params, ctx):
            pass

    class Warnings(logging.Handler):
        def __init__(self):
            super().__init__(logging.WARNING)
            self.messages = []
        def emit(self, record):
            self.messages.append(record.getMessage())

    warnings = Warnings()
    logging.getLogger("mcp_input_sync").addHandler(warnings)
    logging.getLogger("mcp_input_sync").propagate = False

    def lib():
        return [t for t in threading.enumerate() if t.name.startswith("mcp-input-sync-") and t.is_alive()]

    client = mis.connect_stdio([sys.executable, FAULT], handler=Forever(), env={"FAULT_REPORT": REPORT},
                               input_rate_limit=(float("inf"), 1))
    before = len(lib())
    client.call_tool("ask", {"n": 100, "params": FORM, "answer": "first"})
    for _ in range(8):
        assert entered.acquire(timeout=10)
    pause = threading.Event()
    for _ in range(1000):
        if client.stats["refused"].get("elicitation", {}).get("busy", 0) >= 92:
            break
        pause.wait(0.01)
    busy_before_close = client.stats["refused"]["elicitation"]["busy"]
    outcomes = []
    def call(*args, **kwargs):
        try:
            client.call_tool(*args, **kwargs)
            outcomes.append("returned")
        except mis.ClientError as exc:
            outcomes.append(exc.kind)
    callers = [threading.Thread(target=call, args=("hang",), kwargs={"timeout": 60}, daemon=True) for _ in range(2)]
    callers.append(threading.Thread(target=call, args=("flood", {"n": 3000, "params": FORM}), kwargs={"timeout": 60}, daemon=True))
    for t in callers:
        t.start()
    for _ in range(1000):
        if client.stats["refused"]["elicitation"]["busy"] >= busy_before_close + 200:
            break
        pause.wait(0.01)
    during = len(lib())
    busy_at_close = client.stats["refused"]["elicitation"]["busy"]
    started = time.monotonic()
    client.close(timeout=2.0)
    took = time.monotonic() - started
    for t in callers:
        t.join(10)
    after = sorted(t.name.rsplit("-", 1)[0] for t in lib())
    stuck_msgs = [m for m in warnings.messages if "ignored cancellation" in m]
    print(json.dumps({"before": before, "during": during, "after": after, "close_s": took,
                      "stuck": client.stats["stuck_callbacks"], "stuck_warnings": len(stuck_msgs),
                      "busy": client.stats["refused"]["elicitation"]["busy"], "busy_at_close": busy_at_close, "outcomes": sorted(outcomes),
                      "closed_at": time.monotonic()}), flush=True)
    """
)


def test_fault_stuck_callbacks_hold_slots_get_busy_and_the_process_still_exits(tmp_path: Path) -> None:
    report = tmp_path / "answers.json"
    child = subprocess.run(
        [sys.executable, "-c", STUCK_CHILD, FAULT[1], str(report)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    exited_at = time.monotonic()
    assert child.returncode == 0, child.stderr[-3000:]
    out = json.loads(child.stdout.strip().splitlines()[-1])
    exit_after_close = exited_at - out["closed_at"]
    figure("stuck_close_s", round(out["close_s"], 3))
    figure("stuck_exit_after_close_s", round(exit_after_close, 3))
    figure("stuck_library_threads_before_during_after", (out["before"], out["during"], out["after"]))
    figure("stuck_busy_answers", out["busy"])
    # close() returns within its timeout and reports the 8 stuck workers
    assert out["close_s"] < 2.0 + 0.5
    assert out["stuck"] == 8 and out["stuck_warnings"] == 8
    # the slots stay held: everything else was answered busy, with no thread explosion
    assert out["busy_at_close"] >= 92 + 200
    # 8 stuck workers and at most one more, and the watchdog and the notification thread,
    # which start with the first request (before counts the threads of an idle client)
    assert out["during"] <= out["before"] + 8 + 1 + 2
    # after close only the stuck callbacks' threads remain, and they did not keep the interpreter
    # alive: the first ran on the reader (quick callbacks do), which handed its reading on
    assert out["after"] == ["mcp-input-sync-reader"] + ["mcp-input-sync-worker"] * 7
    assert out["outcomes"] == ["closed", "closed", "closed"]
    assert exit_after_close < 5.0
    got = read_report(report)
    assert all(count == 1 for count in got["answered"].values())
    assert got["codes"].get("-32603") == 8  # the stuck requests, answered at close
    # every busy refusal made before close() reached the server (later ones found the pipe closed)
    assert out["busy_at_close"] - 1 <= got["codes"].get("-32000", 0) <= out["busy"]
