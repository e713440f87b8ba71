"""A call that ended without its result never lends its server requests to another call (issue #31, item 3).

Over stdio a server request names no call: the client ties it to the only
call in flight. A call that timed out, was cancelled or interrupted may
still be at work on the server (servers running synchronous tools commonly
ignore the cancel) and ask for input later, while someone else's call is the
only one in flight. tests/peers/late_worker_server.py is such a server: its
``transfer`` goes on after the cancel and asks "Confirm transfer of $5000
from account of alice" during the next call.
"""

from __future__ import annotations

import _thread
import sys
import threading
from typing import Any, Optional

import pytest

import mcp_input_sync as mis
from mcp_input_sync._calls import MAX_ABANDONED, Call, CallTable, Inbound
from mcp_input_sync._protocol.deadlines import CallClock
from mcp_input_sync.testing import FakeServer
from mcp_input_sync.web import PendingInputBroker, WebHandler

from .harness import PEERS_DIR

JsonDict = dict[str, Any]
WAIT = 30.0
LATE_WORKER = [sys.executable, str(PEERS_DIR / "late_worker_server.py")]
QUESTION = "Confirm transfer of $5000 from account of alice"


class Asked(mis.InputHandler):
    """Accepts every form and notes who it was shown to; ``on_log`` runs for each log entry."""

    def __init__(self, on_log: Optional[Any] = None) -> None:
        self.seen: list[tuple[str, JsonDict, Any]] = []
        self.on_log = on_log

    def handle_elicitation(self, params: JsonDict, ctx: mis.InputContext) -> JsonDict:
        self.seen.append((params["message"], dict(ctx.assigns or {}), ctx.related_request_id))
        return {"action": "accept", "content": {}}

    def handle_log(self, entry: JsonDict, ctx: mis.InputContext) -> None:
        if self.on_log is not None:
            self.on_log(entry)


def connect(handler: mis.InputHandler, *, late_answer: bool = False, **options: Any) -> mis.Client:
    argv = LATE_WORKER + (["--late-answer"] if late_answer else [])
    return mis.connect_stdio(argv, handler=handler, protocol="legacy", timeout=WAIT, **options)


def alices_transfer_times_out(client: mis.Client) -> None:
    with pytest.raises(mis.ClientError) as caught:
        client.call_tool("transfer", {"user": "alice", "amount": 5000}, assigns={"user": "alice"}, timeout=0.5)
    assert caught.value.kind == "timeout"


def text(result: JsonDict) -> str:
    return str(result["content"][0]["text"])


# ---------------------------------------------------------------------------- one client, several users


def test_a_timed_out_calls_late_question_is_tied_to_no_call_not_to_the_next_users() -> None:
    handler = Asked()
    with connect(handler) as client:
        alice = threading.Thread(target=alices_transfer_times_out, args=(client,), name="test-alice", daemon=True)
        alice.start()
        alice.join(WAIT)
        assert not alice.is_alive() and client.abandoned_calls == 1
        bob = client.call_tool("lookup", assigns={"user": "bob"})  # the server asks Alice's question meanwhile
    assert text(bob) == "answered accept"
    # shown with the client's own assigns and no call: never as Bob's
    assert handler.seen == [(QUESTION, {}, None)]


def test_the_web_bridge_refuses_such_a_question_as_it_refuses_any_without_a_user(caplog: pytest.LogCaptureFixture) -> None:
    broker = PendingInputBroker()
    with connect(WebHandler(broker, timeout=5.0)) as client:
        alices_transfer_times_out(client)
        bob = client.call_tool("lookup", assigns={"user": "bob"})
    assert text(bob) == "answered decline"
    assert broker.pending("bob") == [] and "at work on the server" in caplog.text


def test_once_the_late_answer_arrives_the_next_sole_call_is_tied_again() -> None:
    handler = Asked()
    with connect(handler, late_answer=True) as client:
        alices_transfer_times_out(client)
        assert text(client.call_tool("lookup", assigns={"user": "bob"})) == "answered accept"
        assert client.abandoned_calls == 0  # the server answered the transfer late: it is done with it
        assert handler.seen == [(QUESTION, {}, None)]
        # a later question comes from a call that is alone and abandons nothing: it is that call's
        assert text(client.call_tool("lookup", assigns={"user": "bob"})) == "no question"


def test_a_cancelled_calls_late_question_is_tied_to_no_call() -> None:
    cancel = threading.Event()
    handler = Asked(on_log=lambda entry: cancel.set())  # the server logs once it holds the transfer
    with connect(handler) as client:
        with pytest.raises(mis.ClientError) as caught:
            client.call_tool("transfer", {"user": "alice"}, assigns={"user": "alice"}, cancel=cancel)
        assert caught.value.kind == "cancelled" and client.abandoned_calls == 1
        assert text(client.call_tool("lookup", assigns={"user": "bob"})) == "answered accept"
    assert handler.seen == [(QUESTION, {}, None)]


