"""Self-test of tests/peers/scripted_server.py, driven with raw JSON lines."""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, Iterator, Optional

import pytest

SERVER = Path(__file__).parent / "peers" / "scripted_server.py"
V = "2026-07-28"
TASKS = "io.modelcontextprotocol/tasks"
SUB = "io.modelcontextprotocol/subscriptionId"
WAIT = 5.0
QUIET = 0.3  # bounded wait used only to show that nothing arrives


def meta(caps: Optional[dict[str, Any]] = None, version: str = V, **extra: Any) -> dict[str, Any]:
    return {
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}} if caps is None else caps,
        "io.modelcontextprotocol/clientInfo": {"name": "selftest", "version": "0"},
        **extra,
    }


class Proc:
    def __init__(self, *flags: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(SERVER), *flags],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )
        self.out: "queue.Queue[Any]" = queue.Queue()
        self.err: "queue.Queue[str]" = queue.Queue()
        self.next_id = 100
        threading.Thread(target=self._pump, args=(self.proc.stdout, self.out, True), daemon=True).start()
        threading.Thread(target=self._pump, args=(self.proc.stderr, self.err, False), daemon=True).start()

    @staticmethod
    def _pump(stream: Any, into: "queue.Queue[Any]", parse: bool) -> None:
        for line in iter(stream.readline, b""):
            into.put(json.loads(line) if parse else line.decode().rstrip("\n"))

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")
        self.proc.stdin.flush()

    def request(self, method: str, params: Optional[dict[str, Any]] = None, rid: Any = None) -> Any:
        if rid is None:
            self.next_id += 1
            rid = self.next_id
        message: dict[str, Any] = {"id": rid, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return rid

    def recv(self, timeout: float = WAIT) -> dict[str, Any]:
        message: dict[str, Any] = self.out.get(timeout=timeout)
        return message

    def quiet(self) -> None:
        with pytest.raises(queue.Empty):
            self.out.get(timeout=QUIET)

    def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        rid = self.request(method, params)
        reply = self.recv()
        assert reply["id"] == rid, reply
        return reply

    def tool(self, name: str, arguments: Optional[dict[str, Any]] = None,
             caps: Optional[dict[str, Any]] = None, **extra: Any) -> dict[str, Any]:
        return self.call("tools/call", {"_meta": meta(caps), "name": name, "arguments": arguments or {}, **extra})

    def stderr_line(self, wanted: str) -> None:
        while True:
            if self.err.get(timeout=WAIT) == wanted:
                return

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=WAIT)
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()


@pytest.fixture
def spawn() -> Iterator[Any]:
    procs: list[Proc] = []

    def start(*flags: str) -> Proc:
        proc = Proc(*flags)
        procs.append(proc)
        return proc

    try:
        yield start
    finally:
        for proc in procs:
            proc.close()


def text_of(reply: dict[str, Any]) -> str:
    value: str = reply["result"]["content"][0]["text"]
    return value


def initialize(p: Proc, version: str = "2025-11-25") -> dict[str, Any]:
    return p.call("initialize", {"protocolVersion": version, "capabilities": {},
                                 "clientInfo": {"name": "selftest", "version": "0"}})


# ------------------------------------------------------------------ modes


def test_modern_probe_and_initialize(spawn: Any) -> None:
    p = spawn()
    reply = p.call("server/discover", {"_meta": meta({})})
    assert reply["result"] == {
        "resultType": "complete", "supportedVersions": [V],
        "capabilities": {"tools": {"listChanged": True}, "resources": {"subscribe": True, "listChanged": True},
                         "logging": {}, "extensions": {TASKS: {}}},
        "ttlMs": 60000, "cacheScope": "private",
        "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "scripted", "version": "1"}},
    }
    err = initialize(p)["error"]
    assert err["code"] == -32602 and err["data"] == {"supported": [V], "requested": "2025-11-25"}
    assert p.call("tools/list", {})["error"]["code"] == -32602
    no_caps = p.call("tools/list", {"_meta": {"io.modelcontextprotocol/protocolVersion": V}})
    assert no_caps["error"]["code"] == -32602
    other = p.call("tools/list", {"_meta": meta(version="2027-01-01")})["error"]
    assert other["code"] == -32022 and other["data"] == {"supported": [V], "requested": "2027-01-01"}
    assert text_of(p.tool("echo", {"text": "hi"})) == "hi"
    assert p.call("ping", {"_meta": meta()})["error"]["code"] == -32601


