"""The two engines of the client core alone, without a client (issue 23, item 4).

The modern engine runs over a real :class:`Session` on a scripted transport,
with a real :class:`InputDesk`: its ``input_required`` loop is a table, one
row per server script (the results the server gives the successive requests
of one call), saying what the call ends with and what each request carried
(docs/reference.md#modern-input-rounds, docs/modern.md).

The legacy engine answers server requests through a fake desk and pool
doubles: one answer per request id, whatever the pool, the server or close do.
"""

from __future__ import annotations

import json
import threading
from types import SimpleNamespace
from typing import Any, Callable, NamedTuple, Optional, Union, cast

import pytest
from freezegun import freeze_time

import mcp_input_sync as mis
from mcp_input_sync import _clock
from mcp_input_sync._calls import Call, CallSpec, CallTable
from mcp_input_sync._protocol.deadlines import CallClock
from mcp_input_sync._engines.legacy import LegacyEngine
from mcp_input_sync._engines.modern import ModernEngine
from mcp_input_sync._era import ClientEra
from mcp_input_sync._runtime.notify import NotificationPump
from mcp_input_sync._input import InputDesk
from mcp_input_sync._notifications import NotificationRouter
from mcp_input_sync._port import Port
from mcp_input_sync._protocol import jsonrpc
from mcp_input_sync._protocol.checks import CheckConfig, InputChecks, Prepared, Refusal
from mcp_input_sync._protocol.eras import MODERN_VERSION
from mcp_input_sync._protocol.modern import META_CAPABILITIES, META_LOG_LEVEL, META_VERSION, MetaStamp, PendingCall, RetryStamp, retry_params
from mcp_input_sync._runtime.deadlines import DeadlineSweep
from mcp_input_sync._runtime.watchdog import Watchdog
from mcp_input_sync._session import Session
from mcp_input_sync._stats import Stats
from mcp_input_sync.errors import ClientError
from mcp_input_sync.handler import CancelToken
from mcp_input_sync.options import Options
from mcp_input_sync.transports.base import Outgoing

from .scripted import AnswersOnSend
from .test_runtime_pieces import Watch

JsonDict = dict[str, Any]
WAIT = 10.0
MODERN = MODERN_VERSION
#: A version the engine may start at and leave on -32022 (this client speaks no other modern one yet).
DRAFT = "2026-01-26"

# ============================================================================ the modern engine

SCHEMA: JsonDict = {"type": "object", "properties": {"answer": {"type": "string"}}}
EVERYTHING: JsonDict = {"elicitation": {"form": {}}, "sampling": {}}
FORMS_ONLY: JsonDict = {"elicitation": {"form": {}}}
#: The call every row makes.
CALL: JsonDict = {"name": "book", "arguments": {"city": "Lyon", "nights": 2}}
#: A requestState a server may well send: JSON-looking text with odd spacing, non-ASCII, a line
#: separator and a lone surrogate. It must come back exactly, never parsed or normalised.
ODD_STATE = ' {"b": 1,  "a": [2]}\t\u00e9\u2028\ud800 '


def form(message: str) -> JsonDict:
    return {"method": "elicitation/create", "params": {"mode": "form", "message": message, "requestedSchema": SCHEMA}}


def sample(text: str) -> JsonDict:
    return {"method": "sampling/createMessage", "params": {"messages": [{"role": "user", "content": {"type": "text", "text": text}}], "maxTokens": 10}}


def accepted(message: str) -> JsonDict:
    """The handler's (and so the retry's) answer to ``form(message)``."""
    return {"action": "accept", "content": {"answer": message}}


def sampled(text: str) -> JsonDict:
    """The handler's answer to ``sample(text)``."""
    return {"role": "assistant", "content": {"type": "text", "text": text}, "model": "unit"}


def ask(requests: Optional[JsonDict] = None, state: Any = None) -> JsonDict:
    """An ``input_required`` result (``None`` leaves a member out)."""
    result: JsonDict = {"resultType": "input_required"}
    if requests is not None:
        result["inputRequests"] = requests
    if state is not None:
        result["requestState"] = state
    return result


def done(text: str = "booked") -> JsonDict:
    """A complete result (no ``resultType``: complete)."""
    return {"content": [{"type": "text", "text": text}]}


def error(code: int, message: str, data: Any = None) -> JsonDict:
    body: JsonDict = {"code": code, "message": message}
    if data is not None:
        body["data"] = data
    return {"error": body}


UNSUPPORTED = error(jsonrpc.UNSUPPORTED_VERSION, "unsupported protocol version", {"supported": [MODERN]})


class ScriptedServer(AnswersOnSend):
    """Answers each request at once, on the sending thread, with the next answer of ``script``."""

    def __init__(self, script: list[JsonDict]) -> None:
        super().__init__()
        self.script = list(script)

    def reply_to(self, message: JsonDict) -> Optional[JsonDict]:
        assert self.script, f"the client sent more than the script answers: {message['method']}"
        return self.script.pop(0)

    @property
    def requests(self) -> list[tuple[JsonDict, Outgoing]]:
        return [(message, info) for message, info in self.sent if "id" in message]


