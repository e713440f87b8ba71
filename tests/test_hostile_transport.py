"""Hostile servers against the transports' bounds (issue #21, items 3 and 6).

- a stdio server that writes an endless line to its stderr: the client reads
  it a bounded piece at a time, logs the start, drops the rest, and keeps a
  short, cleaned tail of the server's stderr;
- a server whose paged listing never ends, in large pages or with huge
  cursors: the whole listing is bounded by ``limits["listing_bytes"]``;
- an HTTP server that redirects the client's requests to another origin:
  nothing the caller sent (``headers=``, the auth hook's header, the body)
  reaches it, over POST, the GET stream and the DELETE at close.

The stdio server is the script below (stdlib only), written to a temporary
file; the HTTP servers are ``tiny_http.TinyServer`` instances on 127.0.0.1.
"""

from __future__ import annotations

import logging
import random
import subprocess
import sys
import threading
import tracemalloc
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

import mcp_input_sync as mis
from mcp_input_sync.transports import StdioTransport
from mcp_input_sync.transports._lines import cut_lines
from mcp_input_sync.transports.stdio import STDERR_LINE_BYTES, STDERR_TAIL_CHARS, STDERR_TAIL_LINE_CHARS, STDERR_TAIL_LINES

from .harness import tool_text, wait_until
from .tiny_http import Reply, Seen, TinyServer, rpc

JsonDict = dict[str, Any]
WAIT = 30.0
MIB = 1 << 20

SERVER = r'''
import json, sys

out, err = sys.stdout.buffer, sys.stderr.buffer


def send(message):
    out.write(json.dumps(message).encode() + b"\n")
    out.flush()


def text(value):
    return {"content": [{"type": "text", "text": value}]}


def tool(rid, name, args):
    if name == "stderr_flood":  # an endless line on stderr, then a newline and a few short lines
        chunk = b"E" * (1 << 20)
        for _ in range(args["mb"]):
            err.write(chunk)
        err.write(b"\n")
        for line in args.get("after", []):
            err.write(line.encode("utf-8") + b"\n")
        err.flush()
        send({"jsonrpc": "2.0", "id": rid, "result": text("flooded")})
    elif name == "stderr_lines":
        for line in args["lines"]:
            err.write(line.encode("utf-8") + b"\n")
        err.flush()
        send({"jsonrpc": "2.0", "id": rid, "result": text("written")})
    else:
        send({"jsonrpc": "2.0", "id": rid, "result": text(args.get("text", "ok"))})


def tools_page(rid, params):
    # page n holds `item_kb` tools of about 1 KiB each, then (but for the last) a cursor of `cursor_kb` KiB
    cursor = (params or {}).get("cursor")
    n = int(cursor.split(":", 1)[0]) if cursor else 0
    item_kb, cursor_kb, pages = SETTINGS
    result = {"tools": [{"name": f"t{n}-{i}", "description": "d" * 1000} for i in range(item_kb)]}
    if n + 1 < pages:
        result["nextCursor"] = f"{n + 1}:" + "c" * (cursor_kb * 1024)
    send({"jsonrpc": "2.0", "id": rid, "result": result})


# argv: item_kb cursor_kb pages
SETTINGS = tuple(int(x) for x in (sys.argv[1:4] if len(sys.argv) >= 4 else ("1", "0", "1")))

for line in sys.stdin.buffer:
    message = json.loads(line)
    method = message.get("method")
    if "id" not in message or method is None:
        continue
    if method == "server/discover":
        send({"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": "method not found"}})
    elif method == "initialize":
        send({"jsonrpc": "2.0", "id": message["id"], "result": {
            "protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
            "serverInfo": {"name": "hostile-transport", "version": "1"}}})
    elif method == "tools/call":
        params = message["params"]
        tool(message["id"], params["name"], params.get("arguments") or {})
    elif method == "tools/list":
        tools_page(message["id"], message.get("params"))
    else:
        send({"jsonrpc": "2.0", "id": message["id"], "result": {}})
'''


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "hostile_transport_server.py"
    path.write_text(SERVER)
    return path


def open_stdio(script: Path, *args: str, **options: Any) -> tuple[mis.Client, StdioTransport]:
    transport = StdioTransport([sys.executable, str(script), *args])
    client = mis.Client(transport, **options)
    client.open()
    return client, transport


# ---------------------------------------------------------------------------- stderr