def test_an_interrupted_calls_late_question_is_tied_to_no_call(ctrl_c: None) -> None:
    handler = Asked(on_log=lambda entry: _thread.interrupt_main())
    with connect(handler) as client:
        with pytest.raises(KeyboardInterrupt):
            client.call_tool("transfer", {"user": "alice"}, assigns={"user": "alice"})
        if client.state is mis.ClientState.OPEN:  # Ctrl-C that may have cut a message ends the connection instead
            assert client.abandoned_calls == 1
            assert text(client.call_tool("lookup", assigns={"user": "bob"})) == "answered accept"
            assert handler.seen == [(QUESTION, {}, None)]


# ---------------------------------------------------------------------------- the pool


def test_the_pool_retires_a_client_whose_call_timed_out_so_the_next_user_never_sees_its_question() -> None:
    handler = Asked()
    opened: list[mis.Client] = []

    def factory() -> mis.Client:
        client = connect(handler)
        opened.append(client)
        return client

    with mis.ClientPool(factory, max_size=1) as pool:
        alices_pool_call = pytest.raises(mis.ClientError)
        with alices_pool_call as caught:
            pool.call_tool("transfer", {"user": "alice", "amount": 5000}, assigns={"user": "alice"}, timeout=0.5)
        assert caught.value.kind == "timeout"
        assert opened[0].state is mis.ClientState.CLOSED and pool.size == 0  # retired with the abandoned transfer
        bob = pool.call_tool("lookup", assigns={"user": "bob"})
        assert text(bob) == "no question" and len(opened) == 2
    assert handler.seen == []


def test_the_pool_keeps_a_client_whose_calls_all_ended_with_their_result() -> None:
    opened: list[mis.Client] = []

    def factory() -> mis.Client:
        opened.append(connect(Asked()))
        return opened[-1]

    with mis.ClientPool(factory, max_size=1) as pool:
        for _ in range(3):
            assert text(pool.call_tool("lookup", assigns={"user": "bob"})) == "no question"
        assert len(opened) == 1 and pool.size == 1


@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_only_the_legacy_era_remembers_an_abandoned_call(era: str) -> None:
    # the 2026-07-28 era has no server requests to tie: a pool need not retire its client after a timeout
    fake = FakeServer(era)
    release = threading.Event()

    @fake.tool
    def hang(call: Any) -> str:
        release.wait(WAIT)
        return "late"

    with fake, fake.client() as client:
        with pytest.raises(mis.ClientError):
            client.call_tool("hang", timeout=0.3)
        assert client.abandoned_calls == (1 if era == "legacy" else 0)
        release.set()


# ---------------------------------------------------------------------------- the call table alone


def make_call(request_id: int, is_call: bool = True) -> Call:
    return Call(request_id, "tools/call", is_call, {}, CallClock(0.0, 60.0, float("inf")))


def test_the_table_ties_to_the_sole_call_only_while_nothing_is_abandoned() -> None:
    table = CallTable()
    alice, bob = make_call(1), make_call(2)
    table.add(alice)
    assert table.forget(alice, abandoned=True) == []
    table.add(bob)
    assert table.tie(Inbound("q", "elicitation/create", "elicitation"), 0.0) is None
    assert table.pop(99) is None and table.abandoned() == 1  # an unknown id is no late answer
    assert table.pop(1) is None and table.abandoned() == 0  # alice's late answer
    assert table.tie(Inbound("q2", "elicitation/create", "elicitation"), 0.0) is bob
    # a request that failed to go out, a list request, and HTTP (which ties by stream) leave nothing abandoned
    carol, listing = make_call(3), make_call(4, is_call=False)
    table.add(carol)
    table.forget(carol)
    table.add(listing)
    table.forget(listing, abandoned=True)
    http = CallTable(ties_alone=False)
    dave = make_call(5)
    http.add(dave)
    http.forget(dave, abandoned=True)
    assert table.abandoned() == 0 and http.abandoned() == 0


def test_the_table_remembers_a_bounded_number_of_abandoned_calls_and_then_never_ties_by_being_alone() -> None:
    table = CallTable()
    for request_id in range(MAX_ABANDONED + 1):
        call = make_call(request_id)
        table.add(call)
        table.forget(call, abandoned=True)
    assert table.abandoned() == -1
    for request_id in range(MAX_ABANDONED + 1):
        table.pop(request_id)  # every late answer in: still too many were forgotten to be sure
    last = make_call(10_000)
    table.add(last)
    assert table.tie(Inbound("q", "elicitation/create", "elicitation"), 0.0) is None