def test_unsupported_version(spawn: Any) -> None:
    p = spawn("--unsupported-version")
    err = p.call("tools/call", {"_meta": meta(version="2025-11-25"), "name": "echo"})["error"]
    assert err["code"] == -32022 and err["data"] == {"supported": [V], "requested": "2025-11-25"}
    assert p.call("server/discover", {"_meta": meta()})["result"]["supportedVersions"] == [V]


def test_legacy_only(spawn: Any) -> None:
    p = spawn("--legacy-only")
    assert p.call("server/discover", {"_meta": meta()})["error"]["code"] == -32601
    result = initialize(p, "2025-06-18")["result"]
    assert result == {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                      "serverInfo": {"name": "scripted", "version": "1"}}
    p.send({"method": "notifications/initialized"})
    reply = p.call("tools/call", {"name": "echo", "arguments": {"text": "old"}})
    assert reply["result"] == {"content": [{"type": "text", "text": "old"}], "isError": False}
    assert p.call("resources/subscribe", {"uri": "file:///x"})["result"] == {}
    rid = p.request("tools/call", {"name": "fire_legacy", "arguments": {"uri": "file:///x"}})
    assert p.recv() == {"jsonrpc": "2.0", "method": "notifications/resources/updated",
                        "params": {"uri": "file:///x"}}
    assert p.recv() == {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
    assert p.recv()["id"] == rid


def test_silent_probe(spawn: Any) -> None:
    p = spawn("--silent-probe")
    p.request("server/discover", {"_meta": meta()}, rid=1)
    reply = initialize(p)  # the first thing that comes back is the initialize answer
    assert reply["result"]["protocolVersion"] == "2025-11-25"
    p.quiet()


def test_crash_on_discover(spawn: Any) -> None:
    p = spawn("--crash-on-discover")
    p.request("server/discover", {"_meta": meta()})
    p.stderr_line("scripted: crashed")
    p.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                             "clientInfo": {"name": "selftest", "version": "0"}})
    p.quiet()
    fresh = spawn("--crash-on-discover")
    assert initialize(fresh)["result"]["protocolVersion"] == "2025-11-25"
    assert fresh.call("server/discover", {"_meta": meta()})["error"]["code"] == -32601


def test_late_discover(spawn: Any) -> None:
    p = spawn("--late-discover", "0.2")
    p.request("server/discover", {"_meta": meta()}, rid=1)
    p.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                             "clientInfo": {"name": "selftest", "version": "0"}}, rid=2)
    first = p.recv()
    assert first["id"] == 1 and first["result"]["supportedVersions"] == [V]
    assert text_of(p.tool("echo", {"text": "after"})) == "after"  # initialize was never answered


def test_supported_legacy(spawn: Any) -> None:
    p = spawn("--supported-legacy")
    err = p.call("server/discover", {"_meta": meta()})["error"]
    assert err["code"] == -32022
    assert err["data"] == {"supported": ["2025-11-25", "2025-06-18"], "requested": V}
    assert initialize(p)["result"]["protocolVersion"] == "2025-11-25"


def test_eof_exits_and_ignore_eof_stays(spawn: Any) -> None:
    p = spawn()
    assert p.proc.stdin is not None
    p.proc.stdin.close()
    assert p.proc.wait(timeout=WAIT) == 0
    stubborn = spawn("--ignore-eof")
    assert stubborn.proc.stdin is not None
    stubborn.proc.stdin.close()
    stubborn.stderr_line("scripted: ignoring EOF, staying alive")
    assert stubborn.proc.poll() is None


# ------------------------------------------------------------------ tools


def test_ask_round_trip_and_received(spawn: Any) -> None:
    p = spawn()
    requests = {"k": {"method": "roots/list"}}
    args = {"requests": requests, "state": "opaque\u00e9"}
    first = p.tool("ask", args)["result"]
    assert first == {"resultType": "input_required", "inputRequests": requests, "requestState": "opaque\u00e9"}
    answers: dict[str, Any] = {"k": {"roots": []}}
    done = json.loads(text_of(p.tool("ask", args, inputResponses=answers, requestState="opaque\u00e9")))
    assert done == {"inputResponses": answers, "requestState": "opaque\u00e9", "arguments": args}
    chained = {"requests": requests, "state": "r1", "then": {"state": "r2", "then": "error"}}
    assert p.tool("ask", chained, inputResponses=answers, requestState="r1")["result"] == {
        "resultType": "input_required", "requestState": "r2"}
    assert p.tool("ask", chained, requestState="r2")["error"]["code"] == -32603
    received = json.loads(text_of(p.tool("_received")))
    assert received[1]["params"]["inputResponses"] == answers
    assert received[-1]["params"]["name"] == "_received"


