"""The 2026-07-28 era: per-request ``_meta``, era detection, a round's retry and the pending call.

Pure: no threads, no clock. The client's runtime drives the loop; this
module and the round driver (``rounds.py``) decide what each answer from
the server means and what to send next (MCP 2026-07-28 basic/versioning and basic/patterns/mrtr; the client's rules are
docs/reference.md#era-detection and docs/reference.md#modern-input-rounds).
"""

from __future__ import annotations

import json
from typing import Any, Callable, Mapping, Optional, Protocol

from .jsonrpc import HEADER_MISMATCH, MISSING_CAPABILITY, UNSUPPORTED_VERSION, JsonDict, with_meta
from .record import Record
from .eras import LEGACY_VERSIONS, MODERN_VERSION, ProtocolViolation, client_capabilities

#: Modern versions this client speaks, newest first.
MODERN_VERSIONS = (MODERN_VERSION,)

META_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
META_CLIENT_INFO = "io.modelcontextprotocol/clientInfo"
META_LOG_LEVEL = "io.modelcontextprotocol/logLevel"
META_SERVER_INFO = "io.modelcontextprotocol/serverInfo"
META_SUBSCRIPTION = "io.modelcontextprotocol/subscriptionId"
TASKS_EXTENSION = "io.modelcontextprotocol/tasks"

#: The client's requests whose result may be ``input_required`` (and so be deferred and resumed).
INPUT_REQUIRED_METHODS = frozenset({"tools/call", "resources/read", "prompts/get"})
#: Backoff of state-only rounds: 50 ms doubling to 250 ms.
BACKOFF_FIRST = 0.05
BACKOFF_MAX = 0.25


def capabilities(
    *,
    sampling: bool,
    elicitation_modes: Optional[tuple[str, ...]],
    roots: bool,
    sampling_tools: bool,
    sampling_context: bool,
    tasks: bool,
) -> JsonDict:
    """The modern ``ClientCapabilities``: the legacy shape, roots without ``listChanged``, tasks as an extension."""
    caps = client_capabilities(
        version=MODERN_VERSION,
        sampling=sampling,
        elicitation_modes=elicitation_modes,
        roots=roots,
        sampling_tools=sampling_tools,
        sampling_context=sampling_context,
    )
    if roots:
        caps["roots"] = {}
    if tasks:
        caps["extensions"] = {TASKS_EXTENSION: {}}
    return caps


def meta(version: str, caps: JsonDict, client_info: JsonDict, log_level: Optional[str] = None) -> JsonDict:
    """The ``_meta`` every modern request carries."""
    out: JsonDict = {META_VERSION: version, META_CAPABILITIES: caps, META_CLIENT_INFO: client_info}
    if log_level is not None:
        out[META_LOG_LEVEL] = log_level
    return out


class MetaStamp:
    """Stamps a modern request's params with a fresh, complete ``_meta``; read-only.

    ``level`` says, at each request, which log level to ask for (None:
    nobody reads logs). The -32022 switch makes a new stamp
    (:meth:`at_version`); nothing changes one.
    """

    __slots__ = ("version", "capabilities", "client_info", "level")

    version: str
    capabilities: JsonDict
    client_info: JsonDict
    level: Callable[[], Optional[str]]

    def __init__(self, version: str, capabilities: JsonDict, client_info: JsonDict, level: Callable[[], Optional[str]]) -> None:
        for name, value in zip(self.__slots__, (version, capabilities, client_info, level)):
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"a MetaStamp is read-only: make another one (at_version), not {name}=")

    def at_version(self, version: str) -> "MetaStamp":
        """This stamp at another version (the -32022 switch)."""
        return MetaStamp(version, self.capabilities, self.client_info, self.level)

    def __call__(self, params: Optional[JsonDict]) -> JsonDict:
        return with_meta(params, meta(self.version, self.capabilities, self.client_info, self.level()))


class LevelVersion(Protocol):
    """Where a stamp's level comes from: ``level_version`` moves whenever the level may have changed."""

    @property
    def level_version(self) -> int: ...


