"""The bounds of the client's tables, each part alone (issue 23, item 4).

tests/test_fuzz_client.py drives a whole client and watches it from
outside; the bounds it cannot see from there are proved here, on the parts:

* ``CallTableMachine``: any sequence of requests registered, answered
  (also for unknown, finished and differently typed ids), abandoned, tied,
  untied and closed leaves the call table holding exactly the requests in
  flight: each reachable by its id and progress token while in flight and
  never after, ``has_calls`` true exactly while a call is in flight, a
  stdio server request tied to the only call, a call's clock paused exactly
  while a request is tied to it, and ``close`` handing back exactly what
  was in flight;
* ``LegacyAtCapMachine``: the legacy engine over a pool of ``cap`` slots
  (jobs parked until the machine runs them): whatever the server sends
  (requests with valid, reused, refused ids, ``ping``, cancellations), as
  callbacks finish, deadlines pass (freezegun) and the engine closes, the
  inbox holds exactly the open requests, never more than ``cap``, the
  deadline sweep tracks exactly those, and every request id gets exactly
  the answers it is owed (one per admitted request, none once the server
  cancelled it, none for a duplicate of an open id);
* the notification queue: past its capacity a notification is dropped and
  counted in ``stats["notifications_dropped"]``, what was queued runs in
  order, and the queue empties;
* the desk: the token of a callback answered on a caller's thread is
  released whatever the callback did, and the watch that forwards a
  caller's cancel event stops with it; a parallel round's threads end;
  the threads of rounds abandoned at their deadline do not pile up in
  ``desk.worker_threads()``.
"""

from __future__ import annotations

import threading
from types import SimpleNamespace
from typing import Any, Callable, Optional, cast

import pytest
from freezegun import freeze_time
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, invariant, precondition, rule

import mcp_input_sync as mis
from mcp_input_sync import _clock
from mcp_input_sync._calls import Call, CallTable, Inbound
from mcp_input_sync._engines.legacy import LegacyEngine
from mcp_input_sync._era import ClientEra
from mcp_input_sync._input import InputDesk
from mcp_input_sync._notifications import NotificationRouter
from mcp_input_sync._port import Port
from mcp_input_sync._protocol import jsonrpc
from mcp_input_sync._protocol.deadlines import CallClock
from mcp_input_sync._runtime import RealBudget
from mcp_input_sync._runtime.notify import NotificationPump
from mcp_input_sync._runtime.deadlines import DeadlineSweep
from mcp_input_sync._runtime.watchdog import Watchdog
from mcp_input_sync._session import Session
from mcp_input_sync._stats import Stats
from mcp_input_sync.options import Options
from mcp_input_sync.transports.base import OnClose, OnMessage, Outgoing, Transport

from .fuzz_profiles import MACHINE

JsonDict = dict[str, Any]
WAIT = 10.0
FORM = {"type": "object", "properties": {"answer": {"type": "string"}}}
ACCEPT = {"action": "accept", "content": {"answer": "yes"}}


class Watch:
    """A watchdog that never runs: it keeps the checks registered, and the test calls them (one wake each)."""

    def __init__(self) -> None:
        self.checks: list[Callable[[], bool]] = []

    def watch(self, fn: Callable[[], bool]) -> None:
        self.checks.append(fn)

    def watch_fast(self, fn: Callable[[], bool], wake: bool = True) -> None:
        self.checks.append(fn)

    def wake(self) -> None:
        """What the watchdog does on one wake: call every check, keep those that did not return True."""
        now = list(self.checks)
        kept = [check for check in now if not check()]
        self.checks = kept + self.checks[len(now):]  # and those registered meanwhile


# ============================================================================ the call table

call_tasks = st.sampled_from([None, None, "t1", "t2"])


