"""OpenTelemetry (the ``telemetry`` option): every span and attribute docs/telemetry.md names, read back from the
SDK's in-memory exporter and metric reader, against the official SDK's servers (both eras), FastMCP behind a
busy gateway, and the testing kit's fake; and nothing imported or spent without it."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from typing import Any, Iterator, Optional

import pytest

pytest.importorskip("opentelemetry.sdk")

from opentelemetry.sdk.metrics import MeterProvider  # noqa: E402
from opentelemetry.sdk.metrics.export import InMemoryMetricReader  # noqa: E402
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402
from opentelemetry.trace import SpanKind, StatusCode  # noqa: E402

import mcp_input_sync as mis  # noqa: E402
from mcp_input_sync.telemetry import Telemetry  # noqa: E402
from mcp_input_sync.testing import ClientRefused, FakeServer, ToolCall  # noqa: E402

from .gateway import Gateway, Seen  # noqa: E402
from .harness import PEERS_DIR  # noqa: E402
from .http_peers import PeerProcess, http_peer  # noqa: E402
from .test_oauth_fastmcp import FASTMCP_PYTHON  # noqa: E402

JsonDict = dict[str, Any]
SDK_MODERN = [sys.executable, str(PEERS_DIR / "sdk_modern_server.py")]
SDK_LEGACY = [sys.executable, str(PEERS_DIR / "sdk_legacy_server.py")]
FASTMCP = [str(FASTMCP_PYTHON), str(PEERS_DIR / "fastmcp_server.py")]


class Otel:
    """A tracer provider and a meter provider of the test's own, read back in memory."""

    def __init__(self) -> None:
        self.spans = InMemorySpanExporter()
        self.tracer_provider = TracerProvider()
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.spans))
        self.reader = InMemoryMetricReader()
        self.meter_provider = MeterProvider(metric_readers=[self.reader])
        self.option = Telemetry(tracer_provider=self.tracer_provider, meter_provider=self.meter_provider)

    def finished(self, kind: Optional[SpanKind] = None) -> list[ReadableSpan]:
        return [s for s in self.spans.get_finished_spans() if kind is None or s.kind == kind]

    def named(self, name: str) -> list[ReadableSpan]:
        return [s for s in self.finished() if s.name == name]

    def durations(self) -> list[tuple[dict[str, Any], int]]:
        points: list[tuple[dict[str, Any], int]] = []
        data = self.reader.get_metrics_data()
        for resource in data.resource_metrics if data else []:
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    if metric.name == "mcp.client.operation.duration":
                        assert metric.unit == "s"
                        points.extend((dict(p.attributes or {}), p.count) for p in metric.data.data_points)  # type: ignore[union-attr]
        return points

    def close(self) -> None:
        self.tracer_provider.shutdown()
        self.meter_provider.shutdown()


@pytest.fixture
def otel() -> Iterator[Otel]:
    made = Otel()
    yield made
    made.close()


class Answers(mis.InputHandler):
    """Accepts forms with a name, declines those that ask for a colour, answers samples and roots."""

    def handle_elicitation(self, params: JsonDict, ctx: mis.InputContext) -> JsonDict:
        if "colour" in json.dumps(params.get("requestedSchema")):
            return {"action": "decline"}
        return {"action": "accept", "content": {"name": "Ada", "confirm": True}}

    def handle_sampling(self, params: JsonDict, ctx: mis.InputContext) -> JsonDict:
        return {"role": "assistant", "content": {"type": "text", "text": "sampled"}, "model": "test"}

    def list_roots(self, ctx: mis.InputContext) -> JsonDict:
        return {"roots": [{"uri": "file:///srv", "name": "srv"}]}


def attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


# ============================================================================ client spans