class RetryStamp:
    """One call's retries, what they carry besides their answers computed once per call.

    :meth:`params` makes a round's retry params: the original params (without
    ``inputResponses``, ``requestState`` and ``_meta``), the round's answers and
    echoed state, and a fresh, complete ``_meta`` (the caller's keys, then the
    stamp's version, capabilities, client info and the log level of the
    moment), as :class:`MetaStamp` over ``retry_params`` makes it. The level
    is asked of the stamp again only when ``levels.level_version`` has moved,
    so a level changed during the call reaches its next request. ``name`` is
    the request's ``Mcp-Name``; ``found`` and ``header_args`` the tool's
    ``x-mcp-header`` map the engine last saw and its arguments.
    """

    __slots__ = ("stamp", "version", "name", "found", "header_args", "_base", "_meta", "_levels", "_seen", "_level")

    def __init__(self, stamp: MetaStamp, params: Mapping[str, Any], name: Optional[str], levels: LevelVersion) -> None:
        self.stamp = stamp
        self.version = stamp.version
        self.name = name
        self.found: Optional[Mapping[Any, str]] = None
        self.header_args: tuple[tuple[str, str], ...] = ()
        self._base = {k: v for k, v in params.items() if k not in ("inputResponses", "requestState", "_meta")}
        fixed = dict(params.get("_meta") or {})
        fixed.update(meta(stamp.version, stamp.capabilities, stamp.client_info))
        self._meta = fixed
        self._levels = levels
        self._seen = levels.level_version  # read before the level: a change in between is seen next round
        self._level = stamp.level()

    def params(self, responses: Optional[Mapping[str, Any]], state: Optional[str]) -> JsonDict:
        out = dict(self._base)
        if responses:
            out["inputResponses"] = dict(responses)
        if state is not None:
            out["requestState"] = state  # echoed byte for byte, never parsed
        seen = self._levels.level_version
        if seen != self._seen:
            self._seen = seen
            self._level = self.stamp.level()
        stamped = dict(self._meta)
        if self._level is not None:
            stamped[META_LOG_LEVEL] = self._level
        out["_meta"] = stamped
        return out


# ---------------------------------------------------------------------------- era detection


class EraDecision(Record):
    """What an answer to the ``server/discover`` probe means; read-only.

    Attributes:
        era: "modern" or "legacy".
        version: the version to use (modern) or to offer in ``initialize`` (legacy).
        discover: the DiscoverResult, when there was one.
    """

    __slots__ = ("era", "version", "discover")

    def __init__(self, era: str, version: str, discover: Optional[JsonDict] = None) -> None:
        self.era = era
        self.version = version
        self.discover = discover


def supported_versions(data: Any) -> list[str]:
    """The ``supported`` list of a -32022 error's ``data`` (empty when absent)."""
    return _supported(data)


def _supported(data: Any) -> list[str]:
    if isinstance(data, dict) and isinstance(data.get("supported"), list):
        return [v for v in data["supported"] if isinstance(v, str)]
    return []


def decide_from_discover(response: JsonDict) -> EraDecision:
    """Classify the response to ``server/discover`` (docs/reference.md#what-a-discover-answer-means).

    Raises:
        ProtocolViolation: the server names no version this client speaks.
    """
    if "result" in response:
        result = response["result"]
        if isinstance(result, dict) and isinstance(result.get("supportedVersions"), list):
            offered = [v for v in result["supportedVersions"] if isinstance(v, str)]
            for version in MODERN_VERSIONS:
                if version in offered:
                    return EraDecision("modern", version, result)
            for version in LEGACY_VERSIONS:
                if version in offered:
                    return EraDecision("legacy", version)
            raise ProtocolViolation("server/discover lists no version this client speaks", {"supported": offered})
        return EraDecision("legacy", LEGACY_VERSIONS[0])
    error = response.get("error")
    code = error.get("code") if isinstance(error, dict) else None
    if code in (HEADER_MISMATCH, MISSING_CAPABILITY):
        return EraDecision("modern", MODERN_VERSION)
    if code == UNSUPPORTED_VERSION:
        assert isinstance(error, dict)
        return decide_from_supported(_supported(error.get("data")))
    return EraDecision("legacy", LEGACY_VERSIONS[0])


