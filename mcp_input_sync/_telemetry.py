"""OpenTelemetry for one client, as the MCP semantic conventions name things (docs/telemetry.md).

:class:`Tracing` is built for every client whose ``telemetry`` option is on,
but imports nothing: each request first asks :meth:`Tracing.tracer`, which
answers None (one dictionary lookup) until the application has imported
``opentelemetry.trace`` and configured a provider. Then:

- :meth:`Tracing.client` starts the CLIENT span of a request
  (``{mcp.method.name} {target}``), puts the W3C trace context in its
  ``params._meta``, and returns a :class:`Traced` the session finishes
  once, whatever ends the request (its answer, an error, a timeout, the
  connection);
- :meth:`Tracing.server` starts the SERVER span of a request the server
  makes of the client, a child of the request it belongs to, finished with
  its outcome (``accept``, ``decline``, ``cancel``, ``refused``, ...);
- a retry and a reconnect are events of the request's span;
- each finished request records ``mcp.client.operation.duration``.
"""

from __future__ import annotations

import sys
import threading
from typing import Any, Callable, Mapping, Optional

from . import _clock, reflect
from ._protocol.jsonrpc import JsonDict
from ._version import __version__
from .telemetry import Telemetry

#: The histogram's bucket boundaries, in seconds (the conventions' advice for MCP operations).
BUCKETS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)
#: What the duration histogram is recorded with (low cardinality: no id, session or URI).
_METRIC_KEYS = (
    "mcp.method.name", "error.type", "gen_ai.tool.name", "gen_ai.operation.name", "gen_ai.prompt.name", "mcp.protocol.version",
    "network.transport", "network.protocol.name", "network.protocol.version", "server.address", "server.port",
)
#: The attribute the outcome of an answered server request is recorded in.
OUTCOME = "mcp_input_sync.input.outcome"
#: The attribute naming the check that refused a server request.
CHECK = "mcp_input_sync.input.check"


class Traced:
    """One request's span: :meth:`finish` ends it (once) and records its duration."""

    __slots__ = ("span", "attributes", "started", "_tracing", "_open")

    def __init__(self, tracing: "Tracing", span: Any, attributes: Optional[dict[str, Any]]) -> None:
        self.span = span
        #: The histogram's attributes (None: a SERVER span, which records no client duration).
        self.attributes = attributes
        self.started = _clock.monotonic()
        self._tracing = tracing
        self._open = True

    def finish(self, error: Optional[str], response: Optional[JsonDict] = None, why: str = "") -> None:
        """End the span: ``error`` is its ``error.type`` (None: none); ``response`` the JSON-RPC message that answered it."""
        if not self._open:
            return
        self._open = False
        span = self.span
        if response is not None:
            failed = response.get("error")
            if isinstance(failed, dict):
                code, message = failed.get("code"), failed.get("message")
                error = str(code) if isinstance(code, int) else "_OTHER"
                span.set_attribute("rpc.response.status_code", error)
                # the conventions: the status says the error's message (bounded, cleaned: the server wrote it)
                why = why or (reflect.text(message, 256) if isinstance(message, str) else f"JSON-RPC error {error}")
            else:
                result = response.get("result")
                if isinstance(result, dict) and result.get("isError") is True:
                    error, why = "tool_error", "the tool's result is an error"
        if error is not None:
            span.set_attribute("error.type", error)
            self._tracing.fail(span, why or error)
        span.end()
        attributes = self.attributes
        if attributes is not None:
            if error is not None:
                attributes["error.type"] = error
            self._tracing.record(_clock.monotonic() - self.started, attributes)

    def settle(self, outcome: str, error: Optional[str] = None, check: Optional[str] = None) -> None:
        """End a SERVER span with how the request was answered: ``outcome`` (accept, decline, cancel, refused,
        error, timeout, cancelled), ``error`` its ``error.type`` when it failed, ``check`` the check that refused it."""
        if not self._open:
            return
        self.span.set_attribute(OUTCOME, outcome)
        if check is not None:
            self.span.set_attribute(CHECK, check)
        self.finish(error, why=f"{outcome}: {check}" if check else outcome)

    def event(self, name: str, attributes: Mapping[str, Any]) -> None:
        """A retry of the request (an event of its span)."""
        if self._open:
            self.span.add_event(name, dict(attributes))


def wanted(tracing: "Optional[Tracing]") -> bool:
    """Whether a span may be made: the option is on, and the application has loaded OpenTelemetry (the hot
    paths inline this test, ``tracing is not None and (tracing.found or LOADED in sys.modules)``: no call)."""
    return tracing is not None and (tracing.found or LOADED in sys.modules)


#: The module whose presence says the application may have configured OpenTelemetry.
LOADED = "opentelemetry.trace"


