"""The check pipeline every input request passes, whichever era asked.

The steps of docs/reference.md#order-of-checks, in this order (the first failure decides):

1. ``method``: only ``sampling/createMessage``, ``elicitation/create`` and
   ``roots/list`` are input requests (-32601).
2. ``capability``: the kind was declared (-32601).
3. ``malformed``: ``params`` is an object with the required members (-32602);
   then the declared-capability details: an undeclared elicitation mode, or
   ``tools``/``toolChoice`` without ``sampling.tools`` (``capability``, -32602).
4. ``budget``: one token per input request from the client's bucket
   (sampling: ``rejection_code``; others: -32000 "rate limited").
5. Kind checks: sampling ``max_tokens`` (-32602), ``idle`` and
   ``tool_loop`` (``rejection_code``), then ``maxTokens`` clamped and
   ``includeContext`` narrowed; elicitation ``url`` and ``schema`` (-32602).
6. (legacy only, in the runtime: a free worker slot, ``busy``.)
7. (the callback.)
8. ``answer``: the callback's result is validated and cleaned (-32603).

:class:`InputChecks` is pure: the caller passes the time and serialises
calls (the budget is the only mutable state, besides the form cache).
Refusals are values (:class:`Refusal`), so the legacy era can answer them on
the wire and the modern era can raise them.
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Optional, Union

from . import jsonrpc, roots, sampling
from .budget import TokenBucket
from .record import Record
from .forms import FormCache, FormSchema, SchemaRefused, quoted
from .urls import UrlFacts, UrlRefused, check_elicitation_url
from .eras import INPUT_REQUEST_KINDS, missing_param

JsonDict = dict[str, Any]

ACTIONS = frozenset({"accept", "decline", "cancel"})


class Refusal(Record):
    """A check refused an input request (or its answer); read-only.

    Attributes:
        check: the check's name: method, capability, malformed, budget,
            max_tokens, idle, tool_loop, url, schema, answer.
        code: the JSON-RPC error code the legacy era answers with.
        message: the message sent to the server (generic: no callback text).
        detail: detail for the local log only.
    """

    __slots__ = ("check", "code", "message", "detail")

    def __init__(self, check: str, code: int, message: str, detail: str = "") -> None:
        self.check = check
        self.code = code
        self.message = message
        self.detail = detail


class CheckConfig(Record):
    """What the checks need to know about the client and the session; read-only.

    ``origin`` is the server's origin for URL elicitations
    (``scheme://host[:port]``), or None.
    """

    __slots__ = (
        "version",
        "kinds",
        "modes",
        "sampling_tools",
        "sampling_context",
        "max_tokens",
        "allow_idle",
        "max_tool_iterations",
        "rejection_code",
        "origin",
    )

    def __init__(
        self,
        version: str = "2025-11-25",
        kinds: frozenset[str] = frozenset(),
        modes: frozenset[str] = frozenset({"form"}),
        sampling_tools: bool = False,
        sampling_context: bool = False,
        max_tokens: int = 4096,
        allow_idle: bool = False,
        max_tool_iterations: int = 5,
        rejection_code: int = jsonrpc.USER_REJECTED,
        origin: Optional[str] = None,
    ) -> None:
        self.version = version
        self.kinds = kinds
        self.modes = modes
        self.sampling_tools = sampling_tools
        self.sampling_context = sampling_context
        self.max_tokens = max_tokens
        self.allow_idle = allow_idle
        self.max_tool_iterations = max_tool_iterations
        self.rejection_code = rejection_code
        self.origin = origin


class Prepared(Record):
    """An input request that passed the checks before the callback.

    ``params`` is what the handler sees (sampling: clamped; others: as sent);
    ``fields`` is the compiled form's own (shared: never changed; each
    callback's context copies it when read); ``notes`` collects warnings for
    the local log (roots dropped, ...), filled by :meth:`InputChecks.answer`.
    """

    __slots__ = ("kind", "params", "mode", "url", "form", "fields", "notes")

    def __init__(
        self,
        kind: str,
        params: JsonDict,
        mode: Optional[str] = None,
        url: Optional[UrlFacts] = None,
        form: Optional[FormSchema] = None,
        fields: Optional[dict[str, dict[str, bool]]] = None,
        notes: Optional[list[str]] = None,
    ) -> None:
        self.kind = kind
        self.params = params
        self.mode = mode
        self.url = url
        self.form = form
        self.fields = fields
        self.notes: list[str] = [] if notes is None else notes


def _refuse(check: str, code: int, message: str, detail: str = "") -> Refusal:
    return Refusal(check, code, message, detail)


class InputChecks:
    """Checks input requests and answers for one client."""

    def __init__(self, config: CheckConfig, rate: float, burst: int, now: float) -> None:
        self.config = config
        self.bucket = TokenBucket(rate, burst, now)
        #: An infinite rate never refuses and keeps no state: callers may skip the budget's lock.
        self.unlimited = math.isinf(rate)
        self.forms = FormCache()

    # ------------------------------------------------------------------ steps 1-3

    def before(self, method: str, params: Any) -> Optional[Refusal]:
        """Steps 1 to 3: method, capability, malformed params and capability details."""
        config = self.config
        kind = INPUT_REQUEST_KINDS.get(method)
        if kind is None:
            return _refuse("method", jsonrpc.METHOD_NOT_FOUND, f"method not found: {quoted(method, 128)}")
        if kind not in config.kinds:
            return _refuse("capability", jsonrpc.METHOD_NOT_FOUND, f"client does not support {method}")
        if kind == "elicitation" and type(params) is dict and "message" in params and params.get("mode", "form") == "form" and type(params.get("requestedSchema")) is dict:
            # the common case, a well-formed form elicitation: the general path below, in brief
            if "form" in config.modes:
                return None
        problem = missing_param(method, params, config.version)
        if problem is not None:
            return _refuse("malformed", jsonrpc.INVALID_PARAMS, f"invalid params: {problem}")
        if kind == "elicitation":
            mode = params.get("mode", "form")
            if not isinstance(mode, str) or mode not in config.modes:
                return _refuse("capability", jsonrpc.INVALID_PARAMS, "elicitation mode not supported by this client")
        elif kind == "sampling" and not config.sampling_tools and ("tools" in params or "toolChoice" in params):
            return _refuse("capability", jsonrpc.INVALID_PARAMS, "sampling with tools is not supported by this client")
        return None

    # ------------------------------------------------------------------ step 4

    def budget(self, kinds: list[str], now: float) -> Optional[Refusal]:
        """Step 4: one token per input request, all or none; refused as the first kind."""
        if self.unlimited or self.bucket.take(len(kinds), now):
            return None
        if kinds and kinds[0] == "sampling":
            return _refuse("budget", self.config.rejection_code, "rate limited: too many input requests")
        return _refuse("budget", jsonrpc.SERVER_ERROR, "rate limited: too many input requests")

    # ------------------------------------------------------------------ step 5

    def prepare(self, method: str, params: Any, *, in_flight: bool) -> Union[Refusal, Prepared]:
        """Step 5: the kind's own checks; returns what the handler will see."""
        kind = INPUT_REQUEST_KINDS[method]
        if kind == "sampling":
            return self._prepare_sampling(params, in_flight)
        if kind != "elicitation":
            return Prepared(kind, params if type(params) is dict else {})
        # an elicitation, the most frequent kind: its checks right here (one call less per request)
        if params.get("mode", "form") == "url":
            try:
                facts = check_elicitation_url(params["url"], self.config.origin)
            except UrlRefused as exc:
                return _refuse("url", jsonrpc.INVALID_PARAMS, str(exc))
            return Prepared("elicitation", params, mode="url", url=facts)
        schema = params["requestedSchema"]
        try:
            form = self.forms.get(schema)
        except SchemaRefused as exc:
            return _refuse("schema", jsonrpc.INVALID_PARAMS, f"requestedSchema refused: {exc}")
        # the form's own facts, shared: InputContext.fields gives each callback a copy when read
        return Prepared("elicitation", params, "form", None, form, form.fields)

    def _prepare_sampling(self, params: JsonDict, in_flight: bool) -> Union[Refusal, Prepared]:
        config = self.config
        if sampling.bad_max_tokens(params):
            return _refuse("max_tokens", jsonrpc.INVALID_PARAMS, "maxTokens must be an integer of at least 1")
        if not in_flight and not config.allow_idle:
            return _refuse("idle", config.rejection_code, "sampling refused: no call is in progress")
        turns = sampling.tool_turns(params["messages"])
        if turns > config.max_tool_iterations:
            return _refuse("tool_loop", config.rejection_code, "sampling refused: too many tool iterations", f"{turns} tool turns")
        seen = sampling.rewrite(params, max_tokens=config.max_tokens, context=config.sampling_context)
        return Prepared("sampling", seen)

    # ------------------------------------------------------------------ step 8

    def answer(self, prepared: Prepared, value: Any) -> Union[Refusal, JsonDict]:
        """Step 8: validate the callback's result and return what is sent."""
        if type(value) is not dict:
            return _refuse("answer", jsonrpc.INTERNAL_ERROR, "the input handler returned an invalid answer", "not a dict")
        kind = prepared.kind
        if kind == "elicitation":
            return self._elicitation_answer(prepared, value)
        if kind == "sampling":
            problem = sampling.result_problem(value, self.config.version)
            if problem is not None:
                return _refuse("answer", jsonrpc.INTERNAL_ERROR, "the input handler returned an invalid answer", problem)
            return value
        try:
            kept, dropped = roots.normalise_roots(value)
        except roots.RootsInvalid as exc:
            return _refuse("answer", jsonrpc.INTERNAL_ERROR, "the input handler returned an invalid answer", str(exc))
        prepared.notes.extend(dropped)
        out = dict(value)
        out["roots"] = kept
        return out

    def _elicitation_answer(self, prepared: Prepared, value: Mapping[str, Any]) -> Union[Refusal, JsonDict]:
        action = value.get("action")
        if not isinstance(action, str) or action not in ACTIONS:
            return _refuse("answer", jsonrpc.INTERNAL_ERROR, "the input handler returned an invalid answer", f"action {action!r}")
        if action != "accept":
            return {"action": action}  # content on a decline or cancel is dropped
        content = value.get("content")
        if prepared.mode == "url":
            if content is not None:
                return _refuse("answer", jsonrpc.INTERNAL_ERROR, "the input handler returned an invalid answer", "a URL accept carries content")
            return {"action": "accept"}
        assert prepared.form is not None
        problem = prepared.form.check_content(content)
        if problem is not None:
            return _refuse("answer", jsonrpc.INTERNAL_ERROR, "the input handler returned an invalid answer", problem)
        return {"action": "accept"} if content is None else {"action": "accept", "content": content}
