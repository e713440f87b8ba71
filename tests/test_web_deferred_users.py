"""A deferred 2026-07-28 call goes on only on a client allowed to carry it: one client per user through Logins.

The server is a protected MCP endpoint (tests/oauth_peer.py) that speaks the
2026-07-28 era here: its ``ask`` tool answers ``input_required`` with a form,
and the retry carrying the answer is answered with the name of the user whose
token it came with. Alice and Bob log in through :class:`Logins` and each gets
a client of their own, as docs/oauth-flask.md and docs/oauth-django.md say.
The same scenario runs on the Redis broker in test_web_redis.py.
"""

from __future__ import annotations

import json
from typing import Any, Iterator, Optional

import pytest
import requests

import mcp_input_sync as mis
from mcp_input_sync.oauth import MemoryStore
from mcp_input_sync.web import PendingInputBroker, WebHandler
from mcp_input_sync.web.logins import Logins

from .oauth_peer import OAuthPeer

JsonDict = dict[str, Any]
NAME_FORM = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


class ModernPeer(OAuthPeer):
    """The OAuth peer's MCP endpoint in the 2026-07-28 era; each token knows the login it came from."""

    def __init__(self) -> None:
        super().__init__()
        self.label = "nobody"  # the user whose login is under way: tokens issued now are theirs
        self.labels: dict[str, str] = {}
        self.retries: list[str] = []  # the user of each retry that carried answers

    def _issue(self, client_id: str, scopes: list[str]) -> JsonDict:
        answer = super()._issue(client_id, scopes)
        with self.lock:
            self.labels[answer["access_token"]] = self.label
        return answer

    def _mcp(self, verb: str, headers: dict[str, str], raw: bytes) -> tuple[int, dict[str, str], bytes]:
        if verb != "POST":
            return 405, {}, b""
        auth = {k.lower(): v for k, v in headers.items()}.get("authorization", "")
        token = auth[len("Bearer "):] if auth.startswith("Bearer ") else ""
        with self.lock:
            who = self.labels.get(token) if token in self.access else None
        if who is None:
            return self._challenge(401, "invalid_token", "mcp")
        message = json.loads(raw)
        if "id" not in message:
            return 202, {}, b""
        method, params = message.get("method"), message.get("params") or {}
        result: JsonDict
        if method == "server/discover":
            result = {"resultType": "complete", "supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}},
                      "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "modern-oauth-peer", "version": "1"}}}
        elif method == "tools/list":
            result = {"resultType": "complete", "tools": [{"name": "ask", "inputSchema": {"type": "object"}}]}
        elif method == "tools/call" and isinstance(params.get("inputResponses"), dict):
            with self.lock:
                self.retries.append(who)
            reply = {"who": who, "answers": params["inputResponses"], "state": params.get("requestState")}
            result = {"resultType": "complete", "content": [{"type": "text", "text": json.dumps(reply)}]}
        elif method == "tools/call":
            ask = {"method": "elicitation/create", "params": {"mode": "form", "message": f"Name for {who}?", "requestedSchema": NAME_FORM}}
            result = {"resultType": "input_required", "inputRequests": {"q": ask}, "requestState": f"state-of-{who}"}
        else:
            return self._json(200, {"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": "no"}})
        return self._json(200, {"jsonrpc": "2.0", "id": message["id"], "result": result})


def log_in(peer: ModernPeer, logins: Logins, user: str) -> None:
    """``user`` logs in to server "notes"; the authorization server agrees at once."""
    peer.label = user
    url, record = logins.start(user, "notes", "http://localhost/mcp-login/callback")
    back = requests.get(url, allow_redirects=False, timeout=10).headers["Location"]
    logins.finish(user, record, back)


@pytest.fixture
def peer() -> Iterator[ModernPeer]:
    server = ModernPeer()
    yield server
    server.close()


@pytest.fixture
def logins(peer: ModernPeer) -> Iterator[Logins]:
    made = Logins(MemoryStore(), {"notes": peer.url})
    log_in(peer, made, "alice")
    log_in(peer, made, "bob")
    yield made
    made.close()