class Tracing:
    """One client's tracer, meter and peer attributes (see the module docstring)."""

    def __init__(self, option: Telemetry, peer: Callable[[], Mapping[str, Any]]) -> None:
        #: True once a provider was found: spans are made from then on.
        self.found = False
        self._option = option
        #: ``peer()``: the connection's attributes (``mcp.protocol.version``, ``network.transport``, ``server.address``,
        #: ``mcp.session.id``...), read at each request.
        self._peer = peer
        self._tracer: Any = None
        self._histogram: Any = None
        self._api: Any = None
        self._lock = threading.Lock()
        #: Per thread: the span of the request a 2026-07-28 round answers, and events waiting for the next request.
        self.local = threading.local()

    # ------------------------------------------------------------------ the providers, once the application has them

    def tracer(self) -> Any:
        """The tracer, or None while the application has no OpenTelemetry provider (nothing imported, nothing spent)."""
        tracer = self._tracer
        if tracer is not None:
            return tracer
        trace = sys.modules.get(LOADED)
        if trace is None:
            return None
        option = self._option
        provider = option.tracer_provider or trace.get_tracer_provider()
        meters = option.meter_provider
        if meters is None:
            loaded = sys.modules.get("opentelemetry.metrics")
            meters = loaded.get_meter_provider() if loaded is not None else None
        unset_meters = meters is None or type(meters).__name__ == "_ProxyMeterProvider"
        if isinstance(provider, trace.ProxyTracerProvider) and unset_meters:
            return None  # nothing configured yet: ask again next time
        with self._lock:
            if self._tracer is None:
                from opentelemetry import metrics, propagate, trace as api

                self._api = (api, propagate)
                meter = (meters or metrics.get_meter_provider()).get_meter("mcp_input_sync", __version__)
                self._histogram = meter.create_histogram(
                    "mcp.client.operation.duration", unit="s",
                    description="The duration of an MCP request as the client sees it, from sending it to its answer.",
                    explicit_bucket_boundaries_advisory=BUCKETS,
                )
                self._tracer = provider.get_tracer("mcp_input_sync", __version__)
                self.found = True
            return self._tracer

    # ------------------------------------------------------------------ requests the client sends

    def client(self, method: str, params: Optional[JsonDict], request_id: Any) -> tuple[Optional[Traced], Optional[JsonDict]]:
        """Start the CLIENT span of a request; return it and the params carrying its trace context in ``_meta``."""
        tracer = self.tracer()
        if tracer is None:
            return None, params
        api, propagate = self._api
        attributes = self._attributes(method, params)
        attributes["jsonrpc.request.id"] = str(request_id)
        target = attributes.get("gen_ai.tool.name") or attributes.get("gen_ai.prompt.name")
        span = tracer.start_span(f"{method} {target}" if target else method, kind=api.SpanKind.CLIENT, attributes=attributes)
        waiting = getattr(self.local, "events", None)
        if waiting:
            self.local.events = []
            for name, event in waiting:
                span.add_event(name, event)
        carrier: dict[str, str] = {}
        propagate.inject(carrier, context=api.set_span_in_context(span))
        if carrier:
            meta = dict(params.get("_meta") or {}) if params else {}
            meta.update(carrier)
            params = {**(params or {}), "_meta": meta}
        return Traced(self, span, {k: attributes[k] for k in _METRIC_KEYS if k in attributes}), params

    def answered(self, traced: Traced) -> None:
        """The caller's thread has the answer of ``traced``: a round of input it asks for belongs to it."""
        self.local.parent = traced.span

    def note(self, name: str, attributes: Mapping[str, Any]) -> None:
        """An event for the next request this thread sends (a reconnect before it)."""
        if self._tracer is None and self.tracer() is None:
            return
        waiting = getattr(self.local, "events", None)
        if waiting is None:
            waiting = self.local.events = []
        if len(waiting) < 16:
            waiting.append((name, dict(attributes)))

    # ------------------------------------------------------------------ requests the server makes of the client

    def server(self, method: str, request_id: Any, parent: Any, meta: Any = None) -> Optional[Traced]:
        """Start the SERVER span of a server request: a child of ``parent`` (the span of the request it belongs to).

        The trace context the server put in the request's ``_meta`` (``meta``)
        is linked; with no ``parent`` it is the parent, as the conventions
        have a receiver do.
        """
        tracer = self.tracer()
        if tracer is None:
            return None
        api, propagate = self._api
        attributes = self._attributes(method, None)
        if request_id is not None:
            attributes["jsonrpc.request.id"] = str(request_id)
        links = []
        remote = None
        if isinstance(meta, dict) and "traceparent" in meta:
            carrier = {k: v for k, v in meta.items() if k in ("traceparent", "tracestate") and isinstance(v, str)}
            remote = propagate.extract(carrier)
            sent = api.get_current_span(remote).get_span_context()
            if sent.is_valid and parent is not None:
                links.append(api.Link(sent))
        context = api.set_span_in_context(parent) if parent is not None else remote
        span = tracer.start_span(method, context=context, kind=api.SpanKind.SERVER, attributes=attributes, links=links)
        return Traced(self, span, None)

    def parent(self) -> Any:
        """The span of the request this thread last had answered (a 2026-07-28 round's), or None."""
        return getattr(self.local, "parent", None)

    # ------------------------------------------------------------------ helpers

    def _attributes(self, method: str, params: Optional[JsonDict]) -> dict[str, Any]:
        attributes: dict[str, Any] = {"mcp.method.name": method}
        if params:
            name = params.get("name")
            if method == "tools/call" and isinstance(name, str):
                attributes["gen_ai.tool.name"] = reflect.text(name, 200)
                attributes["gen_ai.operation.name"] = "execute_tool"
            elif method == "prompts/get" and isinstance(name, str):
                attributes["gen_ai.prompt.name"] = reflect.text(name, 200)
            uri = params.get("uri")
            if isinstance(uri, str):
                attributes["mcp.resource.uri"] = reflect.text(uri, 2048)
        attributes.update(self._peer())
        return attributes

    def fail(self, span: Any, why: str) -> None:
        api = self._api[0]
        span.set_status(api.Status(api.StatusCode.ERROR, why))

    def record(self, seconds: float, attributes: Mapping[str, Any]) -> None:
        self._histogram.record(max(0.0, seconds), attributes)


def tracing_for(option: Optional[Telemetry], peer: Callable[[], Mapping[str, Any]]) -> Optional[Tracing]:
    """The client's tracing, or None when the option is off."""
    return None if option is None else Tracing(option, peer)