def test_an_endless_stderr_line_is_read_in_bounded_pieces_and_later_calls_work(script: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="mcp_input_sync.server")
    size_mb = 120
    client, transport = open_stdio(script, server_id="flooder")
    with client:
        tracemalloc.start()
        try:
            base, _ = tracemalloc.get_traced_memory()
            try:
                result = client.call_tool("stderr_flood", {"mb": size_mb, "after": ["last \x1b[2J\u202ewords"]}, timeout=WAIT)
                assert tool_text(result) == "flooded"
                # the stderr reader may still be finishing the line: wait for the words after it
                assert wait_until(lambda: transport.stderr_tail.endswith("words"))
            finally:
                _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        print(f"FIGURE stderr_{size_mb}MB_line_peak_MB = {round((peak - base) / 1e6, 2)}")
        assert peak - base < 8 * MIB  # never the line: a few pieces of it at most
        assert tool_text(client.call_tool("echo", {"text": "after"}, timeout=WAIT)) == "after"
        assert client.state is mis.ClientState.OPEN
    tail = transport.stderr_tail.split("\n")
    assert tail[0] == "E" * (STDERR_TAIL_LINE_CHARS - len(" [cut]")) + " [cut]"
    assert len(tail) == 2 and tail[1].startswith("last ") and tail[1].endswith("words")
    assert "\x1b" not in tail[1] and "\u202e" not in tail[1]  # cleaned: no escape, no bidi override
    logged = [r.getMessage() for r in caplog.records if r.name == "mcp_input_sync.server.flooder"]
    assert logged[0].endswith(" [cut]") and len(logged[0]) == STDERR_LINE_BYTES
    assert logged[1] == tail[1]


def test_the_stderr_tail_is_bounded_in_lines_and_characters(script: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="mcp_input_sync.server")
    client, transport = open_stdio(script, server_id="chatty")
    with client:
        assert transport.stderr_tail == ""
        lines = [f"line {i}" for i in range(100)]
        client.call_tool("stderr_lines", {"lines": lines}, timeout=WAIT)
        assert wait_until(lambda: transport.stderr_tail.endswith("line 99"))
        assert transport.stderr_tail.split("\n") == lines[-STDERR_TAIL_LINES:]
        # long lines: each is cut in the tail, and the characters bound drops the oldest first
        long = [str(i) * 2000 for i in range(6)]
        client.call_tool("stderr_lines", {"lines": long}, timeout=WAIT)
        assert wait_until(lambda: transport.stderr_tail.endswith(" [cut]") and transport.stderr_tail.startswith("3"))
        tail = transport.stderr_tail
        assert len(tail) <= STDERR_TAIL_CHARS
        assert tail.split("\n") == [str(i) * (STDERR_TAIL_LINE_CHARS - 6) + " [cut]" for i in range(3, 6)]
        # a line of exactly STDERR_LINE_BYTES is logged whole; one byte more is cut
        client.call_tool("stderr_lines", {"lines": ["x" * STDERR_LINE_BYTES, "y" * (STDERR_LINE_BYTES + 1)]}, timeout=WAIT)
        assert wait_until(lambda: transport.stderr_tail.startswith("5") and transport.stderr_tail.split("\n")[-1].startswith("y"))
    logged = [r.getMessage() for r in caplog.records if r.name == "mcp_input_sync.server.chatty"]
    assert logged[-2] == "x" * STDERR_LINE_BYTES
    assert logged[-1] == "y" * (STDERR_LINE_BYTES - 6) + " [cut]"


def test_stderr_lines_are_cut_alike_however_the_pipe_hands_them_over() -> None:
    # the stderr reader's splitter against the plain split, for every way of cutting the stream into pieces
    limit = 8
    stream = b"short\n\n12345678\n123456789\nab\r\n" + b"x" * 40 + b"\nlast\nxx" + b"y" * 30
    expected = [(line[:limit], len(line) > limit) for line in stream.split(b"\n")]
    rng = random.Random(31)
    for trial in range(300):
        sizes = [1] * len(stream) if trial == 0 else [rng.randint(1, 20) for _ in range(len(stream))]
        pieces = iter([stream[sum(sizes[:i]) : sum(sizes[: i + 1])] for i in range(len(sizes))] + [b""])
        assert list(cut_lines(lambda: next(pieces), limit)) == expected, sizes
    ended = iter([b"abc", b"d" * 20, b""])  # the stream ends inside a line already cut: nothing more
    assert list(cut_lines(lambda: next(ended), limit)) == [(b"abcddddd", True)]


