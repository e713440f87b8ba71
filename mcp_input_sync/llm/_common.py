"""What both samplers share: choosing the model, the hooks, the refusals a server reads.

A sampler is a callable ``(params, ctx) -> CreateMessageResult``: the
library has already checked and clamped ``params`` (docs/safety.md), so a
sampler maps them to one provider request, calls it, and maps the answer
back. What a server reads when the provider fails is a fixed sentence
(:func:`provider_refusal`); the provider's own text, which may carry a key
or a request id, only goes to the host's log as its class name and status.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any, Callable, NamedTuple, Optional, Union

from ..errors import InputRefused
from ..handler import InputContext

__all__ = ["Approve", "ModelInfo", "Review", "Sampler", "choose_model", "provider_refusal", "refuse"]

log = logging.getLogger("mcp_input_sync")

JsonDict = dict[str, Any]
#: ``approve(params, ctx)``: False (or raising ``InputRefused``) refuses the request before the provider is called.
Approve = Callable[[JsonDict, InputContext], Any]
#: ``review(result, ctx)``: False refuses the answer; a dict replaces it; None or True sends it as it is.
Review = Callable[[JsonDict, InputContext], Any]

#: The JSON-RPC code of a sampler's refusals (the server's request could not be served); -1 is the user's.
INTERNAL = -32603
USER_REJECTED = -1


class ModelInfo:
    """How one of the host's models compares, each from 0 to 1: ``cost`` (1 is dearest), ``speed``, ``intelligence``.

    Give them as ``models={"name": ModelInfo(...)}`` so that a server's
    cost, speed and intelligence priorities can choose among the models when
    none of its hints names one.
    """

    __slots__ = ("cost", "speed", "intelligence")

    def __init__(self, cost: float = 0.5, speed: float = 0.5, intelligence: float = 0.5) -> None:
        for name, value in (("cost", cost), ("speed", speed), ("intelligence", intelligence)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
                raise ValueError(f"ModelInfo {name} must be a number from 0 to 1")
        self.cost = float(cost)
        self.speed = float(speed)
        self.intelligence = float(intelligence)

    def __repr__(self) -> str:
        return f"ModelInfo(cost={self.cost}, speed={self.speed}, intelligence={self.intelligence})"


def _allowed(model: str, models: Union[Sequence[str], Mapping[str, ModelInfo]]) -> dict[str, Optional[ModelInfo]]:
    if not isinstance(model, str) or not model:
        raise ValueError("model must be a non-empty str: the model used when no hint names another")
    allowed: dict[str, Optional[ModelInfo]] = {model: None}
    if isinstance(models, Mapping):
        for name, info in models.items():
            if not isinstance(name, str) or not name or not isinstance(info, ModelInfo):
                raise TypeError("models maps model names to ModelInfo")
            allowed[name] = info
    else:
        if isinstance(models, str):
            raise TypeError("models is a list of model names, not one str")
        for name in models:
            if not isinstance(name, str) or not name:
                raise TypeError("models holds model names (non-empty str)")
            allowed.setdefault(name, None)
    return allowed


def _priority(preferences: Mapping[str, Any], key: str) -> float:
    value = preferences.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        return 0.0
    return float(value)


def choose_model(params: Mapping[str, Any], default: str, allowed: Mapping[str, Optional[ModelInfo]]) -> str:
    """The model for one request: the first hint that is a case-insensitive substring of an allowed name, else the priorities.

    Hints are tried in the server's order; each is matched against the
    allowed names in the host's order (``model`` first). With no hint
    matching, the priorities choose among the models the host described
    (``ModelInfo``): the highest ``costPriority * (1 - cost) +
    speedPriority * speed + intelligencePriority * intelligence``, the
    default on a tie or with no priorities. Never a name outside ``allowed``.
    """
    preferences = params.get("modelPreferences")
    if not isinstance(preferences, Mapping):
        return default
    hints = preferences.get("hints")
    if isinstance(hints, list):
        for hint in hints:
            name = hint.get("name") if isinstance(hint, Mapping) else None
            if isinstance(name, str) and name.strip():
                wanted = name.strip().lower()
                for candidate in allowed:
                    if wanted in candidate.lower():
                        return candidate
    cost, speed, intelligence = (_priority(preferences, k) for k in ("costPriority", "speedPriority", "intelligencePriority"))
    if not (cost or speed or intelligence):
        return default
    best, best_score = default, None
    for candidate, info in allowed.items():
        if info is None:
            continue
        score = cost * (1 - info.cost) + speed * info.speed + intelligence * info.intelligence
        if best_score is None or score > best_score:
            best, best_score = candidate, score
    return best


class Knobs(NamedTuple):
    """What a sampling request asks of the model beyond its messages, read by one rule for both providers.

    ``temperature`` (a number, never a bool) and ``stops`` (as text) are None
    when not asked for; ``tools`` (None without a list of tools) holds the
    listed tools that have a name, each as (name, description, input
    schema); ``tool_choice`` the mode ``auto``, ``required`` or ``none``,
    if tools were listed and one of them was asked for.
    """

    temperature: Optional[float]
    stops: Optional[list[str]]
    tools: Optional[list[tuple[str, str, Any]]]
    tool_choice: Optional[str]


def knobs(params: Mapping[str, Any]) -> Knobs:
    """The :class:`Knobs` of a ``CreateMessageRequest``'s params (checked and clamped by the library)."""
    temperature = params.get("temperature")
    if not isinstance(temperature, (int, float)) or isinstance(temperature, bool):
        temperature = None
    stops = params.get("stopSequences")
    listed = params.get("tools")
    tools = (
        [
            (t["name"], t.get("description") or "", t.get("inputSchema") or {"type": "object"})
            for t in listed
            if isinstance(t, Mapping) and isinstance(t.get("name"), str)
        ]
        if isinstance(listed, list) and listed
        else None
    )
    choice = params.get("toolChoice")
    mode = choice.get("mode") if isinstance(choice, Mapping) else None
    return Knobs(
        temperature,
        [str(s) for s in stops] if isinstance(stops, list) and stops else None,
        tools,
        mode if tools is not None and mode in ("auto", "required", "none") else None,
    )


