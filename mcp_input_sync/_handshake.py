"""The handshake: which era a server speaks, and the legacy lifecycle.

:func:`negotiate` follows the ``protocol`` option: a preference (``auto``
prefers the handshake era: ``initialize`` first, ``server/discover`` only
when it is refused; ``prefer-modern`` probes with ``server/discover`` first,
restarting a stdio server once when it answers neither) or a forced era. An
``initialize`` error that lists a modern version switches to the modern era.
The whole attempt is bounded by ``timeout``. Each endpoint's era (an HTTP
URL, a stdio command line) is remembered for the process
(docs/reference.md#era-detection) in the :class:`~mcp_input_sync._era.EraCache`
the client passes. It writes the check configuration before each attempt
and once more when it has decided, starts nothing and sends nothing once the era is decided: it returns a
:class:`Negotiated`, from which the client builds the era's engine (the
legacy engine sends ``notifications/initialized`` when it starts).
"""

from __future__ import annotations

import logging
import threading
from typing import Callable, Optional

from . import _clock
from ._calls import Call
from ._era import EraCache
from ._port import Port
from ._protocol import modern
from ._protocol import eras
from ._protocol.advice import say
from ._protocol.deadlines import CallClock
from ._protocol.jsonrpc import JsonDict
from ._protocol.modern import MetaStamp
from ._protocol.record import Record
from ._session import Session, transport_error
from ._version import __version__
from .errors import ClientError
from .handler import InputHandler, declares_roots, overrides
from .options import Options
from .transports.base import NEW_SESSION, HttpStatusError, TransportClosed

log = logging.getLogger("mcp_input_sync")