class Scripted(mis.InputHandler):
    """Answers a form by its message: ``"decline"`` declines, ``"bad"`` answers off the schema,
    ``"cancel"`` sets the call's cancel event, any other is accepted with the message as the
    answer; a sample is answered with its own text. Keeps what it was asked and on which thread."""

    def __init__(self, cancel: threading.Event) -> None:
        self.cancel = cancel
        self.asked: list[str] = []
        self.threads: set[str] = set()
        self.lock = threading.Lock()

    def _note(self, question: str) -> None:
        with self.lock:
            self.asked.append(question)
            self.threads.add(threading.current_thread().name)

    def handle_elicitation(self, params: JsonDict, ctx: mis.InputContext) -> JsonDict:
        message = params["message"]
        self._note(message)
        if message == "decline":
            return {"action": "decline"}
        if message == "bad":
            return {"action": "accept", "content": {"answer": 5}}
        if message == "cancel":
            self.cancel.set()
        return accepted(message)

    def handle_sampling(self, params: JsonDict, ctx: mis.InputContext) -> JsonDict:
        text = params["messages"][0]["content"]["text"]
        self._note(text)
        return sampled(text)


class Parallel(Scripted):
    """Two callbacks at once: each waits until the other has started too."""

    input_parallelism = 2

    def __init__(self, cancel: threading.Event) -> None:
        super().__init__(cancel)
        self.meet = threading.Barrier(2, timeout=WAIT)

    def _note(self, question: str) -> None:
        super()._note(question)
        self.meet.wait()  # both run at once, or this breaks and the call fails


class Raised(NamedTuple):
    """The ClientError a call raises."""

    kind: str
    check: Optional[str] = None
    code: Optional[int] = None


#: What one request of the call carried: ``inputResponses`` and ``requestState`` (None: absent),
#: and the protocol version its ``_meta`` named.
Sent = tuple[Optional[JsonDict], Optional[str], str]


class Row(NamedTuple):
    name: str
    script: list[JsonDict]
    outcome: Union[JsonDict, Raised]
    sent: list[Sent]
    asked: list[str]
    options: JsonDict = {}
    caps: JsonDict = EVERYTHING
    parallel: bool = False
    start: str = MODERN


FIRST: Sent = (None, None, MODERN)