class CallTableMachine(RuleBasedStateMachine):
    """The call table against a model: the requests in flight, by id, in the order registered."""

    issued = Bundle("issued")

    def __init__(self) -> None:
        super().__init__()
        self.table = CallTable()
        self.next_id = 1
        self.now = 1000.0
        self.in_flight: dict[int, Call] = {}  # the model, in registration order
        self.every: list[Call] = []
        self.ties: dict[Inbound, Call] = {}  # tied and not untied yet
        self.untied: list[tuple[Inbound, Call]] = []
        self.closed = False

    @rule(target=issued, is_call=st.booleans(), progress=st.booleans(), task=call_tasks)
    def register(self, is_call: bool, progress: bool, task: Optional[str]) -> Call:
        call = Call(self.next_id, "tools/call" if is_call else "tools/list", is_call, {}, CallClock(self.now, 30.0, 300.0))
        self.next_id += 1
        call.task_id = task
        if progress:
            call.progress_token = f"mis-{call.id}"  # as Session.start does, before it registers the call
        assert self.table.add(call) is (not self.closed)
        if not self.closed:
            self.in_flight[call.id] = call
        self.every.append(call)
        return call

    @rule(call=issued, typed=st.sampled_from(["int", "str", "bool"]))
    def respond(self, call: Call, typed: str) -> None:
        request_id: Any = {"int": call.id, "str": str(call.id), "bool": True}[typed]
        got = self.table.pop(request_id)
        assert got is (self.in_flight.pop(call.id, None) if typed == "int" else None)

    @rule(request_id=st.one_of(st.integers(-3, 0), st.integers(10_000, 10_005), st.none(), st.floats(0, 5)))
    def respond_to_nobody(self, request_id: Any) -> None:
        assert self.table.pop(request_id) is None and self.table.get(request_id) is None

    @rule(call=issued)
    def abandon(self, call: Call) -> None:
        tied = self.table.forget(call)
        if call.id in self.in_flight:
            del self.in_flight[call.id]
            assert tied is not None and set(tied) == {inbound for inbound, c in self.ties.items() if c is call}
        else:
            assert tied is None  # answered, abandoned or closed already: nothing to cancel twice

    @rule(task=call_tasks, stream=st.one_of(st.none(), st.integers(1, 12)), by_stream=st.booleans())
    def tie(self, task: Optional[str], stream: Optional[int], by_stream: bool) -> None:
        inbound = Inbound(f"s{len(self.every)}-{len(self.ties)}", "elicitation/create", "elicitation")
        inbound.task_id = task
        chosen: Optional[Call] = None
        if task is not None:
            chosen = next((c for c in self.in_flight.values() if c.task_id == task), None)
        if chosen is None and by_stream:  # HTTP: the call whose response stream carried it
            candidate = self.in_flight.get(stream) if stream is not None else None
            chosen = candidate if candidate is not None and candidate.is_call else None
        elif chosen is None:  # stdio: the only call in flight
            calls = [c for c in self.in_flight.values() if c.is_call]
            chosen = calls[0] if len(calls) == 1 else None
        assert self.table.tie(inbound, self.now, stream, by_stream) is chosen
        if chosen is not None:
            self.ties[inbound] = chosen

    @precondition(lambda self: bool(self.ties))
    @rule(data=st.data())
    def untie(self, data: st.DataObject) -> None:
        inbound = data.draw(st.sampled_from(sorted(self.ties, key=lambda i: str(i.id))))
        call = self.ties.pop(inbound)
        self.table.untie(inbound, call, self.now)
        self.untied.append((inbound, call))

    @precondition(lambda self: bool(self.untied))
    @rule(data=st.data())
    def untie_again(self, data: st.DataObject) -> None:
        inbound, call = data.draw(st.sampled_from(self.untied))
        self.table.untie(inbound, call, self.now)  # answered and cancelled at once: resumed once only

    @rule(seconds=st.floats(0, 50))
    def tick(self, seconds: float) -> None:
        self.now += seconds

    @rule()
    def close(self) -> None:
        assert set(self.table.close()) == set(self.in_flight.values())
        self.in_flight.clear()
        self.closed = True

    @invariant()
    def holds_exactly_the_requests_in_flight(self) -> None:
        table = self.table
        for call in self.every:
            flying = self.in_flight.get(call.id) is call
            assert table.get(call.id) is (call if flying else None)
            assert table.is_pending(call) is flying
            if call.progress_token is not None:
                assert table.by_progress(call.progress_token) is (call if flying else None)
            tied = {inbound for inbound, c in self.ties.items() if c is call}
            assert call.tied == tied
            assert call.clock.paused is bool(tied)  # the timeout pauses exactly while input is tied
        assert table.has_calls() is any(c.is_call for c in self.in_flight.values())

    def teardown(self) -> None:
        left = self.table.close()  # nothing beyond the requests in flight
        assert set(left) == set(self.in_flight.values()) and len(left) == len(self.in_flight)
        assert not self.table.has_calls() and self.table.close() == []


