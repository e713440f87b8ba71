"""stdio: answers that follow one another closely are written together, and none is held back for long.

The server below sends a burst of requests in one write. The first callbacks
answer at once; the last one waits (for a person, say) until the server has
seen every earlier answer: it tells the client with a notification when it
has. So the earlier answers must reach the server while the last callback
still runs, whether they were written one by one or held back to be written
together.
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import Any

import pytest

import mcp_input_sync as mis
from mcp_input_sync.transports import StdioTransport

WAIT = 10.0

BURST_SERVER = r"""
import json, sys
out = sys.stdout
def send(m):
    out.write(json.dumps(m) + "\n"); out.flush()
SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}}}
waiting = {}
call_id = None
for line in sys.stdin:
    msg = json.loads(line)
    method = msg.get("method")
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {"protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}}, "serverInfo": {"name": "burst", "version": "1"}}})
    elif method == "server/discover":
        send({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "no"}})
    elif method == "tools/call":
        call_id = msg["id"]
        n = msg["params"]["arguments"]["n"]
        burst = "".join(json.dumps({"jsonrpc": "2.0", "id": f"q{i}", "method": "elicitation/create", "params": {"mode": "form", "message": f"q{i}", "requestedSchema": SCHEMA}}) + "\n" for i in range(n))
        out.write(burst); out.flush()
        waiting = {f"q{i}" for i in range(n)}
        last = f"q{n - 1}"
    elif method is None and msg.get("id") in waiting:
        waiting.discard(msg["id"])
        if waiting == {last}:
            send({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "all but the last answered"}})
        if not waiting:
            send({"jsonrpc": "2.0", "id": call_id, "result": {"content": [{"type": "text", "text": "done"}]}})
"""


def test_answers_of_a_burst_reach_the_server_while_a_later_callback_still_waits(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    writes: list[int] = []  # how many answers each write to the server's stdin carried
    write = StdioTransport._write

    def counting(self: StdioTransport, data: bytes) -> None:
        size = len(data) + sum(len(part) for part in self._pending)
        if size:
            writes.append(b"".join([*self._pending, data]).count(b'"result"'))
        write(self, data)

    monkeypatch.setattr(StdioTransport, "_write", counting)
    script = tmp_path / "burst_server.py"
    script.write_text(BURST_SERVER)
    heard = threading.Event()
    n = 12

    class Handler(mis.InputHandler):
        def handle_elicitation(self, params: Any, ctx: mis.InputContext) -> Any:
            if params["message"] == f"q{n - 1}":
                assert heard.wait(WAIT), "the earlier answers were held back"
            return {"action": "accept", "content": {"answer": "ok"}}

        def handle_log(self, entry: Any, ctx: mis.InputContext) -> None:
            heard.set()

    handler = Handler()
    with mis.connect_stdio([sys.executable, str(script)], handler=handler, protocol="legacy", input_rate_limit=(float("inf"), 100), max_server_requests=n) as client:
        assert client.call_tool("burst", {"n": n}, timeout=WAIT)["content"][0]["text"] == "done"
        assert client.stats["served"] == n
    assert heard.is_set()
    assert max(writes) > 1, "no answers of the burst went out together: this test did not test batching"


def test_answers_held_back_are_written_before_stdin_is_closed(tmp_path: Path) -> None:
    record = tmp_path / "stdin.bin"
    script = tmp_path / "record_stdin.py"
    script.write_text(f"import sys\nopen({str(record)!r}, 'wb').write(sys.stdin.buffer.read())\n")
    transport = StdioTransport([sys.executable, str(script)])
    transport.start(lambda line, stream=None: None, lambda error: None)
    assert transport.send_later(b'{"jsonrpc":"2.0","id":1,"result":{}}\n') is True
    assert transport.send_later(b'{"jsonrpc":"2.0","id":2,"result":{}}\n') is False
    transport.close(5.0)
    assert record.read_bytes() == b'{"jsonrpc":"2.0","id":1,"result":{}}\n{"jsonrpc":"2.0","id":2,"result":{}}\n'


def test_a_send_writes_what_was_held_back_first(tmp_path: Path) -> None:
    record = tmp_path / "stdin.bin"
    script = tmp_path / "record_stdin.py"
    script.write_text(f"import sys\nopen({str(record)!r}, 'wb').write(sys.stdin.buffer.read())\n")
    transport = StdioTransport([sys.executable, str(script)])
    transport.start(lambda line, stream=None: None, lambda error: None)
    transport.send_later(b"a\n")
    transport.send(b"b\n")
    transport.flush()  # nothing left: writes nothing
    transport.close(5.0)
    assert record.read_bytes() == b"a\nb\n"
