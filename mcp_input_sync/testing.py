"""A scripted in-memory MCP server for testing your handler, in both protocol eras.

Stdlib only; nothing here starts until you build a :class:`FakeServer`::

    from mcp_input_sync.testing import FakeServer

    with FakeServer(era="legacy") as fake:
        @fake.tool
        def book(call):
            answer = call.elicit("Which seat?", {"type": "object",
                                                  "properties": {"seat": {"type": "string"}}})
            return f"booked {answer['content']['seat']}"

        with fake.client(handler=MyHandler()) as client:
            assert client.call_tool("book")["content"][0]["text"] == "booked 12A"
        fake.assert_answered("elicitation/create", count=1)

The same tool code runs in both eras:

- ``era="legacy"`` (2025-11-25 by default): ``call.elicit`` sends the client
  an ``elicitation/create`` request and blocks (bounded) for its answer.
- ``era="modern"`` (2026-07-28): ``call.elicit`` looks up the answer among
  the call's ``inputResponses``; when it is not there yet, the tool is
  stopped and the fake answers ``input_required`` with that one request and
  a ``requestState`` recording every answer so far. The client answers and
  retries; the fake runs the tool again from the start with the answers
  collected (deterministic replay), so each ``call.elicit`` returns its
  answer in order. Logs and progress already sent are not sent again.

Resources and prompts are static: :meth:`FakeServer.add_resource` serves a
text or a blob at a URI (``resources/list``, ``resources/read``) and
:meth:`FakeServer.add_prompt` a prompt made of messages, or of a function of
its arguments (``prompts/list``, ``prompts/get``), in both eras.

Tools declared ``task=True`` answer, in the modern era, with a task
(``resultType: "task"``) whose input requests are served by ``tasks/get``
and answered by ``tasks/update``; in the legacy era they run as plain tools.

Outside any tool, :meth:`FakeServer.request` asks the client and waits;
:meth:`FakeServer.send_request` sends a request with an id you choose
without waiting, and :meth:`FakeServer.wait_for_answer` waits for the
client's response to that id. :meth:`FakeServer.override` answers a
method with a function of your own (a paged list, a silent handshake), and
the ``on_message`` argument taps every message both ways (to validate or
log the traffic).

The server runs on a daemon thread named ``fake-server-<n>`` and each tool
call on ``fake-server-<n>-tool-<k>``; every wait is bounded (``timeout``,
default 5 real seconds, so freezegun does not stall it).
"""

from __future__ import annotations

import base64
import datetime
import itertools
import json
import queue
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Union, overload

from .client import Client
from .transports.memory import MemoryPeer, MemoryTransport, memory_pair

__all__ = [
    "ClientRefused",
    "Exchange",
    "FakeServer",
    "ToolCall",
    "ToolError",
    "text_result",
]

JsonDict = dict[str, Any]
#: What a tool function returns: a ``CallToolResult`` dict, or a text (made a text result).
ToolResult = Union[JsonDict, str]
ToolFunction = Callable[["ToolCall"], ToolResult]
#: What a prompt is made of: a text (one user message) or a list of ``PromptMessage`` dicts.
PromptMessages = Union[str, list[JsonDict]]
#: A prompt's messages, or a function of the ``prompts/get`` arguments returning them.
PromptSource = Union[PromptMessages, Callable[[dict[str, str]], PromptMessages]]
#: A tap on the traffic: ``on_message(direction, message)``, direction ``"received"`` or ``"sent"``.
MessageTap = Callable[[str, JsonDict], None]
#: An answer of your own to a request: ``answer(params)`` returns the result, or None for silence.
RequestAnswer = Callable[[JsonDict], Optional[JsonDict]]

MODERN_VERSION = "2026-07-28"
LEGACY_VERSION = "2025-11-25"
FORCEABLE = ("2025-11-25", "2025-06-18")
TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
META_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
META_SERVER_INFO = "io.modelcontextprotocol/serverInfo"
SERVER_INFO: JsonDict = {"name": "fake-server", "version": "1"}
_STEP = 0.02  # real seconds between checks of a bounded wait

_servers = itertools.count(1)
_KIND_KEYS = {"elicitation/create": "elicit", "sampling/createMessage": "sample", "roots/list": "roots"}


def text_result(text: str, is_error: bool = False) -> JsonDict:
    """A ``CallToolResult`` holding one text block."""
    return {"content": [{"type": "text", "text": text}], "isError": is_error}


