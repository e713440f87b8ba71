#!/usr/bin/env python3
"""Scripted stdio MCP test peer for the 2026-07-28 ("modern") era and for era detection.

Stdlib only, raw JSON-RPC: one JSON object per line on stdin/stdout, written
with ``ensure_ascii`` (so bidi and control characters travel as ``\\uXXXX``
escapes) and flushed after every line.  Nothing but JSON-RPC goes to stdout;
diagnostics go to stderr, each line prefixed ``scripted: `` (the first one is
``scripted: mode=<mode>``).  The process exits on stdin EOF, after ending every
open ``subscriptions/listen`` (see below), unless ``--ignore-eof`` is given.

Usage::

    python tests/peers/scripted_server.py [MODE] [--ignore-eof]
        [--legacy-capabilities JSON] [--answer-version VERSION]

Constants used below::

    V     = "2026-07-28"
    META  = params._meta of the request being answered
    FORM(message) = {"method": "elicitation/create", "params": {"mode": "form",
             "message": message, "requestedSchema": {"type": "object",
             "properties": {"answer": {"type": "string"}}, "required": ["answer"]}}}
    TEXT(t) = {"resultType": "complete", "content": [{"type": "text", "text": t}],
               "isError": false}                      (modern tool result)
    LTEXT(t) = the same without "resultType"          (legacy tool result)
    ERR(code, message, data?) = {"jsonrpc": "2.0", "id": <request id>,
               "error": {"code": code, "message": message, "data"?: data}}

Modes (mutually exclusive; ``--modern`` is the default)
=======================================================

``--modern``
    ``server/discover`` -> DISCOVER::

        {"resultType": "complete", "supportedVersions": ["2026-07-28"],
         "capabilities": {"tools": {"listChanged": true},
                          "resources": {"subscribe": true, "listChanged": true},
                          "logging": {},
                          "extensions": {"io.modelcontextprotocol/tasks": {}}},
         "ttlMs": 60000, "cacheScope": "private",
         "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "scripted", "version": "1"}}}

    ``initialize`` -> ERR(-32602, "Unsupported protocol version",
    {"supported": ["2026-07-28"], "requested": params.protocolVersion (null if absent)}).
    Everything else is served with modern semantics (below).
``--unsupported-version``
    Exactly the modern behaviour, named for readability in tests where the
    client forces another version: any request whose
    ``META["io.modelcontextprotocol/protocolVersion"]`` is not V gets
    ERR(-32022, "Unsupported protocol version", {"supported": ["2026-07-28"],
    "requested": <that version>}); ``server/discover`` asking V gets DISCOVER.
``--late-discover SECONDS``
    Modern, except that ``server/discover`` (once its ``_meta`` validates) is
    answered with DISCOVER only after SECONDS, from a daemon timer thread, even
    if the client cancelled it meanwhile; ``initialize`` is ignored entirely
    (recorded, never answered).
``--legacy-only``
    Before ``initialize``: ``server/discover`` -> ERR(-32601, "Method not found").
    ``initialize`` -> legacy handshake (LEGACY INIT below), then legacy serving.
``--silent-probe``
    Before ``initialize``: ``server/discover`` is ignored (never answered).
    ``initialize`` -> LEGACY INIT.
``--supported-legacy``
    Before ``initialize``: ``server/discover`` -> ERR(-32022, "Unsupported
    protocol version", {"supported": ["2025-11-25", "2025-06-18"], "requested":
    <META protocolVersion if it is a string, else "2026-07-28">}).
    ``initialize`` -> LEGACY INIT.
``--crash-on-discover``
    If the first *request* (notifications do not count) before ``initialize``
    is anything but ``initialize`` (``server/discover``, ``ping``, ...), the
    process writes ``scripted: crashed`` to stderr and from then on reads and
    ignores every line (no answer to anything, ever; it still exits on EOF).
    A process whose first request is ``initialize`` behaves like
    ``--legacy-only`` after it.

In the legacy-family modes (``--legacy-only``, ``--silent-probe``,
``--supported-legacy``, ``--crash-on-discover``) a request other than
``initialize``, ``ping`` and ``server/discover`` that arrives before
``initialize`` gets ERR(-32600, "Server not initialized"); ``ping`` gets
``{}``.

Options
=======

``--ignore-eof``
    On stdin EOF, end the open listens as usual, then sleep forever instead
    of exiting (for shutdown escalation tests; SIGTERM still kills it).
``--legacy-capabilities JSON``
    Replace the legacy ``initialize`` result's capabilities (default
    ``{"tools": {}}``).
``--answer-version VERSION``
    Make LEGACY INIT answer with this protocolVersion whatever was asked.

Recording
=========

Every line read (in every mode, also while crashed) is appended, in arrival
order, to a list: the parsed JSON message as received (requests,
notifications, and responses the client sends, e.g. an answer to
``"srv-1"``), or ``{"unparsed": <line text>}`` for a line that is not JSON.
The tool ``_received {}`` (both eras) returns that list as JSON text in
``content[0].text``; the ``_received`` request itself is its last entry.
Non-JSON lines are answered with ERR(-32700) with id null; a JSON value that
is not an object, or an object with neither ``method`` nor ``id``, gets
ERR(-32600) with id null.  A response from the client also logs
``scripted: client sent a response (id ...)`` to stderr.

Legacy serving (after ``initialize``)
=====================================

LEGACY INIT: result ``{"protocolVersion": P, "capabilities": {"tools": {}},
"serverInfo": {"name": "scripted", "version": "1"}}`` where P is the requested
version if it is "2025-11-25" or "2025-06-18", else "2025-11-25" (or
``--answer-version``).  A repeated ``initialize`` is answered the same way.
``notifications/initialized`` is only recorded.  Then:

- ``ping`` -> ``{}``; ``server/discover`` -> ERR(-32601).
- ``tools/list`` -> ``{"tools": [{"name": n, "inputSchema": {"type": "object"}}]}``
  for n in ``echo``, ``fire_legacy``, ``_received``.
- ``tools/call``: ``echo {"text"}`` -> LTEXT(text);
  ``fire_legacy {"uri"}`` -> writes ``notifications/resources/updated``
  ``{"uri": uri}`` then ``notifications/tools/list_changed`` (no params), then
  LTEXT("fired 2"); ``_received {}`` as above.  Unknown tool -> ERR(-32602).
- ``resources/subscribe`` / ``resources/unsubscribe`` -> ``{}``.
- 2025-11-25 tasks (give ``--legacy-capabilities`` a ``tasks`` entry to
  advertise them): tools ``task_required`` (``execution.taskSupport``
  "required": without a ``task`` param -> ERR(-32601)) and ``task_optional``
  ("optional": without ``task`` -> LTEXT("optional, no task")). With ``task``
  -> ``{"task": {taskId "lt<n>", status, createdAt, lastUpdatedAt, ttl null,
  pollInterval 50}}``. ``tasks/get`` -> the task flat: "working" on poll 1,
  "input_required" from poll 2. ``tasks/result`` sends ``elicitation/create``
  (id ``"lq-<taskId>"``, FORM("Task question?") with ``_meta``
  ``io.modelcontextprotocol/related-task {taskId}``), waits for the answer,
  then answers LTEXT(JSON of the answer's result) tagged with the same
  ``_meta``. ``tasks/cancel`` -> the task, "cancelled"; unknown task ->
  ERR(-32602).
- Anything else -> ERR(-32601).  Modern ``_meta`` is ignored (a request
  carrying it is still served with legacy semantics).

Modern serving
==============

Request validation, in this order, for every request except ``initialize``:
``params`` missing or not an object, ``params._meta`` not an object, or
``META["io.modelcontextprotocol/protocolVersion"]`` missing/not a string ->
ERR(-32602, "Missing required _meta ..."); version != V -> ERR(-32022, ...,
{"supported": ["2026-07-28"], "requested": version});
``META["io.modelcontextprotocol/clientCapabilities"]`` missing/not an object
-> ERR(-32602); ``META["io.modelcontextprotocol/logLevel"]`` present but not
one of the eight RFC 5424 level names -> ERR(-32602).

Below, CAPS is the request's clientCapabilities.  Tools needing elicitation
(``reask``, ``endless``, the "needs-input" resource and prompt) answer
ERR(-32021, "Missing required client capability", {"requiredCapabilities":
{"elicitation": {"form": {}}}}) when ``"elicitation"`` is not in CAPS.  A
call is a *retry* when its params contain ``inputResponses`` or
``requestState``; IR below is ``params.inputResponses`` (``{}`` if absent).

Methods: ``server/discover`` (DISCOVER), ``tools/list``, ``tools/call``,
``resources/list``, ``resources/read``, ``prompts/list``, ``prompts/get``,
``subscriptions/listen``, ``tasks/get``, ``tasks/update``, ``tasks/cancel``;
anything else (``ping`` included) -> ERR(-32601, "Method not found").
``tools/call`` without a string ``name`` or with an unknown tool ->
ERR(-32602).

Tools (``tools/call``; ``tools/list`` lists them all, each with
``"inputSchema": {"type": "object"}``, in a ``{"resultType": "complete",
"tools": [...]}`` result):

``echo {"text"}``
    TEXT(text).
``ask {"requests"?, "state"?, "then"?}``
    A fully scripted MRTR round.  First call -> ``{"resultType":
    "input_required", "inputRequests": requests, "requestState": state}``,
    both copied verbatim; a key is omitted when its argument is absent or
    null (so ``{}`` gives a result with neither).  On a retry, the round
    answered is found by matching the retry's ``requestState`` against the
    ``state`` of the chain ``args, args.then, args.then.then, ...`` (first
    match; no match -> ``args``); that round's ``then`` decides:
    ``"echo"`` (default) -> TEXT(JSON ``{"inputResponses": <as received or
    null>, "requestState": <as received or null>, "arguments": <the retry's
    arguments>}``); ``"error"`` -> ERR(-32603, "scripted retry error");
    an object ``{"requests", "state", "then"}`` -> that next round (give each
    round a distinct ``state`` to chain more than two).
``reask {"decline_then": "same"|"different"|"complete"}`` (default "same")
    First call -> input_required ``{"q": FORM("Your answer?")}`` (no
    requestState).  Retry with ``IR.q.action == "accept"`` ->
    TEXT(str(IR.q.content.answer)).  Any other action (or no ``q``):
    "same" -> the identical input_required again; "different" ->
    ``{"q": FORM("Please reconsider: your answer?")}``; "complete" ->
    TEXT("no answer: <action>").
``endless {}``
    Always input_required ``{"q<n>": FORM("Question <n>?")}`` with
    ``"requestState": "s<n>"``, n = 1, 2, 3, ... counted per process over
    all ``endless`` calls and retries.  Never completes.
``unknown_result_type {}``
    ``{"resultType": "surprise", "content": [{"type": "text", "text": "surprise"}]}``.
``no_result_type {}``
    ``{"content": [{"type": "text", "text": "no resultType"}], "isError": false}``.
``state_only {"k": 2}``
    Call without requestState -> ``{"resultType": "input_required",
    "requestState": "poll-1"}`` (no inputRequests); retry with "poll-i",
    i < k -> "poll-<i+1>"; with i >= k (or k <= 0 on the first call) ->
    TEXT("done after <k>").
``server_request {}``
    Writes the request ``{"jsonrpc": "2.0", "id": "srv-<n>", "method":
    "elicitation/create", "params": FORM("Forbidden request").params}``
    (n = 1, 2, ... per process, so the first is "srv-1"), then TEXT("sent a
    request").  Any answer the client sends is recorded.
``log_and_progress {"steps": 3}``
    For i in 1..N: if META has ``io.modelcontextprotocol/logLevel`` (any
    valid level; no filtering), ``notifications/message`` ``{"level": "info",
    "logger": "scripted", "data": "step i/N"}``, and on step 1 a second one
    with ``"data": "evil\\u202e\\u0007text"``; then, if META has
    ``progressToken``, ``notifications/progress`` ``{"progressToken": token,
    "progress": i, "total": N, "message": "step i"}``.  Then TEXT("done N
    steps").
``slow {"seconds": 30}``
    TEXT("slept") after that many seconds (daemon thread) unless a
    ``notifications/cancelled`` whose ``requestId`` equals this request's id
    arrives first: then it never answers.  Cancellations are recorded like
    every message.
``task_input {}``, ``task_fail {}``, ``task_cancel {}``
    Need ``CAPS.extensions["io.modelcontextprotocol/tasks"]`` (else
    ERR(-32021, "Missing required client capability", {"requiredCapabilities":
    {"extensions": {"io.modelcontextprotocol/tasks": {}}}})).  Answer
    CREATED = ``{"resultType": "task", "taskId": "t<n>", "status": "working",
    "createdAt": ISO, "lastUpdatedAt": ISO, "ttlMs": 60000, "pollIntervalMs":
    50}`` (n = 1, 2, ... per process; ISO like "2026-01-02T03:04:05.678Z").
``fire {"what": "tools"|"resources"|"prompts"|"resource:<uri>"|"task:<id>"}``
    Sends, to every open listen whose filter asked for it, in listen-open
    order: ``notifications/tools/list_changed`` (``toolsListChanged``),
    ``notifications/resources/list_changed`` (``resourcesListChanged``),
    ``notifications/prompts/list_changed`` (``promptsListChanged``),
    ``notifications/resources/updated {"uri"}`` (uri in
    ``resourceSubscriptions``), ``notifications/tasks`` with params = the
    task's current detailed state without ``resultType`` and without
    counting as a poll (id in ``taskIds``; unknown task -> ERR(-32602)).
    Each carries ``params._meta["io.modelcontextprotocol/subscriptionId"]``
    = that listen's request id.  Then TEXT("fired <count sent>").  An
    unrecognised ``what`` -> ERR(-32602).
``end_listens {}``
    Ends every open listen (result below), then TEXT("ended <count>").
``_received {}``
    See Recording.

Tasks (``tasks/get|update|cancel``; params ``taskId``; they too need the
tasks extension in CAPS, else -32021 as above; missing or unknown
``taskId`` -> ERR(-32602, "Unknown task")).  ``tasks/get`` answers
``{"resultType": "complete", "taskId", "status", "createdAt",
"lastUpdatedAt", "ttlMs": 60000, "pollIntervalMs": 50, ...}`` and counts a
poll (the status is computed after counting):

- ``task_input``: poll 1 "working"; from poll 2 on, while "a" is
  unanswered, ``"status": "input_required", "inputRequests": {"a":
  FORM("First question?")}``; then, while "b" is unanswered,
  ``"input_required"`` with ``{"b": FORM("Second question?")}``; then
  ``"status": "completed", "result": TEXT(JSON {"a": <IR value for a>, "b":
  <IR value for b>})`` (the whole ElicitResult objects as sent).
- ``task_fail``: poll 1 "working", then ``"status": "failed", "error":
  {"code": -32000, "message": "task broke"}``.
- ``task_cancel``: "working" until cancelled.
- any task after ``tasks/cancel`` (unless already completed/failed):
  "cancelled".

``tasks/update {"taskId", "inputResponses"}`` records, for each key that is
currently outstanding (asked by the last computed state and not yet
answered), the value; other keys are ignored; answer ``{"resultType":
"complete"}``.  ``tasks/cancel {"taskId"}`` -> ``{"resultType":
"complete"}``.  ``lastUpdatedAt`` changes whenever the status or the
outstanding input request changes.

Subscriptions: ``subscriptions/listen {"notifications": FILTER}`` (FILTER
must be an object, else ERR(-32602)) immediately writes
``notifications/subscriptions/acknowledged`` ``{"notifications": FILTER,
"_meta": {"io.modelcontextprotocol/subscriptionId": <listen id>}}`` (FILTER
echoed verbatim: everything asked is honoured) and gives no response while
open.  ``notifications/cancelled`` with that ``requestId`` closes it without
any response.  ``end_listens`` and stdin EOF end each open listen with the
response ``{"resultType": "complete", "_meta":
{"io.modelcontextprotocol/subscriptionId": <listen id>}}``.

Resources and prompts:

- ``resources/list`` -> ``{"resultType": "complete", "resources": [{"uri":
  "file:///hello.txt", "name": "hello", "mimeType": "text/plain"}, {"uri":
  "file:///needs-input", "name": "needs-input", "mimeType": "text/plain"}]}``.
- ``resources/read {"uri"}``: "file:///hello.txt" -> ``{"resultType":
  "complete", "contents": [{"uri", "mimeType": "text/plain", "text":
  "hello"}]}``; "file:///needs-input" -> first call input_required
  ``{"pw": FORM("Password?")}`` (no requestState), retry -> contents whose
  text is JSON ``{"inputResponses": ..., "requestState": ...}``; other
  URIs -> ERR(-32602, "Resource not found").
- ``prompts/list`` -> ``{"resultType": "complete", "prompts": [{"name":
  "hello"}, {"name": "needs-input"}]}``.
- ``prompts/get {"name"}``: "hello" -> ``{"resultType": "complete",
  "messages": [{"role": "user", "content": {"type": "text", "text":
  "hello"}}]}``; "needs-input" -> like the resource (key "pw"), the retry's
  message text being that JSON; other names -> ERR(-32602).

Requests are handled one at a time in arrival order (only ``slow`` and the
late discover answer run on their own threads), so every notification a
request causes is written before its response.
"""