def test_a_tool_call_is_a_client_span_named_and_attributed_as_the_conventions_say(otel: Otel) -> None:
    with mis.connect_stdio(SDK_MODERN, protocol="modern", telemetry=otel.option) as client:
        client.call_tool("echo", {"text": "hi"})
    span = otel.named("tools/call echo")[0]
    assert span.kind == SpanKind.CLIENT and span.status.status_code == StatusCode.UNSET
    assert attrs(span) == {
        "mcp.method.name": "tools/call", "gen_ai.tool.name": "echo", "gen_ai.operation.name": "execute_tool",
        "jsonrpc.request.id": attrs(span)["jsonrpc.request.id"], "mcp.protocol.version": "2026-07-28", "network.transport": "pipe",
    }
    assert ({"mcp.method.name": "tools/call", "gen_ai.tool.name": "echo", "gen_ai.operation.name": "execute_tool",
             "mcp.protocol.version": "2026-07-28", "network.transport": "pipe"}, 1) in otel.durations()


def test_a_prompt_and_a_resource_and_an_error(otel: Otel) -> None:
    with FakeServer(era="legacy") as fake:
        fake.add_prompt("review", "Review this")
        fake.add_resource("file:///notes.txt", "notes")
        with fake.client(telemetry=otel.option) as client:
            client.get_prompt("review")
            client.read_resource("file:///notes.txt")
            with pytest.raises(mis.ClientError):
                client.read_resource("file:///missing.txt")
    prompt = otel.named("prompts/get review")[0]
    assert attrs(prompt)["gen_ai.prompt.name"] == "review" and "gen_ai.tool.name" not in attrs(prompt)
    read, missing = otel.named("resources/read")  # the URI is an attribute, not part of the name
    assert attrs(read)["mcp.resource.uri"] == "file:///notes.txt" and read.status.status_code == StatusCode.UNSET
    assert attrs(missing)["error.type"] == attrs(missing)["rpc.response.status_code"] == "-32002"
    assert missing.status.status_code == StatusCode.ERROR
    assert any(point.get("error.type") == "-32002" for point, _ in otel.durations())


def test_a_tool_error_result_and_a_timeout(otel: Otel) -> None:
    with FakeServer(era="legacy") as fake:

        @fake.tool
        def broken(call: ToolCall) -> JsonDict:
            return {"content": [{"type": "text", "text": "no"}], "isError": True}

        stuck = threading.Event()

        @fake.tool
        def slow(call: ToolCall) -> str:
            stuck.wait(5)
            return "late"

        with fake.client(telemetry=otel.option) as client:
            client.call_tool("broken")
            with pytest.raises(mis.ClientError):
                client.call_tool("slow", timeout=0.2)
            stuck.set()
    assert attrs(otel.named("tools/call broken")[0])["error.type"] == "tool_error"
    slow_span = otel.named("tools/call slow")[0]
    assert attrs(slow_span)["error.type"] == "timeout" and slow_span.status.status_code == StatusCode.ERROR


def test_the_trace_context_goes_in_params_meta(otel: Otel) -> None:
    tracer = otel.tracer_provider.get_tracer("host")
    with FakeServer(era="modern") as fake:

        @fake.tool
        def echo(call: ToolCall) -> str:
            return "ok"

        with fake.client(telemetry=otel.option) as client, tracer.start_as_current_span("host request") as outer:
            client.call_tool("echo", meta={"com.example/trace": "kept"})
        sent = fake.requests_seen("tools/call")[0]["_meta"]
    span = otel.named("tools/call echo")[0]
    assert span.parent is not None and span.parent.span_id == outer.get_span_context().span_id  # the host's span is its parent
    assert sent["traceparent"] == f"00-{span.context.trace_id:032x}-{span.context.span_id:016x}-{int(span.context.trace_flags):02x}"
    assert sent["com.example/trace"] == "kept"  # beside the caller's own keys and the era's


def test_http_spans_name_the_server_and_the_session(otel: Otel) -> None:
    with http_peer("sdk_legacy_server.py") as url, mis.connect_http(url, telemetry=otel.option, protocol="legacy") as client:
        client.call_tool("echo", {"text": "hi"})
        port = int(url.rsplit(":", 1)[1].split("/")[0])
    found = attrs(otel.named("tools/call echo")[0])
    assert found["network.transport"] == "tcp" and found["network.protocol.name"] == "http" and found["network.protocol.version"] == "1.1"
    assert found["server.address"] == "127.0.0.1" and found["server.port"] == port
    assert isinstance(found.get("mcp.session.id"), str) and found["mcp.session.id"]