#: A CPU-busy process beside the client, as another test worker is: it ends by itself within 120 s at worst.
BURN = "import time\nend = time.monotonic() + 120\nwhile time.monotonic() < end:\n    pass\n"


def _status_kib(key: str) -> int:
    with open("/proc/self/status", "rb") as status:
        for line in status:
            if line.startswith(key.encode() + b":"):
                return int(line.split()[1])
    raise LookupError(key)


def _reset_peak_rss() -> bool:
    """Start this process's VmHWM afresh at its VmRSS (Linux: /proc/self/clear_refs); False where it cannot."""
    try:
        with open("/proc/self/clear_refs", "w") as refs:
            refs.write("5")
        return True
    except OSError:
        return False


@pytest.fixture
def busy() -> Iterator[None]:
    """Two CPU-busy processes beside the client and one CPU-busy thread in it, for the length of a test."""
    procs: list[subprocess.Popen[bytes]] = []
    stop = threading.Event()

    def spin() -> None:
        while not stop.is_set():
            pass

    spinner = threading.Thread(target=spin, name="busy-spinner", daemon=True)
    try:
        for _ in range(2):
            procs.append(subprocess.Popen([sys.executable, "-c", BURN], stdin=subprocess.DEVNULL))
        spinner.start()
        yield
    finally:
        stop.set()
        for proc in procs:
            proc.kill()
        for proc in procs:
            proc.wait(timeout=10)
        if spinner.ident is not None:
            spinner.join(timeout=10)
            assert not spinner.is_alive()


def test_a_200_mb_stderr_line_under_load_peaks_as_low_as_alone(script: Path, busy: None, caplog: pytest.LogCaptureFixture) -> None:
    # Issue #31, item 7: in a full run with two workers the client "peaked at 131-135 MiB" on this line,
    # against 32 MiB alone. A process's lifetime peak (ru_maxrss, a VmHWM never reset, or the ru_maxrss of
    # a child, which Linux starts at its parent's peak) tells what earlier tests held, not what this line
    # costs. Measured here over the line alone, with the machine loaded as in that run: the growth of this
    # process's peak RSS (VmHWM reset first) and its peak traced memory.
    caplog.set_level(logging.INFO, logger="mcp_input_sync.server")
    size_mb = 200
    client, transport = open_stdio(script, server_id="flooder")
    with client:
        rss_exact = _reset_peak_rss()
        rss_before = _status_kib("VmRSS") if rss_exact else 0
        tracemalloc.start()
        try:
            base, _ = tracemalloc.get_traced_memory()
            try:
                result = client.call_tool("stderr_flood", {"mb": size_mb, "after": ["last words"]}, timeout=60)
                assert tool_text(result) == "flooded"
                assert wait_until(lambda: transport.stderr_tail.endswith("last words"), 60)
            finally:
                _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        rss_growth = (_status_kib("VmHWM") - rss_before) * 1024 if rss_exact else 0
        print(f"FIGURE stderr_{size_mb}MB_line_under_load_peak_MB = {round((peak - base) / 1e6, 2)}")
        print(f"FIGURE stderr_{size_mb}MB_line_under_load_rss_growth_MB = {round(rss_growth / 1e6, 2) if rss_exact else 'n/a'}")
        assert peak - base < 8 * MIB  # a few pieces of the line at most, never the line
        if rss_exact:
            assert rss_growth < 16 * MIB  # nor in memory Python does not trace (buffers, malloc arenas)
        assert tool_text(client.call_tool("echo", {"text": "after"}, timeout=WAIT)) == "after"
    assert transport.stderr_tail.split("\n") == ["E" * (STDERR_TAIL_LINE_CHARS - len(" [cut]")) + " [cut]", "last words"]


# ---------------------------------------------------------------------------- paged listings


def test_a_listing_of_endless_large_pages_stops_at_listing_bytes(script: Path) -> None:
    # 40 pages of about 1 MiB each, each under message_bytes: 40 MiB in all, over the 16 MiB default
    client, _ = open_stdio(script, "1024", "0", "40")
    with client:
        tracemalloc.start()
        try:
            base, _ = tracemalloc.get_traced_memory()
            try:
                with pytest.raises(mis.ClientError) as info:
                    client.list_tools(timeout=WAIT)
            finally:
                _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        print(f"FIGURE listing_40_pages_peak_MB = {round((peak - base) / 1e6, 1)}")
        assert (info.value.kind, info.value.check) == ("protocol", "limit")
        assert "limits['listing_bytes']" in info.value.message
        assert peak - base < 40 * MIB
        assert tool_text(client.call_tool("echo", {"text": "after"}, timeout=WAIT)) == "after"