ROWS: list[Row] = [
    Row("complete at once", [done()], done(), [FIRST], []),
    Row(
        "one round", [ask({"a": form("A")}, "s1"), done()], done(),
        [FIRST, ({"a": accepted("A")}, "s1", MODERN)], ["A"],
    ),
    Row(
        "three rounds, each retry with that round's answers and state",
        [ask({"a": form("A")}, "s1"), ask({"b": form("B")}, "s2"), ask({"c": form("C")}, "s3"), done()], done(),
        [FIRST, ({"a": accepted("A")}, "s1", MODERN), ({"b": accepted("B")}, "s2", MODERN), ({"c": accepted("C")}, "s3", MODERN)],
        ["A", "B", "C"],
    ),
    Row(
        "the requestState echoed byte for byte", [ask({"a": form("A")}, ODD_STATE), done()], done(),
        [FIRST, ({"a": accepted("A")}, ODD_STATE, MODERN)], ["A"],
    ),
    Row(
        "no requestState, none sent back", [ask({"a": form("A")}), done()], done(),
        [FIRST, ({"a": accepted("A")}, None, MODERN)], ["A"],
    ),
    Row("a state-only round is retried with the state alone", [ask(state="s1"), done()], done(), [FIRST, (None, "s1", MODERN)], []),
    Row(
        "several requests, answered in sorted key order, keyed as asked",
        [ask({"c": sample("C"), "a": form("A"), "b": form("B")}, "s1"), done()], done(),
        [FIRST, ({"a": accepted("A"), "b": accepted("B"), "c": sampled("C")}, "s1", MODERN)], ["A", "B", "C"],
    ),
    Row(
        "several requests answered in parallel", [ask({"b": form("B"), "a": sample("A")}, "s1"), done()], done(),
        [FIRST, ({"a": sampled("A"), "b": accepted("B")}, "s1", MODERN)], ["A", "B"], parallel=True,
    ),
    Row(
        "an error mid-loop", [ask({"a": form("A")}, "s1"), error(-32000, "the tool broke")], Raised("remote", None, -32000),
        [FIRST, ({"a": accepted("A")}, "s1", MODERN)], ["A"],
    ),
    Row(
        "max_rounds rounds are answered", [ask({"a": form("A")}, "s1"), ask({"b": form("B")}, "s2"), done()], done(),
        [FIRST, ({"a": accepted("A")}, "s1", MODERN), ({"b": accepted("B")}, "s2", MODERN)], ["A", "B"], {"max_rounds": 2},
    ),
    Row(
        "one round over max_rounds", [ask({"a": form("A")}, "s1"), ask({"b": form("B")}, "s2"), ask({"c": form("C")}, "s3")],
        Raised("protocol", "rounds"),
        [FIRST, ({"a": accepted("A")}, "s1", MODERN), ({"b": accepted("B")}, "s2", MODERN)], ["A", "B"], {"max_rounds": 2},
    ),
    Row("input_required without inputRequests or requestState", [ask()], Raised("protocol", "result"), [FIRST], []),
    Row("a requestState that is not a string", [ask({"a": form("A")}, 7)], Raised("protocol", "result"), [FIRST], []),
    Row(
        "inputRequests that is not an object", [{"resultType": "input_required", "inputRequests": [form("A")], "requestState": "s1"}],
        Raised("protocol", "result"), [FIRST], [],
    ),
    Row("an unknown resultType", [{"resultType": "later"}], Raised("protocol", "result"), [FIRST], []),
    Row("a task without tasks=True", [{"resultType": "task", "taskId": "t1"}], Raised("protocol", "result"), [FIRST], []),
    Row(
        "a kind the client did not declare: no callback runs, not even for the declared one",
        [ask({"a": form("A"), "b": sample("B")}, "s1")], Raised("protocol", "capability", -32601), [FIRST], [], caps=FORMS_ONLY,
    ),
    Row(
        "a method no input request has", [ask({"a": {"method": "tools/call", "params": {}}}, "s1")],
        Raised("protocol", "malformed", -32601), [FIRST], [],
    ),
    Row("an input request without a method", [ask({"a": {"params": {}}}, "s1")], Raised("protocol", "malformed", -32601), [FIRST], []),
    Row("an answer off the schema", [ask({"a": form("bad")}, "s1")], Raised("input_handler", "answer", -32603), [FIRST], ["bad"]),
    Row(
        "the same question right after a decline", [ask({"a": form("decline")}, "s1"), ask({"z": form("decline")}, "s2")],
        Raised("declined", "reask"), [FIRST, ({"a": {"action": "decline"}}, "s1", MODERN)], ["decline"],
    ),
    Row("cancelled during a round: no retry", [ask({"a": form("cancel")}, "s1")], Raised("cancelled"), [FIRST], ["cancel"]),
    Row(
        "-32022 on the first request: sent again at the version it lists, which stays",
        [UNSUPPORTED, ask({"a": form("A")}, "s1"), done()], done(),
        [(None, None, DRAFT), FIRST, ({"a": accepted("A")}, "s1", MODERN)], ["A"], start=DRAFT,
    ),
    Row(
        "-32022 on a retry: the same retry again, nobody asked twice",
        [ask({"a": form("A")}, "s1"), UNSUPPORTED, done()], done(),
        [(None, None, DRAFT), ({"a": accepted("A")}, "s1", DRAFT), ({"a": accepted("A")}, "s1", MODERN)], ["A"], start=DRAFT,
    ),
    Row("-32022 listing the version in use", [UNSUPPORTED], Raised("remote", None, -32022), [FIRST], []),
    Row(
        "-32022 listing legacy versions only", [error(-32022, "unsupported", {"supported": ["2025-11-25"]})],
        Raised("remote", None, -32022), [(None, None, DRAFT)], [], start=DRAFT,
    ),
    Row("-32022 listing nothing", [error(-32022, "unsupported")], Raised("remote", None, -32022), [(None, None, DRAFT)], [], start=DRAFT),
    Row(
        "-32022 twice: the switch is made once", [UNSUPPORTED, UNSUPPORTED], Raised("remote", None, -32022),
        [(None, None, DRAFT), FIRST], [], start=DRAFT,
    ),
]


def modern_engine(
    server: ScriptedServer, handler: mis.InputHandler, caps: JsonDict = EVERYTHING, version: str = MODERN,
    router: Optional[NotificationRouter] = None, **options: Any,
) -> tuple[ModernEngine, InputDesk, Session]:
    """A modern engine as the assembly builds it, over ``server``; the desk's watchdog never starts."""
    opts = Options.parse({"input_rate_limit": (float("inf"), 1), **options})
    port = Port(server)
    stats = Stats()
    session = Session(
        port, stats=stats, server_id="scripted", default_assigns={}, depth_limit=64,
        route=lambda method, params: None, is_live=lambda: True, on_broken=lambda: None,
    )
    port.configure("scripted", opts.limits, session.on_lost)
    port.start(session.on_line, session.on_transport_closed)
    era = ClientEra()
    era.decide("modern")
    watchdog = Watchdog()
    desk = InputDesk(
        handler=handler, options=opts, stats=stats, client_name="unit", server_id="scripted", watchdog=watchdog,
        sweep=DeadlineSweep(watchdog.watch), era=era,
    )
    desk.configure(MODERN, caps, None)
    if router is None:
        router = cast(NotificationRouter, SimpleNamespace(has_subscribers=False, level_version=0))
        stamp = MetaStamp(version, caps, {"name": "unit", "version": "0"}, lambda: None)
    else:
        stamp = MetaStamp(version, caps, {"name": "unit", "version": "0"}, router.log_level)
    engine = ModernEngine(session=session, desk=desk, port=port, options=opts, router=router, stamp=stamp)
    session.serve(engine)
    return engine, desk, session


def join_input_threads(desk: InputDesk) -> None:
    for thread in desk.worker_threads():
        thread.join(WAIT)
        assert not thread.is_alive()


