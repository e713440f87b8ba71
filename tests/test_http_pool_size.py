"""HTTP: one client shared by many threads keeps a connection for each, and urllib3 never warns for its pools.

``connect_http(pool_size=64)`` sizes the pool of the session the transport
makes (``transports/_send.py``: ``pooled_session``); a configuration file's
``"poolSize"`` is its default for that server. Past ``pool_size`` a thread
still gets a connection at once (the pool never blocks), and the one a full
pool cannot keep is closed without urllib3's "Connection pool is full"
warning. The sessions are watched through a spy on ``pooled_session``, not
through the client.
"""

from __future__ import annotations

import inspect
import logging
import threading
from typing import Any, Iterator

import pytest
import requests
import requests.adapters

import mcp_input_sync as mis
from mcp_input_sync.transports import _send
from mcp_input_sync.transports.http import HttpTransport

from .harness import tool_json, wait_until
from .http_peers import http_peer

WAIT = 20.0
FULL = "Connection pool is full"


@pytest.fixture(scope="module")
def legacy_url() -> Iterator[str]:
    with http_peer("sdk_legacy_server.py") as url:
        yield url


@pytest.fixture
def sessions(monkeypatch: pytest.MonkeyPatch) -> list[requests.Session]:
    """Every session a transport makes from now on, in order."""
    made: list[requests.Session] = []
    real = _send.pooled_session

    def spy(pool_size: int) -> requests.Session:
        made.append(real(pool_size))
        return made[-1]

    monkeypatch.setattr(_send, "pooled_session", spy)
    return made


@pytest.fixture
def urllib3_log(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.DEBUG, logger="urllib3")
    return caplog


def _full(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name.startswith("urllib3") and FULL in r.getMessage()]


def _manager(session: requests.Session, url: str) -> Any:
    adapter = session.get_adapter(url)
    assert isinstance(adapter, _send.PooledAdapter)
    return adapter.poolmanager


def _pool(session: requests.Session, url: str) -> Any:
    """The one urllib3 pool the session's requests to ``url`` went through."""
    manager = _manager(session, url)
    (key,) = manager.pools.keys()
    return manager.pools[key]


def _opened_and_kept(session: requests.Session, url: str) -> tuple[int, int]:
    """The connections the pool opened, and those it holds idle for the next request."""
    pool = _pool(session, url)
    return pool.num_connections, sum(conn is not None for conn in list(pool.pool.queue))


def _held(session: requests.Session, url: str) -> int:
    """Connections opened but not (yet) back in the pool: held by a stream, or thrown away."""
    opened, kept = _opened_and_kept(session, url)
    return opened - kept


def _in_threads(count: int, work: Any) -> None:
    """``work()`` on ``count`` threads released together; each thread's failure is raised here."""
    go = threading.Event()
    failures: list[BaseException] = []

    def run() -> None:
        go.wait(WAIT)
        try:
            work()
        except BaseException as exc:  # noqa: BLE001 - handed to the test's thread
            failures.append(exc)

    threads = [threading.Thread(target=run) for _ in range(count)]
    for thread in threads:
        thread.start()
    go.set()
    for thread in threads:
        thread.join(60)
    assert not any(thread.is_alive() for thread in threads)
    assert not failures, failures[0]


# ---------------------------------------------------------------------------- against the SDK's server


def test_32_threads_on_one_client_keep_their_connections_and_log_no_pool_warning(
    legacy_url: str, sessions: list[requests.Session], urllib3_log: pytest.LogCaptureFixture
) -> None:
    with mis.connect_http(legacy_url) as client:

        def ten_calls() -> None:
            for k in range(10):
                assert client.call_tool("echo", {"text": str(k)}, timeout=WAIT)["content"][0]["text"] == str(k)

        _in_threads(32, ten_calls)
        (session,) = sessions
        # every connection opened goes back to the pool once its stream has ended: none was thrown
        # away (with requests' default of 10, most of 30-odd were); the GET stream may hold one
        assert wait_until(lambda: _held(session, legacy_url) <= 1, WAIT)
        assert 10 < _opened_and_kept(session, legacy_url)[0] <= 64
    assert any("Starting new HTTP connection" in r.getMessage() for r in urllib3_log.records)  # the log is seen
    assert _full(urllib3_log) == []


class _AllAtOnce(mis.InputHandler):
    """Each elicitation waits until ``parties`` calls are asking at once: their streams all hold a connection."""

    input_parallelism = 8

    def __init__(self, parties: int) -> None:
        self.barrier = threading.Barrier(parties, timeout=WAIT)

    def handle_elicitation(self, params: Any, ctx: mis.InputContext) -> Any:
        self.barrier.wait()
        return {"action": "accept", "content": {"name": "ada"}}


def test_more_threads_than_pool_size_get_connections_at_once_and_no_warning(
    legacy_url: str, sessions: list[requests.Session], urllib3_log: pytest.LogCaptureFixture
) -> None:
    # 8 calls open at once, each stream holding a connection, and the answers POSTed beside
    # them: past a pool of 2 no thread waits, and what the pool cannot keep is closed quietly
    with mis.connect_http(legacy_url, pool_size=2, handler=_AllAtOnce(8)) as client:
        _in_threads(8, lambda: tool_json(client.call_tool("elicit_form", timeout=WAIT)))
        (session,) = sessions
        assert _manager(session, legacy_url).connection_pool_kw["maxsize"] == 2
        assert wait_until(lambda: _opened_and_kept(session, legacy_url)[1] == 2, WAIT)
        assert _opened_and_kept(session, legacy_url)[0] >= 8
    assert any("Starting new HTTP connection" in r.getMessage() for r in urllib3_log.records)
    assert _full(urllib3_log) == []