def test_huge_cursors_count_against_listing_bytes(script: Path) -> None:
    # tiny pages whose cursors are 6 MiB each: the kept cursors are bounded too
    client, _ = open_stdio(script, "1", str(6 * 1024), "10")
    with client:
        with pytest.raises(mis.ClientError) as info:
            client.list_tools(timeout=WAIT)
        assert info.value.check == "limit"


def test_listing_bytes_is_an_option_and_a_listing_under_it_is_whole(script: Path) -> None:
    client, _ = open_stdio(script, "64", "1", "5", limits={"listing_bytes": 1 * MIB})
    with client:
        tools = client.list_tools(timeout=WAIT)
        assert len(tools) == 5 * 64 and tools[-1]["name"] == "t4-63"
    client, _ = open_stdio(script, "64", "1", "5", limits={"listing_bytes": 200_000})
    with client:
        with pytest.raises(mis.ClientError) as info:
            client.list_tools(timeout=WAIT)
        assert info.value.check == "limit" and "limits['listing_bytes']=200000" in info.value.message
    with pytest.raises(ValueError):
        mis.Client(mis.transports.memory_pair()[0], limits={"listing_bytes": 0})


# ---------------------------------------------------------------------------- redirects


SECRET = "s3cr3t-api-key"
TOKEN = "Bearer t0k3n-of-the-caller"


@pytest.fixture
def servers() -> Iterator[list[TinyServer]]:
    made: list[TinyServer] = []
    yield made
    for server in made:
        server.close()


def endpoint(state: JsonDict) -> Callable[[Seen], Reply]:
    """A minimal 2025-11-25 endpoint; ``state`` may hold a reply per verb or method (a function of the request)."""

    def answer(seen: Seen) -> Reply:
        body = seen.body if isinstance(seen.body, dict) else {}
        method = body.get("method")
        hook = state.get(seen.verb if seen.verb != "POST" else str(method))
        if hook is not None:
            return hook(seen)  # type: ignore[no-any-return]
        if seen.verb == "GET":
            return Reply(405)
        if seen.verb == "DELETE":
            return Reply(200)
        if method == "server/discover":
            return Reply(400, body={"jsonrpc": "2.0", "id": body["id"], "error": {"code": -32601, "message": "no"}})
        if method == "initialize":
            info = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": {"name": "tiny", "version": "1"}}
            return Reply(200, {"Mcp-Session-Id": "s1"}, rpc(body["id"], info))
        if "id" not in body:
            return Reply(202)
        return Reply(200, body=rpc(body["id"], {"content": [{"type": "text", "text": f"ok at {seen.path}"}]}))

    return answer


def bearer(request: Any) -> Any:
    request.headers["Authorization"] = TOKEN
    return request


def connect(server: TinyServer, **options: Any) -> mis.Client:
    return mis.connect_http(server.url, headers={"X-Api-Key": SECRET}, auth=bearer, **options)


def origin(server: TinyServer) -> str:
    return server.url.rsplit("/", 1)[0]


def nothing_of_the_caller(server: TinyServer) -> bool:
    """The server saw no request at all (so no header, token or body of the caller)."""
    with server.lock:
        return not server.requests


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_a_call_redirected_to_another_origin_is_refused_and_nothing_reaches_it(servers: list[TinyServer], status: int) -> None:
    other = TinyServer(endpoint({}))
    state: JsonDict = {}
    mcp = TinyServer(endpoint(state))
    servers.extend([other, mcp])
    state["tools/call"] = lambda seen: Reply(status, {"Location": other.url + "?key=" + SECRET})
    with connect(mcp) as client:
        with pytest.raises(mis.ClientError) as info:
            client.call_tool("deploy", {"env": "prod"}, timeout=WAIT)
        error = info.value
        assert (error.kind, error.check) == ("transport", "redirect")
        assert origin(mcp) in error.message and origin(other) in error.message
        assert SECRET not in error.message and SECRET not in repr(error) and "/mcp" not in error.message
        # the client carries on
        state.pop("tools/call")
        assert tool_text(client.call_tool("deploy", timeout=WAIT)) == "ok at /mcp"
    assert nothing_of_the_caller(other)