def what_was_sent(params: JsonDict) -> Sent:
    return params.get("inputResponses"), params.get("requestState"), params["_meta"][META_VERSION]


@pytest.mark.parametrize("row", ROWS, ids=[row.name for row in ROWS])
def test_the_input_required_loop(row: Row) -> None:
    server = ScriptedServer(row.script)
    cancel = threading.Event()
    handler = (Parallel if row.parallel else Scripted)(cancel)
    engine, desk, _ = modern_engine(server, handler, row.caps, row.start, **row.options)
    spec = CallSpec(engine.options.clock(), cancel=cancel)
    try:
        if isinstance(row.outcome, Raised):
            with pytest.raises(ClientError) as caught:
                engine.call("tools/call", dict(CALL), spec)
            assert (caught.value.kind, caught.value.check, caught.value.code) == row.outcome, caught.value
        else:
            assert engine.call("tools/call", dict(CALL), spec) == row.outcome
    finally:
        join_input_threads(desk)

    assert server.script == []  # every scripted answer was asked for, and no more
    requests = server.requests
    assert [what_was_sent(message["params"]) for message, _ in requests] == row.sent
    assert len(requests) == len(server.sent)  # nothing else went out: no cancellation, no notification
    ids = [message["id"] for message, _ in requests]
    assert len(set(ids)) == len(ids)  # a new id for every retry
    for message, info in requests:
        params = message["params"]
        assert message["method"] == "tools/call" and (params["name"], params["arguments"]) == (CALL["name"], CALL["arguments"])
        assert params["_meta"][META_CAPABILITIES] == row.caps  # a fresh, complete _meta on each
        assert (info.request_id, info.version, info.name) == (message["id"], params["_meta"][META_VERSION], "book")
    assert engine.version == row.sent[-1][2]  # a -32022 switch stays; nothing else changes the version
    if row.parallel:
        assert sorted(handler.asked) == row.asked
        assert all(name.startswith("mcp-input-sync-") for name in handler.threads) and len(handler.threads) == 2
    else:
        assert handler.asked == row.asked
        assert handler.threads <= {threading.current_thread().name}  # on the calling thread


def test_a_round_refused_by_the_checks_is_counted_under_the_kind_and_check() -> None:
    server = ScriptedServer([ask({"a": form("A"), "b": sample("B")}, "s1")])
    engine, desk, _ = modern_engine(server, Scripted(threading.Event()), FORMS_ONLY)
    with pytest.raises(ClientError):
        engine.call("tools/call", dict(CALL), CallSpec(engine.options.clock()))
    snapshot = desk.stats.snapshot()
    assert dict(snapshot["refused"]["sampling"]) == {"capability": 1} and snapshot.get("served", 0) == 0


def test_served_answers_are_counted_once_each() -> None:
    server = ScriptedServer([ask({"a": form("A"), "b": form("B")}, "s1"), ask({"c": form("C")}, "s2"), done()])
    engine, desk, _ = modern_engine(server, Scripted(threading.Event()))
    engine.call("tools/call", dict(CALL), CallSpec(engine.options.clock()))
    assert desk.stats.snapshot()["served"] == 3


def test_the_callers_own_meta_keys_go_with_every_round_beside_a_fresh_stamp() -> None:
    server = ScriptedServer([ask({"a": form("A")}, "s1"), done()])
    engine, _, _ = modern_engine(server, Scripted(threading.Event()))
    params = dict(CALL, _meta={"example.com/trace": "t-1"})
    engine.call("tools/call", params, CallSpec(engine.options.clock()))
    metas = [message["params"]["_meta"] for message, _ in server.requests]
    assert [meta["example.com/trace"] for meta in metas] == ["t-1", "t-1"]
    assert [meta[META_VERSION] for meta in metas] == [MODERN, MODERN]
    assert params == dict(CALL, _meta={"example.com/trace": "t-1"})  # the caller's params are not changed


class LevelChanger(Scripted):
    """While answering a round, changes what the client's log level is, as another thread may mid-call."""

    def __init__(self, router: NotificationRouter) -> None:
        super().__init__(threading.Event())
        self.router = router
        self.subscription: Optional[Any] = None

    def handle_elicitation(self, params: JsonDict, ctx: mis.InputContext) -> JsonDict:
        message = params["message"]
        if message == "subscribe":
            self.subscription = self.router.add(lambda method, params: None)
        elif message == "choose":
            self.router.choose_level("debug")
        elif message == "unsubscribe":
            assert self.subscription is not None
            self.router.remove(self.subscription)
        return super().handle_elicitation(params, ctx)


def test_a_log_level_changed_during_a_call_reaches_its_next_round() -> None:
    router = NotificationRouter(
        handler=None, calls=CallTable(), stats=Stats(), client_name="unit", server_id="scripted", era=ClientEra(),
        pump=NotificationPump(4), log_rate_limit=(float("inf"), 1), log_level="warning",
    )
    server = ScriptedServer([ask({"a": form("subscribe")}, "s1"), ask({"b": form("choose")}, "s2"), ask({"c": form("unsubscribe")}, "s3"), done()])
    engine, _, _ = modern_engine(server, LevelChanger(router), router=router)
    assert engine.call("tools/call", dict(CALL), CallSpec(engine.options.clock())) == done()
    levels = [message["params"]["_meta"].get(META_LOG_LEVEL) for message, _ in server.requests]
    assert levels == [None, "warning", "debug", "debug"]  # a subscriber wants logs, then a chosen level stays


