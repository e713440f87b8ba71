"""The web bridge's plain data: a pending input, a deferred call's state, and the checks of an answer.

Nothing here holds a lock, a thread or a connection: the stores
(:mod:`mcp_input_sync.web.broker` in memory,
:mod:`mcp_input_sync.web.redis_broker` on Redis) keep these values, the
handlers (:mod:`mcp_input_sync.web.handlers`) create them, and
:mod:`mcp_input_sync.web.deferred` drives deferred calls with them.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass
from typing import Any, Mapping, Optional

from .. import reflect
from .._protocol import formview
from .._protocol.forms import FormSchema, compile_form
from .._protocol.sampling import result_problem

__all__ = [
    "CallState",
    "ELICITATION_ACTIONS",
    "NON_FIELD",
    "SAMPLING_ACTIONS",
    "InputNotFound",
    "ParkedInput",
    "PendingInput",
    "field_errors",
    "same_user",
    "sampling_summary",
]

JsonDict = dict[str, Any]

#: The actions a person may take on an elicitation (form or URL).
ELICITATION_ACTIONS = ("accept", "decline", "cancel")
#: The actions a person may take on a sampling request.
SAMPLING_ACTIONS = ("approve", "reject")
#: The key of errors that belong to no single field.
NON_FIELD = "__all__"
#: The longest ``message`` of a sampling request (code points): a summary for lists and ``pending.json``.
SUMMARY_LIMIT = 200
_SPACE = re.compile(r"\s*")


class InputNotFound(LookupError):
    """No pending input with this id belongs to this user (or it is no longer pending)."""


@dataclass
class PendingInput:
    """One request for input waiting for a person.

    Everything in ``params`` (and ``url``, ``host``) came from the server:
    escape it before showing it (:mod:`mcp_input_sync.web.forms` does).
    """

    #: A random, unguessable id (URL-safe).
    id: str
    #: ``"form"``, ``"url"`` or ``"sampling"``.
    kind: str
    #: The request's params as the handler saw them (sampling: clamped).
    params: JsonDict
    #: The user the call belongs to (``str(assigns["user"])``).
    user: str
    #: When it was parked (``time.time()``).
    created: float
    #: Which server asks (``ctx.server_id``).
    server_id: str = ""
    #: Form: ``{name: {"sensitive_suspected": bool}}`` (``ctx.fields``).
    fields: Optional[dict[str, dict[str, bool]]] = None
    #: URL elicitation: the URL as sent, its A-label host, IDN and origin facts
    #: (``server_origin``: the origin it was compared with, None for a stdio server).
    url: Optional[str] = None
    host: Optional[str] = None
    idn: Optional[bool] = None
    origin_mismatch: Optional[bool] = None
    server_origin: Optional[str] = None
    #: Sampling: a draft reply shown to the person (from the handler's ``draft``).
    draft: Optional[str] = None
    #: When the handler stops waiting (``time.time()``), if it has its own timeout.
    expires: Optional[float] = None
    #: Modern-era deferred call (:meth:`PendingInputBroker.start_call`): the call's id, else None.
    call_id: Optional[str] = None
    #: The input request's key in its round (deferred calls only).
    key: Optional[str] = None

    @property
    def message(self) -> str:
        """The server's message for an elicitation; for sampling a summary of the request ("" when absent).

        A sampling request has no message of its own, so a list or
        ``pending.json`` would show nothing: its summary is the last user
        message's text (other blocks as ``[image]``...), on one line, cleaned
        with :func:`mcp_input_sync.reflect.text` and cut to
        :data:`SUMMARY_LIMIT` code points (an ellipsis marks the cut).
        """
        if self.kind == "sampling":
            return sampling_summary(self.params)
        value = self.params.get("message")
        return value if isinstance(value, str) else ""

    @property
    def schema(self) -> JsonDict:
        """A form's ``requestedSchema`` (``{}`` for other kinds)."""
        value = self.params.get("requestedSchema")
        return value if isinstance(value, dict) else {}

    def sensitive(self, name: str) -> bool:
        """True when the form field ``name`` is suspected to hold a secret."""
        return bool((self.fields or {}).get(name, {}).get("sensitive_suspected"))


@dataclass
class CallState:
    """Where a deferred modern-era call stands (:meth:`PendingInputBroker.result`)."""

    #: The call's id (random, URL-safe).
    id: str
    #: ``"pending"`` (waiting for the user), ``"complete"`` or ``"error"``.
    status: str
    #: The tool's ``CallToolResult`` once complete.
    result: Optional[JsonDict]
    #: Why the call failed (a ``ClientError``'s text, a rejected sampling request...).
    error: Optional[str]
    #: The user's unanswered inputs of the current round.
    inputs: list[PendingInput]
    #: Rounds of input asked so far.
    rounds: int = 0


