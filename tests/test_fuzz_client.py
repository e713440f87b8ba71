"""Fuzzing a real Client over the in-memory transport, in both eras (issue #8).

Budgets: see tests/fuzz_profiles.py. Long run::

    MIS_FUZZ=long python -m pytest -n auto tests/test_fuzz_*.py -q

The test thread plays the server on the far end of ``memory_pair()``: it
answers the handshake, then a hypothesis state machine sends any sequence of
server requests (every input method, ``ping`` and junk methods, valid,
duplicate and invalid ids, well-formed and malformed params), cancellations,
responses to unknown ids, notifications, logs, progress, non-JSON lines and
non-objects. The handler's callbacks answer, raise, refuse
(``InputRefused``, also with data JSON cannot encode), return junk
(non-dicts, invalid answers, values JSON cannot encode), answer with lone
surrogates, run past a short ``handler_timeout`` (sampling and roots), or
hold until released (elicitation: the request stays open while duplicates
and cancellations arrive). The client's own calls (``call_tool``,
``read_resource``, ``get_prompt``) may be in flight meanwhile, so server
requests tie to them; their responses come once, twice, as errors, or
early for an id not yet used. A modern machine also runs whole
``input_required`` calls.

Determinism without sleeping: after each message the machine sends a
notification as a barrier and waits (bounded) until the handler's
``handle_notification`` sees it, so the reader has handled everything before;
an answer computed on a worker thread is waited for by id (bounded).

What it proves:

* no exception escapes the reader (a "could not be handled" log record
  fails the test); text a server chose (a method name with line breaks or
  lone surrogates) reaches the local log as one line a UTF-8 handler can
  write and no thread dies of an unhandled exception (pytest
  turns that warning into an error);
* legacy: every server request gets exactly one answer, except one the
  server cancelled while it was open (none, even after its callback
  returns) and a duplicate of an id still open (dropped); a callback past
  its ``handler_timeout`` gets one -32603 "timed out" and its late answer
  is dropped; an unreadable request whose id can be salvaged gets one
  error; ``ping`` is answered ``{}``; a request with an invalid id gets one -32600 with id
  ``null``; a message with a non-string method and a fresh id gets one
  -32600;
* modern: the client writes no JSON-RPC response at all; a whole call with
  ``input_required`` rounds retries with the original params, the round's
  keys in ``inputResponses`` and ``requestState`` echoed exactly (lone
  surrogates included), and more than ``max_rounds`` rounds raise
  ``ClientError(kind="protocol", check="rounds")``;
* every line the client writes is one JSON object in pure ASCII (checked
  as it is written, by the transport the test builds);
* all from outside the client (its stats, its threads by their documented
  names, what the server received): the open server requests are exactly
  the held ones (legacy: a ``ping`` reusing the id of an open request is
  dropped, any other is answered ``{}``), never more than
  ``max_server_requests``, and no more workers than that; the client's
  request ids are never reused; a server request is tied to the call in
  flight when there is one and to none otherwise (``ctx.related_request_id``:
  the call table holds only that call), and ``close()`` cancels exactly the
  call in flight; every notification was delivered or counted dropped
  (``stats["notifications_dropped"]``), none waits after a barrier; no
  input thread (``mcp-input-sync-input-<n>``, a parallel modern round)
  outlives its call; after ``close()`` every open request was answered
  -32603 (legacy) and no library thread is left.

The bounds themselves (the inbox at its cap, the call table, the
notification queue's capacity, the desk's tokens) are proved on the parts
alone in tests/test_bounds.py.
"""

from __future__ import annotations

import itertools
import json
import logging
import threading
from typing import Any, Optional

from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

import mcp_input_sync as mis
from mcp_input_sync._protocol import jsonrpc
from mcp_input_sync.transports.base import ANSWER, Outgoing
from mcp_input_sync.transports.memory import MemoryPeer, MemoryTransport

from .fuzz_profiles import CLIENT
from .harness import wait_until

WAIT = 5.0  # real seconds: the bound of every wait (never reached when all is well)
SURROGATE = "\ud800x\udfff"
FORM = {"type": "object", "properties": {"answer": {"type": "string"}}}
MODERN = "2026-07-28"

_barrier_ids = itertools.count(1)
#: The ids a legacy probe pings: every id ``legacy_ids`` may open.
PROBE_IDS: list[Any] = [0, 1, 2, 3, "0", "1", "a", "", SURROGATE]