@pytest.mark.parametrize("caller_meta", [None, {}, {"example.com/trace": "t-1", META_VERSION: "old", META_LOG_LEVEL: "error"}])
@pytest.mark.parametrize("level", [None, "info"])
def test_a_retry_stamped_once_per_call_is_the_retry_stamped_per_request(caller_meta: Optional[JsonDict], level: Optional[str]) -> None:
    params: JsonDict = dict(CALL, inputResponses={"old": {}}, requestState="old")
    if caller_meta is not None:
        params["_meta"] = caller_meta
    stamp = MetaStamp(MODERN, {"roots": {}}, {"name": "unit", "version": "0"}, lambda: level)
    parts = RetryStamp(stamp, params, "book", SimpleNamespace(level_version=0))
    for answers, state in [({"a": {"action": "decline"}}, "s1"), (None, "s2"), ({"b": {"action": "cancel"}}, None)]:
        by_hand = retry_params(params, answers, state)
        if "_meta" in params:
            by_hand["_meta"] = params["_meta"]
        expected = stamp(by_hand)
        got = parts.params(answers, state)
        assert jsonrpc.dumps(got) == jsonrpc.dumps(expected)  # the same bytes, key order included
    assert params == dict(CALL, inputResponses={"old": {}}, requestState="old", **({} if caller_meta is None else {"_meta": caller_meta}))


def test_defer_input_returns_the_round_unanswered_and_resume_sends_the_answers() -> None:
    server = ScriptedServer([ask({"b": form("B"), "a": form("A")}, ODD_STATE), done()])
    handler = Scripted(threading.Event())
    engine, _, _ = modern_engine(server, handler)
    pending = engine.call("tools/call", dict(CALL), CallSpec(engine.options.clock(), defer_input=True))
    assert isinstance(pending, PendingCall)
    assert (pending.method, pending.params, list(pending.input_requests), pending.request_state) == ("tools/call", CALL, ["a", "b"], ODD_STATE)
    assert handler.asked == [] and server.script == [done()]
    answers = {"a": accepted("from a form"), "b": {"action": "decline"}}
    assert engine.resume(pending, answers, CallSpec(engine.options.clock())) == done()
    (first, _), (retry, _) = server.requests
    assert retry["id"] != first["id"]
    assert what_was_sent(retry["params"]) == (answers, ODD_STATE, MODERN)
    assert handler.asked == []  # the user answered, not the handler


def test_resume_refuses_an_answer_off_the_schema_and_sends_nothing() -> None:
    server = ScriptedServer([ask({"a": form("A")}, "s1")])
    engine, _, _ = modern_engine(server, Scripted(threading.Event()))
    pending = engine.call("tools/call", dict(CALL), CallSpec(engine.options.clock(), defer_input=True))
    assert isinstance(pending, PendingCall)
    with pytest.raises(ClientError) as caught:
        engine.resume(pending, {"a": {"action": "accept", "content": {"answer": 5}}}, CallSpec(engine.options.clock()))
    assert (caught.value.kind, caught.value.check) == ("input_handler", "answer")
    assert len(server.sent) == 1


def test_a_server_request_in_the_modern_era_is_counted_and_never_answered() -> None:
    server = ScriptedServer([])
    _, desk, session = modern_engine(server, Scripted(threading.Event()))
    session.on_line(json.dumps({"jsonrpc": "2.0", "id": 3, "method": "elicitation/create", "params": form("A")["params"]}).encode())
    session.on_line(json.dumps({"jsonrpc": "2.0", "id": 4, "method": "ping"}).encode())
    assert server.sent == []
    refused = desk.stats.snapshot()["refused"]
    assert dict(refused["elicitation"]) == {"era": 1} and dict(refused["other"]) == {"era": 1}


# ============================================================================ the legacy engine


class FakeDesk:
    """The desk as the legacy engine sees it: the real checks (``kinds`` declared: elicitation), a recorded callback."""

    def __init__(self, verdict: Any = None, kinds: frozenset[str] = frozenset({"elicitation"})) -> None:
        self.asked: list[str] = []
        self.stats = Stats()
        self.server_id = "srv"
        self.handler = None
        self.checks = InputChecks(CheckConfig(kinds=kinds), float("inf"), 10, 0.0)
        self.timeouts = {"elicitation": 5.0, "sampling": 5.0, "roots": 5.0}
        self.verdict = verdict if verdict is not None else {"action": "accept", "content": {}}
        self.noted: list[tuple[str, str]] = []
        self.tracing = None  # telemetry off: no spans

    def refused_span(self, kind: str, request_id: Any, refusal: Refusal) -> None:
        pass

    def take_budget(self, kinds: list[str], now: float) -> Optional[Refusal]:
        raise AssertionError("an unlimited rate takes no budget")

    def callback(self, prepared: Prepared, assigns: Any, related: Any, token: CancelToken) -> Any:
        self.asked.append("callback")
        return self.verdict

    def note_refusal(self, kind: str, refusal: Refusal) -> None:
        """As the desk does: counted (and remembered here)."""
        self.noted.append((kind, refusal.check))
        self.stats.refuse(kind, refusal.check)


