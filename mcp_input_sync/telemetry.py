"""The ``telemetry`` option: OpenTelemetry spans and metrics for what a client sends and answers (docs/telemetry.md).

With ``opentelemetry-api`` installed (``pip install mcp_input_sync[otel]``)
and a tracer or meter provider configured by the application, every request
the client sends is a CLIENT span, every request the server makes of the
client a SERVER span, and ``mcp.client.operation.duration`` is recorded.
Nothing of OpenTelemetry is imported until the application imports it
itself; ``telemetry=False`` turns it off.
"""

from __future__ import annotations

from typing import Any, Optional

__all__ = ["Telemetry"]


class Telemetry:
    """The ``telemetry`` option spelled out: the providers to use (None: the application's global ones).

    ``telemetry=True`` (the default) is ``Telemetry()``. Pass providers to
    keep a client's spans and metrics apart from the global ones (tests do).
    """

    __slots__ = ("tracer_provider", "meter_provider")

    def __init__(self, *, tracer_provider: Optional[Any] = None, meter_provider: Optional[Any] = None) -> None:
        #: An OpenTelemetry ``TracerProvider``, or None for the global one.
        self.tracer_provider = tracer_provider
        #: An OpenTelemetry ``MeterProvider``, or None for the global one.
        self.meter_provider = meter_provider

    def __repr__(self) -> str:
        shown = [f"{name}={getattr(self, name)!r}" for name in self.__slots__ if getattr(self, name) is not None]
        return f"Telemetry({', '.join(shown)})"