@pytest.mark.parametrize(
    "location",
    [
        "//127.0.0.1:{port}/mcp",  # scheme-relative
        "http://127.0.0.1:{mine}@127.0.0.1:{port}/mcp",  # the server's own origin as user info
        "http://localhost:{port}/mcp",
        "HTTP://127.0.0.1:{port}/mcp",
        "http://127.0.0.1:{mine}:{port}/mcp",  # not a URL at all
        "ftp://127.0.0.1:{port}/mcp",
    ],
)
def test_tricky_locations_never_reach_another_origin(servers: list[TinyServer], location: str) -> None:
    other = TinyServer(endpoint({}))
    state: JsonDict = {}
    mcp = TinyServer(endpoint(state))
    servers.extend([other, mcp])
    port = other.url.split(":")[2].split("/")[0]
    mine = mcp.url.split(":")[2].split("/")[0]
    state["tools/call"] = lambda seen: Reply(307, {"Location": location.format(port=port, mine=mine)})
    with connect(mcp) as client:
        with pytest.raises(mis.ClientError) as info:
            client.call_tool("deploy", timeout=WAIT)
        assert (info.value.kind, info.value.check) == ("transport", "redirect")
    assert nothing_of_the_caller(other)


def test_the_handshake_redirected_to_another_origin_is_refused(servers: list[TinyServer]) -> None:
    other = TinyServer(endpoint({}))
    state: JsonDict = {}
    mcp = TinyServer(endpoint(state))
    servers.extend([other, mcp])
    state["server/discover"] = state["initialize"] = lambda seen: Reply(308, {"Location": other.url})
    with pytest.raises(mis.ClientError) as info:
        connect(mcp)
    assert info.value.check == "redirect"
    assert nothing_of_the_caller(other)


def test_the_get_stream_and_the_delete_redirected_to_another_origin_are_refused(servers: list[TinyServer], caplog: pytest.LogCaptureFixture) -> None:
    other = TinyServer(endpoint({}))
    state: JsonDict = {}
    mcp = TinyServer(endpoint(state))
    servers.extend([other, mcp])
    away = lambda seen: Reply(307, {"Location": other.url})  # noqa: E731
    state["GET"] = state["DELETE"] = away
    with caplog.at_level(logging.WARNING, logger="mcp_input_sync"):
        with connect(mcp) as client:
            assert tool_text(client.call_tool("deploy", timeout=WAIT)) == "ok at /mcp"
    assert [r.verb for r in mcp.requests if r.verb != "POST"] == ["GET", "DELETE"]
    assert nothing_of_the_caller(other)
    assert any("GET stream not opened" in r.getMessage() and "another origin" in r.getMessage() for r in caplog.records)


def test_a_307_or_308_within_the_origin_is_followed_with_headers_and_body(servers: list[TinyServer]) -> None:
    state: JsonDict = {}
    mcp = TinyServer(endpoint(state))
    servers.append(mcp)

    def moved(seen: Seen) -> Reply:
        if seen.path == "/mcp":
            return Reply(307, {"Location": "/v2/mcp?region=eu"})
        if seen.path == "/v2/mcp?region=eu":
            return Reply(308, {"Location": origin(mcp) + "/v3/mcp"})
        return endpoint({})(seen)

    state["tools/call"] = moved
    with connect(mcp) as client:
        assert tool_text(client.call_tool("deploy", {"env": "prod"}, timeout=WAIT)) == "ok at /v3/mcp"
    calls = mcp.posts("tools/call")
    assert [c.path for c in calls] == ["/mcp", "/v2/mcp?region=eu", "/v3/mcp"]
    assert all(c.headers["x-api-key"] == SECRET and c.headers["authorization"] == TOKEN for c in calls)
    assert all(c.body["params"]["arguments"] == {"env": "prod"} for c in calls)


def test_within_the_origin_other_redirects_and_loops_are_refused(servers: list[TinyServer]) -> None:
    state: JsonDict = {}
    mcp = TinyServer(endpoint(state))
    servers.append(mcp)
    state["tools/call"] = lambda seen: Reply(302, {"Location": "/elsewhere"})  # would turn the POST into a GET
    with connect(mcp) as client:
        with pytest.raises(mis.ClientError) as info:
            client.call_tool("deploy", timeout=WAIT)
        assert info.value.check == "redirect" and "302" in info.value.message
        state["tools/call"] = lambda seen: Reply(307, {"Location": "/mcp"})  # a loop
        with pytest.raises(mis.ClientError) as info:
            client.call_tool("deploy", timeout=WAIT)
        assert info.value.check == "redirect" and "more than 3" in info.value.message
    assert len(mcp.posts("tools/call")) == 1 + 4