def decide_from_supported(supported: list[str]) -> EraDecision:
    """A -32022's ``data.supported``: a modern version we speak, else the newest legacy one.

    Raises:
        ProtocolViolation: neither.
    """
    for version in MODERN_VERSIONS:
        if version in supported:
            return EraDecision("modern", version)
    for version in LEGACY_VERSIONS[:2]:  # the versions initialize may offer
        if version in supported:
            return EraDecision("legacy", version)
    raise ProtocolViolation("the server supports no protocol version this client speaks", {"supported": supported})


def modern_in_initialize_error(error: Any) -> bool:
    """True when an ``initialize`` error lists a modern version we speak in ``data.supported``."""
    if not isinstance(error, dict):
        return False
    return any(v in MODERN_VERSIONS for v in _supported(error.get("data")))


# ---------------------------------------------------------------------------- results and rounds

COMPLETE = "complete"
INPUT_REQUIRED = "input_required"
TASK = "task"


def retry_params(original: Mapping[str, Any], responses: Optional[Mapping[str, Any]], state: Optional[str]) -> JsonDict:
    """The retry's params: the original ones plus ``inputResponses`` and the echoed ``requestState``."""
    out = {k: v for k, v in original.items() if k not in ("inputResponses", "requestState", "_meta")}
    if responses:
        out["inputResponses"] = dict(responses)
    if state is not None:
        out["requestState"] = state  # echoed byte for byte, never parsed
    return out


def question_key(request: Mapping[str, Any]) -> str:
    """A canonical text of an input request, to recognise the identical question asked again."""
    return json.dumps([request.get("method"), request.get("params")], sort_keys=True, default=repr)


# ---------------------------------------------------------------------------- resumable calls


class PendingCall(Record):
    """A modern call waiting for input, to be continued by ``client.resume`` (maybe in another process).

    ``to_json()`` gives a string for a server-side session store;
    ``PendingCall.from_json`` reads it back. It is not signed: keep it where
    the user cannot edit it (a hidden form field would let them change the
    tool's arguments). ``client.resume`` checks its input requests again. The
    ``request_state`` is the server's opaque string, echoed untouched.
    """

    __slots__ = ("method", "params", "input_requests", "request_state", "rounds", "declined")

    def __init__(
        self,
        method: str,
        params: JsonDict,
        input_requests: dict[str, JsonDict],
        request_state: Optional[str] = None,
        rounds: int = 0,
        declined: Optional[list[str]] = None,
    ) -> None:
        #: ``tools/call``, ``resources/read`` or ``prompts/get``.
        self.method = method
        #: The call's original params (without ``_meta``).
        self.params = params
        #: The checked input requests, by key (sorted).
        self.input_requests = input_requests
        #: The server's ``requestState``, or None when it sent none.
        self.request_state = request_state
        #: Rounds answered so far in this call.
        self.rounds = rounds
        #: Questions declined or cancelled in the previous round (for the re-ask check).
        self.declined: list[str] = [] if declined is None else declined

    def to_json(self) -> str:
        """This pending call as a JSON string."""
        return json.dumps(
            {
                "v": 1,
                "method": self.method,
                "params": self.params,
                "input_requests": self.input_requests,
                "request_state": self.request_state,
                "rounds": self.rounds,
                "declined": self.declined,
            },
            ensure_ascii=True,
        )

    @classmethod
    def from_json(cls, text: str) -> "PendingCall":
        """Read a pending call written by :meth:`to_json`.

        Raises:
            ValueError: the text is not a pending call.
        """
        try:
            data = json.loads(text)
        except RecursionError:  # nested too deeply to decode: not one of ours
            raise ValueError("not a PendingCall") from None
        if not isinstance(data, dict) or data.get("v") != 1:
            raise ValueError("not a PendingCall")
        method, params, requests = data.get("method"), data.get("params"), data.get("input_requests")
        state, rounds, declined = data.get("request_state"), data.get("rounds"), data.get("declined", [])
        if not isinstance(method, str) or method not in INPUT_REQUIRED_METHODS or not isinstance(params, dict) or not isinstance(requests, dict):
            raise ValueError("not a PendingCall")
        if state is not None and not isinstance(state, str):
            raise ValueError("not a PendingCall")
        if type(rounds) is not int or not isinstance(declined, list):
            raise ValueError("not a PendingCall")
        return cls(method, params, requests, state, rounds, [d for d in declined if isinstance(d, str)])