# ============================================================================ server spans


def test_legacy_server_requests_are_server_spans_children_of_their_call(otel: Otel) -> None:
    with mis.connect_stdio(SDK_LEGACY, handler=Answers(), protocol="legacy", telemetry=otel.option) as client:
        client.call_tool("chain")
    call = otel.named("tools/call chain")[0]
    served = otel.finished(SpanKind.SERVER)
    assert [s.name for s in served] == ["sampling/createMessage", "elicitation/create", "roots/list"]
    for span in served:
        assert span.parent is not None and span.parent.span_id == call.context.span_id
        assert attrs(span)["mcp_input_sync.input.outcome"] == "accept" and "jsonrpc.request.id" in attrs(span)
        assert call.start_time is not None and span.start_time is not None and span.start_time >= call.start_time


def test_the_trace_context_a_server_request_carries_is_linked(otel: Otel) -> None:
    sent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    with FakeServer(era="legacy") as fake:

        @fake.tool
        def ask(call: ToolCall) -> str:
            params = {"message": "ok?", "requestedSchema": {"type": "object", "properties": {}}, "_meta": {"traceparent": sent}}
            return str(call.request("elicitation/create", params)["action"])

        with fake.client(handler=Answers(), telemetry=otel.option) as client:
            client.call_tool("ask")
    (served,) = otel.finished(SpanKind.SERVER)
    (call,) = otel.named("tools/call ask")
    assert served.parent is not None and served.parent.span_id == call.context.span_id  # the call it is tied to
    assert [f"{link.context.trace_id:032x}" for link in served.links] == ["0af7651916cd43dd8448eb211c80319c"]


def test_modern_round_inputs_are_server_spans_with_their_outcome(otel: Otel) -> None:
    with mis.connect_stdio(SDK_MODERN, handler=Answers(), protocol="modern", telemetry=otel.option) as client:
        client.call_tool("ask_multi")
    first, *_ = otel.named("tools/call ask_multi")
    served = otel.finished(SpanKind.SERVER)
    outcomes = {s.name: attrs(s)["mcp_input_sync.input.outcome"] for s in served}
    assert outcomes == {"elicitation/create": "decline", "sampling/createMessage": "accept", "roots/list": "accept"}
    assert all(s.parent is not None and s.parent.span_id == first.context.span_id for s in served[:3])


def test_a_request_refused_by_a_check_is_a_server_span_that_says_so(otel: Otel) -> None:
    class FormsOnly(mis.InputHandler):  # declares no sampling: a sampling request is refused by the capability check
        def handle_elicitation(self, params: JsonDict, ctx: mis.InputContext) -> JsonDict:
            return {"action": "cancel"}

    with FakeServer(era="legacy") as fake:

        @fake.tool
        def ask(call: ToolCall) -> str:
            with pytest.raises(ClientRefused):
                call.sample("hello?")
            return str(call.elicit("name?")["action"])

        with fake.client(handler=FormsOnly(), telemetry=otel.option) as client:
            client.call_tool("ask")
    refused, cancelled = otel.finished(SpanKind.SERVER)
    assert refused.name == "sampling/createMessage" and attrs(refused)["mcp_input_sync.input.outcome"] == "refused"
    assert attrs(refused)["mcp_input_sync.input.check"] == "capability" and refused.status.status_code == StatusCode.ERROR
    assert cancelled.name == "elicitation/create" and cancelled.parent is not None
    assert attrs(cancelled)["mcp_input_sync.input.outcome"] == "cancel" and cancelled.status.status_code == StatusCode.UNSET


def test_a_modern_round_a_check_refuses_is_a_server_span_child_of_its_request(otel: Otel) -> None:
    class FormsOnly(mis.InputHandler):
        def handle_elicitation(self, params: JsonDict, ctx: mis.InputContext) -> JsonDict:
            return {"action": "accept", "content": {}}

    with FakeServer(era="modern") as fake:

        @fake.tool
        def ask(call: ToolCall) -> str:
            return str(call.sample("hello?"))

        with fake.client(handler=FormsOnly(), telemetry=otel.option) as client, pytest.raises(mis.ClientError) as err:
            client.call_tool("ask")
    assert err.value.check == "capability"  # the server asked for what the client never declared
    (refused,) = otel.finished(SpanKind.SERVER)
    (call,) = otel.named("tools/call ask")
    assert refused.name == "sampling/createMessage" and refused.parent is not None and refused.parent.span_id == call.context.span_id
    assert attrs(refused)["mcp_input_sync.input.outcome"] == "refused" and attrs(refused)["mcp_input_sync.input.check"] == "capability"