def declared_capabilities(handler: Optional[InputHandler], options: Options, version: str) -> JsonDict:
    """The ``ClientCapabilities`` a client with ``handler`` declares at ``version``: only what it overrides (and offers)."""
    modes: Optional[tuple[str, ...]] = None
    if handler is not None and overrides(handler, "handle_elicitation"):
        modes = tuple(m for m in handler.elicitation_modes() if m in ("form", "url"))
    sampling = overrides(handler, "handle_sampling")
    roots = declares_roots(handler)  # list_roots overridden, and offers_roots() true for this instance
    sampling_tools = bool(handler is not None and type(handler).sampling_tools)
    sampling_context = bool(options.sampling["context"])
    if version in modern.MODERN_VERSIONS:
        caps = modern.capabilities(
            sampling=sampling,
            elicitation_modes=modes,
            roots=roots,
            sampling_tools=sampling_tools,
            sampling_context=sampling_context,
            tasks=options.tasks,
        )
    else:
        caps = eras.client_capabilities(
            version=version,
            sampling=sampling,
            elicitation_modes=modes,
            roots=roots,
            sampling_tools=sampling_tools,
            sampling_context=sampling_context,
        )
    if options.extensions:  # SEP-2133: the host's extensions, in both eras (2025 schemas allow the extra key)
        caps["extensions"] = {**caps.get("extensions", {}), **{name: dict(settings) for name, settings in options.extensions.items()}}
    return caps


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
        *,
        session: Session,
        port: Port,
        configure: Callable[[str, JsonDict, Optional[str]], None],
        options: Options,
        handler: Optional[InputHandler],
        client_name: str,
        server_id: str,
        log_level: Callable[[], Optional[str]],
        era_cache: EraCache,
    ) -> None:
        self.session = session
        self.port = port
        #: ``configure(version, capabilities, origin)``: the input checks' configuration (``InputDesk.configure``).
        self.configure = configure
        self.options = options
        self.handler = handler
        self.client_info: JsonDict = {"name": client_name, "version": __version__}
        self.server_id = server_id
        version = eras.MODERN_VERSION
        #: The 2026-07-28 stamp (``log_level`` says the level at each request): the probe
        #: carries it, and a modern engine starts from it at the negotiated version.
        self.stamp = MetaStamp(version, self.capabilities(version), self.client_info, log_level)
        self.era_cache = era_cache
        #: True while the decision came from the era cache (the client re-probes if it fails).
        self.from_cache = False
        #: (preferred era, endpoint) while a preference is followed for an endpoint the cache may know.
        self._cache_key: Optional[tuple[str, str]] = None
        #: The era a preference (``auto``, ``prefer-legacy``, ``prefer-modern``) tries first; None when forced.
        self.prefers: Optional[str] = None
        #: When the connection attempt's ``timeout`` runs out (library clock), and what was tried.
        self._deadline = _clock.monotonic() + options.timeout
        self._tried: list[str] = []

    def capabilities(self, version: str) -> JsonDict:
        return declared_capabilities(self.handler, self.options, version)

    def _clock(self, timeout: Optional[float] = None) -> CallClock:
        """A handshake request's deadlines: at most what is left of the connection attempt."""
        left = max(0.001, self._left())
        return self.options.clock(left if timeout is None else max(0.001, min(timeout, left)))

    def _configure(self, version: str, caps: JsonDict) -> None:
        self.configure(version, caps, self.port.origin)

    # ------------------------------------------------------------------ era detection

    def negotiate(self) -> Negotiated:
        """Pick the era (docs/reference.md#era-detection) and finish the legacy handshake, if any.

        The whole attempt (probe, fallback, restart) is bounded by the
        ``timeout`` option; when it runs out, the error says what was tried.
        """
        self._deadline = _clock.monotonic() + self.options.timeout
        protocol = self.options.protocol
        if protocol == "legacy":
            return self._initialize(eras.LATEST_LEGACY_VERSION, forced=None)
        if protocol in eras.FORCEABLE_LEGACY_VERSIONS:
            return self._initialize(protocol, forced=protocol)
        if protocol in ("modern",) + modern.MODERN_VERSIONS:
            return self._probe(forced=True)
        if protocol not in eras.PREFERENCES:
            raise ClientError("protocol", f"protocol {protocol!r} is not a version this client speaks")
        self.prefers = eras.PREFERENCES[protocol]
        key = self.port.era_key()
        self._cache_key = (self.prefers, key) if key is not None else None
        cached = self.era_cache.endpoint_era(*self._cache_key) if self._cache_key is not None else None
        if cached is not None:
            try:
                self.from_cache = True
                if cached[0] == eras.MODERN:
                    return self._modern(cached[1], None)
                return self._initialize(cached[1], forced=None, switch=True)
            except ClientError as exc:
                if exc.kind in ("transport", "auth", "closed", "timeout"):
                    raise
                return self.reprobe()
        return self._first_contact()

    def _first_contact(self) -> Negotiated:
        if self.prefers == eras.MODERN:
            return self._probe(forced=False)
        return self._handshake_first()

    def _handshake_first(self) -> Negotiated:
        """``initialize`` first (over stdio a ``server/discover`` probe would fix a dual-era process in 2026-07-28).

        A refusal that lists a modern version means modern; any other
        refusal is followed by the probe. No answer within
        ``discover_timeout``: the probe goes out too, and whichever answers
        first decides (a modern-only server that ignores ``initialize``).
        """
        session = self.session
        offered = eras.LATEST_LEGACY_VERSION
        caps = self.capabilities(offered)
        self._configure(offered, caps)
        done = threading.Event()
        init = session.start(
            "initialize", eras.initialize_params(offered, caps, self.client_info), is_call=False, clock=self._clock(), done=done, bounded=False,
            step=NEW_SESSION,
        )
        wait = max(0.0, min(self.options.discover_timeout, self._left()))
        if session.wait_any(done, wait, [init]) or self._left() <= 0:
            return self._finish(init, offered, None, caps, switch=True, then_probe=True)
        self._tried.append(f"initialize (no answer in {wait:g} s)")
        probe = session.start("server/discover", None, is_call=False, clock=self._clock(), done=done, bounded=False, stamp=self.stamp)
        if not session.wait_any(done, max(0.0, self._left()), [init, probe]):
            session.calls.forget(init)
            session.calls.forget(probe)
            self._tried.append("server/discover (no answer)")
            raise self._out_of_time()
        if init.response is not None or init.failure is not None:
            session.calls.forget(probe)
            return self._finish(init, offered, None, caps, switch=True, then_probe=True)
        if self._probe_says_modern(probe):
            session.calls.forget(init)
            return self._decide(probe, forced=True)
        # the probe was refused before initialize was answered (a server slow to start,
        # answering the unknown method first): initialize is still the way in
        session.calls.forget(probe)
        self._tried.append("server/discover (refused)")
        return self._finish(init, offered, None, caps, switch=True)

    @staticmethod
    def _probe_says_modern(probe: Call) -> bool:
        """True when the probe's answer (or failure) settles the era: 2026-07-28, or a failure to pass on."""
        if probe.failure is not None or probe.response is None:
            return True
        try:
            return modern.decide_from_discover(probe.response).era == eras.MODERN
        except eras.ProtocolViolation:
            return False

    def reprobe(self) -> Negotiated:
        """The cached era did not hold (here, or when its engine started): forget it and probe."""
        if self._cache_key is not None:
            self.era_cache.forget(*self._cache_key)
        self.from_cache = False
        return self._first_contact()

    def remember(self, era: str, version: str) -> None:
        """The client opened in ``era`` at ``version``: remember it for the endpoint or command line (preferences only)."""
        if self._cache_key is not None:
            self.era_cache.remember(*self._cache_key, era, version)

    @property
    def mixes_eras(self) -> bool:
        """True when 2026-07-28 calls may go beside a handshake session (HTTP, preferring the handshake era)."""
        return self.prefers == eras.LEGACY and self.port.ties_by_stream and self.port.era_key() is not None

    def _left(self) -> float:
        """Seconds left of the connection attempt's ``timeout``."""
        return self._deadline - _clock.monotonic()

    def _out_of_time(self) -> ClientError:
        tried = ", then ".join(self._tried) or "nothing"
        return ClientError(
            "timeout",
            f"the server did not finish the handshake {say('handshake_timeout', value=self.options.timeout)}; tried: {tried}",
            data={"tried": list(self._tried)},
        )

    def _probe(self, forced: bool) -> Negotiated:
        """Send ``server/discover`` and decide the era from its answer (or its silence)."""
        session = self.session
        version = eras.MODERN_VERSION
        self._configure(version, self.capabilities(version))
        done = threading.Event()
        # discover_timeout is how long to wait before trying initialize instead; a forced
        # 2026-07-28 has nothing else to try, so it waits the whole timeout (a server that
        # starts slowly, FastMCP under load say, is not a server that cannot answer)
        wait = max(0.0, self._left() if forced else min(self.options.discover_timeout, self._left()))
        try:
            probe = session.start("server/discover", None, is_call=False, clock=self._clock(wait), done=done, bounded=False, stamp=self.stamp)
        except ClientError as exc:
            cause = exc.__cause__
            status = cause.status if isinstance(cause, HttpStatusError) else None  # HTTP: a status without a JSON-RPC answer
            if forced or exc.kind != "transport" or status in (None, 404):
                raise
            self._tried.append(f"server/discover (HTTP {status})")
            return self._initialize(eras.LATEST_LEGACY_VERSION, forced=None, switch=True)
        if session.wait_any(done, wait, [probe]):
            return self._decide(probe, forced)
        self._tried.append(f"server/discover (no answer in {wait:g} s)")
        if forced:
            session.calls.forget(probe)
            raise self._out_of_time()
        if self._left() <= 0:
            session.calls.forget(probe)
            raise self._out_of_time()
        # Silence: try initialize on the same process; a late DiscoverResult still wins.
        offered = eras.LATEST_LEGACY_VERSION
        caps = self.capabilities(offered)
        self._configure(offered, caps)
        init = session.start(
            "initialize", eras.initialize_params(offered, caps, self.client_info), is_call=False, clock=self._clock(), done=done, bounded=False,
            step=NEW_SESSION,
        )
        # half of what is left at most, so that a restart still has time
        if session.wait_any(done, max(0.0, self._left() / 2), [probe, init]):
            if probe.response is not None and "result" in probe.response:
                session.calls.forget(init)
                return self._decide(probe, forced)
            session.calls.forget(probe)
            if init.failure is not None:
                raise init.failure
            return self._finish(init, offered, None, caps, switch=True)
        self._tried.append("initialize (no answer)")
        # Still silent: an old server whose reader died on the probe. Restart it once, no probe.
        session.calls.forget(probe)
        session.calls.forget(init)
        restarter = self.port.restarter
        if restarter is None or self._left() <= 0:
            raise self._out_of_time()
        log.warning("mcp_input_sync: server %s answered neither server/discover nor initialize; restarting it once", self.server_id)
        self._tried.append("a restart of the server")
        try:
            restarter.restart(max(0.1, self._left()))
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
        except eras.ProtocolViolation as exc:
            raise ClientError("protocol", exc.message, data=exc.data) from None
        if decision.era == eras.MODERN:
            return self._modern(decision.version, decision.discover)
        if forced:
            raise ClientError(
                "protocol",
                f"the server does not speak the 2026-07-28 era ({say('forced_era', value=self.options.protocol)})",
                data=response.get("error"),
            )
        return self._initialize(decision.version, forced=None, switch=True)

    def _modern(self, version: str, discover: Optional[JsonDict]) -> Negotiated:
        self.port.set_protocol(eras.MODERN, version)
        self._configure(version, self.capabilities(version))
        return Negotiated(eras.MODERN, version, discover)

    # ------------------------------------------------------------------ the legacy lifecycle

    def _initialize(self, offered: str, forced: Optional[str], switch: bool = False, then_probe: bool = False) -> Negotiated:
        """``initialize`` (the legacy engine sends ``notifications/initialized`` when it starts).

        With ``switch`` (era detection), an initialize error that lists a
        modern version switches to the modern era instead of failing; with
        ``then_probe`` (the handshake era first), any other refusal is
        followed by a ``server/discover`` probe.
        """
        if self._left() <= 0:
            raise self._out_of_time()
        caps = self.capabilities(offered)
        self._configure(offered, caps)
        params = eras.initialize_params(offered, caps, self.client_info)
        call = self.session.start("initialize", params, is_call=False, clock=self._clock(), bounded=False, step=NEW_SESSION)
        return self._finish(call, offered, forced, caps, switch, then_probe)

    def _finish(
        self, call: Call, offered: str, forced: Optional[str], caps: JsonDict, switch: bool = False, then_probe: bool = False
    ) -> Negotiated:
        try:
            result = self.session.result(call)
        except ClientError as exc:
            if exc.kind == "timeout" and exc.code is None:
                self._tried.append("initialize (no answer)")
                raise self._out_of_time() from None
            if switch and exc.kind == "remote" and modern.modern_in_initialize_error({"data": exc.data}):
                return self._modern(eras.MODERN_VERSION, None)  # a modern-only server listed its versions
            if then_probe and exc.kind == "remote":
                self._tried.append(f"initialize (refused: {exc.code})")
                try:
                    return self._probe(forced=True)
                except ClientError as probe_exc:
                    if probe_exc.kind in ("transport", "auth", "closed"):
                        raise
                raise exc from None
            raise
        try:
            version, server_caps = eras.accept_initialize_result(result, forced)
        except eras.ProtocolViolation as exc:
            raise ClientError("protocol", exc.message, data=exc.data) from None
        self._configure(version, caps)
        self.port.set_protocol(eras.LEGACY, version)
        info = result.get("serverInfo")
        instructions = result.get("instructions")
        return Negotiated(
            eras.LEGACY,
            version,
            None,
            server_caps,
            info if type(info) is dict else None,
            instructions if isinstance(instructions, str) else None,
        )