def refuse(message: str, code: int = INTERNAL) -> InputRefused:
    """A refusal the server reads: a fixed sentence of ours."""
    return InputRefused(code, message)


#: What a server reads for each kind of provider failure (by the provider error's class name).
_REFUSALS = {
    "AuthenticationError": "the host's model provider refused the host's credentials",
    "PermissionDeniedError": "the host's model provider refused the request",
    "RateLimitError": "the host's model is rate limited; try again later",
    "APITimeoutError": "the host's model did not answer in time",
    "APIConnectionError": "the host's model provider cannot be reached",
    "BadRequestError": "the host's model provider refused the request as malformed",
    "NotFoundError": "the host's model is not available",
    "OverloadedError": "the host's model is overloaded; try again later",
}


def provider_refusal(exc: BaseException, provider: str) -> InputRefused:
    """A provider failure as a refusal the server can read; the host's log gets its class and status only."""
    kind = type(exc).__name__
    status = getattr(exc, "status_code", None)
    log.warning("mcp_input_sync: the %s sampler's provider call failed: %s%s", provider, kind, f" (HTTP {status})" if isinstance(status, int) else "")
    for klass in type(exc).__mro__:
        message = _REFUSALS.get(klass.__name__)
        if message is not None:
            return refuse(message)
    return refuse("the host's model could not answer")


class Sampler:
    """The base of a sampler: the allow-list, the hooks, and the call around the provider (:meth:`__call__`)."""

    #: The provider's name, for logs.
    provider = "llm"
    #: Whether the sampler maps the 2025-11-25 ``tools`` (advertise ``sampling.tools``: ``sampling_tools = sampler.supports_tools``).
    supports_tools = True
    #: The provider's fields for a temperature and stop sequences: there the host's ``extra`` wins over the server's request.
    host_fields: tuple[str, ...] = ()

    def __init__(
        self,
        client: Any,
        model: str,
        *,
        models: Union[Sequence[str], Mapping[str, ModelInfo]] = (),
        approve: Optional[Approve] = None,
        review: Optional[Review] = None,
        extra: Optional[Mapping[str, Any]] = None,
    ) -> None:
        #: The provider's SDK module (``ImportError`` naming the extra without it).
        self.sdk = self.require()
        self.client = client
        self.model = model
        self.allowed = _allowed(model, models)
        self.approve = approve
        self.review = review
        #: More fields for every request; its temperature and stop sequences win over the server's.
        self.extra = dict(extra or {})

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r}, models={list(self.allowed)[1:]!r})"

    def with_extra(self, request: Mapping[str, Any]) -> JsonDict:
        """``request`` with the host's ``extra``: the fields it lacks, and :attr:`host_fields` always.

        The sampling callback is the approval point, so a temperature or stop
        sequences the host set are not the server's to change; None there
        leaves the field out (the provider's default, whatever the server asked).
        The rest of the request (model, messages, the clamped token limit,
        tools) stays the library's.
        """
        merged = {**self.extra, **request}
        for name in self.host_fields:
            if name in self.extra:
                merged[name] = self.extra[name]
                if merged[name] is None:
                    del merged[name]
        return merged

    def ask(self, create: Callable[..., Any], request: Mapping[str, Any], errors: type[BaseException]) -> JsonDict:
        """One provider call; its answer as a dict, or a refusal when the provider fails (``errors``: its SDK's base error)."""
        try:
            answer = create(**request)
        except errors as exc:
            raise provider_refusal(exc, self.provider) from None
        dumped: JsonDict = answer.model_dump() if hasattr(answer, "model_dump") else answer
        return dumped

    def __call__(self, params: JsonDict, ctx: InputContext) -> JsonDict:
        """Answer one ``sampling/createMessage``: approve, choose the model, call the provider, review."""
        if self.approve is not None and self.approve(params, ctx) is False:
            raise refuse("the user declined the sampling request", USER_REJECTED)
        model = choose_model(params, self.model, self.allowed)
        result = self.create(model, params)
        if self.review is not None:
            verdict = self.review(result, ctx)
            if verdict is False:
                raise refuse("the user declined the model's answer", USER_REJECTED)
            if isinstance(verdict, dict):
                result = verdict
        return result

    @staticmethod
    def require() -> Any:
        """The provider's SDK module; ``ImportError`` naming the extra when it is missing."""
        raise NotImplementedError

    def create(self, model: str, params: JsonDict) -> JsonDict:
        """One provider call for ``params`` with ``model``; the ``CreateMessageResult``."""
        raise NotImplementedError