Job = Callable[[], Optional[Callable[[], object]]]


class InlinePool:
    """Runs each job and its follow-up at once, on the calling thread."""

    free = 8

    def none_queued(self) -> bool:
        return True

    def submit(self, job: Job, label: object) -> bool:
        follow_up = job()
        if follow_up is not None:
            follow_up()
        return True


class HerePool(InlinePool):
    """Runs quick jobs on the reader, as a pool with a relay does; with ``free`` False its one slot was taken meanwhile."""

    def __init__(self, free: bool = True) -> None:
        self.has_slot = free
        self.here = 0

    def submit(self, job: Job, label: object) -> bool:
        if not self.has_slot:
            return False
        self.here += 1
        return super().submit(job, label)


class ParkedPool(InlinePool):
    """Takes every job and runs none until :meth:`run_parked`: the callbacks are still running."""

    def __init__(self) -> None:
        self.jobs: list[Job] = []

    def submit(self, job: Job, label: object) -> bool:
        self.jobs.append(job)
        return True

    def run_parked(self) -> None:
        for job in self.jobs:
            follow_up = job()
            if follow_up is not None:
                follow_up()


class FullPool(InlinePool):
    """Every slot taken: ``free`` says so."""

    free = 0

    def __init__(self) -> None:
        self.starts = 0

    def submit(self, job: Job, label: object) -> bool:
        self.starts += 1
        return False


class RacedPool(FullPool):
    """The last slot went to another reader between reading ``free`` and ``submit()`` (HTTP: two streams at once)."""

    free = 1


class ShutPool(InlinePool):
    """Shut down meanwhile: ``submit()`` raises, as ``HandlerPool.submit`` does."""

    def submit(self, job: Job, label: object) -> bool:
        raise RuntimeError("pool is shut down")


def new_list() -> list[Any]:
    return []


def legacy_engine(desk: FakeDesk, sent: list[Any], watch: Optional[Watch] = None, pool: Optional[InlinePool] = None) -> LegacyEngine:
    session = SimpleNamespace(calls=CallTable())
    port = SimpleNamespace(answer=lambda data: sent.append(jsonrpc.decode(data)), ties_by_stream=False, holding=None)
    watch = watch or Watch()
    watchdog = SimpleNamespace(watch=watch, watch_fast=lambda fn, wake=True: None)
    return LegacyEngine(
        session=cast(Session, session),
        desk=cast(InputDesk, desk),
        port=cast(Any, port),
        options=Options(),
        router=cast(Any, None),
        pool=cast(Any, pool or InlinePool()),
        watchdog=cast(Watchdog, watchdog),
        sweep=DeadlineSweep(watch),
    )


def error_answer(request_id: Any, code: int, message: str) -> JsonDict:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def by_id(answer: JsonDict) -> str:
    return repr(answer["id"])


BUSY_ANSWER = error_answer(12, -32000, "busy: too many requests in flight")
FORM_PARAMS = {"message": "m", "requestedSchema": {"type": "object", "properties": {}}}


def test_the_engine_asks_the_desk_for_the_callback_and_writes_the_one_answer() -> None:
    desk, sent = FakeDesk(), new_list()
    engine = legacy_engine(desk, sent)
    engine.on_request(7, "elicitation/create", FORM_PARAMS)
    assert desk.asked == ["callback"]
    assert sent == [{"jsonrpc": "2.0", "id": 7, "result": {"action": "accept", "content": {}}}]
    assert desk.stats.snapshot()["served"] == 1
    assert len(engine.conn) == 0 and len(engine.sweep) == 0  # settled, and off the sweep


def test_a_job_the_pool_runs_on_the_reader_is_answered_once_and_never_started_again() -> None:
    desk, sent, pool = FakeDesk(), new_list(), HerePool()
    engine = legacy_engine(desk, sent, pool=pool)
    engine.on_request(7, "elicitation/create", FORM_PARAMS)
    assert pool.here == 1 and desk.asked == ["callback"]
    assert sent == [{"jsonrpc": "2.0", "id": 7, "result": {"action": "accept", "content": {}}}]
    assert len(engine.conn) == 0 and len(engine.sweep) == 0


def test_a_job_the_reader_finds_no_slot_for_is_answered_busy_through_the_connection() -> None:
    desk, sent = FakeDesk(), new_list()
    engine = legacy_engine(desk, sent, pool=HerePool(free=False))
    engine.on_request(12, "elicitation/create", FORM_PARAMS)
    assert sent == [BUSY_ANSWER] and desk.noted == [("elicitation", "busy")]
    assert len(engine.conn) == 0 and len(engine.sweep) == 0


