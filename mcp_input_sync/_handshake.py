"""The handshake: which era a server speaks, and the legacy lifecycle.

:func:`negotiate` probes with ``server/discover`` (or goes straight to
``initialize`` when the ``protocol`` option says so), restarts a stdio server
once when it answers neither, switches to the modern era when an
``initialize`` error lists a modern version, and caches each HTTP origin's
era for the process (docs/reference.md#era-detection). It writes the check
configuration once per decision and starts nothing: the client builds the
era's engine from the :class:`Negotiated` it returns.
"""

from __future__ import annotations

import logging
import threading
from typing import Callable, Optional

from ._calls import Call
from ._input import InputDesk
from ._port import Port
from ._protocol import modern
from ._protocol import eras as v
from ._protocol.deadlines import CallClock
from ._protocol.jsonrpc import JsonDict
from ._protocol.modern import MetaStamp
from ._protocol.record import Record
from ._session import Session, transport_error
from ._version import __version__
from .errors import ClientError
from .handler import InputHandler, overrides
from .options import Options
from .transports.base import TransportClosed

log = logging.getLogger("mcp_input_sync")

#: The era each HTTP origin spoke, this process (docs/reference.md#era-detection).
_ERA_CACHE: dict[str, tuple[str, str]] = {}


def declared_capabilities(handler: Optional[InputHandler], options: Options, version: str) -> JsonDict:
    """The ``ClientCapabilities`` a client with ``handler`` declares at ``version``: only what it overrides."""
    modes: Optional[tuple[str, ...]] = None
    if handler is not None and overrides(handler, "handle_elicitation"):
        modes = tuple(m for m in handler.elicitation_modes() if m in ("form", "url"))
    sampling = overrides(handler, "handle_sampling")
    roots = overrides(handler, "list_roots")
    sampling_tools = bool(handler is not None and type(handler).sampling_tools)
    sampling_context = bool(options.sampling["context"])
    if version in modern.MODERN_VERSIONS:
        return modern.capabilities(
            sampling=sampling,
            elicitation_modes=modes,
            roots=roots,
            sampling_tools=sampling_tools,
            sampling_context=sampling_context,
            tasks=options.tasks,
        )
    return v.client_capabilities(
        version=version,
        sampling=sampling,
        elicitation_modes=modes,
        roots=roots,
        sampling_tools=sampling_tools,
        sampling_context=sampling_context,
    )


class Negotiated(Record):
    """What the handshake decided; read-only.

    ``discover`` is the modern server's ``DiscoverResult`` when the probe
    brought it (None: the engine asks for it); the server's facts are filled
    for the legacy era only.
    """

    __slots__ = ("era", "version", "discover", "server_capabilities", "server_info", "instructions")

    def __init__(
        self,
        era: str,
        version: str,
        discover: Optional[JsonDict] = None,
        server_capabilities: Optional[JsonDict] = None,
        server_info: Optional[JsonDict] = None,
        instructions: Optional[str] = None,
    ) -> None:
        self.era = era
        self.version = version
        self.discover = discover
        self.server_capabilities = server_capabilities
        self.server_info = server_info
        self.instructions = instructions

    def with_discover(self, discover: Optional[JsonDict]) -> "Negotiated":
        """This decision with the server's facts read from its ``DiscoverResult`` (none: all empty)."""
        caps, info, instructions = server_facts(discover) if discover is not None else ({}, None, None)
        return Negotiated(self.era, self.version, discover, caps, info, instructions)


def server_facts(discover: JsonDict) -> tuple[JsonDict, Optional[JsonDict], Optional[str]]:
    """A ``DiscoverResult``'s capabilities, ``serverInfo`` (from its ``_meta``) and instructions."""
    caps = discover.get("capabilities")
    meta = discover.get("_meta")
    info = meta.get(modern.META_SERVER_INFO) if type(meta) is dict else None
    instructions = discover.get("instructions")
    return (caps if type(caps) is dict else {}, info if type(info) is dict else None, instructions if isinstance(instructions, str) else None)