from __future__ import annotations

import argparse
import datetime
import itertools
import json
import sys
import threading
from typing import Any, Optional

MODERN = "2026-07-28"
LEGACY_VERSIONS = ("2025-11-25", "2025-06-18")
PV = "io.modelcontextprotocol/protocolVersion"
CC = "io.modelcontextprotocol/clientCapabilities"
LL = "io.modelcontextprotocol/logLevel"
SUB = "io.modelcontextprotocol/subscriptionId"
TASKS_EXT = "io.modelcontextprotocol/tasks"
LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")

DISCOVER = {
    "resultType": "complete",
    "supportedVersions": [MODERN],
    "capabilities": {
        "tools": {"listChanged": True},
        "resources": {"subscribe": True, "listChanged": True},
        "logging": {},
        "extensions": {TASKS_EXT: {}},
    },
    "ttlMs": 60000,
    "cacheScope": "private",
    "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "scripted", "version": "1"}},
}
SERVER_INFO = {"name": "scripted", "version": "1"}

MODERN_TOOLS = (
    "echo", "ask", "reask", "endless", "unknown_result_type", "no_result_type", "state_only",
    "server_request", "log_and_progress", "slow", "task_input", "task_fail", "task_cancel",
    "fire", "end_listens", "_received",
)
LEGACY_TOOLS = ("echo", "fire_legacy", "_received", "task_required", "task_optional")
TASK_SUPPORT = {"task_required": "required", "task_optional": "optional"}
RELATED = "io.modelcontextprotocol/related-task"