def test_a_refusal_of_the_checks_is_written_counted_and_logged_by_the_desk() -> None:
    desk, sent = FakeDesk(), new_list()
    engine = legacy_engine(desk, sent)
    engine.on_request(8, "tools/call", {})
    assert desk.asked == []
    assert sent == [error_answer(8, -32601, "method not found: 'tools/call'")]
    assert desk.noted == [("other", "method")]


def test_a_refused_answer_is_written_as_an_error() -> None:
    desk, sent = FakeDesk({"action": "sure"}), new_list()
    engine = legacy_engine(desk, sent)
    engine.on_request(9, "elicitation/create", FORM_PARAMS)
    assert sent == [error_answer(9, -32603, "the input handler returned an invalid answer")]
    assert desk.stats.snapshot()["served"] == 0 and desk.noted == [("elicitation", "answer")]


@pytest.mark.parametrize("junk", [{1, 2}, float("nan"), object()], ids=["a set", "NaN", "an object"])
def test_an_answer_json_cannot_carry_is_a_refusal_of_the_answer_check_written_once(junk: Any) -> None:
    # the one deliberate change of the sans-IO connection: counted and noted as check "answer", not served
    desk, sent = FakeDesk({"roots": [], "junk": junk}, kinds=frozenset({"roots"})), new_list()
    engine = legacy_engine(desk, sent)
    engine.on_request(15, "roots/list", None)
    assert desk.asked == ["callback"]
    assert sent == [error_answer(15, -32603, "the input handler returned an invalid answer")]
    assert desk.noted == [("roots", "answer")] and dict(desk.stats.snapshot()["refused"]["roots"]) == {"answer": 1}
    assert desk.stats.snapshot().get("served", 0) == 0
    assert len(engine.conn) == 0 and len(engine.sweep) == 0


def test_a_request_past_its_handler_timeout_is_answered_by_the_engines_sweep() -> None:
    with freeze_time("2026-12-01") as frozen:
        desk, sent, watch = FakeDesk(), new_list(), Watch()
        pool = ParkedPool()  # the callback never gets to run
        engine = legacy_engine(desk, sent, watch, pool)
        engine.on_request(10, "elicitation/create", FORM_PARAMS)
        (sweep,) = watch.registered
        (entry,) = engine.conn.open_requests()
        frozen.tick(6)
        sweep()
        assert sent == [error_answer(10, -32603, "the input handler timed out")]
        assert entry.token.reason == "timeout" and desk.stats.snapshot()["timed_out"] == 1
        assert len(engine.conn) == 0
        pool.run_parked()  # the late answer is dropped
        assert len(sent) == 1 and desk.stats.snapshot().get("served", 0) == 0


def test_a_request_the_server_cancels_is_taken_off_the_sweep_and_never_answered() -> None:
    desk, sent = FakeDesk(), new_list()
    pool = ParkedPool()
    engine = legacy_engine(desk, sent, pool=pool)
    engine.on_request(11, "elicitation/create", FORM_PARAMS)
    (entry,) = engine.conn.open_requests()
    engine.on_cancelled(11)
    assert sent == [] and len(engine.conn) == 0 and len(engine.sweep) == 0
    assert entry.token.reason == "cancelled by the server"
    pool.run_parked()
    assert sent == []


@pytest.mark.parametrize("pool_type", [FullPool, RacedPool], ids=["full", "lost-race"])
def test_the_request_over_the_cap_is_answered_busy_once_and_counted(pool_type: type[FullPool]) -> None:
    # full: refused before it is opened. lost-race: ``free`` said a slot was free, submit() found none
    # (over HTTP two readers can take slots at once): the request, open already, is answered busy
    # through the connection all the same, and taken off the sweep
    desk, sent, pool = FakeDesk(), new_list(), pool_type()
    engine = legacy_engine(desk, sent, pool=pool)
    engine.on_request(12, "elicitation/create", FORM_PARAMS)
    assert sent == [BUSY_ANSWER]
    assert desk.asked == []  # no callback
    assert desk.noted == [("elicitation", "busy")]
    assert dict(desk.stats.snapshot()["refused"]["elicitation"]) == {"busy": 1}
    assert len(engine.conn) == 0 and len(engine.sweep) == 0
    assert pool.starts == (0 if pool_type is FullPool else 1)
    engine.on_cancelled(12)  # too late: nothing more
    engine.close(True)
    assert sent == [BUSY_ANSWER]


def test_a_request_when_the_pool_has_shut_down_is_answered_closing_once() -> None:
    desk, sent = FakeDesk(), new_list()
    engine = legacy_engine(desk, sent, pool=ShutPool())
    engine.on_request(13, "elicitation/create", FORM_PARAMS)
    assert sent == [error_answer(13, -32603, "the client is closing")]
    assert desk.noted == [] and len(engine.conn) == 0 and len(engine.sweep) == 0


