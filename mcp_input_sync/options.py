"""Client options: names, defaults and validation (docs/reference.md#options).

Unknown option names, and unknown keys of the dict-valued options, raise
``TypeError`` when the client is built; values of the wrong type or range
raise ``TypeError`` or ``ValueError``. ``timeout=None`` is refused: every
wait has a bound.
"""

from __future__ import annotations

import json
import math
import re
from types import MappingProxyType
from typing import Any, Mapping, Optional

from . import _clock
from ._protocol.deadlines import CallClock
from ._protocol.jsonrpc import USER_REJECTED
from ._protocol.limits import DEFAULT_LIMITS
from ._protocol.retry import Retry
from .cache import Cache, CacheStore
from .telemetry import Telemetry

__all__ = ["Options", "Reconnect", "Retry", "reconnect_policy", "seconds"]
from .handler import InputHandler
from .reflect import LEVELS

#: Seconds each kind of callback may run before the server gets -32603.
DEFAULT_HANDLER_TIMEOUT: Mapping[str, float] = MappingProxyType(
    {"elicitation": 300.0, "sampling": 60.0, "roots": 60.0}
)
#: Defaults of the ``sampling`` option's keys.
DEFAULT_SAMPLING: Mapping[str, Any] = MappingProxyType(
    {"max_tokens": 4096, "context": False, "allow_idle": False, "max_tool_iterations": 5, "rejection_code": USER_REJECTED}
)
#: Defaults of the ``elicitation`` option's keys.
DEFAULT_ELICITATION: Mapping[str, Any] = MappingProxyType({"origin": None})
#: RFC 5424 levels, as MCP names them.
LOG_LEVELS = LEVELS
PROTOCOL_CHOICES = ("auto", "prefer-legacy", "prefer-modern", "legacy", "modern")

_NAMES = frozenset(
    {
        "handler",
        "name",
        "server_id",
        "assigns",
        "protocol",
        "discover_timeout",
        "timeout",
        "max_total_timeout",
        "reset_timeout_on_progress",
        "max_server_requests",
        "handler_timeout",
        "input_rate_limit",
        "log_rate_limit",
        "sampling",
        "elicitation",
        "max_rounds",
        "log_level",
        "tasks",
        "extensions",
        "limits",
        "validate_output",
        "reconnect",
        "retry",
        "cache",
        "telemetry",
    }
)


def seconds(name: str, value: Any) -> float:
    """Validate a positive, finite duration in seconds."""
    if value is None:
        raise TypeError(f"{name}=None is not allowed: every wait needs a bound")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number of seconds, not {type(value).__name__}")
    if not value > 0 or math.isinf(value) or math.isnan(value):
        raise ValueError(f"{name} must be a positive finite number of seconds")
    return float(value)


class Reconnect:
    """How a client whose connection broke opens a new one on its next call (docs/index.md#a-server-restart-survived).

    ``attempts`` connections are tried at most, the first at once and each
    next one after a delay that doubles from ``first_delay`` up to
    ``max_delay`` seconds. Pass it as the ``reconnect`` option;
    ``reconnect=True`` is ``Reconnect()``.

    Raises:
        TypeError, ValueError: a value of the wrong type or out of range.
    """

    __slots__ = ("attempts", "first_delay", "max_delay")

    def __init__(self, attempts: int = 3, first_delay: float = 0.5, max_delay: float = 10.0) -> None:
        #: Connections tried at most, 1 to 100.
        self.attempts = _int("Reconnect attempts", attempts, 1, 100)
        #: Seconds before the second attempt; each next delay doubles.
        self.first_delay = seconds("Reconnect first_delay", first_delay)
        #: The longest delay between two attempts, in seconds.
        self.max_delay = seconds("Reconnect max_delay", max_delay)
        if self.max_delay < self.first_delay:
            raise ValueError("Reconnect max_delay must be at least first_delay")

    def delay(self, attempt: int) -> float:
        """Seconds to wait before attempt number ``attempt`` (1 is the first: no wait)."""
        if attempt <= 1:
            return 0.0
        return min(self.max_delay, self.first_delay * 2.0 ** min(attempt - 2, 60))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Reconnect):
            return NotImplemented
        return (self.attempts, self.first_delay, self.max_delay) == (other.attempts, other.first_delay, other.max_delay)

    def __hash__(self) -> int:
        return hash((self.attempts, self.first_delay, self.max_delay))

    def __repr__(self) -> str:
        return f"Reconnect(attempts={self.attempts}, first_delay={self.first_delay:g}, max_delay={self.max_delay:g})"