class RpcError(Exception):
    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


def form(message: str) -> dict[str, Any]:
    return {
        "method": "elicitation/create",
        "params": {
            "mode": "form",
            "message": message,
            "requestedSchema": {
                "type": "object",
                "properties": {"answer": {"type": "string"}},
                "required": ["answer"],
            },
        },
    }


def text(t: str, modern: bool = True) -> dict[str, Any]:
    result: dict[str, Any] = {"content": [{"type": "text", "text": t}], "isError": False}
    if modern:
        result = {"resultType": "complete", **result}
    return result


def input_required(requests: Any = None, state: Any = None) -> dict[str, Any]:
    result: dict[str, Any] = {"resultType": "input_required"}
    if requests is not None:
        result["inputRequests"] = requests
    if state is not None:
        result["requestState"] = state
    return result


def now_iso() -> str:
    stamp = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds")
    return stamp.replace("+00:00", "Z")


def id_key(request_id: Any) -> str:
    return json.dumps(request_id, sort_keys=True)


def log(message: str) -> None:
    try:
        sys.stderr.write("scripted: " + message + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def missing_capability(required: dict[str, Any]) -> RpcError:
    return RpcError(-32021, "Missing required client capability", {"requiredCapabilities": required})


class Task:
    def __init__(self, task_id: str, kind: str) -> None:
        self.task_id = task_id
        self.kind = kind  # "input" | "fail" | "cancel"
        self.created = now_iso()
        self.updated = self.created
        self.polls = 0
        self.cancelled = False
        self.answers: dict[str, Any] = {}
        self.outstanding: dict[str, Any] = {}
        self.last_signature: Any = ("working", None)

    def view(self) -> dict[str, Any]:
        """The detailed task state for the current poll count (no resultType)."""
        extra: dict[str, Any] = {}
        outstanding: dict[str, Any] = {}
        if self.cancelled:
            status = "cancelled"
        elif self.kind == "fail" and self.polls >= 2:
            status = "failed"
            extra["error"] = {"code": -32000, "message": "task broke"}
        elif self.kind == "input" and self.polls >= 2:
            if "a" not in self.answers:
                outstanding = {"a": form("First question?")}
            elif "b" not in self.answers:
                outstanding = {"b": form("Second question?")}
            if outstanding:
                status = "input_required"
                extra["inputRequests"] = outstanding
            else:
                status = "completed"
                payload = {"a": self.answers["a"], "b": self.answers["b"]}
                extra["result"] = text(json.dumps(payload))
        else:
            status = "working"
        signature = (status, sorted(outstanding))
        if signature != self.last_signature:
            self.last_signature = signature
            self.updated = now_iso()
        self.outstanding = outstanding
        return {
            "taskId": self.task_id,
            "status": status,
            "createdAt": self.created,
            "lastUpdatedAt": self.updated,
            "ttlMs": 60000,
            "pollIntervalMs": 50,
            **extra,
        }

    def terminal(self) -> bool:
        return self.view()["status"] in ("completed", "failed", "cancelled")


class Server:
    def __init__(self, args: argparse.Namespace) -> None:
        self.mode: str = args.mode
        self.late_seconds: float = args.late_seconds
        self.ignore_eof: bool = args.ignore_eof
        self.legacy_caps: Any = args.legacy_capabilities
        self.answer_version: Optional[str] = args.answer_version
        self.out = sys.stdout.buffer
        self.write_lock = threading.Lock()
        self.state_lock = threading.Lock()
        self.received: list[Any] = []
        self.initialized = False
        self.crashed = False
        self.seen_request = False
        self.listens: dict[str, dict[str, Any]] = {}  # id_key -> {"id", "filter"}
        self.slow_waits: dict[str, threading.Event] = {}
        self.tasks: dict[str, Task] = {}
        self.legacy_tasks: dict[str, dict[str, Any]] = {}
        self.legacy_waiters: dict[str, threading.Event] = {}
        self.legacy_answers: dict[str, Any] = {}
        self.task_ids = itertools.count(1)
        self.endless_ids = itertools.count(1)
        self.server_request_ids = itertools.count(1)

    # ---------------------------------------------------------------- output
    def send(self, message: dict[str, Any]) -> None:
        data = json.dumps(message, ensure_ascii=True).encode("ascii") + b"\n"
        with self.write_lock:
            try:
                self.out.write(data)
                self.out.flush()
            except (OSError, ValueError):
                pass

    def respond(self, request_id: Any, result: dict[str, Any]) -> None:
        self.send({"jsonrpc": "2.0", "id": request_id, "result": result})

    def error(self, request_id: Any, code: int, message: str, data: Any = None) -> None:
        err: dict[str, Any] = {"code": code, "message": message}
        if data is not None:
            err["data"] = data
        self.send({"jsonrpc": "2.0", "id": request_id, "error": err})

    def notify(self, method: str, params: Optional[dict[str, Any]] = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)

    # ------------------------------------------------------------------ loop
    def run(self) -> None:
        log(f"mode={self.mode}")
        stdin = sys.stdin.buffer
        while True:
            raw = stdin.readline()
            if not raw:
                break
            if not raw.strip():
                continue
            self.handle_line(raw)
        log("stdin closed")
        self.end_listens()
        if self.ignore_eof:
            log("ignoring EOF, staying alive")
            threading.Event().wait()

    def handle_line(self, raw: bytes) -> None:
        try:
            message = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            with self.state_lock:
                self.received.append({"unparsed": raw.decode("utf-8", "replace").rstrip("\r\n")})
            if not self.crashed:
                self.error(None, -32700, "Parse error")
            return
        with self.state_lock:
            self.received.append(message)
        if self.crashed:
            return
        if not isinstance(message, dict) or ("method" not in message and "id" not in message):
            self.error(None, -32600, "Invalid Request")
            return
        if "method" not in message:
            log(f"client sent a response (id {json.dumps(message.get('id'))})")
            with self.state_lock:
                waiter = self.legacy_waiters.pop(str(message.get("id")), None)
                if waiter is not None:
                    self.legacy_answers[str(message.get("id"))] = message.get("result", message.get("error"))
            if waiter is not None:
                waiter.set()
            return
        if "id" not in message:
            self.handle_notification(message)
            return
        try:
            self.handle_request(message)
        except RpcError as exc:
            self.error(message["id"], exc.code, exc.message, exc.data)

    def handle_notification(self, message: dict[str, Any]) -> None:
        if message.get("method") != "notifications/cancelled":
            return
        params = message.get("params")
        if not isinstance(params, dict) or "requestId" not in params:
            return
        key = id_key(params["requestId"])
        with self.state_lock:
            self.listens.pop(key, None)
            event = self.slow_waits.pop(key, None)
        if event is not None:
            event.set()

    def handle_request(self, message: dict[str, Any]) -> None:
        method = message["method"]
        if self.mode in ("modern", "unsupported-version", "late-discover"):
            if method == "initialize":
                if self.mode == "late-discover":
                    return
                params = message.get("params")
                asked = params.get("protocolVersion") if isinstance(params, dict) else None
                raise RpcError(-32602, "Unsupported protocol version",
                               {"supported": [MODERN], "requested": asked})
            self.modern_request(message)
            return
        # legacy family
        if not self.initialized:
            if method == "initialize":
                self.seen_request = True
                self.initialize(message)
                return
            if self.mode == "crash-on-discover" and not self.seen_request:
                self.crashed = True
                log("crashed")
                return
            self.seen_request = True
            if method == "server/discover":
                if self.mode == "silent-probe":
                    return
                if self.mode == "supported-legacy":
                    asked = self.meta_of(message).get(PV)
                    raise RpcError(-32022, "Unsupported protocol version", {
                        "supported": list(LEGACY_VERSIONS),
                        "requested": asked if isinstance(asked, str) else MODERN,
                    })
                raise RpcError(-32601, "Method not found")
            if method == "ping":
                self.respond(message["id"], {})
                return
            raise RpcError(-32600, "Server not initialized")
        self.legacy_request(message)

    @staticmethod
    def meta_of(message: dict[str, Any]) -> dict[str, Any]:
        params = message.get("params")
        meta = params.get("_meta") if isinstance(params, dict) else None
        return meta if isinstance(meta, dict) else {}

    # ---------------------------------------------------------------- legacy
    def initialize(self, message: dict[str, Any]) -> None:
        params = message.get("params")
        asked = params.get("protocolVersion") if isinstance(params, dict) else None
        version = asked if asked in LEGACY_VERSIONS else LEGACY_VERSIONS[0]
        if self.answer_version:
            version = self.answer_version
        self.initialized = True
        self.respond(message["id"], {
            "protocolVersion": version,
            "capabilities": self.legacy_caps,
            "serverInfo": dict(SERVER_INFO),
        })

    def legacy_request(self, message: dict[str, Any]) -> None:
        rid = message["id"]
        method = message["method"]
        raw_params = message.get("params")
        params: dict[str, Any] = raw_params if isinstance(raw_params, dict) else {}
        if method == "initialize":
            self.initialize(message)
        elif method in ("ping", "resources/subscribe", "resources/unsubscribe"):
            self.respond(rid, {})
        elif method == "tools/list":
            tools = []
            for n in LEGACY_TOOLS:
                tool: dict[str, Any] = {"name": n, "inputSchema": {"type": "object"}}
                if n in TASK_SUPPORT:
                    tool["execution"] = {"taskSupport": TASK_SUPPORT[n]}
                tools.append(tool)
            self.respond(rid, {"tools": tools})
        elif method in ("tasks/get", "tasks/result", "tasks/cancel"):
            self.legacy_task_request(rid, method, params)
        elif method == "tools/call":
            name = params.get("name")
            raw_args = params.get("arguments")
            args: dict[str, Any] = raw_args if isinstance(raw_args, dict) else {}
            if name == "echo":
                self.respond(rid, text(str(args.get("text", "")), modern=False))
            elif name == "fire_legacy":
                self.notify("notifications/resources/updated", {"uri": args.get("uri")})
                self.notify("notifications/tools/list_changed")
                self.respond(rid, text("fired 2", modern=False))
            elif name == "_received":
                self.respond(rid, text(self.received_json(), modern=False))
            elif name in TASK_SUPPORT:
                if "task" not in params:
                    if name == "task_required":
                        raise RpcError(-32601, "task_required must run as a task")
                    self.respond(rid, text("optional, no task", modern=False))
                    return
                task_id = f"lt{next(self.task_ids)}"
                with self.state_lock:
                    self.legacy_tasks[task_id] = {"polls": 0, "status": "working", "answer": None}
                self.respond(rid, {"task": self.legacy_task_view(task_id)})
            else:
                raise RpcError(-32602, f"Unknown tool: {name}")
        else:
            raise RpcError(-32601, "Method not found")

    # 2025-11-25 tasks: tasks/get shows working, then input_required; tasks/result
    # asks one form question tagged with the related-task _meta and returns the answer.
    def legacy_task_view(self, task_id: str) -> dict[str, Any]:
        task = self.legacy_tasks[task_id]
        now = "2026-11-29T12:00:00Z"
        return {"taskId": task_id, "status": task["status"], "createdAt": now, "lastUpdatedAt": now, "ttl": None, "pollInterval": 50}

    def legacy_task_request(self, rid: Any, method: str, params: dict[str, Any]) -> None:
        task_id = params.get("taskId")
        with self.state_lock:
            task = self.legacy_tasks.get(task_id) if isinstance(task_id, str) else None
        if task is None:
            raise RpcError(-32602, "Unknown task")
        assert isinstance(task_id, str)
        if method == "tasks/cancel":
            if task["status"] in ("completed", "failed", "cancelled"):
                raise RpcError(-32602, "Task already finished")
            task["status"] = "cancelled"
            self.respond(rid, self.legacy_task_view(task_id))
        elif method == "tasks/get":
            task["polls"] += 1
            if task["status"] == "working" and task["polls"] >= 2:
                task["status"] = "input_required"
            self.respond(rid, self.legacy_task_view(task_id))
        else:
            threading.Thread(target=self.legacy_task_result, args=(rid, task_id), daemon=True).start()

    def legacy_task_result(self, rid: Any, task_id: str) -> None:
        task = self.legacy_tasks[task_id]
        if task["status"] == "cancelled":
            self.error(rid, -32603, "Task cancelled")
            return
        question = f"lq-{task_id}"
        waiter = threading.Event()
        with self.state_lock:
            self.legacy_waiters[question] = waiter
        params = dict(form("Task question?")["params"])
        params["_meta"] = {RELATED: {"taskId": task_id}}
        self.send({"jsonrpc": "2.0", "id": question, "method": "elicitation/create", "params": params})
        waiter.wait(30)
        with self.state_lock:
            answer = self.legacy_answers.pop(question, None)
        task["status"] = "completed"
        result = text(json.dumps(answer), modern=False)
        result["_meta"] = {RELATED: {"taskId": task_id}}
        self.respond(rid, result)

    def received_json(self) -> str:
        with self.state_lock:
            return json.dumps(self.received)

    # ---------------------------------------------------------------- modern
    def validate_meta(self, message: dict[str, Any]) -> dict[str, Any]:
        params = message.get("params")
        if not isinstance(params, dict):
            raise RpcError(-32602, "Missing required _meta: params absent")
        meta = params.get("_meta")
        if not isinstance(meta, dict):
            raise RpcError(-32602, "Missing required _meta")
        version = meta.get(PV)
        if not isinstance(version, str):
            raise RpcError(-32602, f"Missing required _meta: {PV}")
        if version != MODERN:
            raise RpcError(-32022, "Unsupported protocol version",
                           {"supported": [MODERN], "requested": version})
        if not isinstance(meta.get(CC), dict):
            raise RpcError(-32602, f"Missing required _meta: {CC}")
        if LL in meta and meta[LL] not in LEVELS:
            raise RpcError(-32602, f"Invalid log level: {meta[LL]!r}")
        return params

    def modern_request(self, message: dict[str, Any]) -> None:
        rid = message["id"]
        method = message["method"]
        params = self.validate_meta(message)
        meta = params["_meta"]
        caps = meta[CC]
        if method == "server/discover":
            if self.mode == "late-discover":
                timer = threading.Timer(self.late_seconds, self.respond, args=(rid, DISCOVER))
                timer.daemon = True
                timer.start()
            else:
                self.respond(rid, DISCOVER)
        elif method == "tools/list":
            tools = [{"name": n, "inputSchema": {"type": "object"}} for n in MODERN_TOOLS]
            self.respond(rid, {"resultType": "complete", "tools": tools})
        elif method == "tools/call":
            self.call_tool(rid, params, meta, caps)
        elif method == "resources/list":
            self.respond(rid, {"resultType": "complete", "resources": [
                {"uri": "file:///hello.txt", "name": "hello", "mimeType": "text/plain"},
                {"uri": "file:///needs-input", "name": "needs-input", "mimeType": "text/plain"},
            ]})
        elif method == "resources/read":
            uri = params.get("uri")
            body: Optional[str]
            if uri == "file:///hello.txt":
                body = "hello"
            elif uri == "file:///needs-input":
                body = self.needs_input(rid, params, caps)
                if body is None:
                    return
            else:
                raise RpcError(-32602, "Resource not found", {"uri": uri})
            self.respond(rid, {"resultType": "complete",
                               "contents": [{"uri": uri, "mimeType": "text/plain", "text": body}]})
        elif method == "prompts/list":
            self.respond(rid, {"resultType": "complete", "prompts": [{"name": "hello"}, {"name": "needs-input"}]})
        elif method == "prompts/get":
            name = params.get("name")
            prompt: Optional[str]
            if name == "hello":
                prompt = "hello"
            elif name == "needs-input":
                prompt = self.needs_input(rid, params, caps)
                if prompt is None:
                    return
            else:
                raise RpcError(-32602, f"Unknown prompt: {name}")
            self.respond(rid, {"resultType": "complete",
                               "messages": [{"role": "user", "content": {"type": "text", "text": prompt}}]})
        elif method == "subscriptions/listen":
            wanted = params.get("notifications")
            if not isinstance(wanted, dict):
                raise RpcError(-32602, "subscriptions/listen needs a notifications object")
            with self.state_lock:
                self.listens[id_key(rid)] = {"id": rid, "filter": wanted}
            self.notify("notifications/subscriptions/acknowledged",
                        {"notifications": wanted, "_meta": {SUB: rid}})
        elif method in ("tasks/get", "tasks/update", "tasks/cancel"):
            self.task_method(rid, method, params, caps)
        else:
            raise RpcError(-32601, "Method not found")

    @staticmethod
    def is_retry(params: dict[str, Any]) -> bool:
        return "inputResponses" in params or "requestState" in params

    @staticmethod
    def require_elicitation(caps: dict[str, Any]) -> None:
        if "elicitation" not in caps:
            raise missing_capability({"elicitation": {"form": {}}})

    def needs_input(self, rid: Any, params: dict[str, Any], caps: dict[str, Any]) -> Optional[str]:
        """First call: answer input_required and return None; retry: the body text."""
        self.require_elicitation(caps)
        if not self.is_retry(params):
            self.respond(rid, input_required({"pw": form("Password?")}))
            return None
        return json.dumps({"inputResponses": params.get("inputResponses"),
                           "requestState": params.get("requestState")})

    def call_tool(self, rid: Any, params: dict[str, Any], meta: dict[str, Any], caps: dict[str, Any]) -> None:
        name = params.get("name")
        if not isinstance(name, str):
            raise RpcError(-32602, "tools/call needs a tool name")
        args = params.get("arguments")
        if not isinstance(args, dict):
            args = {}
        responses = params.get("inputResponses")
        if not isinstance(responses, dict):
            responses = {}
        if name == "echo":
            self.respond(rid, text(str(args.get("text", ""))))
        elif name == "ask":
            self.respond_ask(rid, params, args)
        elif name == "reask":
            self.require_elicitation(caps)
            question = input_required({"q": form("Your answer?")})
            if not self.is_retry(params):
                self.respond(rid, question)
                return
            answer = responses.get("q")
            action = answer.get("action") if isinstance(answer, dict) else None
            if isinstance(answer, dict) and action == "accept":
                content = answer.get("content")
                value = content.get("answer") if isinstance(content, dict) else None
                self.respond(rid, text(str(value)))
                return
            then = args.get("decline_then", "same")
            if then == "different":
                self.respond(rid, input_required({"q": form("Please reconsider: your answer?")}))
            elif then == "complete":
                self.respond(rid, text(f"no answer: {action}"))
            else:
                self.respond(rid, question)
        elif name == "endless":
            self.require_elicitation(caps)
            n = next(self.endless_ids)
            self.respond(rid, input_required({f"q{n}": form(f"Question {n}?")}, f"s{n}"))
        elif name == "unknown_result_type":
            self.respond(rid, {"resultType": "surprise", "content": [{"type": "text", "text": "surprise"}]})
        elif name == "no_result_type":
            self.respond(rid, text("no resultType", modern=False))
        elif name == "state_only":
            k = args.get("k", 2)
            k = k if isinstance(k, int) and not isinstance(k, bool) else 2
            state = params.get("requestState")
            done = 0
            if isinstance(state, str) and state.startswith("poll-") and state[5:].isdigit():
                done = int(state[5:])
            if done >= k:
                self.respond(rid, text(f"done after {k}"))
            else:
                self.respond(rid, input_required(None, f"poll-{done + 1}"))
        elif name == "server_request":
            request = {
                "jsonrpc": "2.0",
                "id": f"srv-{next(self.server_request_ids)}",
                "method": "elicitation/create",
                "params": form("Forbidden request")["params"],
            }
            self.send(request)
            self.respond(rid, text("sent a request"))
        elif name == "log_and_progress":
            steps = args.get("steps", 3)
            steps = steps if isinstance(steps, int) and not isinstance(steps, bool) else 3
            for i in range(1, steps + 1):
                if LL in meta:
                    self.notify("notifications/message",
                                {"level": "info", "logger": "scripted", "data": f"step {i}/{steps}"})
                    if i == 1:
                        self.notify("notifications/message",
                                    {"level": "info", "logger": "scripted", "data": "evil\u202e\u0007text"})
                if "progressToken" in meta:
                    self.notify("notifications/progress", {"progressToken": meta["progressToken"],
                                                           "progress": i, "total": steps,
                                                           "message": f"step {i}"})
            self.respond(rid, text(f"done {steps} steps"))
        elif name == "slow":
            seconds = args.get("seconds", 30)
            seconds = float(seconds) if isinstance(seconds, (int, float)) and not isinstance(seconds, bool) else 30.0
            event = threading.Event()
            key = id_key(rid)
            with self.state_lock:
                self.slow_waits[key] = event

            def finish() -> None:
                if event.wait(seconds):
                    return
                with self.state_lock:
                    if self.slow_waits.pop(key, None) is None:
                        return
                self.respond(rid, text("slept"))

            threading.Thread(target=finish, name="scripted-slow", daemon=True).start()
        elif name in ("task_input", "task_fail", "task_cancel"):
            self.require_tasks(caps)
            task = Task(f"t{next(self.task_ids)}", name[len("task_"):])
            with self.state_lock:
                self.tasks[task.task_id] = task
                view = task.view()
            self.respond(rid, {"resultType": "task", **view})
        elif name == "fire":
            self.respond(rid, text(f"fired {self.fire(args.get('what'))}"))
        elif name == "end_listens":
            self.respond(rid, text(f"ended {self.end_listens()}"))
        elif name == "_received":
            self.respond(rid, text(self.received_json()))
        else:
            raise RpcError(-32602, f"Unknown tool: {name}")

    def respond_ask(self, rid: Any, params: dict[str, Any], args: dict[str, Any]) -> None:
        if not self.is_retry(params):
            self.respond(rid, input_required(args.get("requests"), args.get("state")))
            return
        chain = [args]
        while isinstance(chain[-1].get("then"), dict) and len(chain) < 1000:
            chain.append(chain[-1]["then"])
        state = params.get("requestState")
        current = args
        if state is not None:
            for round_ in chain:
                if round_.get("state") is not None and round_.get("state") == state:
                    current = round_
                    break
        then = current.get("then", "echo")
        if isinstance(then, dict):
            self.respond(rid, input_required(then.get("requests"), then.get("state")))
        elif then == "error":
            raise RpcError(-32603, "scripted retry error")
        else:
            self.respond(rid, text(json.dumps({
                "inputResponses": params.get("inputResponses"),
                "requestState": params.get("requestState"),
                "arguments": params.get("arguments"),
            })))

    @staticmethod
    def require_tasks(caps: dict[str, Any]) -> None:
        extensions = caps.get("extensions")
        if not isinstance(extensions, dict) or TASKS_EXT not in extensions:
            raise missing_capability({"extensions": {TASKS_EXT: {}}})

    def task_method(self, rid: Any, method: str, params: dict[str, Any], caps: dict[str, Any]) -> None:
        self.require_tasks(caps)
        with self.state_lock:
            task_id = params.get("taskId")
            task = self.tasks.get(task_id) if isinstance(task_id, str) else None
            if task is None:
                raise RpcError(-32602, "Unknown task", {"taskId": params.get("taskId")})
            if method == "tasks/get":
                task.polls += 1
                result = {"resultType": "complete", **task.view()}
            elif method == "tasks/update":
                answers = params.get("inputResponses")
                if isinstance(answers, dict):
                    for key, value in answers.items():
                        if key in task.outstanding and key not in task.answers:
                            task.answers[key] = value
                result = {"resultType": "complete"}
            else:
                if not task.terminal():
                    task.cancelled = True
                    task.view()
                result = {"resultType": "complete"}
        self.respond(rid, result)

    # --------------------------------------------------------- subscriptions
    def fire(self, what: Any) -> int:
        kinds = {"tools": ("toolsListChanged", "notifications/tools/list_changed"),
                 "resources": ("resourcesListChanged", "notifications/resources/list_changed"),
                 "prompts": ("promptsListChanged", "notifications/prompts/list_changed")}
        if not isinstance(what, str) or not (what in kinds or what.startswith(("resource:", "task:"))):
            raise RpcError(-32602, f"fire: unknown target {what!r}")
        with self.state_lock:
            listens = list(self.listens.values())
            task_view = None
            if what.startswith("task:"):
                task = self.tasks.get(what[5:])
                if task is None:
                    raise RpcError(-32602, "Unknown task", {"taskId": what[5:]})
                task_view = task.view()
        sent = 0
        for listen in listens:
            wanted = listen["filter"]
            tag = {"_meta": {SUB: listen["id"]}}
            if what in kinds:
                flag, method = kinds[what]
                if not wanted.get(flag):
                    continue
                self.notify(method, tag)
            elif task_view is not None:
                ids = wanted.get("taskIds")
                if not (isinstance(ids, list) and task_view["taskId"] in ids):
                    continue
                self.notify("notifications/tasks", {**task_view, **tag})
            else:
                uris = wanted.get("resourceSubscriptions")
                if not (isinstance(uris, list) and what[9:] in uris):
                    continue
                self.notify("notifications/resources/updated", {"uri": what[9:], **tag})
            sent += 1
        return sent

    def end_listens(self) -> int:
        with self.state_lock:
            listens = list(self.listens.values())
            self.listens.clear()
        for listen in listens:
            self.respond(listen["id"], {"resultType": "complete", "_meta": {SUB: listen["id"]}})
        return len(listens)


def parse_args(argv: Optional[list[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Scripted stdio MCP test peer (see module docstring).")
    modes = parser.add_mutually_exclusive_group()
    for flag in ("modern", "legacy-only", "silent-probe", "crash-on-discover",
                 "unsupported-version", "supported-legacy"):
        modes.add_argument(f"--{flag}", dest="mode", action="store_const", const=flag)
    modes.add_argument("--late-discover", dest="late_seconds", type=float, metavar="SECONDS")
    parser.add_argument("--ignore-eof", action="store_true")
    parser.add_argument("--legacy-capabilities", type=json.loads, default={"tools": {}}, metavar="JSON")
    parser.add_argument("--answer-version", default=None, metavar="VERSION")
    args = parser.parse_args(argv)
    if args.late_seconds is not None:
        args.mode = "late-discover"
    elif args.mode is None:
        args.mode = "modern"
    return args


def main(argv: Optional[list[str]] = None) -> None:
    Server(parse_args(argv)).run()


if __name__ == "__main__":
    main()