def sampling_summary(params: Mapping[str, Any]) -> str:
    """The last user message of a sampling request's ``params`` on one line, cleaned and cut (see :attr:`PendingInput.message`)."""
    messages = params.get("messages")
    last = next((m for m in reversed(messages) if isinstance(m, dict) and m.get("role") == "user"), None) if isinstance(messages, list) else None
    if last is None:
        return ""
    words: list[str] = []
    for block in formview.blocks(last.get("content")):
        part = block.text if block.text is not None else f"[{block.type or 'unknown'}]"
        lead = _SPACE.match(part)
        start = lead.end() if lead is not None else 0
        # only a bounded slice of each block is cleaned: a list polled every few seconds never copies a whole prompt
        words += reflect.text(part[start : start + 2 * SUMMARY_LIMIT], 2 * SUMMARY_LIMIT, lines=True).split()
        if sum(len(word) + 1 for word in words) > SUMMARY_LIMIT:
            break
    text = " ".join(words)
    return text if len(text) <= SUMMARY_LIMIT else text[: SUMMARY_LIMIT - 1].rstrip() + "…"


def same_user(owner: str, user: Any) -> bool:
    """True when ``user`` (any value, compared as ``str(user)``) is ``owner``; None is nobody.

    Compared in constant time, so that a guessed name learns nothing from how long a refusal takes.
    """
    if user is None:
        return False
    return secrets.compare_digest(owner.encode("utf-8", "surrogatepass"), str(user).encode("utf-8", "surrogatepass"))


def field_errors(form: FormSchema, content: Any) -> dict[str, str]:
    """Every problem of a form answer's ``content``, per field, with the library's own checks.

    Returns:
        ``{field: message}`` (``"__all__"`` for a problem of the whole
        content); empty when :meth:`FormSchema.check_content` accepts it.
    """
    if content is None:
        content = {}
    if type(content) is not dict:
        return {NON_FIELD: "the answer is not an object"}
    errors: dict[str, str] = {}
    for name in form.required:
        if name not in content:
            errors[name] = "is required"
    for name, value in content.items():
        check = form.checks.get(name)
        if check is None:
            if form.closed:
                errors[str(name)] = "is not in the form"
            continue
        problem = check(value)
        if problem is not None:
            errors[name] = problem
    if not errors:  # belt and braces: the library's whole-answer check decides
        problem = form.check_content(content)
        if problem is not None:
            errors[NON_FIELD] = problem
    return errors


@dataclass(frozen=True)
class ParkedInput:
    """A pending input as a store keeps it: with its compiled form and the ``model`` of an approved sampling reply."""

    pending: PendingInput
    #: The compiled ``requestedSchema`` of a form (None for other kinds).
    form: Optional[FormSchema]
    model: str = "human"

    @classmethod
    def of(cls, pending: PendingInput, model: str = "human") -> "ParkedInput":
        """Compile a form's schema for its checks.

        Raises:
            SchemaRefused: a form whose schema could never be answered.
        """
        return cls(pending, compile_form(pending.schema) if pending.kind == "form" else None, model)

    def validate(self, data: Mapping[str, Any]) -> tuple[dict[str, str], JsonDict]:
        """Check an answer (see :meth:`PendingInputBroker.answer`).

        Returns:
            ``(errors, {})`` when it is refused; ``({}, result)`` with what
            the waiting callback returns when it is taken.
        """
        if not isinstance(data, Mapping):
            return {NON_FIELD: "the answer is not an object"}, {}
        action = data.get("action")
        kind = self.pending.kind
        if kind == "sampling":
            if action == "reject":
                return {}, {"action": "reject"}
            if action != "approve":
                return {NON_FIELD: "choose approve or reject"}, {}
            text = data.get("text")
            if type(text) is not str or not text.strip():
                return {"text": "a reply is required to approve"}, {}
            result = {"role": "assistant", "content": {"type": "text", "text": text}, "model": self.model, "stopReason": "endTurn"}
            problem = result_problem(result, "2025-11-25")
            if problem is not None:  # pragma: no cover - a text block always passes
                return {NON_FIELD: problem}, {}
            return {}, result
        if not isinstance(action, str) or action not in ELICITATION_ACTIONS:
            return {NON_FIELD: "choose accept, decline or cancel"}, {}
        if action != "accept":
            return {}, {"action": action}
        content = data.get("content")
        if kind == "url":
            if content is not None:
                return {NON_FIELD: "a URL accept carries no content"}, {}
            return {}, {"action": "accept"}
        assert self.form is not None
        errors = field_errors(self.form, content)
        if errors:
            return errors, {}
        return {}, {"action": "accept", "content": dict(content or {})}