TestCallTable = CallTableMachine.TestCase
TestCallTable.settings = MACHINE


# ============================================================================ the legacy engine at its cap


class Wire(Transport):
    """Records every answer written (decoded)."""

    def __init__(self) -> None:
        self.answers: list[JsonDict] = []

    def start(self, on_message: OnMessage, on_close: OnClose) -> None:
        pass

    def send(self, data: bytes, info: Outgoing) -> None:
        self.answers.append(jsonrpc.decode(data))

    def close(self, timeout: float) -> None:
        pass


class SlotPool:
    """``HandlerPool``'s contract with the jobs parked: a job holds one of ``size`` slots until the test runs it.

    As in ``HandlerPool``, the slot is free again before the job's follow-up
    (the answer) runs, and a callback that ended without answering still held
    its slot until it returned.
    """

    def __init__(self, size: int) -> None:
        self.size = size
        self.parked: list[tuple[Callable[[], Optional[Callable[[], object]]], Inbound]] = []

    @property
    def free(self) -> int:
        return self.size - len(self.parked)

    def none_queued(self) -> bool:
        return True

    def submit(self, job: Callable[[], Optional[Callable[[], object]]], label: Inbound) -> bool:
        if self.free <= 0:  # every job parks, as on a worker
            return False
        self.parked.append((job, label))
        return True

    def run(self, index: int) -> Inbound:
        job, label = self.parked.pop(index)
        follow_up = job()
        if follow_up is not None:
            follow_up()
        return label


class Answers(mis.InputHandler):
    def handle_elicitation(self, params: JsonDict, ctx: mis.InputContext) -> JsonDict:
        return ACCEPT


#: What each answer the engine writes is, by its content.
BUSY, TIMED_OUT, CLOSING = "busy: too many requests in flight", "the input handler timed out", "the client is closing"


def what(answer: JsonDict) -> str:
    if "result" in answer:
        return "served" if answer["result"] == ACCEPT else "pong"
    message = answer["error"]["message"]
    return {BUSY: "busy", TIMED_OUT: "timed out", CLOSING: "closing"}.get(message, "refused")


server_ids = st.sampled_from([0, 1, 2, "0", "a"])
HANDLER_TIMEOUT = 10.0