# ============================================================================ retries and reconnects


@pytest.mark.skipif(not FASTMCP_PYTHON.exists(), reason="run peers/setup.sh to install FastMCP (pinned)")
def test_a_retry_is_an_event_of_the_request_span(otel: Otel) -> None:
    replies = [(429, {"Retry-After": "0"})]
    lock = threading.Lock()

    def verdict(seen: Seen) -> Optional[tuple[int, dict[str, str]]]:
        with lock:
            return replies.pop() if seen.tool == "echo" and replies else None

    upstream = PeerProcess(FASTMCP)
    upstream.start()
    gate = Gateway(upstream.url, verdict)
    try:
        with mis.connect_http(gate.url, telemetry=otel.option) as client:
            client.call_tool("echo", {"text": "hi"})
    finally:
        gate.close()
        upstream.stop()
    (span,) = otel.named("tools/call echo")
    (event,) = span.events
    assert event.name == "mcp_input_sync.retry"
    assert dict(event.attributes or {}) == {"mcp_input_sync.retry.reason": "HTTP 429 (Retry-After 0 s)", "mcp_input_sync.retry.attempt": 2}


def test_a_reconnect_is_an_event_of_the_call_that_made_it(otel: Otel) -> None:
    with mis.connect_stdio([sys.executable, str(PEERS_DIR / "sdk_cache_server.py")], protocol="modern", reconnect=True, telemetry=otel.option) as client:
        with pytest.raises(mis.ClientError):
            client.call_tool("crash")
        client.call_tool("reads")
    assert attrs(otel.named("tools/call crash")[0])["error.type"] == "transport"
    (span,) = otel.named("tools/call reads")
    assert [e.name for e in span.events] == ["mcp_input_sync.reconnect"]
    assert dict(span.events[0].attributes or {}) == {"mcp_input_sync.reconnect.attempts": 1}


# ============================================================================ off, and absent


def test_telemetry_false_makes_no_span(otel: Otel) -> None:
    with FakeServer(era="legacy") as fake:
        fake.add_resource("file:///a", "a")
        with fake.client(telemetry=False) as client:
            client.read_resource("file:///a")
    assert otel.finished() == [] and otel.durations() == []
    with pytest.raises(TypeError, match="telemetry"), FakeServer() as fake:
        fake.client(telemetry="yes")


def run(script: str) -> str:
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


SESSION = """
import sys
from mcp_input_sync.testing import FakeServer
with FakeServer(era="modern") as fake:
    fake.add_resource("file:///a", "a")
    with fake.client() as client:
        client.read_resource("file:///a")
"""


def test_nothing_of_opentelemetry_is_imported_unless_the_application_does() -> None:
    assert run(SESSION + "print(sorted(m for m in sys.modules if m.startswith('opentelemetry')))") == "[]"
    # not installed at all: the client works the same
    blocked = "import sys\nsys.modules['opentelemetry'] = None\n" + SESSION + "print('worked')"
    assert run(blocked) == "worked"


def test_the_global_providers_are_used_once_the_application_sets_them() -> None:
    script = (
        "from opentelemetry import trace\n"
        "from opentelemetry.sdk.trace import TracerProvider\n"
        "from opentelemetry.sdk.trace.export import SimpleSpanProcessor\n"
        "from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter\n"
        "exporter = InMemorySpanExporter()\n"
        "provider = TracerProvider()\n"
        "provider.add_span_processor(SimpleSpanProcessor(exporter))\n"
        "trace.set_tracer_provider(provider)\n"
        + SESSION
        + "print([s.name for s in exporter.get_finished_spans()])"
    )
    assert run(script) == "['server/discover', 'resources/read']"