class ToolError(Exception):
    """Raise from a tool to answer the call with a JSON-RPC error (``code``, ``message``, ``data``)."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def error(self) -> JsonDict:
        err: JsonDict = {"code": self.code, "message": self.message}
        if self.data is not None:
            err["data"] = self.data
        return err


class ClientRefused(Exception):
    """Legacy era: the client answered a server request with a JSON-RPC error.

    Raised by :meth:`ToolCall.request` (and the helpers built on it). A tool
    that lets it escape answers its call with an ``isError`` result naming it.
    """

    def __init__(self, method: str, error: JsonDict) -> None:
        code = error.get("code")
        self.method = method
        self.code: Optional[int] = code if type(code) is int else None
        self.message = str(error.get("message", ""))
        self.data: Any = error.get("data")
        super().__init__(f"the client refused {method}: {self.code} {self.message}")


class _NeedInput(BaseException):
    """Modern era: the tool asked for input it has no answer for yet (never seen by tool code
    that catches ``Exception``)."""

    def __init__(self, key: str, request: JsonDict) -> None:
        super().__init__(key)
        self.key = key
        self.request = request


class _Closed(BaseException):
    """The fake closed while a tool waited on the client."""


@dataclass
class Exchange:
    """One request for input the fake made, and how the client answered it.

    Legacy: a server-to-client request and its response. Modern: an input
    request of an ``input_required`` round (or a task) and the matching
    ``inputResponses`` entry.
    """

    #: ``elicitation/create``, ``sampling/createMessage``, ``roots/list``, ...
    method: str
    #: The request's params (None when it had none).
    params: Optional[JsonDict]
    #: Legacy: the JSON-RPC id; modern: the input request's key.
    key: Any
    #: The client's result, once it answered with one.
    result: Optional[JsonDict] = None
    #: The client's JSON-RPC error (legacy only), once it answered with one.
    error: Optional[JsonDict] = None
    #: Modern: the chain (call or task) the key belongs to.
    chain: str = ""

    @property
    def answered(self) -> bool:
        return self.result is not None or self.error is not None


@dataclass
class _Tool:
    name: str
    fn: ToolFunction
    task: bool
    description: Optional[str]
    input_schema: JsonDict


@dataclass
class _Resource:
    entry: JsonDict  # the resources/list entry
    contents: JsonDict  # the one resources/read contents entry


@dataclass
class _Prompt:
    entry: JsonDict  # the prompts/list entry
    source: PromptSource


@dataclass
class _Task:
    task_id: str
    tool: _Tool
    params: JsonDict
    created: str
    updated: str
    responses: JsonDict = field(default_factory=dict)
    emitted: int = 0
    final: Optional[JsonDict] = None
    lock: threading.Lock = field(default_factory=threading.Lock)


class ToolCall:
    """What a tool function gets: the call's arguments and ways to ask the client.

    Attributes:
        name: the tool's name.
        arguments: the call's ``arguments`` (``{}`` when absent).
        params: the call's whole params.
        era: ``"legacy"`` or ``"modern"``.
        cancelled: a ``threading.Event`` set when the client cancels the call
            (legacy) or the fake closes.
        responses: modern: the input responses collected so far, by key.
    """

    def __init__(
        self,
        server: "FakeServer",
        name: str,
        params: JsonDict,
        *,
        chain: str,
        responses: Optional[JsonDict] = None,
        emitted_before: int = 0,
    ) -> None:
        self._server = server
        self.name = name
        self.params = params
        raw = params.get("arguments")
        self.arguments: JsonDict = raw if isinstance(raw, dict) else {}
        self.era = server.era
        self.cancelled = threading.Event()
        self.responses: JsonDict = dict(responses or {})
        self._chain = chain
        self._asked = 0
        self._emitted = 0
        self._emitted_before = emitted_before
        meta = params.get("_meta")
        token = meta.get("progressToken") if isinstance(meta, dict) else None
        self.progress_token: Any = token

    # ------------------------------------------------------------------ asking

    def request(self, method: str, params: Optional[JsonDict] = None, *, timeout: Optional[float] = None) -> JsonDict:
        """Ask the client ``method`` (raw) and return its result.

        Legacy: a JSON-RPC request to the client, waited on for at most
        ``timeout`` real seconds (the fake's ``timeout``); an error answer
        raises :class:`ClientRefused`, silence ``TimeoutError``. Modern: the
        answer from the call's ``inputResponses``; when there is none yet
        the fake answers ``input_required`` with this request and runs the
        tool again once the client retries.
        """
        self._asked += 1
        if self.era == "modern":
            key = f"{_KIND_KEYS.get(method, 'input')}-{self._asked}"
            if key in self.responses:
                answer = self.responses[key]
                return answer if isinstance(answer, dict) else {"value": answer}
            request: JsonDict = {"method": method}
            if params is not None:
                request["params"] = params
            raise _NeedInput(key, request)
        response = self._server._ask(method, params, timeout, self)
        if "error" in response:
            err = response["error"]
            raise ClientRefused(method, err if isinstance(err, dict) else {"message": repr(err)})
        result = response.get("result")
        return result if isinstance(result, dict) else {}

    def elicit(self, message: str, schema: Optional[JsonDict] = None, *, timeout: Optional[float] = None) -> JsonDict:
        """A form elicitation; returns the ``ElicitResult`` (``{"action": ..., "content": ...}``)."""
        params: JsonDict = {"message": message, "requestedSchema": schema or {"type": "object", "properties": {}}}
        if self._server._with_modes():
            params = {"mode": "form", **params}
        return self.request("elicitation/create", params, timeout=timeout)

    def elicit_url(self, message: str, url: str, elicitation_id: Optional[str] = None, *, timeout: Optional[float] = None) -> JsonDict:
        """A URL elicitation (2025-11-25 and modern); returns the ``ElicitResult``."""
        self_id = elicitation_id or f"{self._chain}-url-{self._asked + 1}"
        params: JsonDict = {"mode": "url", "message": message, "url": url, "elicitationId": self_id}
        return self.request("elicitation/create", params, timeout=timeout)

    def sample(
        self,
        prompt: Union[str, list[JsonDict]],
        *,
        max_tokens: int = 100,
        timeout: Optional[float] = None,
        **extra: Any,
    ) -> JsonDict:
        """``sampling/createMessage`` with a user prompt (or a list of messages); returns the result.

        ``extra`` keys (``systemPrompt``, ``modelPreferences``, ...) are added to the params.
        """
        if isinstance(prompt, str):
            messages: list[JsonDict] = [{"role": "user", "content": {"type": "text", "text": prompt}}]
        else:
            messages = list(prompt)
        params: JsonDict = {"messages": messages, "maxTokens": max_tokens, **extra}
        return self.request("sampling/createMessage", params, timeout=timeout)

    def roots(self, *, timeout: Optional[float] = None) -> list[JsonDict]:
        """``roots/list``; returns the list of roots."""
        result = self.request("roots/list", {} if self.era == "modern" else None, timeout=timeout)
        roots = result.get("roots")
        return list(roots) if isinstance(roots, list) else []

    # ------------------------------------------------------------------ telling

    def log(self, level: str, data: Any, logger: Optional[str] = None) -> None:
        """Send ``notifications/message`` (not sent again when a modern call is replayed)."""
        params: JsonDict = {"level": level, "data": data}
        if logger is not None:
            params["logger"] = logger
        self._emit("notifications/message", params)

    def progress(self, progress: float, total: Optional[float] = None, message: Optional[str] = None) -> None:
        """Send ``notifications/progress`` for this call, when the client asked for progress."""
        params: JsonDict = {"progressToken": self.progress_token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        self._emit("notifications/progress", params, needs_token=True)

    def notify(self, method: str, params: Optional[JsonDict] = None) -> None:
        """Send any notification (not sent again when a modern call is replayed)."""
        self._emit(method, params)

    def _emit(self, method: str, params: Optional[JsonDict], needs_token: bool = False) -> None:
        self._emitted += 1
        if self._emitted <= self._emitted_before:
            return  # sent by an earlier run of this modern call
        if needs_token and self.progress_token is None:
            return
        self._server.notify(method, params)


class FakeServer:
    """A scripted MCP server on the far end of an in-memory pair.

    Args:
        era: ``"legacy"`` (the initialize handshake, server-to-client
            requests) or ``"modern"`` (2026-07-28: ``server/discover``,
            ``input_required`` rounds, tasks).
        version: the protocol version the fake answers (legacy: default the
            version the client offers; ``"2025-06-18"`` makes
            :meth:`client` force it; modern: ``"2026-07-28"``).
        capabilities: the server capabilities it declares (default: tools
            and logging; modern adds the tasks extension).
        timeout: the bound, in real seconds, of every wait (default 5).
        instructions: the ``instructions`` it sends, if any.
        on_message: a tap on the traffic, e.g. to validate what the client
            sends against the schema, or to log it. It is called with
            ``("received", message)`` for every message the client sent,
            before the fake handles it (and before it shows in
            :attr:`received`), and with ``("sent", message)`` for every
            message (dict) the fake sends, before it is sent (raw text or
            bytes given to :meth:`send_raw` are not shown). It runs on the
            fake's threads, possibly several at once: keep it quick and
            thread-safe, and do not raise.
    """

    def __init__(
        self,
        era: str = "legacy",
        version: Optional[str] = None,
        capabilities: Optional[JsonDict] = None,
        *,
        timeout: float = 5.0,
        instructions: Optional[str] = None,
        on_message: Optional[MessageTap] = None,
    ) -> None:
        if era not in ("legacy", "modern"):
            raise ValueError(f"era must be 'legacy' or 'modern', not {era!r}")
        self.era = era
        self.version = version
        self.timeout = timeout
        self.instructions = instructions
        self._on_message = on_message
        self._default_capabilities = capabilities is None
        if capabilities is None:
            capabilities = {"tools": {}, "logging": {}}
            if era == "modern":
                capabilities["extensions"] = {TASKS_EXTENSION: {}}
        self.capabilities: JsonDict = capabilities
        self.transport: MemoryTransport
        self.peer: MemoryPeer
        self.transport, self.peer = memory_pair()
        #: The protocol version agreed (legacy: after initialize; modern: from the start).
        self.negotiated: Optional[str] = (version or MODERN_VERSION) if era == "modern" else None
        #: The capabilities the client declared (legacy: initialize; modern: its latest request's _meta).
        self.client_capabilities: Optional[JsonDict] = None
        #: The client's ``clientInfo`` (legacy).
        self.client_info: Optional[JsonDict] = None
        #: The level the client asked for with ``logging/setLevel`` (legacy).
        self.log_level: Optional[str] = None
        self._n = next(_servers)
        self.name = f"fake-server-{self._n}"
        self._tools: dict[str, _Tool] = {}
        self._resources: dict[str, _Resource] = {}
        self._prompts: dict[str, _Prompt] = {}
        self._overrides: dict[str, RequestAnswer] = {}
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._received: list[JsonDict] = []
        self._sent: list[JsonDict] = []
        self._exchanges: list[Exchange] = []
        self._input_responses: list[JsonDict] = []
        self._waiters: dict[str, "queue.SimpleQueue[Optional[JsonDict]]"] = {}
        self._calls: dict[str, ToolCall] = {}
        self._tasks: dict[str, _Task] = {}
        self._ids = itertools.count(1000)
        self._chains = itertools.count(1)
        self._workers = itertools.count(1)
        self._threads: list[threading.Thread] = []
        self._client: Optional[Client] = None
        self._closed = False
        self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
        self._thread.start()

    # ------------------------------------------------------------------ context

    def __enter__(self) -> "FakeServer":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<FakeServer {self.name} era={self.era} tools={sorted(self._tools)}>"

    # ------------------------------------------------------------------ tools

    @overload
    def tool(self, fn: ToolFunction, /) -> ToolFunction: ...

    @overload
    def tool(
        self,
        name: Optional[str] = None,
        /,
        *,
        task: bool = False,
        description: Optional[str] = None,
        input_schema: Optional[JsonDict] = None,
    ) -> Callable[[ToolFunction], ToolFunction]: ...

    def tool(
        self,
        fn_or_name: Union[ToolFunction, str, None] = None,
        /,
        *,
        task: bool = False,
        description: Optional[str] = None,
        input_schema: Optional[JsonDict] = None,
    ) -> Union[ToolFunction, Callable[[ToolFunction], ToolFunction]]:
        """Register a tool: ``@fake.tool`` (named after the function) or ``@fake.tool("name", task=True)``."""
        if callable(fn_or_name):
            self.add_tool(fn_or_name.__name__, fn_or_name)
            return fn_or_name
        name = fn_or_name

        def register(fn: ToolFunction) -> ToolFunction:
            self.add_tool(name or fn.__name__, fn, task=task, description=description, input_schema=input_schema)
            return fn

        return register

    def add_tool(
        self,
        name: str,
        fn: ToolFunction,
        *,
        task: bool = False,
        description: Optional[str] = None,
        input_schema: Optional[JsonDict] = None,
    ) -> None:
        """Register ``fn(call) -> result dict | str`` as tool ``name`` (``task=True``: a modern task)."""
        with self._lock:
            self._tools[name] = _Tool(name, fn, task, description, input_schema or {"type": "object"})

    def override(self, method: str, answer: Optional[RequestAnswer]) -> None:
        """Answer the client's requests named ``method`` yourself, instead of the fake (both eras).

        ``answer(params)`` gets the request's params (``{}`` when absent) and
        returns the result, sent as it is (add ``resultType`` yourself in the
        modern era); raising :class:`ToolError` answers with that JSON-RPC
        error (any other exception with -32603, naming it); returning None
        sends no answer at all. For example a paged
        ``tools/list``, or a server that never answers the handshake::

            fake.override("initialize", lambda params: None)

        It runs on the fake's own thread, before any of the fake's checks:
        keep it quick. ``answer=None`` gives ``method`` back to the fake.
        """
        with self._lock:
            if answer is None:
                self._overrides.pop(method, None)
            else:
                self._overrides[method] = answer

    # ------------------------------------------------------------------ resources and prompts

    def add_resource(
        self,
        uri: str,
        text: Optional[str] = None,
        *,
        blob: Optional[bytes] = None,
        name: Optional[str] = None,
        mime_type: Optional[str] = "text/plain",
        description: Optional[str] = None,
    ) -> None:
        """Serve ``text`` (or ``blob``, sent base64) at ``uri``: ``resources/list`` and ``resources/read``.

        ``name`` defaults to the URI's last segment. With the default
        capabilities the fake then also declares ``resources``. An unknown
        URI is answered with error -32002 ("Resource not found").
        """
        if (text is None) == (blob is None):
            raise ValueError("give a resource either text or blob")
        entry: JsonDict = {"uri": uri, "name": name or uri.rstrip("/").rsplit("/", 1)[-1] or uri}
        contents: JsonDict = {"uri": uri}
        if mime_type is not None:
            entry["mimeType"] = mime_type
            contents["mimeType"] = mime_type
        if description is not None:
            entry["description"] = description
        if text is not None:
            contents["text"] = text
        else:
            assert blob is not None
            contents["blob"] = base64.b64encode(blob).decode("ascii")
        with self._lock:
            self._resources[uri] = _Resource(entry, contents)
            if self._default_capabilities:
                self.capabilities.setdefault("resources", {})

    def add_prompt(
        self,
        name: str,
        messages: PromptSource,
        *,
        description: Optional[str] = None,
        arguments: Optional[list[JsonDict]] = None,
    ) -> None:
        """Serve prompt ``name``: ``prompts/list`` and ``prompts/get``.

        ``messages`` is a text (one user message), a list of
        ``PromptMessage`` dicts, or a function taking the call's
        ``arguments`` (a dict of strings) and returning either.
        ``arguments`` is the prompt's argument list as ``prompts/list``
        shows it (``[{"name": "language", "required": True}]``); a
        ``prompts/get`` missing a required one, or naming an unknown prompt,
        is answered with error -32602. With the default capabilities the
        fake then also declares ``prompts``.
        """
        entry: JsonDict = {"name": name}
        if description is not None:
            entry["description"] = description
        if arguments is not None:
            entry["arguments"] = [dict(a) for a in arguments]
        with self._lock:
            self._prompts[name] = _Prompt(entry, messages)
            if self._default_capabilities:
                self.capabilities.setdefault("prompts", {})

    def _resource_list(self) -> list[JsonDict]:
        with self._lock:
            return [dict(r.entry) for r in self._resources.values()]

    def _prompt_list(self) -> list[JsonDict]:
        with self._lock:
            return [dict(p.entry) for p in self._prompts.values()]

    def _read_resource(self, params: JsonDict) -> tuple[Optional[JsonDict], Optional[JsonDict]]:
        uri = params.get("uri")
        with self._lock:
            resource = self._resources.get(uri) if isinstance(uri, str) else None
        if resource is None:
            return None, {"code": -32002, "message": "Resource not found", "data": {"uri": uri}}
        return {"contents": [dict(resource.contents)]}, None

    def _get_prompt(self, params: JsonDict) -> tuple[Optional[JsonDict], Optional[JsonDict]]:
        name = params.get("name")
        with self._lock:
            prompt = self._prompts.get(name) if isinstance(name, str) else None
        if prompt is None:
            return None, {"code": -32602, "message": f"Unknown prompt: {name!r}"}
        raw = params.get("arguments")
        arguments = {str(k): str(v) for k, v in raw.items()} if isinstance(raw, dict) else {}
        for spec in prompt.entry.get("arguments", []):
            if spec.get("required") and spec.get("name") not in arguments:
                return None, {"code": -32602, "message": f"Missing required argument: {spec.get('name')!r}"}
        source = prompt.source
        made = source(arguments) if callable(source) else source
        if isinstance(made, str):
            messages: list[JsonDict] = [{"role": "user", "content": {"type": "text", "text": made}}]
        else:
            messages = [dict(m) for m in made]
        result: JsonDict = {"messages": messages}
        if "description" in prompt.entry:
            result["description"] = prompt.entry["description"]
        return result, None

    # ------------------------------------------------------------------ the client

    def client(self, handler: Any = None, **options: Any) -> Client:
        """A :class:`~mcp_input_sync.Client` over this fake (not opened yet: use ``with``).

        ``protocol`` defaults to the fake's era, so no probe is waited on;
        in the modern era ``tasks`` defaults to true when a task tool is
        registered. The fake closes the client in :meth:`close`.
        """
        if self._client is not None:
            raise RuntimeError("a FakeServer serves one client; build another FakeServer")
        if self.era == "modern":
            options.setdefault("protocol", "modern")
            if any(t.task for t in self._tools.values()):
                options.setdefault("tasks", True)
        else:
            options.setdefault("protocol", self.version if self.version in FORCEABLE[1:] else "legacy")
        options.setdefault("server_id", "fake")
        self._client = Client(self.transport, handler=handler, **options)
        return self._client

    # ------------------------------------------------------------------ sending

    def send_raw(self, message: Union[JsonDict, str, bytes]) -> None:
        """Send anything to the client as it is (a dict is encoded; text and bytes are not)."""
        if isinstance(message, dict):
            with self._lock:
                self._sent.append(message)
            if self._on_message is not None:
                self._on_message("sent", message)
        self.peer.send(message)

    def notify(self, method: str, params: Optional[JsonDict] = None) -> None:
        """Send a notification."""
        message: JsonDict = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self.send_raw(message)

    def request(self, method: str, params: Optional[JsonDict] = None, *, timeout: Optional[float] = None) -> JsonDict:
        """Send the client a request outside any tool and wait (bounded) for its response message.

        Returns the whole response (``result`` or ``error``). Raises
        ``TimeoutError`` when none comes (the modern client never answers).
        """
        return self._ask(method, params, timeout, None)

    def send_request(self, request_id: Any, method: str, params: Optional[JsonDict] = None) -> None:
        """Send the client a request with the id you choose, outside any tool, without waiting.

        Use it to send many requests at once, or to name the answer you
        then wait for with :meth:`wait_for_answer`. The request and its
        answer are recorded in :attr:`exchanges` like any other. Choose ids
        the fake does not use itself: strings, or integers below 1000 are
        safe (the fake numbers its own requests from 1000).
        """
        message: JsonDict = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        with self._lock:
            self._exchanges.append(Exchange(method, params, request_id))
        self.send_raw(message)

    def wait_for_answer(self, request_id: Any, timeout: Optional[float] = None) -> JsonDict:
        """Wait (bounded, real time) for the client's response to request ``request_id``; return it.

        The whole response message (``result`` or ``error``). ``1`` and
        ``"1"`` are different ids.

        Raises:
            TimeoutError: no answer within ``timeout`` (the fake's ``timeout``).
        """
        key = _key(request_id)
        bound = self.timeout if timeout is None else timeout

        def find() -> Optional[JsonDict]:
            for m in self._received:
                if "method" not in m and "id" in m and _key(m["id"]) == key:
                    return m
            return None

        with self._changed:
            for _ in range(max(1, int(bound / _STEP))):
                found = find()
                if found is not None:
                    return found
                self._changed.wait(_STEP)
            found = find()
        if found is not None:
            return found
        raise TimeoutError(f"the client did not answer request {request_id!r} within {bound:g} s")

    def _ask(self, method: str, params: Optional[JsonDict], timeout: Optional[float], call: Optional[ToolCall]) -> JsonDict:
        request_id = next(self._ids)
        box: "queue.SimpleQueue[Optional[JsonDict]]" = queue.SimpleQueue()
        message: JsonDict = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        with self._lock:
            if self._closed:
                raise _Closed()
            self._waiters[_key(request_id)] = box
            self._exchanges.append(Exchange(method, params, request_id))
        try:
            self.send_raw(message)
            bound = self.timeout if timeout is None else timeout
            try:
                response = box.get(timeout=bound)  # real time: freezegun does not stall it
            except queue.Empty:
                raise TimeoutError(f"the client did not answer {method} within {bound:g} s") from None
            if response is None:
                raise _Closed()
            return response
        finally:
            with self._lock:
                self._waiters.pop(_key(request_id), None)

    # ------------------------------------------------------------------ observing

    @property
    def received(self) -> list[JsonDict]:
        """Every message the client sent, in order."""
        with self._lock:
            return list(self._received)

    @property
    def sent(self) -> list[JsonDict]:
        """Every message (dict) the fake sent, in order."""
        with self._lock:
            return list(self._sent)

    @property
    def answers(self) -> list[JsonDict]:
        """Every JSON-RPC response the client sent (legacy: its answers to the fake's requests)."""
        with self._lock:
            return [m for m in self._received if "method" not in m and "id" in m]

    @property
    def input_responses(self) -> list[JsonDict]:
        """Modern: every ``inputResponses`` object the client sent (retries and ``tasks/update``), in order."""
        with self._lock:
            return [dict(r) for r in self._input_responses]

    @property
    def exchanges(self) -> list[Exchange]:
        """Every request for input the fake made, with the client's answer (both eras)."""
        with self._lock:
            return list(self._exchanges)

    def requests_seen(self, method: str) -> list[JsonDict]:
        """The params of every request (or notification) named ``method`` the client sent."""
        with self._lock:
            return [m.get("params") or {} for m in self._received if m.get("method") == method]

    def wait_for(self, method: str, count: int = 1, timeout: Optional[float] = None) -> list[JsonDict]:
        """Wait (bounded, real time) until the client sent ``count`` messages named ``method``; return them.

        Raises:
            TimeoutError: fewer arrived within ``timeout`` (the fake's ``timeout``).
        """
        bound = self.timeout if timeout is None else timeout
        with self._changed:
            for _ in range(max(1, int(bound / _STEP))):
                found = [m for m in self._received if m.get("method") == method]
                if len(found) >= count:
                    return found
                self._changed.wait(_STEP)
            found = [m for m in self._received if m.get("method") == method]
        if len(found) >= count:
            return found
        raise TimeoutError(f"the client sent {len(found)} {method} within {bound:g} s, not {count}")

    def assert_answered(self, method: str, count: Optional[int] = None) -> list[JsonDict]:
        """Assert the client answered requests for ``method`` with results; return those results.

        ``count``: exactly that many (default: at least one). Works in both eras.
        """
        results = [e.result for e in self.exchanges if e.method == method and e.result is not None]
        if count is None and not results:
            raise AssertionError(f"the client answered no {method} request; exchanges: {self._summary()}")
        if count is not None and len(results) != count:
            raise AssertionError(f"the client answered {len(results)} {method} request(s), not {count}; exchanges: {self._summary()}")
        return results

    def assert_refused(self, code: int, method: Optional[str] = None, message: Optional[str] = None) -> list[JsonDict]:
        """Legacy: assert the client answered a request (of ``method``) with error ``code``; return the errors.

        ``message``: a text the error's message must contain. In the modern
        era a refusal never reaches the server (the call raises
        ``ClientError`` instead): this raises ``AssertionError`` saying so.
        """
        if self.era == "modern":
            raise AssertionError("in the modern era the client refuses by raising ClientError from the call; assert on that")
        errors = [
            e.error
            for e in self.exchanges
            if e.error is not None
            and e.error.get("code") == code
            and (method is None or e.method == method)
            and (message is None or message in str(e.error.get("message", "")))
        ]
        if not errors:
            raise AssertionError(f"no answer with error {code} (method {method}); exchanges: {self._summary()}")
        return errors

    @property
    def unanswered(self) -> list[Exchange]:
        """Requests for input the client never answered (modern: the call stopped, or is waiting)."""
        return [e for e in self.exchanges if not e.answered]

    def _summary(self) -> str:
        return repr([(e.method, e.result if e.result is not None else e.error) for e in self.exchanges])

    # ------------------------------------------------------------------ closing

    def close(self, timeout: float = 5.0) -> None:
        """Close the client built by :meth:`client` (if any), hang up and stop the fake's threads (idempotent)."""
        if self._client is not None:
            self._client.close(timeout)
        with self._lock:
            self._closed = True
            waiters = list(self._waiters.values())
            calls = list(self._calls.values())
        for call in calls:
            call.cancelled.set()
        for box in waiters:
            box.put(None)
        self.peer.close()  # the client sees EOF
        self.peer._inbox.put(None)  # and our own loop ends
        self._thread.join(timeout)  # real seconds
        for thread in list(self._threads):
            thread.join(min(timeout, 1.0))

    # ------------------------------------------------------------------ the loop

    def _with_modes(self) -> bool:
        return self.era == "modern" or self.negotiated in (None, LEGACY_VERSION)

    def _run(self) -> None:
        while True:
            try:
                message = self.peer.recv(timeout=0.5)
            except TimeoutError:
                if self._closed:
                    break
                continue
            except ValueError:
                continue  # not JSON: nothing the client would send
            if message is None:
                break
            if self._on_message is not None:
                self._on_message("received", message)
            with self._changed:
                self._received.append(message)
                self._changed.notify_all()
            try:
                self._dispatch(message)
            except _Closed:
                break
        with self._lock:
            calls = list(self._calls.values())
        for call in calls:
            call.cancelled.set()

    def _reply(self, request_id: Any, result: Optional[JsonDict] = None, error: Optional[JsonDict] = None) -> None:
        message: JsonDict = {"jsonrpc": "2.0", "id": request_id}
        if error is not None:
            message["error"] = error
        else:
            message["result"] = result if result is not None else {}
        self.send_raw(message)

    def _dispatch(self, message: JsonDict) -> None:
        method = message.get("method")
        if method is None:
            self._on_answer(message)
            return
        params = message.get("params")
        params = params if isinstance(params, dict) else {}
        if "id" not in message:
            if method == "notifications/cancelled":
                with self._lock:
                    call = self._calls.get(_key(params.get("requestId")))
                if call is not None:
                    call.cancelled.set()
            return
        request_id = message["id"]
        with self._lock:
            answer = self._overrides.get(str(method))
        if answer is not None:
            try:
                result = answer(params)
            except ToolError as exc:
                self._reply(request_id, error=exc.error())
                return
            except Exception as exc:  # a bug in the override: answered, so the fake keeps serving
                self._reply(request_id, error={"code": -32603, "message": f"{type(exc).__name__}: {exc}"})
                return
            if result is not None:
                self._reply(request_id, result)
            return
        if self.era == "modern":
            self._modern(request_id, str(method), params)
        else:
            self._legacy(request_id, str(method), params)

    def _on_answer(self, message: JsonDict) -> None:
        key = _key(message.get("id"))
        with self._lock:
            box = self._waiters.get(key)
            for exchange in self._exchanges:
                if not exchange.chain and _key(exchange.key) == key and not exchange.answered:
                    if "error" in message:
                        err = message["error"]
                        exchange.error = err if isinstance(err, dict) else {"message": repr(err)}
                    else:
                        res = message.get("result")
                        exchange.result = res if isinstance(res, dict) else {}
                    break
        if box is not None:
            box.put(message)

    # ------------------------------------------------------------------ legacy

    def _legacy(self, request_id: Any, method: str, params: JsonDict) -> None:
        if method == "initialize":
            offered = params.get("protocolVersion")
            self.negotiated = self.version or (offered if isinstance(offered, str) else LEGACY_VERSION)
            caps = params.get("capabilities")
            info = params.get("clientInfo")
            self.client_capabilities = caps if isinstance(caps, dict) else None
            self.client_info = info if isinstance(info, dict) else None
            result: JsonDict = {"protocolVersion": self.negotiated, "capabilities": self.capabilities, "serverInfo": SERVER_INFO}
            if self.instructions is not None:
                result["instructions"] = self.instructions
            self._reply(request_id, result)
        elif method in ("ping", "resources/subscribe", "resources/unsubscribe"):
            self._reply(request_id, {})
        elif method == "logging/setLevel":
            level = params.get("level")
            self.log_level = level if isinstance(level, str) else None
            self._reply(request_id, {})
        elif method == "tools/list":
            self._reply(request_id, {"tools": self._tool_list()})
        elif method == "resources/list":
            self._reply(request_id, {"resources": self._resource_list()})
        elif method == "resources/templates/list":
            self._reply(request_id, {"resourceTemplates": []})
        elif method == "prompts/list":
            self._reply(request_id, {"prompts": self._prompt_list()})
        elif method in ("resources/read", "prompts/get"):
            reply, error = self._read_resource(params) if method == "resources/read" else self._get_prompt(params)
            self._reply(request_id, reply, error)
        elif method == "tools/call":
            tool = self._find_tool(request_id, params)
            if tool is not None:
                self._spawn(self._run_legacy_tool, tool, request_id, params)
        else:
            self._reply(request_id, error={"code": -32601, "message": f"Method not found: {method}"})

    def _run_legacy_tool(self, tool: _Tool, request_id: Any, params: JsonDict) -> None:
        call = ToolCall(self, tool.name, params, chain="")
        with self._lock:
            self._calls[_key(request_id)] = call
        try:
            reply, error = self._outcome(tool, call)
        except _Closed:
            return
        finally:
            with self._lock:
                self._calls.pop(_key(request_id), None)
        if not call.cancelled.is_set() and not self._closed:
            self._reply(request_id, reply, error)

    def _outcome(self, tool: _Tool, call: ToolCall) -> tuple[Optional[JsonDict], Optional[JsonDict]]:
        """Run the tool once: (result, None) or (None, JSON-RPC error). _NeedInput and _Closed pass."""
        try:
            value = tool.fn(call)
        except ToolError as exc:
            return None, exc.error()
        except ClientRefused as exc:
            return text_result(str(exc), is_error=True), None
        except Exception as exc:  # a tool's bug becomes a tool error, as a real server would do
            return text_result(f"{type(exc).__name__}: {exc}", is_error=True), None
        if isinstance(value, str):
            return text_result(value), None
        if not isinstance(value, dict):
            return text_result(f"the tool returned {type(value).__name__}, not a dict or str", is_error=True), None
        return dict(value), None

    # ------------------------------------------------------------------ modern

    def _modern(self, request_id: Any, method: str, params: JsonDict) -> None:
        meta = params.get("_meta")
        if method == "initialize":
            requested = params.get("protocolVersion")
            data = {"supported": [self.negotiated], "requested": requested if isinstance(requested, str) else None}
            self._reply(request_id, error={"code": -32602, "message": "Unsupported protocol version", "data": data})
            return
        if not isinstance(meta, dict) or not isinstance(meta.get(META_VERSION), str):
            self._reply(request_id, error={"code": -32602, "message": "Missing required _meta protocolVersion"})
            return
        if meta[META_VERSION] != self.negotiated:
            data = {"supported": [self.negotiated], "requested": meta[META_VERSION]}
            self._reply(request_id, error={"code": -32022, "message": "Unsupported protocol version", "data": data})
            return
        caps = meta.get(META_CAPABILITIES)
        if isinstance(caps, dict):
            self.client_capabilities = caps
        if method == "server/discover":
            result: JsonDict = {
                "resultType": "complete",
                "supportedVersions": [self.negotiated],
                "capabilities": self.capabilities,
                "_meta": {META_SERVER_INFO: SERVER_INFO},
            }
            if self.instructions is not None:
                result["instructions"] = self.instructions
            self._reply(request_id, result)
        elif method == "tools/list":
            self._reply(request_id, {"resultType": "complete", "tools": self._tool_list()})
        elif method == "resources/list":
            self._reply(request_id, {"resultType": "complete", "resources": self._resource_list()})
        elif method == "resources/templates/list":
            self._reply(request_id, {"resultType": "complete", "resourceTemplates": []})
        elif method == "prompts/list":
            self._reply(request_id, {"resultType": "complete", "prompts": self._prompt_list()})
        elif method in ("resources/read", "prompts/get"):
            reply, error = self._read_resource(params) if method == "resources/read" else self._get_prompt(params)
            self._reply(request_id, {"resultType": "complete", **reply} if reply is not None else None, error)
        elif method == "tools/call":
            tool = self._find_tool(request_id, params)
            if tool is not None:
                self._spawn(self._run_modern_tool, tool, request_id, params)
        elif method == "tasks/get":
            task = self._find_task(request_id, params)
            if task is not None:
                self._spawn(self._task_get, task, request_id)
        elif method == "tasks/update":
            task = self._find_task(request_id, params)
            if task is not None:
                responses = params.get("inputResponses")
                if isinstance(responses, dict):
                    self._note_responses(task.task_id, responses)
                    with task.lock:
                        task.responses.update(responses)
                        task.updated = _now()
                self._reply(request_id, {"resultType": "complete"})
        elif method == "tasks/cancel":
            task = self._find_task(request_id, params)
            if task is not None:
                with task.lock:
                    if task.final is None:
                        task.final = {"status": "cancelled"}
                        task.updated = _now()
                self._reply(request_id, {"resultType": "complete"})
        elif method == "ping":
            self._reply(request_id, {"resultType": "complete"})
        else:
            self._reply(request_id, error={"code": -32601, "message": f"Method not found: {method}"})

    def _note_responses(self, chain: str, responses: JsonDict) -> None:
        with self._lock:
            self._input_responses.append(dict(responses))
            for exchange in self._exchanges:
                if exchange.chain == chain and exchange.key in responses and not exchange.answered:
                    value = responses[exchange.key]
                    exchange.result = value if isinstance(value, dict) else {"value": value}

    def _run_modern_tool(self, tool: _Tool, request_id: Any, params: JsonDict) -> None:
        if tool.task:
            task_id = f"task-{next(self._chains)}"
            stamp = _now()
            clean = {k: v for k, v in params.items() if k != "_meta"}
            task = _Task(task_id, tool, clean, stamp, stamp)
            with self._lock:
                self._tasks[task_id] = task
            self._reply(request_id, {"resultType": "task", **self._task_view(task, "working")})
            return
        state: JsonDict = {}
        raw_state = params.get("requestState")
        if isinstance(raw_state, str):
            try:
                decoded = json.loads(raw_state)
            except ValueError:
                decoded = None
            if not isinstance(decoded, dict):
                self._reply(request_id, error={"code": -32602, "message": "requestState is not one this server issued"})
                return
            state = decoded
        chain = str(state.get("c") or f"call-{next(self._chains)}")
        responses: JsonDict = dict(state.get("r") or {})
        incoming = params.get("inputResponses")
        if isinstance(incoming, dict):
            self._note_responses(chain, incoming)
            responses.update(incoming)
        call = ToolCall(self, tool.name, params, chain=chain, responses=responses, emitted_before=int(state.get("n") or 0))
        with self._lock:
            self._calls[_key(request_id)] = call
        try:
            reply, error = self._outcome(tool, call)
        except _NeedInput as need:
            with self._lock:
                self._exchanges.append(Exchange(need.request["method"], need.request.get("params"), need.key, chain=chain))
            # _emitted counts this run's notifications: all were sent (or replayed) before the ask
            next_state = json.dumps({"c": chain, "r": responses, "n": call._emitted}, sort_keys=True)
            reply, error = {"resultType": "input_required", "inputRequests": {need.key: need.request}, "requestState": next_state}, None
        except _Closed:
            return
        finally:
            with self._lock:
                self._calls.pop(_key(request_id), None)
        if reply is not None:
            reply.setdefault("resultType", "complete")
        if not call.cancelled.is_set() and not self._closed:
            self._reply(request_id, reply, error)

    def _task_get(self, task: _Task, request_id: Any) -> None:
        with task.lock:
            if task.final is None:
                call = ToolCall(self, task.tool.name, task.params, chain=task.task_id, responses=task.responses, emitted_before=task.emitted)
                try:
                    reply, error = self._outcome(task.tool, call)
                except _NeedInput as need:
                    with self._lock:
                        known = any(e.chain == task.task_id and e.key == need.key for e in self._exchanges)
                        if not known:
                            self._exchanges.append(Exchange(need.request["method"], need.request.get("params"), need.key, chain=task.task_id))
                    task.emitted = call._emitted
                    view = self._task_view(task, "input_required")
                    view["inputRequests"] = {need.key: need.request}
                    self._reply(request_id, {"resultType": "complete", **view})
                    return
                except _Closed:
                    return
                task.emitted = call._emitted
                task.updated = _now()
                if error is not None:
                    task.final = {"status": "failed", "error": error}
                else:
                    assert reply is not None
                    reply.setdefault("resultType", "complete")
                    task.final = {"status": "completed", "result": reply}
            final = dict(task.final)
            view = self._task_view(task, str(final.pop("status")))
        self._reply(request_id, {"resultType": "complete", **view, **final})

    def _task_view(self, task: _Task, status: str) -> JsonDict:
        return {
            "taskId": task.task_id,
            "status": status,
            "createdAt": task.created,
            "lastUpdatedAt": task.updated,
            "ttlMs": 60000,
            "pollIntervalMs": 10,
        }

    def _find_task(self, request_id: Any, params: JsonDict) -> Optional[_Task]:
        with self._lock:
            task = self._tasks.get(str(params.get("taskId")))
        if task is None:
            self._reply(request_id, error={"code": -32602, "message": "Unknown task"})
        return task

    # ------------------------------------------------------------------ shared

    def _tool_list(self) -> list[JsonDict]:
        with self._lock:
            tools = list(self._tools.values())
        out = []
        for tool in tools:
            entry: JsonDict = {"name": tool.name, "inputSchema": tool.input_schema}
            if tool.description is not None:
                entry["description"] = tool.description
            out.append(entry)
        return out

    def _find_tool(self, request_id: Any, params: JsonDict) -> Optional[_Tool]:
        name = params.get("name")
        with self._lock:
            tool = self._tools.get(name) if isinstance(name, str) else None
        if tool is None:
            self._reply(request_id, error={"code": -32602, "message": f"Unknown tool: {name!r}"})
        return tool

    def _spawn(self, target: Callable[..., None], *args: Any) -> None:
        thread = threading.Thread(target=target, args=args, name=f"{self.name}-tool-{next(self._workers)}", daemon=True)
        with self._lock:
            self._threads = [t for t in self._threads if t.is_alive()]
            self._threads.append(thread)
        thread.start()


def _key(request_id: Any) -> str:
    return json.dumps(request_id, sort_keys=True)


def _now() -> str:
    stamp = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds")
    return stamp.replace("+00:00", "Z")