def test_an_id_reused_while_open_is_dropped_and_the_first_keeps_its_one_answer() -> None:
    desk, sent = FakeDesk(), new_list()
    pool = ParkedPool()
    engine = legacy_engine(desk, sent, pool=pool)
    engine.on_request(5, "elicitation/create", dict(FORM_PARAMS, message="first"))
    engine.on_request(5, "elicitation/create", dict(FORM_PARAMS, message="again"))
    assert sent == [] and desk.asked == []  # the duplicate never reached the pool
    assert len(engine.conn) == 1 and len(pool.jobs) == 1
    engine.on_request("5", "elicitation/create", dict(FORM_PARAMS, message="a string id"))  # another id
    assert len(engine.conn) == 2 and len(pool.jobs) == 2
    pool.run_parked()
    assert sorted((answer["id"] for answer in sent), key=repr) == ["5", 5]
    assert all("result" in answer for answer in sent) and len(engine.conn) == 0
    engine.on_request(5, "elicitation/create", dict(FORM_PARAMS, message="once answered, the id is free"))
    assert len(pool.jobs) == 3


def test_ping_is_answered_at_once_without_the_desk_or_a_slot() -> None:
    desk, sent = FakeDesk(), new_list()
    pool = FullPool()
    engine = legacy_engine(desk, sent, pool=pool)
    engine.on_request(14, "ping", None)
    engine.on_request("p", "ping", {})
    assert sent == [{"jsonrpc": "2.0", "id": 14, "result": {}}, {"jsonrpc": "2.0", "id": "p", "result": {}}]
    assert desk.asked == [] and pool.starts == 0 and len(engine.conn) == 0


def test_a_request_with_an_id_of_no_valid_type_is_answered_invalid_without_an_id() -> None:
    desk, sent = FakeDesk(), new_list()
    engine = legacy_engine(desk, sent)
    engine.on_request(1.5, "elicitation/create", FORM_PARAMS)
    engine.on_request(None, "ping", None)
    assert sent == [error_answer(None, -32600, "invalid request id")] * 2
    assert desk.asked == []


def test_close_answers_what_is_open_once_and_drops_the_late_answers() -> None:
    desk, sent = FakeDesk(), new_list()
    pool = ParkedPool()
    engine = legacy_engine(desk, sent, pool=pool)
    engine.on_request(1, "elicitation/create", FORM_PARAMS)
    engine.on_request("two", "elicitation/create", FORM_PARAMS)
    entries = engine.conn.open_requests()
    engine.close(True)
    assert sorted(sent, key=by_id) == sorted(
        [error_answer(1, -32603, "the client is closing"), error_answer("two", -32603, "the client is closing")], key=by_id
    )
    assert [entry.token.reason for entry in entries] == ["closed", "closed"]
    assert len(engine.conn) == 0 and len(engine.sweep) == 0
    pool.run_parked()  # the callbacks return after close: their answers are dropped
    engine.close(True)  # closing again answers nothing twice
    assert len(sent) == 2 and desk.stats.snapshot().get("served", 0) == 0
    engine.on_request(3, "elicitation/create", dict(FORM_PARAMS, message="after close"))
    assert sent[-1] == error_answer(3, -32603, "the client is closing") and len(sent) == 3
    assert len(pool.jobs) == 2 and len(engine.conn) == 0


def test_close_without_answering_sets_the_tokens_and_writes_nothing() -> None:
    desk, sent = FakeDesk(), new_list()
    pool = ParkedPool()
    engine = legacy_engine(desk, sent, pool=pool)
    engine.on_request(1, "elicitation/create", FORM_PARAMS)
    (entry,) = engine.conn.open_requests()
    engine.close(False)
    assert sent == [] and entry.token.reason == "closed"


def test_a_late_answer_the_check_refuses_is_neither_written_nor_counted() -> None:
    # the server cancelled the request while its callback ran; the callback then returns an invalid answer
    desk, sent, pool = FakeDesk({"action": "sure"}), new_list(), ParkedPool()
    engine = legacy_engine(desk, sent, pool=pool)
    engine.on_request(16, "elicitation/create", FORM_PARAMS)
    engine.on_cancelled(16)
    pool.run_parked()
    assert sent == [] and desk.noted == [] and desk.stats.snapshot()["refused"] == {}


class CancelWhileTying(CallTable):
    """A call table whose ``tie`` lets the server's cancel of the request land before ``tie`` returns
    (HTTP: the cancel arrives on another stream's thread while the request is being opened)."""

    engine: Optional[LegacyEngine] = None

    def tie(self, inbound: Any, now: float, stream: Any = None, by_stream: bool = False) -> Any:
        chosen = super().tie(inbound, now, stream, by_stream)
        assert self.engine is not None
        self.engine.on_cancelled(inbound.id)  # sees no call on the entry yet: it cannot resume it
        return chosen


def test_a_request_cancelled_while_it_is_tied_resumes_its_call_and_is_never_run() -> None:
    desk, sent, pool = FakeDesk(), new_list(), ParkedPool()
    engine = legacy_engine(desk, sent, pool=pool)
    table = CancelWhileTying()
    engine.calls = table
    table.engine = engine
    call = Call(1, "tools/call", True, {}, CallClock(_clock.monotonic(), 30.0, 300.0))
    assert table.add(call)
    engine.on_request(17, "elicitation/create", FORM_PARAMS)
    assert not call.clock.paused and call.tied == set()  # the call's timeout runs again
    assert pool.jobs == [] and sent == [] and len(engine.conn) == 0 and len(engine.sweep) == 0