class Gate:
    """A held callback: it waits (bounded) until released or cancelled."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.released = threading.Event()


class FuzzHandler(mis.InputHandler):
    """Behaviour chosen by the request: ``message``/``systemPrompt`` is ``"<behaviour>:<tag>"``."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.gates: dict[str, Gate] = {}
        self.roots_behaviour = "ok"
        self.barriers: set[int] = set()
        self.seen = threading.Condition(self.lock)
        self.notifications = 0
        #: tag -> ``ctx.related_request_id`` of each elicitation and sampling callback that ran
        self.related: dict[str, Any] = {}

    def gate(self, tag: str) -> Gate:
        with self.lock:
            return self.gates.setdefault(tag, Gate())

    def _behave(self, spec: Any, ctx: mis.InputContext, ok: dict[str, Any], surrogate: dict[str, Any], tagged: bool = True) -> dict[str, Any]:
        behaviour, _, tag = spec.partition(":") if isinstance(spec, str) else ("ok", "", "")
        if tagged and tag:
            with self.lock:
                self.related[tag] = ctx.related_request_id  # the call this request was tied to, if any
        if behaviour == "raise":
            raise RuntimeError("callback failed")  # (exception text never goes on the wire)
        if behaviour == "refuse":
            raise mis.InputRefused(-32001, "refused " + SURROGATE, {"why": SURROGATE})
        if behaviour == "refuse_junk":
            raise mis.InputRefused(-32002, "refused", {"bad": object()})
        if behaviour == "junk":
            return "not a dict"  # type: ignore[return-value]
        if behaviour == "unencodable":
            return dict(ok, _meta={"x": {1, 2}, "nan": float("nan")})
        if behaviour == "surrogate":
            return surrogate
        if behaviour == "slow":  # runs past handler_timeout; its late answer must be dropped
            ctx.wait_cancelled(WAIT)
            return ok
        if behaviour == "hold":
            gate = self.gate(tag)
            gate.entered.set()
            for _ in range(int(WAIT * 20)):
                if gate.released.wait(0.05) or ctx.cancelled:
                    break
        return ok

    def handle_elicitation(self, params: dict[str, Any], ctx: mis.InputContext) -> dict[str, Any]:
        return self._behave(
            params.get("message"),
            ctx,
            {"action": "accept", "content": {"answer": "yes"}},
            {"action": "accept", "content": {"answer": SURROGATE}},
        )

    def handle_sampling(self, params: dict[str, Any], ctx: mis.InputContext) -> dict[str, Any]:
        return self._behave(
            params.get("systemPrompt"),
            ctx,
            {"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "m"},
            {"role": "assistant", "content": {"type": "text", "text": SURROGATE}, "model": SURROGATE},
        )

    def list_roots(self, ctx: mis.InputContext) -> dict[str, Any]:
        return self._behave(
            self.roots_behaviour,
            ctx,
            {"roots": [{"uri": "file:///tmp/a/../b"}, {"uri": "https://x/"}]},
            {"roots": [{"uri": "file:///" + SURROGATE, "name": SURROGATE}]},
            tagged=False,  # a roots callback has no params to name its request: it may run after the next one was sent
        )

    def handle_notification(self, method: str, params: dict[str, Any], ctx: mis.InputContext) -> None:
        with self.seen:
            self.notifications += 1
            if method == "notifications/fuzz/barrier" and isinstance(params, dict):
                self.barriers.add(params.get("n"))  # type: ignore[arg-type]
                self.seen.notify_all()
        if method == "notifications/fuzz/raise":
            raise RuntimeError("notification hook failed")

    def handle_log(self, entry: dict[str, Any], ctx: mis.InputContext) -> None:
        if entry.get("logger") == "raise":
            raise RuntimeError("log hook failed")


class ParallelFuzzHandler(FuzzHandler):
    """Answers a modern round's requests on threads of their own (``mcp-input-sync-input-<n>``)."""

    input_parallelism = 2


class CheckedTransport(MemoryTransport):
    """The memory transport, checking every line the client writes as it is written.

    Each must be one JSON message in pure ASCII, ending with its one line
    break; a line that is not is kept in ``bad`` (the invariants fail on it).
    """

    def __init__(self) -> None:
        super().__init__()
        self.bad: list[bytes] = []

    def send(self, data: bytes, info: Outgoing = ANSWER) -> None:
        if not (isinstance(data, bytes) and data.isascii() and data.endswith(b"\n") and data.count(b"\n") == 1):
            self.bad.append(bytes(data))
        super().send(data, info)


def checked_pair() -> tuple[CheckedTransport, MemoryPeer]:
    """``memory_pair()`` with a :class:`CheckedTransport`."""
    transport = CheckedTransport()
    peer = MemoryPeer(transport)
    transport.peer = peer
    return transport, peer


class Reader(logging.Handler):
    """Collects the records that say an exception escaped the reader."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.failures: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if "could not be handled" in message:
            self.failures.append(self.format(record))
        # What a server sends reaches the local log only as one line a UTF-8 file can hold.
        if "\n" in message or "\r" in message:
            self.failures.append("a forged log line: " + ascii(message))
        try:
            message.encode("utf-8")
        except UnicodeEncodeError:
            self.failures.append("a log message no UTF-8 handler can write: " + ascii(message))


# ---------------------------------------------------------------------------- strategies

legacy_ids = st.one_of(st.integers(0, 3), st.sampled_from(["0", "1", "a", "", SURROGATE]))
behaviours = st.sampled_from(["ok", "raise", "refuse", "refuse_junk", "junk", "unencodable", "surrogate", "hold", "slow"])
#: handler_timeout of the kinds whose callbacks may run "slow" (elicitation keeps its 300 s: it may "hold").
SHORT_TIMEOUT = 0.05
json_junk = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=5), st.just(SURROGATE)),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=3), inner, max_size=3)),
    max_leaves=8,
)


def input_params(method: str, spec: str, variant: int, junk: Any) -> Any:
    """Well-formed params for ``method`` (variant 0), or a malformed variant."""
    if variant == 1:
        return junk
    if method == "elicitation/create":
        params: dict[str, Any] = {"message": spec, "requestedSchema": FORM}
        if variant == 2:
            params["requestedSchema"] = {"type": "object", "properties": {"x": {"$ref": "#/a"}}}
        elif variant == 3:
            params = {"message": spec, "mode": "url", "url": "javascript:alert(1)", "elicitationId": "e"}
        return params
    if method == "sampling/createMessage":
        params = {"messages": [{"role": "user", "content": {"type": "text", "text": "q"}}], "maxTokens": 10, "systemPrompt": spec}
        if variant == 2:
            params["maxTokens"] = True
        elif variant == 3:
            params["tools"] = [{"name": "t"}]
        return params
    if method == "roots/list":
        return None if variant == 0 else {"_meta": {}}
    return {"x": junk}


# ---------------------------------------------------------------------------- the server side


class Server:
    """The far end of the pair, driven from the test thread (bounded waits only)."""

    def __init__(self, era: str, handler: FuzzHandler, **options: Any) -> None:
        self.transport, self.peer = checked_pair()
        #: Every thread alive before the client existed: the client's are the others.
        self.before = set(threading.enumerate())
        #: Notifications sent that reach ``handle_notification`` (each delivered, or counted dropped).
        self.notifications_sent = 0
        self.handler = handler
        self.era = era
        self.written: list[Any] = []  # every response the client wrote after the handshake
        self.client_messages: list[Any] = []  # the client's own requests and notifications
        self.answers: dict[Any, list[Any]] = {}  # id_key (or None) -> responses
        self.client = mis.Client(
            self.transport, handler=handler, protocol="legacy" if era == "legacy" else "modern", timeout=WAIT, server_id="fuzz", **options
        )
        failure: list[BaseException] = []

        def opener() -> None:
            try:
                self.client.open()
            except BaseException as exc:  # pragma: no cover - reported below
                failure.append(exc)

        thread = threading.Thread(target=opener, name="fuzz-open", daemon=True)
        thread.start()
        first = self.next_message()
        if era == "legacy":
            assert first["method"] == "initialize"
            self.send(jsonrpc.result(first["id"], {"protocolVersion": first["params"]["protocolVersion"], "capabilities": {"tools": {}}, "serverInfo": {"name": "fuzz", "version": "1"}}))
            assert self.next_message()["method"] == "notifications/initialized"
        else:
            assert first["method"] == "server/discover"
            self.send(jsonrpc.result(first["id"], {"supportedVersions": [MODERN], "capabilities": {"tools": {}}}))
        thread.join(WAIT)
        assert not thread.is_alive() and not failure, failure

    # -- wire

    def send(self, message: Any) -> None:
        self.peer.send(message)

    def next_message(self, timeout: float = WAIT) -> Any:
        """The client's next message (``TimeoutError`` when none comes within ``timeout``).

        Each line was checked as it was written (:class:`CheckedTransport`).
        """
        message = self.peer.recv(timeout=timeout)
        assert message is not None, "the client closed the connection"
        assert type(message) is dict, message
        return message

    def next_or_end(self, thread: threading.Thread) -> Any:
        """The client's next message, or None once ``thread`` ended without writing one (bounded)."""
        for _ in range(int(WAIT / 0.05)):
            try:
                return self.next_message(timeout=0.05)
            except TimeoutError:
                if not thread.is_alive():
                    try:
                        return self.next_message(timeout=0.05)
                    except TimeoutError:
                        return None
        raise AssertionError("the client neither retried nor ended the call")

    def drain(self, eof_ok: bool = False) -> None:
        """Take whatever the client wrote so far."""
        while True:
            try:
                message = self.peer.recv(timeout=0)
            except TimeoutError:
                return
            if message is None and eof_ok:
                continue
            assert message is not None, "the client closed the connection"
            self.record(message)

    def record(self, message: Any) -> None:
        assert type(message) is dict, message
        if "method" in message:  # the client's own request or notification
            assert jsonrpc.classify(message) in (jsonrpc.REQUEST, jsonrpc.NOTIFICATION), message
            self.client_messages.append(message)
            return
        self.written.append(message)
        if jsonrpc.classify(message) == jsonrpc.RESPONSE:
            rid = message["id"]
            key = jsonrpc.id_key(rid) if jsonrpc.is_valid_id(rid) else None
            self.answers.setdefault(key, []).append(message)
            assert ("result" in message) != ("error" in message), message
            assert message.get("jsonrpc") == "2.0"

    def count(self, rid: Any) -> int:
        return len(self.answers.get(jsonrpc.id_key(rid) if jsonrpc.is_valid_id(rid) else None, []))

    def wait_answers(self, rid: Any, n: int) -> bool:
        """Wait (bounded) until ``rid`` has ``n`` answers."""
        self.drain()
        budget = int(WAIT / 0.05)
        while self.count(rid) < n and budget:
            budget -= 1
            try:
                message = self.peer.recv(timeout=0.05)
            except TimeoutError:
                continue
            assert message is not None, "the client closed the connection"
            self.record(message)
        return self.count(rid) >= n

    def library_threads(self, role: str) -> list[threading.Thread]:
        """The client's live ``mcp-input-sync-<role>-<n>`` threads (docs/threads-and-time.md names them)."""
        prefix = f"mcp-input-sync-{role}-"
        return [t for t in threading.enumerate() if t not in self.before and t.name.startswith(prefix) and t.is_alive()]

    def barrier(self) -> None:
        """Send a notification and wait until the handler sees it: the reader handled everything before."""
        n = next(_barrier_ids)
        self.send(jsonrpc.notification("notifications/fuzz/barrier", {"n": n}))
        self.notifications_sent += 1
        with self.handler.seen:
            assert self.handler.seen.wait_for(lambda: n in self.handler.barriers, WAIT), "barrier not reached"
        self.drain()


# ---------------------------------------------------------------------------- the machine


class ClientMachine(RuleBasedStateMachine):
    era = "legacy"

    def __init__(self) -> None:
        super().__init__()
        self.server: Optional[Server] = None
        self.log = Reader()
        logging.getLogger("mcp_input_sync").addHandler(self.log)
        self.expected: dict[Any, int] = {}  # id_key -> answers owed so far
        self.held: dict[Any, tuple[Any, str]] = {}  # id_key -> (id, tag) of open held requests
        self.cancelled_held: list[tuple[Any, str]] = []
        self.tags = itertools.count(1)
        self.junk_ids = itertools.count(1)
        self.cap = 8
        self.burst = 1000
        self.max_rounds = 1
        self.closed = False
        self.call: Optional[tuple[threading.Thread, Any, list[Any]]] = None
        #: tag -> the id of the call a legacy server request must be tied to (None: no call in flight)
        self.tied_to: dict[str, Any] = {}

    @initialize(cap=st.integers(1, 4), burst=st.sampled_from([3, 1000]), max_rounds=st.integers(1, 2), parallel=st.booleans())
    def start(self, cap: int, burst: int, max_rounds: int, parallel: bool) -> None:
        self.cap = cap
        self.burst = burst
        self.max_rounds = max_rounds
        # Legacy: sampling and roots callbacks may run "slow", past a short handler_timeout. Modern: only
        # the rounds of a call run callbacks (never slow), on threads of their own when ``parallel``.
        modern = self.era == "modern"
        self.server = Server(
            self.era,
            ParallelFuzzHandler() if modern and parallel else FuzzHandler(),
            max_server_requests=cap,
            max_rounds=max_rounds,
            input_rate_limit=(0.001 if burst == 3 else 1000.0, burst),
            sampling={"allow_idle": True},
            handler_timeout={} if modern else {"sampling": SHORT_TIMEOUT, "roots": SHORT_TIMEOUT},
        )

    @property
    def s(self) -> Server:
        assert self.server is not None
        return self.server

    def owe(self, rid: Any, n: int = 1) -> None:
        key = jsonrpc.id_key(rid) if jsonrpc.is_valid_id(rid) else None
        self.expected[key] = self.expected.get(key, 0) + n

    def owed(self, rid: Any) -> int:
        return self.expected.get(jsonrpc.id_key(rid) if jsonrpc.is_valid_id(rid) else None, 0)

    # -- server requests

    @rule(
        rid=legacy_ids,
        method=st.sampled_from(["elicitation/create", "sampling/createMessage", "roots/list"]),
        behaviour=behaviours,
        variant=st.sampled_from([0, 0, 0, 1, 2, 3]),
        junk=json_junk,
    )
    def input_request(self, rid: Any, method: str, behaviour: str, variant: int, junk: Any) -> None:
        s = self.s
        tag = str(next(self.tags))
        if method != "elicitation/create" and behaviour == "hold":
            behaviour = "slow"  # only elicitation may hold (the others have a short handler_timeout)
        elif method == "elicitation/create" and behaviour == "slow":
            behaviour = "hold"
        spec = f"{behaviour}:{tag}"
        if method == "roots/list":
            s.handler.roots_behaviour = behaviour  # list_roots sees no params
        # the call it is tied to, should its callback run: the call in flight, the only one (memory is stdio-like)
        self.tied_to[tag] = None if self.call is None else self.call[1]["id"]
        s.send(jsonrpc.request(rid, method, input_params(method, spec, variant, junk)))
        key = jsonrpc.id_key(rid)
        if self.era == "modern" or key in self.held:  # never answered / a duplicate of an open id: dropped
            s.barrier()
            return
        if behaviour == "hold":
            gate = s.handler.gate(tag)
            for _ in range(int(WAIT / 0.05)):  # either refused at once (answered) or the callback holds
                if gate.entered.wait(0.05):
                    break
                s.drain()
                if s.count(rid) > self.owed(rid):
                    break
            if gate.entered.is_set():
                self.held[key] = (rid, tag)
                s.barrier()
                return
        self.owe(rid)
        assert s.wait_answers(rid, self.owed(rid)), f"no answer to {method} {rid!r} ({spec}, variant {variant})"
        if behaviour == "slow" and variant == 0 and not self.held and self.burst > 3:
            last = s.answers[key][-1]
            assert last.get("error", {}).get("message") == "the input handler timed out", last
        s.barrier()

    @rule(rid=legacy_ids, method=st.sampled_from(["ping", "tools/list", "junk/method", "", "notifications/initialized"]), params=json_junk)
    def other_request(self, rid: Any, method: str, params: Any) -> None:
        s = self.s
        s.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        if self.era == "legacy" and jsonrpc.id_key(rid) not in self.held:
            self.owe(rid)
            assert s.wait_answers(rid, self.owed(rid))
            last = s.answers[jsonrpc.id_key(rid)][-1]
            if method == "ping":
                assert last["result"] == {}
            else:
                assert last["error"]["code"] == jsonrpc.METHOD_NOT_FOUND
        s.barrier()

    @rule(
        rid=legacy_ids,
        method=st.text(st.one_of(st.characters(exclude_categories=()), st.sampled_from(["\n", "\r", "\ud800", "\x1b"])), max_size=8).filter(
            lambda m: m not in ("ping", "elicitation/create", "sampling/createMessage", "roots/list")
        ),
    )
    def hostile_method(self, rid: Any, method: str) -> None:
        s = self.s
        s.send(jsonrpc.request(rid, method, {}))
        if self.era == "legacy" and jsonrpc.id_key(rid) not in self.held:
            self.owe(rid)
            assert s.wait_answers(rid, self.owed(rid))
            assert s.answers[jsonrpc.id_key(rid)][-1]["error"]["code"] == jsonrpc.METHOD_NOT_FOUND
        s.barrier()

    @rule(rid=st.one_of(st.none(), st.booleans(), st.floats(allow_nan=False, allow_infinity=False), st.lists(st.integers(), max_size=2), st.dictionaries(st.text(max_size=2), st.integers(), max_size=2)))
    def request_with_invalid_id(self, rid: Any) -> None:
        s = self.s
        s.send({"jsonrpc": "2.0", "id": rid, "method": "elicitation/create", "params": {"message": "ok:0", "requestedSchema": FORM}})
        if self.era == "legacy":
            self.owe(None)
        s.barrier()

    @rule(method=st.one_of(st.integers(), st.booleans(), st.lists(st.integers(), max_size=2)), with_result=st.booleans())
    def invalid_message(self, method: Any, with_result: bool) -> None:
        s = self.s
        rid = f"junk-{next(self.junk_ids)}"
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if with_result:
            message["result"] = {}
        s.send(message)
        if self.era == "legacy" and not with_result:
            self.owe(rid)  # one -32600
        s.barrier()

    # -- the client's own calls (server requests read meanwhile are tied to them)

    @precondition(lambda self: self.server is not None and self.call is None)
    @rule(method=st.sampled_from(["call_tool", "read_resource", "get_prompt"]))
    def start_call(self, method: str) -> None:
        s = self.s
        client = s.client
        outcome: list[Any] = []
        args = {"call_tool": ("tool", {"a": SURROGATE}), "read_resource": ("file:///r",), "get_prompt": ("p",)}[method]

        def caller() -> None:
            try:
                outcome.append(getattr(client, method)(*args))
            except BaseException as exc:
                outcome.append(exc)

        thread = threading.Thread(target=caller, name="fuzz-call", daemon=True)
        thread.start()
        before = len(s.client_messages)
        for _ in range(int(WAIT / 0.05)):
            if len(s.client_messages) > before:
                break
            try:
                s.record(s.next_message(timeout=0.05))
            except TimeoutError:
                pass
        request = s.client_messages[before]
        assert request["method"] in ("tools/call", "resources/read", "prompts/get") and "id" in request
        self.call = (thread, request, outcome)

    @precondition(lambda self: self.call is not None)
    @rule(error=st.booleans(), duplicate=st.booleans(), early=st.booleans())
    def finish_call(self, error: bool, duplicate: bool, early: bool) -> None:
        s = self.s
        assert self.call is not None
        thread, request, outcome = self.call
        rid = request["id"]
        if early:  # a response for the client's next id, before it exists: dropped
            s.send(jsonrpc.result(rid + 1, {"content": []}))
        answer = jsonrpc.error(rid, -32000, "nope " + SURROGATE) if error else jsonrpc.result(rid, {"content": [], "contents": [], "messages": []})
        s.send(answer)
        if duplicate:
            s.send(answer)
        thread.join(WAIT)
        assert not thread.is_alive(), "the call did not end"
        self.call = None
        [got] = outcome
        if error:
            assert isinstance(got, mis.ClientError) and (got.kind, got.code) == ("remote", -32000), got
        else:
            assert isinstance(got, (dict, list)), got
        s.barrier()

    # -- cancellations and releases

    @precondition(lambda self: bool(self.held))
    @rule(data=st.data())
    def release(self, data: st.DataObject) -> None:
        s = self.s
        key = data.draw(st.sampled_from(sorted(self.held, key=repr)))
        rid, tag = self.held.pop(key)
        s.handler.gate(tag).released.set()
        self.owe(rid)
        assert s.wait_answers(rid, self.owed(rid)), f"released {rid!r} was not answered"
        s.barrier()

    @precondition(lambda self: bool(self.held))
    @rule(data=st.data())
    def cancel_held(self, data: st.DataObject) -> None:
        """The server cancels a request whose callback holds: no answer, ever, and its id is free again."""
        key = data.draw(st.sampled_from(sorted(self.held, key=repr)))
        self.cancel(self.held[key][0], "ok")

    @rule(rid=st.one_of(legacy_ids, json_junk), shape=st.sampled_from(["ok", "no_params", "junk_params"]))
    def cancel(self, rid: Any, shape: str) -> None:
        s = self.s
        params: Any = {"requestId": rid, "reason": SURROGATE}
        if shape == "no_params":
            params = None
        elif shape == "junk_params":
            params = [rid]
        s.send(jsonrpc.notification("notifications/cancelled", params))
        s.barrier()
        if shape == "ok" and jsonrpc.is_valid_id(rid) and jsonrpc.id_key(rid) in self.held:
            rid_, tag = self.held.pop(jsonrpc.id_key(rid))
            self.cancelled_held.append((rid_, tag))
            s.handler.gate(tag).released.set()  # its late answer must be dropped

    # -- everything else a server may send

    @rule(
        kind=st.sampled_from(["not_json", "non_object", "unknown_response", "bad_response", "notification", "log", "progress", "raise_hook", "bytes", "deep", "truncated"]),
        junk=json_junk,
    )
    def noise(self, kind: str, junk: Any) -> None:
        s = self.s
        if kind == "not_json":
            s.send(b"{not json\n")
        elif kind == "bytes":
            s.send(b"\xff\xfe\x00{\"id\":1}\n")
        elif kind in ("deep", "truncated"):
            # Unreadable requests whose id can still be read: legacy answers each once (-32700).
            rid = f"deep-{next(self.junk_ids)}"
            body = b"[" * 5000 if kind == "deep" else b'{"message": "ok:0", "requestedSchema": {'
            s.send(b'{"jsonrpc":"2.0","id":"' + rid.encode() + b'","method":"elicitation/create","params":' + body + b"\n")
            if self.era == "legacy":
                self.owe(rid)
        elif kind == "non_object":
            s.send(json.dumps(junk if not isinstance(junk, dict) else [junk]).encode() + b"\n")
        elif kind == "unknown_response":
            s.send(jsonrpc.result(987_654 if not isinstance(junk, int) else junk + 10_000, {"x": junk}))
            s.send(jsonrpc.error("nobody", -1, "late", junk))
        elif kind == "bad_response":
            s.send({"jsonrpc": "2.0", "id": 55_555, "result": junk, "error": junk})
        elif kind == "notification":
            s.send(jsonrpc.notification("notifications/tools/list_changed", junk if isinstance(junk, dict) else None))
            s.send({"jsonrpc": "2.0", "method": "notifications/whatever", "params": junk})
            s.notifications_sent += 2
        elif kind == "log":
            s.send({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": junk, "logger": "raise", "data": junk}})
            s.send({"jsonrpc": "2.0", "method": "notifications/message", "params": junk})
        elif kind == "progress":
            s.send({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": junk, "progress": junk}})
        elif kind == "raise_hook":
            s.send(jsonrpc.notification("notifications/fuzz/raise", {"x": junk}))
            s.notifications_sent += 1
        s.barrier()

    # -- invariants

    @invariant()
    def answered_exactly_as_owed(self) -> None:
        if self.server is None:
            return
        s = self.s
        s.drain(eof_ok=self.closed)
        assert not self.log.failures, self.log.failures
        assert not s.transport.bad, s.transport.bad  # every line written: one JSON message in pure ASCII
        if self.era == "modern":
            responses = [m for m in s.written if jsonrpc.classify(m) == jsonrpc.RESPONSE]
            assert responses == [], responses
        for key in set(self.expected) | set(s.answers):
            got = len(s.answers.get(key, []))
            assert got == self.expected.get(key, 0), (key, got, self.expected.get(key, 0), s.answers.get(key))
        for message in s.written:
            assert jsonrpc.classify(message) == jsonrpc.RESPONSE, message
        for message in s.client_messages:  # only the calls this machine made, and their cancellation at close
            assert message["method"] in ("tools/call", "resources/read", "prompts/get", "notifications/cancelled"), message
        ids = [message["id"] for message in s.client_messages if "id" in message]
        assert len(ids) == len(set(ids)), ids  # a request id is never used twice
        if not self.closed:  # nothing is abandoned while the machine runs: every call gets its response
            assert [m for m in s.client_messages if m["method"] == "notifications/cancelled"] == []

    @invariant()
    def open_requests_are_exactly_the_held_ones(self) -> None:
        """Legacy: the client holds open exactly the requests whose callbacks are held, never more than the cap.

        Watched from the wire: a ``ping`` reusing the id of an open request is
        dropped as a duplicate; any other ``ping`` is answered ``{}`` at once.
        """
        if self.server is None:
            return
        s = self.s
        assert len(self.held) <= self.cap
        assert len(s.library_threads("worker")) <= self.cap  # at most max_server_requests callbacks at once
        if self.era != "legacy":
            return
        for rid in PROBE_IDS:
            s.send(jsonrpc.request(rid, "ping", None))
            if jsonrpc.id_key(rid) not in self.held:
                self.owe(rid)
        s.barrier()  # every ping was read, and answered on the reader thread
        for rid in PROBE_IDS:
            assert s.count(rid) == self.owed(rid), (rid, s.answers.get(jsonrpc.id_key(rid)), sorted(self.held, key=repr))
            if jsonrpc.id_key(rid) not in self.held:
                assert s.answers[jsonrpc.id_key(rid)][-1]["result"] == {}

    @invariant()
    def requests_tie_to_the_call_in_flight(self) -> None:
        """Each callback ran for the call in flight when its request came (the call table holds only that call)."""
        if self.server is None:
            return
        handler = self.s.handler
        with handler.lock:
            related = dict(handler.related)
        for tag, call_id in related.items():
            if tag in self.tied_to:  # a legacy server request (a modern round's callbacks are the call's own)
                assert call_id == self.tied_to[tag], (tag, call_id, self.tied_to[tag])

    @invariant()
    def notifications_are_delivered_or_counted(self) -> None:
        """After a barrier nothing waits in the notification queue: each ran, or was dropped and counted."""
        if self.server is None:
            return
        s = self.s
        with s.handler.seen:
            delivered = s.handler.notifications
        assert delivered + s.client.stats["notifications_dropped"] == s.notifications_sent

    @invariant()
    def no_input_thread_outlives_its_call(self) -> None:
        if self.server is None or self.call is not None:
            return
        s = self.s
        assert wait_until(lambda: not s.library_threads("input"), WAIT), [t.name for t in s.library_threads("input")]

    def teardown(self) -> None:
        try:
            if self.server is None:
                return
            s = self.s
            still_open = list(self.held.values())
            in_flight = None if self.call is None else self.call[1]["id"]
            s.client.close(timeout=WAIT)
            self.closed = True
            if self.call is not None:
                thread, _, outcome = self.call
                thread.join(WAIT)
                assert not thread.is_alive() and isinstance(outcome[0], mis.ClientError), outcome
                self.call = None
            # Released after close: their late answers are dropped.
            for _, tag in still_open + self.cancelled_held:
                s.handler.gate(tag).released.set()
            s.drain(eof_ok=True)
            if self.era == "legacy":
                for rid, _ in still_open:
                    self.owe(rid)
                    last = s.answers.get(jsonrpc.id_key(rid), [None])[-1]
                    assert last is not None and last["error"]["code"] == jsonrpc.INTERNAL_ERROR, last
            self.held.clear()
            self.answered_exactly_as_owed()
            # close() cancels exactly the call in flight: the call table held nothing else
            cancelled = [m["params"]["requestId"] for m in s.client_messages if m["method"] == "notifications/cancelled"]
            assert cancelled == ([] if in_flight is None else [in_flight]), (cancelled, in_flight)
            assert not self.log.failures, self.log.failures
            s.peer.close()
        finally:
            logging.getLogger("mcp_input_sync").removeHandler(self.log)


class ModernMachine(ClientMachine):
    era = "modern"

    @precondition(lambda self: self.server is not None and self.call is None)
    @rule(
        rounds=st.integers(0, 3),
        states=st.lists(st.one_of(st.none(), st.text(max_size=6), st.just(SURROGATE), st.just("")), min_size=4, max_size=4),
        arguments=json_junk,
        behaviour=st.sampled_from(["ok", "ok", "surrogate", "raise", "junk"]),
    )
    def modern_call(self, rounds: int, states: list[Optional[str]], arguments: Any, behaviour: str) -> None:
        s = self.s
        client = s.client
        s.handler.roots_behaviour = "ok"
        max_rounds = self.max_rounds
        outcome: list[Any] = []
        tool_args: dict[str, Any] = arguments if isinstance(arguments, dict) else {"a": arguments}
        original: dict[str, Any] = {"name": "tool", "arguments": tool_args}

        def caller() -> None:
            try:
                outcome.append(client.call_tool("tool", tool_args))
            except BaseException as exc:
                outcome.append(exc)

        thread = threading.Thread(target=caller, name="fuzz-call", daemon=True)
        thread.start()
        try:
            request = s.next_message()
            answered = 0
            for n in range(rounds + 1):
                last_id = request["id"]
                assert request["method"] == "tools/call"
                params = dict(request["params"])
                assert params.pop("_meta")["io.modelcontextprotocol/protocolVersion"] == MODERN
                sent_state = states[n - 1] if n else None
                responses = params.pop("inputResponses", None)
                echoed = params.pop("requestState", None)
                assert params == original  # the original params, unchanged
                assert echoed == sent_state  # echoed exactly, only when sent
                if n:
                    assert responses is not None and sorted(responses) == ["b", "k"]
                    answered += 1
                if n == rounds:
                    s.send(jsonrpc.result(request["id"], {"content": [{"type": "text", "text": "done"}]}))
                    break
                result: dict[str, Any] = {
                    "resultType": "input_required",
                    "inputRequests": {
                        "k": {"method": "elicitation/create", "params": {"message": f"{behaviour}:r{n}", "requestedSchema": FORM}},
                        "b": {"method": "roots/list"},
                    },
                }
                if states[n] is not None:
                    result["requestState"] = states[n]
                s.send(jsonrpc.result(request["id"], result))
                if n + 1 > max_rounds or behaviour in ("raise", "junk"):
                    break  # the client stops: no retry
                request = s.next_or_end(thread)
                if request is None:
                    break  # the call ended without a retry (its input budget ran out)
            thread.join(WAIT)
            assert not thread.is_alive(), "the call did not end"
        finally:
            thread.join(WAIT)
        [got] = outcome
        if isinstance(got, mis.ClientError) and (got.kind, got.check) == ("refused", "budget"):
            assert self.burst == 3 and rounds, got  # only the small input budget refuses
        elif behaviour in ("raise", "junk") and rounds:
            assert isinstance(got, mis.ClientError) and got.kind == "input_handler", got
        elif rounds > max_rounds:
            assert isinstance(got, mis.ClientError) and (got.kind, got.check) == ("protocol", "rounds"), got
        else:
            assert isinstance(got, dict) and got["content"][0]["text"] == "done", got
        # A duplicate of the last response, and one for an id not yet used: both dropped.
        s.send(jsonrpc.result(last_id, {"content": []}))
        s.send(jsonrpc.result(last_id + 1, {"content": []}))
        s.barrier()


TestLegacyClient = ClientMachine.TestCase
TestLegacyClient.settings = CLIENT
TestModernClient = ModernMachine.TestCase
TestModernClient.settings = CLIENT