def user_client(logins: Logins, user: str, broker: Any) -> mis.Client:
    return logins.connect(user, "notes", handler=WebHandler(broker), protocol="modern", server_id="notes")


def finish(broker: Any, call_id: str, user: str, answer_on: Optional[Any] = None) -> Any:
    """``user`` answers the call's one input (on ``answer_on``, another worker's broker, when given); the call's state after."""
    state = broker.result(call_id, user)
    assert [p.message for p in state.inputs] == [f"Name for {user}?"]
    assert (answer_on or broker).answer(state.inputs[0].id, user, {"action": "accept", "content": {"name": user.title()}}) == {}
    return broker.result(call_id, user)


def who_answered(state: Any) -> str:
    assert state.status == "complete", state.error
    return str(json.loads(state.result["content"][0]["text"])["who"])


def run_per_user_clients(peer: ModernPeer, logins: Logins, broker: Any) -> None:
    """Alice's call goes on under Alice's token although Bob's client started a call since; closed, it fails."""
    alice = user_client(logins, "alice", broker)
    bob = user_client(logins, "bob", broker)
    try:
        first = broker.start_call(alice, "ask", {}, "alice")
        second = broker.start_call(bob, "ask", {}, "bob")  # the last call to server "notes" in this process
        assert who_answered(finish(broker, first.id, "alice")) == "alice"
        assert who_answered(finish(broker, second.id, "bob")) == "bob"
        third = broker.start_call(alice, "ask", {}, "alice")
        alice.close()
        failed = finish(broker, third.id, "alice")
        assert failed.status == "error" and "closed" in failed.error and failed.result is None
        assert peer.retries == ["alice", "bob"]  # nothing went out for the third call, on any client
    finally:
        alice.close()
        bob.close()


def test_a_deferred_call_goes_on_only_on_its_users_client(peer: ModernPeer, logins: Logins) -> None:
    run_per_user_clients(peer, logins, PendingInputBroker())


def test_a_client_served_for_one_user_carries_no_one_elses_call(peer: ModernPeer, logins: Logins) -> None:
    broker = PendingInputBroker()
    alice = user_client(logins, "alice", broker)
    try:
        broker.serve(alice, user="alice")
        with pytest.raises(ValueError, match="alice"):
            broker.start_call(alice, "ask", {}, "bob")
        with pytest.raises(ValueError):
            broker.serve(alice)  # already one user's: not every user's too
        state = broker.start_call(alice, "ask", {}, "alice")
        assert who_answered(finish(broker, state.id, "alice")) == "alice"
    finally:
        alice.close()


def run_across_workers(peer: ModernPeer, logins: Logins, broker_a: Any, broker_b: Any) -> None:
    """Two workers share a store; each serves its own client per user. Alice's call started on worker A is resumed on
    worker B on B's client for Alice, never B's client for Bob; a call bound to A's unserved client fails on B."""
    alice_a = user_client(logins, "alice", broker_a)
    alice_b = user_client(logins, "alice", broker_b)
    bob_b = user_client(logins, "bob", broker_b)
    loose = user_client(logins, "alice", broker_a)
    resumed: list[str] = []
    try:
        for name, client in (("alice_b", alice_b), ("bob_b", bob_b)):
            real = client.resume

            def spy(*args: Any, _real: Any = real, _name: str = name, **kwargs: Any) -> Any:
                resumed.append(_name)
                return _real(*args, **kwargs)

            client.resume = spy  # type: ignore[method-assign]
        broker_a.serve(alice_a, user="alice")
        broker_b.serve(alice_b, user="alice")
        broker_b.serve(bob_b, user="bob")
        state = broker_a.start_call(alice_a, "ask", {}, "alice")
        assert who_answered(finish(broker_a, state.id, "alice", answer_on=broker_b)) == "alice"
        assert resumed == ["alice_b"]
        bound = broker_a.start_call(loose, "ask", {}, "alice")  # not served: only this very client may go on
        failed = finish(broker_a, bound.id, "alice", answer_on=broker_b)
        assert failed.status == "error" and "another process" in failed.error
        assert resumed == ["alice_b"] and peer.retries == ["alice"]
    finally:
        for client in (alice_a, alice_b, bob_b, loose):
            client.close()
