"""The Redis broker against a real redis-server: an input parked by one process is answered by another."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any, Iterator

import pytest

redis = pytest.importorskip("redis")
if shutil.which("redis-server") is None:
    pytest.skip("redis-server is not installed", allow_module_level=True)

from mcp_input_sync.web import InputNotFound, PendingInput, WebHandler  # noqa: E402
from mcp_input_sync.web.redis_broker import RedisBroker  # noqa: E402

from mcp_input_sync.testing import FakeServer  # noqa: E402

from .harness import schema_errors  # noqa: E402
from .test_web_core import FORM, VALID, Background, wait_pending, web_client, web_server  # noqa: E402

ROOT = Path(__file__).parent.parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    port = free_port()
    workdir = tmp_path_factory.mktemp("redis")
    proc = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", str(workdir)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"redis://127.0.0.1:{port}/0"
    try:
        probe = redis.Redis.from_url(url)
        for _ in range(200):
            try:
                probe.ping()
                break
            except redis.exceptions.ConnectionError:
                time.sleep(0.025)
        else:
            pytest.fail("redis-server did not start")
        probe.close()
        yield url
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.fixture
def brokers(redis_url: str) -> Iterator[tuple[RedisBroker, RedisBroker]]:
    """Two brokers on separate connections with one prefix: two web workers."""
    prefix = f"test-{uuid.uuid4().hex}"
    a, b = redis.Redis.from_url(redis_url), redis.Redis.from_url(redis_url, decode_responses=True)
    yield RedisBroker(a, prefix=prefix, ttl=60), RedisBroker(b, prefix=prefix, ttl=60)
    a.close()
    b.close()


@pytest.fixture
def server() -> Iterator[FakeServer]:
    fake = web_server()
    yield fake
    fake.close()
    assert schema_errors(fake) == []


def park(broker: RedisBroker, user: str = "alice", kind: str = "form") -> PendingInput:
    params: dict[str, Any] = {"message": "m", "requestedSchema": FORM} if kind == "form" else {"messages": [], "maxTokens": 5}
    pending = PendingInput(id=uuid.uuid4().hex, kind=kind, params=params, user=user, created=time.time(), server_id="srv", fields={"pin": {"sensitive_suspected": True}})
    broker.park(pending, model="m1")
    return pending


def test_the_broker_contract_across_workers(brokers: tuple[RedisBroker, RedisBroker]) -> None:
    parker, web = brokers
    pending = park(parker)
    assert [p.id for p in web.pending("alice")] == [pending.id] and web.pending("bob") == []
    seen = web.get(pending.id, "alice")
    assert seen == pending and seen.sensitive("pin")
    for who in ("bob", None):
        with pytest.raises(InputNotFound):
            web.get(pending.id, who)
        with pytest.raises(InputNotFound):
            web.answer(pending.id, who, {"action": "decline"})
    with pytest.raises(ValueError):
        parker.park(pending)
    assert web.answer(pending.id, "alice", {"action": "accept", "content": {"name": "G"}}) == {"name": "is shorter than 2", "age": "is required", "plan": "is required"}
    assert web.check(pending.id, "alice", {"action": "accept", "content": VALID}) == {}
    assert parker.wait(pending.id, 0.05) is None
    assert web.answer(pending.id, "alice", {"action": "accept", "content": VALID}) == {}
    with pytest.raises(InputNotFound):
        web.answer(pending.id, "alice", {"action": "decline"})  # once only
    assert web.pending("alice") == []
    assert parker.wait(pending.id, 1) == {"action": "accept", "content": VALID}
    assert parker.withdraw(pending.id) == {"action": "accept", "content": VALID}
    assert len(parker) == 0


def test_a_withdrawn_input_cannot_be_answered(brokers: tuple[RedisBroker, RedisBroker]) -> None:
    parker, web = brokers
    pending = park(parker, kind="sampling")
    assert parker.withdraw(pending.id) is None
    with pytest.raises(InputNotFound):
        web.answer(pending.id, "alice", {"action": "approve", "text": "x"})
    with pytest.raises(InputNotFound):
        parker.wait(pending.id, 0.05)
    assert web.pending("alice") == []


def test_racing_workers_answer_once(brokers: tuple[RedisBroker, RedisBroker]) -> None:
    parker, web = brokers
    pending = park(parker)
    outcomes: list[str] = []

    def answer(broker: RedisBroker) -> None:
        try:
            broker.answer(pending.id, "alice", {"action": "accept", "content": VALID})
            outcomes.append("ok")
        except InputNotFound:
            outcomes.append("gone")

    threads = [threading.Thread(target=answer, args=(b,)) for b in (parker, web) * 4]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["gone"] * 7 + ["ok"]


def test_another_process_answers_a_real_call(brokers: tuple[RedisBroker, RedisBroker], redis_url: str, server: FakeServer) -> None:
    parker, _ = brokers
    with web_client(server, WebHandler(parker), assigns={"user": "alice"}) as client:
        call = Background(lambda: client.call_tool("form"))
        (pending,) = wait_pending(parker, "alice")
        code = (
            "import json, sys, redis\n"
            "from mcp_input_sync.web.redis_broker import RedisBroker\n"
            "broker = RedisBroker(redis.Redis.from_url(sys.argv[1]), prefix=sys.argv[2])\n"
            "(p,) = broker.pending('alice')\n"
            "print(json.dumps(broker.answer(p.id, 'alice', json.loads(sys.argv[3]))))\n"
        )
        data = json.dumps({"action": "accept", "content": VALID})
        done = subprocess.run([sys.executable, "-c", code, redis_url, parker.prefix, data], capture_output=True, text=True, timeout=60, cwd=ROOT)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout) == {}
        assert call.answer() == {"result": {"action": "accept", "content": VALID}}
        assert parker.pending("alice") == [] and pending.id
    deadline = time.monotonic() + 5
    while len(parker) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(parker) == 0


def test_the_library_timeout_withdraws_it_everywhere(brokers: tuple[RedisBroker, RedisBroker], server: FakeServer) -> None:
    parker, web = brokers
    with web_client(server, WebHandler(parker), assigns={"user": "alice"}, handler_timeout={"elicitation": 0.3}) as client:
        call = Background(lambda: client.call_tool("form"))
        (pending,) = wait_pending(web, "alice")
        assert call.answer()["error"]["code"] == -32603
        deadline = time.monotonic() + 5  # the callback sees its token within 50 ms and withdraws
        while len(parker) and time.monotonic() < deadline:
            time.sleep(0.01)
        with pytest.raises(InputNotFound):
            web.answer(pending.id, "alice", {"action": "decline"})
        assert web.pending("alice") == []


def test_the_flask_blueprint_on_a_redis_broker(brokers: tuple[RedisBroker, RedisBroker], server: FakeServer) -> None:
    flask = pytest.importorskip("flask")
    from mcp_input_sync.web.flask import blueprint

    parker, web_broker = brokers
    app = flask.Flask(__name__)
    app.secret_key = "k"
    app.register_blueprint(blueprint(web_broker, lambda: "alice"), url_prefix="/inputs")
    web = app.test_client()
    with web_client(server, WebHandler(parker), assigns={"user": "alice"}) as client:
        call = Background(lambda: client.call_tool("sample"))
        (pending,) = wait_pending(web_broker, "alice")
        page = web.get(f"/inputs/{pending.id}").text
        token = page.split('name="_mis_csrf" value="')[1].split('"')[0]
        assert web.post(f"/inputs/{pending.id}", data={"_mis_csrf": token, "_action": "approve", "text": "Hi"}).status_code == 303
        assert call.answer()["result"]["content"] == {"type": "text", "text": "Hi"}


def test_ttl_is_checked() -> None:
    with pytest.raises(ValueError):
        RedisBroker(object(), ttl=0)


def test_the_docs_redis_example_compiles() -> None:
    import re

    page = (ROOT / "docs" / "web.md").read_text()
    (example,) = [b for b in re.findall(r"```python\n(.*?)```", page, re.S) if "RedisBroker(" in b]
    compile(example, "docs/web.md", "exec")


SCRIPTED = [sys.executable, str(ROOT / "tests" / "peers" / "scripted_server.py")]
ROUND_FORM = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}


def test_a_deferred_call_started_by_one_worker_is_resumed_by_another(brokers: tuple[RedisBroker, RedisBroker]) -> None:
    """Modern era: worker A starts the call (no thread waits), B resumes round 1 with its own client, A round 2."""
    import mcp_input_sync as mis

    broker_a, broker_b = brokers
    ask = {
        "requests": {"first": {"method": "elicitation/create", "params": {"mode": "form", "message": "Round one?", "requestedSchema": ROUND_FORM}}},
        "state": "s1",
        "then": {"requests": {"second": {"method": "elicitation/create", "params": {"mode": "form", "message": "Round two?", "requestedSchema": ROUND_FORM}}}, "state": "s2"},
    }
    client_a = mis.connect_stdio(SCRIPTED, handler=WebHandler(broker_a), protocol="modern", server_id="scripted")
    client_b = mis.connect_stdio(SCRIPTED, handler=WebHandler(broker_b), protocol="modern", server_id="scripted")
    resumed: list[str] = []
    try:
        for name, client in (("a", client_a), ("b", client_b)):
            real = client.resume

            def spy(*args: Any, _real: Any = real, _name: str = name, **kwargs: Any) -> Any:
                resumed.append(_name)
                return _real(*args, **kwargs)

            client.resume = spy  # type: ignore[method-assign]
        broker_a.serve(client_a)  # each worker's client carries every user's calls
        broker_b.serve(client_b)
        state = broker_a.start_call(client_a, "ask", ask, "alice")
        assert (state.status, [p.message for p in state.inputs]) == ("pending", ["Round one?"])
        seen = broker_b.result(state.id, "alice")  # the other worker sees the call and its input
        assert [p.id for p in seen.inputs] == [state.inputs[0].id]
        with pytest.raises(InputNotFound):
            broker_b.result(state.id, "bob")
        assert set(broker_b.answer(state.inputs[0].id, "alice", {"action": "accept", "content": {"answer": 3}})) == {"answer"}
        assert broker_b.answer(state.inputs[0].id, "alice", {"action": "accept", "content": {"answer": "one"}}) == {}
        assert resumed == ["b"]
        second = broker_a.result(state.id, "alice")
        assert (second.status, second.rounds, [p.message for p in second.inputs]) == ("pending", 2, ["Round two?"])
        assert broker_a.answer(second.inputs[0].id, "alice", {"action": "accept", "content": {"answer": "two"}}) == {}
        assert resumed == ["b", "a"]
        done = broker_b.result(state.id, "alice")
        assert done.status == "complete" and done.result is not None
        echoed = json.loads(done.result["content"][0]["text"])
        assert echoed["inputResponses"] == {"second": {"action": "accept", "content": {"answer": "two"}}}
        assert echoed["requestState"] == "s2"
        assert len(broker_a) == 0 and broker_a.pending("alice") == []
    finally:
        client_a.close()
        client_b.close()


def test_a_round_answered_on_two_workers_at_once_is_resumed_once(brokers: tuple[RedisBroker, RedisBroker]) -> None:
    import mcp_input_sync as mis

    broker_a, broker_b = brokers
    form = {"method": "elicitation/create", "params": {"mode": "form", "message": "Q", "requestedSchema": ROUND_FORM}}
    ask = {"requests": {"x": form, "y": dict(form, params=dict(form["params"], message="R"))}, "state": "s1"}
    client_a = mis.connect_stdio(SCRIPTED, handler=WebHandler(broker_a), protocol="modern", server_id="scripted")
    client_b = mis.connect_stdio(SCRIPTED, handler=WebHandler(broker_b), protocol="modern", server_id="scripted")
    resumed: list[int] = []
    try:
        for client in (client_a, client_b):
            real = client.resume

            def spy(*args: Any, _real: Any = real, **kwargs: Any) -> Any:
                resumed.append(1)
                return _real(*args, **kwargs)

            client.resume = spy  # type: ignore[method-assign]
        broker_a.serve(client_a)  # each worker's client carries every user's calls
        broker_b.serve(client_b)
        state = broker_a.start_call(client_a, "ask", ask, "alice")
        assert sorted(p.key or "" for p in state.inputs) == ["x", "y"]
        by_key = {p.key: p.id for p in state.inputs}
        barrier = threading.Barrier(2)
        errors: list[Any] = []

        def answer(broker: RedisBroker, key: str) -> None:
            barrier.wait()
            errors.append(broker.answer(by_key[key], "alice", {"action": "accept", "content": {"answer": key}}))

        threads = [threading.Thread(target=answer, args=(broker_a, "x")), threading.Thread(target=answer, args=(broker_b, "y"))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        assert errors == [{}, {}]
        done = broker_a.result(state.id, "alice")
        assert done.status == "complete" and done.result is not None, done
        assert json.loads(done.result["content"][0]["text"])["inputResponses"] == {
            "x": {"action": "accept", "content": {"answer": "x"}},
            "y": {"action": "accept", "content": {"answer": "y"}},
        }
        assert resumed == [1]
    finally:
        client_a.close()
        client_b.close()


def test_a_deferred_call_goes_on_only_on_its_users_client_across_workers(brokers: tuple[RedisBroker, RedisBroker]) -> None:
    from mcp_input_sync.oauth import MemoryStore
    from mcp_input_sync.web.logins import Logins

    from .test_web_deferred_users import ModernPeer, log_in, run_across_workers, run_per_user_clients

    peer = ModernPeer()
    logins = Logins(MemoryStore(), {"notes": peer.url})
    try:
        log_in(peer, logins, "alice")
        log_in(peer, logins, "bob")
        run_per_user_clients(peer, logins, brokers[0])
        peer.retries.clear()
        run_across_workers(peer, logins, *brokers)
    finally:
        logins.close()
        peer.close()