class LegacyAtCapMachine(RuleBasedStateMachine):
    """The connection of a legacy engine whose pool has ``cap`` slots, against a model of the open requests."""

    def __init__(self) -> None:
        super().__init__()
        self.freezer = freeze_time("2026-12-01", ignore=["hypothesis"])
        self.frozen = self.freezer.start()
        self.cap = 0
        self.engine: Optional[LegacyEngine] = None
        self.wire = Wire()
        self.pool = SlotPool(0)
        self.open: dict[Any, tuple[Inbound, float]] = {}  # id_key -> (the open request, its deadline)
        self.owed: dict[Any, list[str]] = {}  # id_key -> what it was answered, in order
        self.closing = False
        self.served = 0
        self.timed_out = 0

    @property
    def e(self) -> LegacyEngine:
        assert self.engine is not None
        return self.engine

    def owe(self, request_id: Any, answer: str) -> None:
        self.owed.setdefault(jsonrpc.id_key(request_id), []).append(answer)

    @precondition(lambda self: self.engine is None)
    @rule(cap=st.integers(1, 3))
    def build(self, cap: int) -> None:
        self.cap = cap
        self.pool = SlotPool(cap)
        opts = Options.parse({"input_rate_limit": (float("inf"), 1), "max_server_requests": cap, "handler_timeout": HANDLER_TIMEOUT})
        watch = Watch()
        era = ClientEra()
        era.decide("legacy")
        sweep = DeadlineSweep(watch.watch)  # the runtime's: the desk's and the engine's, as a client shares it
        desk = InputDesk(
            handler=Answers(), options=opts, stats=Stats(), client_name="bounds", server_id="srv", watchdog=cast(Watchdog, watch),
            sweep=sweep, era=era,
        )
        desk.configure("2025-11-25", {"elicitation": {"form": {}}}, None)
        self.engine = LegacyEngine(
            session=cast(Session, SimpleNamespace(calls=CallTable())),
            desk=desk,
            port=Port(self.wire),
            options=opts,
            router=cast(Any, None),
            pool=cast(Any, self.pool),
            watchdog=cast(Watchdog, watch),
            sweep=sweep,
        )

    @precondition(lambda self: self.engine is not None)
    @rule(request_id=server_ids, kind=st.sampled_from(["elicitation", "elicitation", "elicitation", "ping", "refused", "malformed"]))
    def request(self, request_id: Any, kind: str) -> None:
        key = jsonrpc.id_key(request_id)
        method, params = {
            "elicitation": ("elicitation/create", {"message": "m", "requestedSchema": FORM}),
            "ping": ("ping", None),
            "refused": ("tools/list", {}),
            "malformed": ("elicitation/create", {"message": "m"}),
        }[kind]
        full = self.pool.free <= 0
        self.e.on_request(request_id, method, params)
        if key in self.open:
            return  # a duplicate of an open id: dropped, whatever it asks
        if kind == "ping":
            self.owe(request_id, "pong")
        elif kind != "elicitation":
            self.owe(request_id, "refused")
        elif full:
            self.owe(request_id, "busy")  # at the cap: answered at once, never opened
        elif self.closing:
            self.owe(request_id, "closing")
        else:
            entry = self.pool.parked[-1][1]
            assert entry.id == request_id
            self.open[key] = (entry, _clock.monotonic() + HANDLER_TIMEOUT)

    @precondition(lambda self: self.engine is not None)
    @rule(request_id=server_ids)
    def cancel(self, request_id: Any) -> None:
        self.e.on_cancelled(request_id)
        found = self.open.pop(jsonrpc.id_key(request_id), None)
        if found is not None:
            assert found[0].token.reason == "cancelled by the server"

    @precondition(lambda self: bool(self.pool.parked))
    @rule(data=st.data())
    def finish(self, data: st.DataObject) -> None:
        index = data.draw(st.integers(0, len(self.pool.parked) - 1))
        entry = self.pool.run(index)
        key = jsonrpc.id_key(entry.id)
        if key in self.open and self.open[key][0] is entry:
            del self.open[key]
            self.owe(entry.id, "served")
            self.served += 1
        # else: timed out, cancelled or answered at close: its late answer is dropped

    @precondition(lambda self: self.engine is not None)
    @rule(seconds=st.sampled_from([1.0, 4.0, HANDLER_TIMEOUT, 2 * HANDLER_TIMEOUT]))
    def time_passes(self, seconds: float) -> None:
        self.frozen.tick(seconds)
        self.e.sweep.sweep()  # what the watchdog does on its next wake
        now = _clock.monotonic()
        for key, (entry, deadline) in list(self.open.items()):
            if deadline <= now:
                del self.open[key]
                self.owe(entry.id, "timed out")
                self.timed_out += 1
                assert entry.token.reason == "timeout"

    @precondition(lambda self: self.engine is not None)
    @rule()
    def close(self) -> None:
        self.e.close(True)
        for entry, _ in self.open.values():
            self.owe(entry.id, "closing")
            assert entry.token.reason == "closed"
        self.open.clear()
        self.closing = True

    @invariant()
    def the_connection_holds_exactly_the_open_requests(self) -> None:
        if self.engine is None:
            return
        engine = self.engine
        assert len(engine.conn) == len(self.open) <= self.cap
        assert {jsonrpc.id_key(e.id) for e in engine.conn.open_requests()} == set(self.open)
        assert set(map(id, engine.conn.open_requests())) == {id(entry) for entry, _ in self.open.values()}
        assert len(engine.sweep) == len(self.open)  # a deadline only for what is open
        assert len(self.pool.parked) <= self.cap

    @invariant()
    def each_id_got_what_it_is_owed(self) -> None:
        got: dict[Any, list[str]] = {}
        for answer in self.wire.answers:
            got.setdefault(jsonrpc.id_key(answer["id"]), []).append(what(answer))
        assert got == self.owed
        if self.engine is not None:
            stats = self.engine.stats.snapshot()
            assert (stats["served"], stats["timed_out"]) == (self.served, self.timed_out)

    def teardown(self) -> None:
        try:
            if self.engine is not None:
                self.close()
                while self.pool.parked:  # the callbacks return after close: dropped
                    self.pool.run(0)
                self.each_id_got_what_it_is_owed()
                assert len(self.engine.conn) == 0 and len(self.engine.sweep) == 0
        finally:
            self.freezer.stop()