def test_reask_endless_state_only_and_odd_results(spawn: Any) -> None:
    p = spawn()
    first = p.tool("reask", {"decline_then": "same"})["result"]
    again = p.tool("reask", {"decline_then": "same"}, inputResponses={"q": {"action": "decline"}})["result"]
    assert first == again and first["resultType"] == "input_required"
    other = p.tool("reask", {"decline_then": "different"}, inputResponses={"q": {"action": "cancel"}})["result"]
    assert other["inputRequests"]["q"] != first["inputRequests"]["q"]
    ok = p.tool("reask", {}, inputResponses={"q": {"action": "accept", "content": {"answer": "yes"}}})
    assert text_of(ok) == "yes"
    assert p.tool("reask", {}, caps={})["error"]["code"] == -32021
    e1 = p.tool("endless")["result"]
    e2 = p.tool("endless", inputResponses={"q1": {"action": "accept"}}, requestState="s1")["result"]
    assert (list(e1["inputRequests"]), e1["requestState"]) == (["q1"], "s1")
    assert (list(e2["inputRequests"]), e2["requestState"]) == (["q2"], "s2")
    assert p.tool("state_only", {"k": 2})["result"] == {"resultType": "input_required", "requestState": "poll-1"}
    assert p.tool("state_only", {"k": 2}, requestState="poll-1")["result"]["requestState"] == "poll-2"
    assert text_of(p.tool("state_only", {"k": 2}, requestState="poll-2")) == "done after 2"
    assert p.tool("unknown_result_type")["result"]["resultType"] == "surprise"
    assert "resultType" not in p.tool("no_result_type")["result"]


def test_server_request_logs_progress_and_slow_cancel(spawn: Any) -> None:
    p = spawn()
    rid = p.request("tools/call", {"_meta": meta(), "name": "server_request", "arguments": {}})
    forbidden = p.recv()
    assert forbidden["id"] == "srv-1" and forbidden["method"] == "elicitation/create"
    assert p.recv()["id"] == rid
    p.send({"id": "srv-1", "result": {"action": "decline"}})
    rid = p.request("tools/call", {"_meta": {**meta(), "progressToken": "tok", "io.modelcontextprotocol/logLevel": "info"},
                                   "name": "log_and_progress", "arguments": {"steps": 2}})
    seen = [p.recv() for _ in range(6)]
    assert [m.get("method") for m in seen] == ["notifications/message", "notifications/message",
                                              "notifications/progress", "notifications/message",
                                              "notifications/progress", None]
    assert seen[1]["params"]["data"] == "evil\u202e\u0007text"
    assert seen[4]["params"] == {"progressToken": "tok", "progress": 2, "total": 2, "message": "step 2"}
    assert text_of(seen[5]) == "done 2 steps" and seen[5]["id"] == rid
    slow = p.request("tools/call", {"_meta": meta(), "name": "slow", "arguments": {"seconds": 0.2}})
    p.send({"method": "notifications/cancelled", "params": {"requestId": slow}})
    p.quiet()
    received = json.loads(text_of(p.tool("_received")))
    assert {"jsonrpc": "2.0", "id": "srv-1", "result": {"action": "decline"}} in received
    assert any(m.get("method") == "notifications/cancelled" for m in received)
    assert text_of(p.tool("slow", {"seconds": 0})) == "slept"