class Handshake:
    """One client's negotiation (used once, by ``Client.open``)."""

    def __init__(
        self,
        session: Session,
        port: Port,
        desk: InputDesk,
        options: Options,
        handler: Optional[InputHandler],
        client_name: str,
        server_id: str,
        stamp: MetaStamp,
        on_era: Callable[[str, str], None],
    ) -> None:
        self.session = session
        self.port = port
        self.desk = desk
        self.options = options
        self.handler = handler
        self.client_info: JsonDict = {"name": client_name, "version": __version__}
        self.server_id = server_id
        #: The modern stamp: the probe carries it, and the modern engine after the decision.
        self.stamp = stamp
        #: Told the era and version the moment they are decided, before anything more is sent.
        self.on_era = on_era
        #: True while the decision came from the per-origin cache (the client re-probes if it fails).
        self.from_cache = False
        self._cache_key: Optional[str] = None

    def capabilities(self, version: str) -> JsonDict:
        return declared_capabilities(self.handler, self.options, version)

    def _clock(self, timeout: Optional[float] = None) -> CallClock:
        return self.options.clock(timeout)

    def _configure(self, version: str, caps: JsonDict) -> None:
        self.desk.configure(version, caps, self.port.origin)

    # ------------------------------------------------------------------ era detection

    def negotiate(self) -> Negotiated:
        """Pick the era (docs/reference.md#era-detection) and finish the legacy handshake, if any."""
        protocol = self.options.protocol
        if protocol == "legacy":
            return self._initialize(v.LATEST_LEGACY_VERSION, forced=None)
        if protocol in v.FORCEABLE_LEGACY_VERSIONS:
            return self._initialize(protocol, forced=protocol)
        if protocol in ("modern",) + modern.MODERN_VERSIONS:
            return self._probe(forced=True)
        if protocol != "auto":
            raise ClientError("protocol", f"protocol {protocol!r} is not a version this client speaks")
        origin = self._cache_key = self.port.era_origin()
        cached = _ERA_CACHE.get(origin) if origin is not None else None
        if cached is not None:
            try:
                self.from_cache = True
                if cached[0] == v.MODERN:
                    return self._modern(cached[1], None)
                return self._initialize(cached[1], forced=None, switch=True)
            except ClientError as exc:
                if exc.kind in ("transport", "auth", "closed"):
                    raise
                return self.reprobe()
        return self._probe(forced=False)

    def reprobe(self) -> Negotiated:
        """The cached era did not hold (here, or when its engine started): forget it and probe."""
        if self._cache_key is not None:
            _ERA_CACHE.pop(self._cache_key, None)
        self.from_cache = False
        return self._probe(forced=False)

    def remember(self, era: str, version: str) -> None:
        """The client opened in ``era`` at ``version``: cache it for the origin (``protocol="auto"`` over HTTP)."""
        if self._cache_key is not None:
            _ERA_CACHE[self._cache_key] = (era, version)

    def _probe(self, forced: bool) -> Negotiated:
        """Send ``server/discover`` and decide the era from its answer (or its silence)."""
        session = self.session
        version = modern.MODERN_VERSION
        self._configure(version, self.capabilities(version))
        done = threading.Event()
        self.stamp.version = version
        probe = session.start("server/discover", None, is_call=False, clock=self._clock(self.options.discover_timeout), done=done, stamp=self.stamp)
        if session.wait_any(done, self.options.discover_timeout, [probe]):
            return self._decide(probe, forced)
        if forced:
            session.calls.forget(probe)
            raise ClientError("timeout", f"server/discover was not answered within {self.options.discover_timeout:g} s")
        # Silence: try initialize on the same process; a late DiscoverResult still wins.
        offered = v.LATEST_LEGACY_VERSION
        caps = self.capabilities(offered)
        self._configure(offered, caps)
        init = session.start(
            "initialize", v.initialize_params(offered, caps, self.client_info), is_call=False, clock=self._clock(), done=done
        )
        if session.wait_any(done, self.options.timeout, [probe, init]):
            if probe.response is not None and "result" in probe.response:
                session.calls.forget(init)
                return self._decide(probe, forced)
            session.calls.forget(probe)
            if init.failure is not None:
                raise init.failure
            return self._finish(init, offered, None, caps, switch=True)
        # Still silent: an old server whose reader died on the probe. Restart it once, no probe.
        session.calls.forget(probe)
        session.calls.forget(init)
        if not self.port.can_restart:
            raise ClientError("timeout", "the server answered neither server/discover nor initialize")
        log.warning("mcp_input_sync: server %s answered neither server/discover nor initialize; restarting it once", self.server_id)
        try:
            self.port.restart(self.options.timeout)
        except TransportClosed as exc:
            raise transport_error(exc, str(exc)) from exc
        return self._initialize(offered, forced=None, switch=True)

    def _decide(self, probe: Call, forced: bool) -> Negotiated:
        """Act on the probe's answer."""
        if probe.failure is not None:
            raise probe.failure
        response = probe.response
        assert response is not None
        try:
            decision = modern.decide_from_discover(response)
        except v.ProtocolViolation as exc:
            raise ClientError("protocol", exc.message, data=exc.data) from None
        if decision.era == v.MODERN:
            return self._modern(decision.version, decision.discover)
        if forced:
            raise ClientError("protocol", "the server does not speak the 2026-07-28 era", data=response.get("error"))
        return self._initialize(decision.version, forced=None, switch=True)

    def _modern(self, version: str, discover: Optional[JsonDict]) -> Negotiated:
        self.stamp.version = version
        self.port.set_protocol(v.MODERN, version)
        self._configure(version, self.capabilities(version))
        self.on_era(v.MODERN, version)
        return Negotiated(v.MODERN, version, discover)

    # ------------------------------------------------------------------ the legacy lifecycle

    def _initialize(self, offered: str, forced: Optional[str], switch: bool = False) -> Negotiated:
        """``initialize``, then ``notifications/initialized``.

        With ``switch`` (era detection), an initialize error that lists a
        modern version switches to the modern era instead of failing.
        """
        caps = self.capabilities(offered)
        self._configure(offered, caps)
        params = v.initialize_params(offered, caps, self.client_info)
        call = self.session.start("initialize", params, is_call=False, clock=self._clock())
        return self._finish(call, offered, forced, caps, switch)

    def _finish(self, call: Call, offered: str, forced: Optional[str], caps: JsonDict, switch: bool = False) -> Negotiated:
        try:
            result = self.session.result(call)
        except ClientError as exc:
            if switch and exc.kind == "remote" and modern.modern_in_initialize_error({"data": exc.data}):
                return self._modern(modern.MODERN_VERSION, None)  # a modern-only server listed its versions
            raise
        try:
            version, server_caps = v.accept_initialize_result(result, forced)
        except v.ProtocolViolation as exc:
            raise ClientError("protocol", exc.message, data=exc.data) from None
        self._configure(version, caps)
        self.port.set_protocol(v.LEGACY, version)
        info = result.get("serverInfo")
        instructions = result.get("instructions")
        self.on_era(v.LEGACY, version)
        self.session.notify("notifications/initialized")
        return Negotiated(
            v.LEGACY,
            version,
            None,
            server_caps,
            info if type(info) is dict else None,
            instructions if isinstance(instructions, str) else None,
        )