TestLegacyAtCap = LegacyAtCapMachine.TestCase
TestLegacyAtCap.settings = MACHINE


# ============================================================================ the notification queue


class Hook(mis.InputHandler):
    """Records each notification's ``n``; the first waits at the gate (the notification thread is busy)."""

    def __init__(self) -> None:
        self.seen: list[int] = []
        self.gate = threading.Event()
        self.busy = threading.Event()

    def handle_notification(self, method: str, params: JsonDict, ctx: mis.InputContext) -> None:
        if method == "notifications/hold":
            self.busy.set()
            self.gate.wait(WAIT)
            return
        self.seen.append(params["n"])


@settings(max_examples=20, deadline=None)
@given(capacity=st.integers(1, 6), sent=st.integers(0, 14))
def test_notifications_past_the_queues_capacity_are_dropped_counted_and_the_rest_run_in_order(capacity: int, sent: int) -> None:
    hook, stats, pump = Hook(), Stats(), NotificationPump(capacity)
    router = NotificationRouter(
        handler=hook, calls=CallTable(), stats=stats, client_name="bounds", server_id="srv", era=ClientEra(), pump=pump,
        log_rate_limit=(float("inf"), 1), log_level="info",
    )
    pump.start()
    try:
        for _ in range(2):  # twice: once drained, the queue takes as many again
            hook.gate.clear()
            hook.busy.clear()
            router.route("notifications/hold", {})
            assert hook.busy.wait(WAIT)  # the notification thread is held: everything else queues
            before = stats.snapshot()["notifications_dropped"]
            seen_before = len(hook.seen)
            for n in range(sent):
                router.route("notifications/resources/list_changed", {"n": n})
            assert stats.snapshot()["notifications_dropped"] - before == max(0, sent - capacity)
            hook.gate.set()
            assert pump.drain(WAIT)
            assert hook.seen[seen_before:] == list(range(min(sent, capacity)))  # the first ones, in arrival order
    finally:
        hook.gate.set()
        pump.stop(RealBudget(WAIT))


# ============================================================================ the desk's tokens and threads


def desk_with(handler: mis.InputHandler, watch: Watch, **options: Any) -> InputDesk:
    opts = Options.parse({"input_rate_limit": (float("inf"), 1), **options})
    era = ClientEra()
    era.decide("modern")
    desk = InputDesk(
        handler=handler, options=opts, stats=Stats(), client_name="bounds", server_id="srv", watchdog=cast(Watchdog, watch),
        sweep=DeadlineSweep(watch.watch), era=era,
    )
    desk.configure("2026-07-28", {"elicitation": {"form": {}}}, None)
    return desk


def round_of(desk: InputDesk, *keys: str) -> Any:
    return desk.check_round({key: {"method": "elicitation/create", "params": {"message": key, "requestedSchema": FORM}} for key in keys})