def test_task_input_full_flow(spawn: Any) -> None:
    p = spawn()
    caps: dict[str, Any] = {"elicitation": {"form": {}}, "extensions": {TASKS: {}}}
    assert p.tool("task_input")["error"]["data"] == {"requiredCapabilities": {"extensions": {TASKS: {}}}}
    created = p.tool("task_input", caps=caps)["result"]
    assert created["resultType"] == "task" and created["taskId"] == "t1" and created["status"] == "working"
    assert created["ttlMs"] == 60000 and created["pollIntervalMs"] == 50 and created["createdAt"].endswith("Z")

    def get() -> dict[str, Any]:
        result: dict[str, Any] = p.call("tasks/get", {"_meta": meta(caps), "taskId": "t1"})["result"]
        assert result["resultType"] == "complete"
        return result

    def update(answers: dict[str, Any]) -> None:
        reply = p.call("tasks/update", {"_meta": meta(caps), "taskId": "t1", "inputResponses": answers})
        assert reply["result"] == {"resultType": "complete"}

    assert get()["status"] == "working"
    polled = get()
    assert polled["status"] == "input_required" and list(polled["inputRequests"]) == ["a"]
    assert list(get()["inputRequests"]) == ["a"]
    answer_a = {"action": "accept", "content": {"answer": "A"}}
    update({"a": answer_a, "b": {"action": "accept", "content": {"answer": "too early"}}})
    polled = get()
    assert polled["status"] == "input_required" and list(polled["inputRequests"]) == ["b"]
    answer_b = {"action": "accept", "content": {"answer": "B"}}
    update({"b": answer_b})
    final = get()
    assert final["status"] == "completed"
    assert json.loads(final["result"]["content"][0]["text"]) == {"a": answer_a, "b": answer_b}
    assert p.call("tasks/get", {"_meta": meta(caps), "taskId": "nope"})["error"]["code"] == -32602

    failing = p.tool("task_fail", caps=caps)["result"]["taskId"]
    statuses = [p.call("tasks/get", {"_meta": meta(caps), "taskId": failing})["result"] for _ in range(2)]
    assert statuses[0]["status"] == "working"
    assert statuses[1]["status"] == "failed" and statuses[1]["error"] == {"code": -32000, "message": "task broke"}
    cancelling = p.tool("task_cancel", caps=caps)["result"]["taskId"]
    assert p.call("tasks/cancel", {"_meta": meta(caps), "taskId": cancelling})["result"] == {"resultType": "complete"}
    assert p.call("tasks/get", {"_meta": meta(caps), "taskId": cancelling})["result"]["status"] == "cancelled"


def test_listen_fire_cancel_and_end(spawn: Any) -> None:
    p = spawn()
    wanted = {"toolsListChanged": True, "resourceSubscriptions": ["file:///a"]}
    p.request("subscriptions/listen", {"_meta": meta(), "notifications": wanted}, rid="L1")
    ack = p.recv()
    assert ack == {"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
                   "params": {"notifications": wanted, "_meta": {SUB: "L1"}}}
    p.request("subscriptions/listen", {"_meta": meta(), "notifications": {"resourcesListChanged": True}}, rid="L2")
    assert p.recv()["params"]["_meta"] == {SUB: "L2"}
    rid = p.request("tools/call", {"_meta": meta(), "name": "fire", "arguments": {"what": "resource:file:///a"}})
    assert p.recv() == {"jsonrpc": "2.0", "method": "notifications/resources/updated",
                        "params": {"uri": "file:///a", "_meta": {SUB: "L1"}}}
    reply = p.recv()
    assert reply["id"] == rid and text_of(reply) == "fired 1"
    p.send({"method": "notifications/cancelled", "params": {"requestId": "L1"}})
    assert text_of(p.tool("fire", {"what": "tools"})) == "fired 0"
    rid = p.request("tools/call", {"_meta": meta(), "name": "end_listens", "arguments": {}})
    assert p.recv() == {"jsonrpc": "2.0", "id": "L2", "result": {"resultType": "complete", "_meta": {SUB: "L2"}}}
    assert text_of(p.recv()) == "ended 1"
    p.request("subscriptions/listen", {"_meta": meta(), "notifications": {"toolsListChanged": True}}, rid="L3")
    p.recv()
    assert p.proc.stdin is not None
    p.proc.stdin.close()
    assert p.recv() == {"jsonrpc": "2.0", "id": "L3", "result": {"resultType": "complete", "_meta": {SUB: "L3"}}}
    assert p.proc.wait(timeout=WAIT) == 0


def test_resources_and_prompts_need_input(spawn: Any) -> None:
    p = spawn()
    first = p.call("resources/read", {"_meta": meta(), "uri": "file:///needs-input"})["result"]
    assert first["resultType"] == "input_required" and list(first["inputRequests"]) == ["pw"]
    answer = {"pw": {"action": "accept", "content": {"answer": "s3cret"}}}
    done = p.call("resources/read", {"_meta": meta(), "uri": "file:///needs-input", "inputResponses": answer})
    assert json.loads(done["result"]["contents"][0]["text"]) == {"inputResponses": answer, "requestState": None}
    got = p.call("prompts/get", {"_meta": meta(), "name": "needs-input", "inputResponses": answer})
    assert json.loads(got["result"]["messages"][0]["content"]["text"])["inputResponses"] == answer
    names = [t["name"] for t in p.call("tools/list", {"_meta": meta()})["result"]["tools"]]
    assert {"echo", "ask", "task_input", "fire", "_received"} <= set(names)