def _int(name: str, value: Any, low: int, high: Optional[int] = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int")
    if value < low or (high is not None and value > high):
        raise ValueError(f"{name} must be between {low} and {high}" if high else f"{name} must be >= {low}")
    return value


def _rate(name: str, value: Any) -> tuple[float, int]:
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        raise TypeError(f"{name} must be a (rate_per_second, burst) pair")
    rate, burst = value
    if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not rate > 0:
        raise ValueError(f"{name} rate must be a positive number (float('inf') disables it)")
    return float(rate), _int(f"{name} burst", burst, 1)


def _keys(name: str, value: Any, defaults: Mapping[str, Any]) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise TypeError(f"{name} must be a dict")
    unknown = set(value) - set(defaults)
    if unknown:
        raise TypeError(f"unknown {name} keys: {sorted(unknown)}")
    merged = dict(defaults)
    merged.update(value)
    return merged


_DEFAULTS: Mapping[str, Any] = MappingProxyType(
    {
        "handler": None,
        "name": "mcp_input_sync",
        "server_id": None,
        "assigns": MappingProxyType({}),
        "protocol": "auto",
        "discover_timeout": 5.0,
        "timeout": 60.0,
        "max_total_timeout": 600.0,
        "reset_timeout_on_progress": False,
        "max_server_requests": 8,
        "handler_timeout": DEFAULT_HANDLER_TIMEOUT,
        "input_rate_limit": (10.0, 20),
        "log_rate_limit": (50.0, 100),
        "sampling": DEFAULT_SAMPLING,
        "elicitation": DEFAULT_ELICITATION,
        "max_rounds": 10,
        "log_level": "info",
        "tasks": False,
        "extensions": MappingProxyType({}),
        "limits": DEFAULT_LIMITS,
        "validate_output": True,
        "reconnect": None,
        "retry": Retry(),
        "cache": Cache(),
        "telemetry": Telemetry(),
    }
)


class Options:
    """The validated options of one client (read-only by convention); build with :meth:`parse`."""

    handler: Optional[InputHandler]
    name: str
    server_id: Optional[str]
    assigns: Mapping[str, Any]
    protocol: str
    discover_timeout: float
    timeout: float
    max_total_timeout: float
    reset_timeout_on_progress: bool
    max_server_requests: int
    handler_timeout: Mapping[str, float]
    input_rate_limit: tuple[float, int]
    log_rate_limit: tuple[float, int]
    sampling: Mapping[str, Any]
    elicitation: Mapping[str, Any]
    max_rounds: int
    log_level: str
    tasks: bool
    extensions: Mapping[str, Mapping[str, Any]]
    limits: Mapping[str, int]
    validate_output: bool
    #: None: the transport's default (on over HTTP, off over stdio); False: off.
    reconnect: "Optional[Reconnect | bool]"
    #: What HTTP sends again after a failure (None: nothing; ``retry=True`` is ``Retry()``, the default).
    retry: Optional[Retry]
    #: Listings and reads kept (None: none; ``cache=True`` is ``Cache()``, the default).
    cache: Optional[Cache]
    #: OpenTelemetry spans and metrics (None: off; ``telemetry=True`` is ``Telemetry()``, the default).
    telemetry: Optional[Telemetry]

    def __init__(self, **values: Any) -> None:
        unknown = set(values) - _NAMES
        if unknown:
            raise TypeError(f"unknown client options: {sorted(unknown)}")
        for key, default in _DEFAULTS.items():
            setattr(self, key, values.get(key, default))

    def clock(self, timeout: Optional[float] = None) -> CallClock:
        """A request's deadlines from now: ``timeout`` (default the option) and ``max_total_timeout``."""
        return CallClock(_clock.monotonic(), self.timeout if timeout is None else timeout, self.max_total_timeout)

    def __repr__(self) -> str:
        shown = ", ".join(f"{key}={getattr(self, key)!r}" for key in _DEFAULTS)
        return f"Options({shown})"

    @classmethod
    def parse(cls, options: Mapping[str, Any]) -> "Options":
        """Validate keyword options into an :class:`Options`."""
        unknown = set(options) - _NAMES
        if unknown:
            raise TypeError(f"unknown client options: {sorted(unknown)}")
        o = dict(options)
        handler = o.get("handler")
        if handler is not None and not isinstance(handler, InputHandler):
            raise TypeError("handler must be an InputHandler instance or None")
        if handler is not None:
            par = type(handler).input_parallelism
            _int("input_parallelism", par, 1, 16)
        for key in ("name", "server_id"):
            if key in o and o[key] is not None and not isinstance(o[key], str):
                raise TypeError(f"{key} must be a str")
        if "assigns" in o and not isinstance(o["assigns"], Mapping):
            raise TypeError("assigns must be a mapping")
        protocol = o.get("protocol", "auto")
        if not isinstance(protocol, str):
            raise TypeError("protocol must be a str")
        if protocol not in PROTOCOL_CHOICES and not _is_version(protocol):
            raise ValueError(f"protocol must be one of {PROTOCOL_CHOICES} or a version such as '2025-11-25'")
        for key in ("discover_timeout", "timeout", "max_total_timeout"):
            if key in o:
                o[key] = seconds(key, o[key])
        if "max_server_requests" in o:
            _int("max_server_requests", o["max_server_requests"], 1)
        if "max_rounds" in o:
            _int("max_rounds", o["max_rounds"], 1)
        if "handler_timeout" in o:
            ht = o["handler_timeout"]
            if isinstance(ht, Mapping):
                merged = _keys("handler_timeout", ht, DEFAULT_HANDLER_TIMEOUT)
            else:
                merged = {k: ht for k in DEFAULT_HANDLER_TIMEOUT}
            o["handler_timeout"] = MappingProxyType(
                {k: seconds(f"handler_timeout[{k!r}]", v) for k, v in merged.items()}
            )
        for key in ("input_rate_limit", "log_rate_limit"):
            if key in o:
                o[key] = _rate(key, o[key])
        if "sampling" in o:
            s = _keys("sampling", o["sampling"], DEFAULT_SAMPLING)
            _int("sampling['max_tokens']", s["max_tokens"], 1)
            _int("sampling['max_tool_iterations']", s["max_tool_iterations"], 0)
            _int("sampling['rejection_code']", s["rejection_code"], -(2**31))
            for flag in ("context", "allow_idle"):
                if not isinstance(s[flag], bool):
                    raise TypeError(f"sampling[{flag!r}] must be a bool")
            o["sampling"] = MappingProxyType(s)
        if "elicitation" in o:
            e = _keys("elicitation", o["elicitation"], DEFAULT_ELICITATION)
            if e["origin"] is not None and not isinstance(e["origin"], str):
                raise TypeError("elicitation['origin'] must be a str or None")
            o["elicitation"] = MappingProxyType(e)
        if "log_level" in o and o["log_level"] not in LOG_LEVELS:
            raise ValueError(f"log_level must be one of {LOG_LEVELS}")
        for flag in ("tasks", "validate_output", "reset_timeout_on_progress"):
            if flag in o and not isinstance(o[flag], bool):
                raise TypeError(f"{flag} must be a bool")
        if "reconnect" in o:
            o["reconnect"] = _reconnect(o["reconnect"])
        if "retry" in o:
            o["retry"] = _retry(o["retry"])
        if "cache" in o:
            o["cache"] = _cache(o["cache"])
        if "telemetry" in o:
            o["telemetry"] = _telemetry(o["telemetry"])
        if "extensions" in o:
            o["extensions"] = _extensions(o["extensions"])
        if "limits" in o:
            lim = _keys("limits", o["limits"], DEFAULT_LIMITS)
            for key, value in lim.items():
                _int(f"limits[{key!r}]", value, 1)
            o["limits"] = MappingProxyType(lim)
        if "assigns" in o:
            o["assigns"] = MappingProxyType(dict(o["assigns"]))
        return cls(**o)


#: SEP-2133: ``{vendor-prefix}/{extension-name}``, the prefix mandatory (reverse DNS, as ``_meta`` keys).
_EXTENSION_ID = re.compile(r"[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*/[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?")
#: Extensions the library declares itself, from their own options.
_OWN_EXTENSIONS = {"io.modelcontextprotocol/tasks": "tasks=True"}


def _extensions(value: Any) -> Mapping[str, Mapping[str, Any]]:
    """The client extensions to declare (SEP-2133): identifier -> settings, a JSON object each."""
    if not isinstance(value, Mapping):
        raise TypeError("extensions must be a mapping of extension identifier to its settings (a dict)")
    checked: dict[str, Mapping[str, Any]] = {}
    for name, settings in value.items():
        if not isinstance(name, str) or len(name) > 256 or not _EXTENSION_ID.fullmatch(name):
            raise ValueError(f"extension identifiers look like 'com.example/my-extension', not {name!r}")
        if name in _OWN_EXTENSIONS:
            raise ValueError(f"{name} is declared by the library itself: use {_OWN_EXTENSIONS[name]}")
        if not isinstance(settings, Mapping):
            raise TypeError(f"the settings of extension {name!r} must be a dict ({{}} for none)")
        try:
            json.dumps(settings, allow_nan=False)
        except (TypeError, ValueError):
            raise ValueError(f"the settings of extension {name!r} must be JSON") from None
        checked[name] = MappingProxyType(dict(settings))
    return MappingProxyType(checked)


def _reconnect(value: Any) -> "Optional[Reconnect | bool]":
    if value is None or isinstance(value, (bool, Reconnect)):
        return Reconnect() if value is True else value
    raise TypeError("reconnect must be True, False, None (the transport's default) or a Reconnect(...)")


def _switched(name: str, value: Any, kind: type, made: Any, also: str = "") -> Any:
    """An option that is on (``True``: ``made()``), off (``False``), or spelled out as a ``kind``."""
    if value is True:
        return made()
    if value is False or (value is None and name != "retry"):
        return None
    if isinstance(value, kind):
        return value
    raise TypeError(f"{name} must be True, False{also} or a {kind.__name__}(...)")


def _retry(value: Any) -> Optional[Retry]:
    return _switched("retry", value, Retry, Retry)  # type: ignore[no-any-return]


def _cache(value: Any) -> Optional[Cache]:
    if isinstance(value, CacheStore) and not isinstance(value, Cache):
        return Cache(value)
    return _switched("cache", value, Cache, Cache, ", a store with get, set and delete,")  # type: ignore[no-any-return]


def _telemetry(value: Any) -> Optional[Telemetry]:
    return _switched("telemetry", value, Telemetry, Telemetry)  # type: ignore[no-any-return]


def reconnect_policy(value: "Optional[Reconnect | bool]", by_default: bool) -> Optional[Reconnect]:
    """The ``reconnect`` option resolved for one transport: the policy, or None when off."""
    if value is None:
        return Reconnect() if by_default else None
    return value if isinstance(value, Reconnect) else None


def _is_version(value: str) -> bool:
    parts = value.split("-")
    return len(parts) == 3 and all(p.isdigit() for p in parts) and len(parts[0]) == 4