class Behaves(mis.InputHandler):
    """Does what the request's message says; ``desk`` and ``watch`` let it act as a watchdog wake or close would."""

    def __init__(self, watch: Watch, frozen: Any) -> None:
        self.watch = watch
        self.frozen = frozen
        self.desk: Optional[InputDesk] = None

    def handle_elicitation(self, params: JsonDict, ctx: mis.InputContext) -> Any:
        behaviour = params["message"]
        if behaviour == "refuse":
            raise mis.InputRefused(-1, "no")
        if behaviour == "raise":
            raise RuntimeError("the callback failed")
        if behaviour == "junk":
            return "not an answer"
        if behaviour == "timeout":
            self.frozen.tick(HANDLER_TIMEOUT + 1)
            self.watch.wake()  # the sweep sets the token
            assert ctx.cancelled
        if behaviour == "cancel":
            self.watch.wake()  # the watch forwards the caller's event to the token
            assert ctx.cancelled
        if behaviour == "close":
            assert self.desk is not None
            self.desk.close()
            assert ctx.cancelled
        return ACCEPT


@pytest.mark.parametrize(
    ("behaviour", "raised"),
    [("ok", None), ("refuse", "input_handler"), ("raise", "input_handler"), ("junk", "input_handler"), ("timeout", "timeout"), ("cancel", "cancelled"), ("close", "closed")],
)
def test_a_callback_here_releases_its_token_whatever_it_did(behaviour: str, raised: Optional[str]) -> None:
    with freeze_time("2026-12-01") as frozen:
        watch = Watch()
        handler = Behaves(watch, frozen)
        desk = handler.desk = desk_with(handler, watch, handler_timeout=HANDLER_TIMEOUT)
        cancel = threading.Event()
        if behaviour == "cancel":
            cancel.set()
        [step] = round_of(desk, behaviour).values()
        clock = CallClock(_clock.monotonic(), 60.0, 600.0)
        try:
            desk.answer_here(step, clock, None, cancel=cancel)
            got: Optional[str] = None
        except mis.ClientError as exc:
            got = exc.kind
        assert got == raised
        assert desk.live_callbacks() == 0  # close() has nothing left to set
        watch.wake()
        watch.wake()  # the sweep stops one wake after it found nothing
        assert watch.checks == []  # nothing keeps the watchdog waking for this callback


def test_a_parallel_rounds_threads_end_with_the_round() -> None:
    class Parallel(Answers):
        input_parallelism = 2

    desk = desk_with(Parallel(), Watch())
    names: set[str] = set()
    for _ in range(20):
        desk.answer_round(round_of(desk, "a", "b"), CallClock(_clock.monotonic(), 60.0, 600.0), None)
        names.update(t.name for t in desk.worker_threads())
        for thread in desk.worker_threads():
            thread.join(WAIT)
    assert all(name.startswith("mcp-input-sync-input-") for name in names)
    assert desk.live_callbacks() == 0


def test_the_threads_of_abandoned_rounds_do_not_pile_up() -> None:
    gate = threading.Event()
    entered = threading.Semaphore(0)

    class SlowOne(Answers):
        input_parallelism = 2

        def handle_elicitation(self, params: JsonDict, ctx: mis.InputContext) -> JsonDict:
            if params["message"] == "slow":
                entered.release()
                gate.wait(WAIT)  # ignores its token
            return ACCEPT

    with freeze_time("2026-12-01") as frozen:
        desk = desk_with(SlowOne(), Watch(), handler_timeout=HANDLER_TIMEOUT)
        kept: list[int] = []
        try:
            for _ in range(4):
                gate.clear()
                failed: list[str] = []

                def ask() -> None:
                    try:
                        desk.answer_round(round_of(desk, "slow", "fast"), CallClock(_clock.monotonic(), 60.0, 600.0), None)
                    except mis.ClientError as exc:
                        failed.append(exc.kind)

                caller = threading.Thread(target=ask, name="bounds-caller", daemon=True)
                caller.start()
                assert entered.acquire(timeout=WAIT)
                frozen.tick(HANDLER_TIMEOUT + 1)  # the round is abandoned; its slow callback runs on
                caller.join(WAIT)
                assert not caller.is_alive() and failed == ["timeout"]
                kept.append(len(desk.worker_threads()))
                gate.set()  # the slow callback ends, after its round
                for thread in desk.worker_threads():
                    thread.join(WAIT)
                    assert not thread.is_alive()
        finally:
            gate.set()
    # at most this round's two threads are kept; those of earlier rounds, ended, are not
    assert max(kept) <= 2, kept