def test_pool_size_reaches_the_adapter_and_never_blocks(legacy_url: str, sessions: list[requests.Session]) -> None:
    with mis.connect_http(legacy_url, pool_size=5) as client:
        client.call_tool("echo", {"text": "x"}, timeout=WAIT)
        assert _pool(sessions[0], legacy_url).pool.maxsize == 5  # the pool urllib3 made holds 5
    with mis.connect_http(legacy_url) as client:
        client.call_tool("echo", {"text": "x"}, timeout=WAIT)
    sized, default = (_manager(session, legacy_url).connection_pool_kw for session in sessions)
    assert (sized["maxsize"], sized["block"]) == (5, False)
    assert (default["maxsize"], default["block"]) == (_send.POOL_SIZE, False)


# ---------------------------------------------------------------------------- the option


def test_the_defaults_agree() -> None:
    assert inspect.signature(mis.connect_http).parameters["pool_size"].default == _send.POOL_SIZE == 64
    assert inspect.signature(HttpTransport).parameters["pool_size"].default == _send.POOL_SIZE


@pytest.mark.parametrize(("value", "error"), [(0, ValueError), (-1, ValueError), (1025, ValueError), ("8", TypeError),
                                              (True, TypeError), (8.0, TypeError), (None, TypeError)])
def test_a_bad_pool_size_is_refused_before_anything_is_sent(value: Any, error: type, sessions: list[requests.Session]) -> None:
    with pytest.raises(error, match="pool_size"):
        mis.connect_http("http://127.0.0.1:9/mcp", pool_size=value)
    assert sessions == []


def test_a_session_of_the_callers_own_keeps_its_adapters() -> None:
    mine = requests.Session()
    transport = HttpTransport("http://127.0.0.1:9/mcp", session=mine, pool_size=3)
    adapter = mine.get_adapter("http://127.0.0.1:9/mcp")
    assert type(adapter) is requests.adapters.HTTPAdapter and adapter.poolmanager.connection_pool_kw["maxsize"] == 10
    transport.close(1.0)


# ---------------------------------------------------------------------------- the pool itself, no server


def _overfill(adapter: requests.adapters.HTTPAdapter, caplog: pytest.LogCaptureFixture) -> tuple[list[str], bool]:
    """Give two connections back to a pool of one: urllib3's records, and whether the second was closed."""
    pool = adapter.poolmanager.connection_from_url("http://127.0.0.1:9/")
    kept, extra = pool._get_conn(), pool._get_conn()  # the second is one more than the pool holds
    closed: list[bool] = []
    extra.close = lambda: closed.append(True)
    caplog.set_level(logging.DEBUG, logger="urllib3")
    pool._put_conn(kept)
    pool._put_conn(extra)
    pool.close()
    return _full(caplog), bool(closed)


def test_a_connection_a_full_pool_cannot_keep_is_closed_without_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    adapter = _send.pooled_session(1).get_adapter("http://x/")
    assert isinstance(adapter, _send.PooledAdapter)
    assert _overfill(adapter, caplog) == ([], True)


def test_requests_own_adapter_would_have_warned(caplog: pytest.LogCaptureFixture) -> None:
    # the same overfill through a plain adapter: what the test above would see without the library's queue
    warned, closed = _overfill(requests.adapters.HTTPAdapter(pool_maxsize=1), caplog)
    assert closed and len(warned) == 1 and "Connection pool size: 1" in warned[0]


def test_a_proxys_pools_close_what_they_cannot_keep_quietly_too() -> None:
    adapter = _send.PooledAdapter(pool_maxsize=4)
    first = adapter.proxy_manager_for("http://127.0.0.1:9")
    assert adapter.proxy_manager_for("http://127.0.0.1:9") is first
    assert {cls.QueueCls for cls in first.pool_classes_by_scheme.values()} == {_send._Idle}
    assert {cls.QueueCls for cls in adapter.poolmanager.pool_classes_by_scheme.values()} == {_send._Idle}
    adapter.close()


# ---------------------------------------------------------------------------- configuration files


def _server(entry: dict[str, Any]) -> Any:
    return mis.load_config({"mcpServers": {"api": {"url": "http://127.0.0.1:9/mcp", **entry}}})["api"]


def test_a_files_pool_size_is_read() -> None:
    assert _server({"poolSize": 48}).pool_size == 48
    assert _server({}).pool_size is None and _server({"poolSize": None}).pool_size is None  # null: as if left out
    assert "poolSize" not in _server({"poolSize": 48}).extra
    assert _server({"poolSize": 1024}).pool_size == 1024


@pytest.mark.parametrize("value", [0, -3, 1025, "32", True, 32.0, [8]])
def test_a_bad_pool_size_in_a_file_names_its_server_and_key(value: Any) -> None:
    with pytest.raises(mis.ConfigError) as caught:
        _server({"poolSize": value})
    assert (caught.value.server, caught.value.key) == ("api", "poolSize")
    assert "1 to 1024" in str(caught.value)


def test_a_files_pool_size_reaches_the_adapter_unless_the_host_gives_one(legacy_url: str, sessions: list[requests.Session]) -> None:
    server = mis.load_config({"mcpServers": {"api": {"url": legacy_url, "poolSize": 6}}})["api"]
    with mis.connect(server) as client:
        client.call_tool("echo", {"text": "x"}, timeout=WAIT)
    with mis.connect(server, pool_size=7) as client:
        client.call_tool("echo", {"text": "x"}, timeout=WAIT)
    assert [_manager(s, legacy_url).connection_pool_kw["maxsize"] for s in sessions] == [6, 7]
