"""The :class:`FakeServer` facade: the public API, composed of the kit's parts.

The parts: a :class:`~.registry.Registry` (what it serves), a
:class:`~.recorder.Recorder` (what it saw), a :class:`~.wire.Wire` (the
message loop), and one engine per era (:class:`~.legacy.LegacyEngine`,
:class:`~.modern.ModernEngine` with its :class:`~.tasks.Tasks`). They share
the fake's one lock. Import the public names from :mod:`mcp_input_sync.testing`.
"""

from __future__ import annotations

import itertools
import threading
from typing import Any, Callable, Optional, Union, overload

from .._protocol.eras import MODERN_VERSION
from ..client import Client
from ..transports.memory import MemoryPeer, MemoryTransport, memory_pair
from .call import ToolCall, ToolFunction
from .legacy import LegacyEngine
from .modern import ModernEngine
from .recorder import Recorder
from .registry import CompletionSource, PromptSource, Registry, RequestAnswer, Tool
from .shared import FORCEABLE, LEGACY_VERSION, TASKS_EXTENSION, Exchange, JsonDict
from .tasks import Tasks
from .wire import MessageTap, Wire

_servers = itertools.count(1)


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
        #: The level the client asked for: with ``logging/setLevel`` (legacy), or in its latest
        #: request's ``_meta`` (modern; None when that request asked for no logs).
        self.log_level: Optional[str] = None
        self._n = next(_servers)
        self.name = f"fake-server-{self._n}"
        self._lock = threading.Lock()
        self._registry = Registry(self._lock)
        self._record = Recorder(self._lock)
        self._wire = Wire(self.name, self.peer, self._lock, self._record, self._registry, on_message)
        self._legacy = LegacyEngine(self, self._lock, self._wire, self._registry, self._record)
        self._modern = ModernEngine(self, self._wire, self._registry, self._record, Tasks(self, self._lock, self._wire, self._record))
        self._client: Optional[Client] = None
        self._wire.start(self._route, self._legacy.on_answer)

    # ------------------------------------------------------------------ context

    def __enter__(self) -> "FakeServer":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<FakeServer {self.name} era={self.era} tools={self._registry.tool_names()}>"

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
        output_schema: Optional[JsonDict] = None,
    ) -> Callable[[ToolFunction], ToolFunction]: ...

    def tool(
        self,
        fn_or_name: Union[ToolFunction, str, None] = None,
        /,
        *,
        task: bool = False,
        description: Optional[str] = None,
        input_schema: Optional[JsonDict] = None,
        output_schema: Optional[JsonDict] = None,
    ) -> Union[ToolFunction, Callable[[ToolFunction], ToolFunction]]:
        """Register a tool: ``@fake.tool`` (named after the function) or ``@fake.tool("name", task=True)``."""
        if callable(fn_or_name):
            self.add_tool(fn_or_name.__name__, fn_or_name)
            return fn_or_name
        name = fn_or_name

        def register(fn: ToolFunction) -> ToolFunction:
            self.add_tool(name or fn.__name__, fn, task=task, description=description, input_schema=input_schema, output_schema=output_schema)
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
        output_schema: Optional[JsonDict] = None,
    ) -> None:
        """Register ``fn(call) -> result dict | str`` as tool ``name`` (``task=True``: a modern task).

        ``output_schema`` is listed as the tool's ``outputSchema``; the fake
        does not check the tool's ``structuredContent`` against it (a test may
        return one that does not match, to see the client refuse it).
        """
        self._registry.add_tool(Tool(name, fn, task, description, input_schema or {"type": "object"}, output_schema))

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
        self._registry.set_override(method, answer)

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
        declare = self.capabilities if self._default_capabilities else None
        self._registry.add_resource(uri, text, blob, name, mime_type, description, declare)

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
        declare = self.capabilities if self._default_capabilities else None
        self._registry.add_prompt(name, messages, description, arguments, declare)

    def add_completion(self, ref: JsonDict, argument: str, values: CompletionSource) -> None:
        """Answer ``completion/complete`` for one argument of a prompt or resource template (both eras).

        ``ref`` is ``{"type": "ref/prompt", "name": ...}`` or ``{"type":
        "ref/resource", "uri": ...}``; ``values`` a list (the values starting
        with what was typed are sent, at most 100) or a function
        ``values(typed, context_arguments)`` returning the list. Other
        arguments complete to no values. With the default capabilities the
        fake then also declares ``completions``.
        """
        kind = ref.get("type")
        target = ref.get("name") if kind == "ref/prompt" else ref.get("uri") if kind == "ref/resource" else None
        if not isinstance(target, str):
            raise ValueError('ref must be {"type": "ref/prompt", "name": ...} or {"type": "ref/resource", "uri": ...}')
        declare = self.capabilities if self._default_capabilities else None
        self._registry.add_completion(str(kind), target, argument, values, declare)

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
            if self._registry.has_task_tools():
                options.setdefault("tasks", True)
        else:
            options.setdefault("protocol", self.version if self.version in FORCEABLE[1:] else "legacy")
        options.setdefault("server_id", "fake")
        self._client = Client(self.transport, handler=handler, **options)
        return self._client

    # ------------------------------------------------------------------ sending

    def send_raw(self, message: Union[JsonDict, str, bytes]) -> None:
        """Send anything to the client as it is (a dict is encoded; text and bytes are not)."""
        self._wire.send_raw(message)

    def notify(self, method: str, params: Optional[JsonDict] = None) -> None:
        """Send a notification."""
        self._wire.notify(method, params)

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
        self._record.add_exchange(Exchange(method, params, request_id))
        self.send_raw(message)

    def wait_for_answer(self, request_id: Any, timeout: Optional[float] = None) -> JsonDict:
        """Wait (bounded, real time) for the client's response to request ``request_id``; return it.

        The whole response message (``result`` or ``error``). ``1`` and
        ``"1"`` are different ids.

        Raises:
            TimeoutError: no answer within ``timeout`` (the fake's ``timeout``).
        """
        return self._record.wait_for_answer(request_id, self.timeout if timeout is None else timeout)

    def _ask(self, method: str, params: Optional[JsonDict], timeout: Optional[float], call: Optional[ToolCall]) -> JsonDict:
        return self._legacy.ask(method, params, timeout)

    # ------------------------------------------------------------------ observing

    @property
    def received(self) -> list[JsonDict]:
        """Every message the client sent, in order."""
        return self._record.received()

    @property
    def sent(self) -> list[JsonDict]:
        """Every message (dict) the fake sent, in order."""
        return self._record.sent()

    @property
    def answers(self) -> list[JsonDict]:
        """Every JSON-RPC response the client sent (legacy: its answers to the fake's requests)."""
        return self._record.answers()

    @property
    def input_responses(self) -> list[JsonDict]:
        """Modern: every ``inputResponses`` object the client sent (retries and ``tasks/update``), in order."""
        return self._record.input_responses()

    @property
    def exchanges(self) -> list[Exchange]:
        """Every request for input the fake made, with the client's answer (both eras)."""
        return self._record.exchanges()

    def requests_seen(self, method: str) -> list[JsonDict]:
        """The params of every request (or notification) named ``method`` the client sent."""
        return self._record.requests_seen(method)

    def wait_for(self, method: str, count: int = 1, timeout: Optional[float] = None) -> list[JsonDict]:
        """Wait (bounded, real time) until the client sent ``count`` messages named ``method``; return them.

        Raises:
            TimeoutError: fewer arrived within ``timeout`` (the fake's ``timeout``).
        """
        return self._record.wait_for(method, count, self.timeout if timeout is None else timeout)

    def assert_answered(self, method: str, count: Optional[int] = None) -> list[JsonDict]:
        """Assert the client answered requests for ``method`` with results; return those results.

        ``count``: exactly that many (default: at least one). Works in both eras.
        """
        return self._record.assert_answered(method, count)

    def assert_refused(self, code: int, method: Optional[str] = None, message: Optional[str] = None) -> list[JsonDict]:
        """Legacy: assert the client answered a request (of ``method``) with error ``code``; return the errors.

        ``message``: a text the error's message must contain. In the modern
        era a refusal never reaches the server (the call raises
        ``ClientError`` instead): this raises ``AssertionError`` saying so.
        """
        if self.era == "modern":
            raise AssertionError("in the modern era the client refuses by raising ClientError from the call; assert on that")
        return self._record.assert_refused(code, method, message)

    @property
    def unanswered(self) -> list[Exchange]:
        """Requests for input the client never answered (modern: the call stopped, or is waiting)."""
        return [e for e in self.exchanges if not e.answered]

    # ------------------------------------------------------------------ closing

    def close(self, timeout: float = 5.0) -> None:
        """Close the client built by :meth:`client` (if any), hang up and stop the fake's threads (idempotent)."""
        if self._client is not None:
            self._client.close(timeout)
        self._wire.shut()
        self._legacy.release()
        self._wire.hang_up(timeout)

    # ------------------------------------------------------------------ routing

    def _with_modes(self) -> bool:
        return self.era == "modern" or self.negotiated in (None, LEGACY_VERSION)

    def _route(self, request_id: Any, method: str, params: JsonDict) -> None:
        if self.era == "modern":
            self._modern.handle(request_id, method, params)
        else:
            self._legacy.handle(request_id, method, params)
