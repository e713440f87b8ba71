"""The web bridge's input handlers: park each request for a person, block the callback until it is answered.

:class:`WebElicitationHandler` parks form and URL elicitations,
:class:`WebHandler` sampling requests as well, in any store
(:class:`~mcp_input_sync.web.PendingInputBroker`,
:class:`~mcp_input_sync.web.redis_broker.RedisBroker`); the host's web
routes show and answer them. How a wait ends is described in
:mod:`mcp_input_sync.web.broker`.
"""

from __future__ import annotations

import logging
import secrets
import time
from typing import Any, Callable, Optional, Sequence

from .._protocol.jsonrpc import USER_REJECTED
from ..errors import InputRefused
from ..handler import InputContext, InputHandler
from .deferred import Store
from .pending import InputNotFound, PendingInput

log = logging.getLogger("mcp_input_sync.web")

__all__ = ["POLL", "SAMPLING_REJECTED", "WebElicitationHandler", "WebHandler"]

JsonDict = dict[str, Any]

#: The JSON-RPC code of a refused sampling request (the spec's "user rejected"; the ``rejection_code`` default).
SAMPLING_REJECTED = USER_REJECTED
#: How often a parked callback looks at its cancellation token, in seconds.
POLL = 0.05


class WebElicitationHandler(InputHandler):
    """An :class:`InputHandler` that parks form and URL elicitations for a person on the web.

    Args:
        broker: where inputs wait (shared with the web routes).
        timeout: optional bound in seconds on one wait, besides the
            library's ``handler_timeout`` (which always applies). When it
            passes, an elicitation is answered ``cancel``.
        modes: the elicitation modes served (default form and URL).
        user_key: the ``assigns`` key naming the user (default ``"user"``).

    A request whose ``assigns`` names no user has no one to answer it: an
    elicitation is declined at once (and logged, with why: a legacy request
    tied to no call came while several calls were in flight on a stdio
    client, or after one of its calls had ended without its result; lease
    one client per call from a :class:`~mcp_input_sync.ClientPool`).
    """

    def __init__(
        self,
        broker: Store,
        *,
        timeout: Optional[float] = None,
        modes: Sequence[str] = ("form", "url"),
        user_key: str = "user",
    ) -> None:
        if timeout is not None and not timeout > 0:
            raise ValueError("timeout must be positive")
        self.broker = broker
        self.timeout = timeout
        self.modes = tuple(modes)
        self.user_key = user_key

    def elicitation_modes(self) -> Sequence[str]:
        return self.modes

    def handle_elicitation(self, params: dict[str, Any], ctx: InputContext) -> dict[str, Any]:
        kind = "url" if ctx.mode == "url" else "form"
        answer = self._park(kind, params, ctx)
        if answer is None:
            return {"action": "cancel"} if self._has_user(ctx) else {"action": "decline"}
        return answer

    # ------------------------------------------------------------------ parking

    def _has_user(self, ctx: InputContext) -> bool:
        return ctx.assigns is not None and ctx.assigns.get(self.user_key) is not None

    def _why_no_user(self, ctx: InputContext) -> str:
        if ctx.era == "legacy" and ctx.related_request_id is None:
            return ("it is tied to no call: over stdio a server request is tied to a call only while that call is "
                    "the client's only one in flight and no call that ended without its result may still be at work "
                    "on the server, and several were (or none was, or one had timed out or been cancelled); lease one "
                    "client per call from mcp_input_sync.ClientPool (docs/web.md#many-users-on-one-stdio-server)")
        return f"the call it came from passed no assigns={{{self.user_key!r}: ...}}"

    def _park(self, kind: str, params: dict[str, Any], ctx: InputContext, *, draft: Optional[str] = None, model: str = "human") -> Optional[JsonDict]:
        """Park one input and wait for its answer; None when nobody answered (cancelled, timed out, no user)."""
        if not self._has_user(ctx):
            log.warning("mcp_input_sync.web: a %s request from server %s names no user in assigns; refused: %s",
                        kind, ctx.server_id, self._why_no_user(ctx))
            return None
        assert ctx.assigns is not None
        now = time.time()
        pending = PendingInput(
            id=secrets.token_urlsafe(16),
            kind=kind,
            params=params,
            user=str(ctx.assigns[self.user_key]),
            created=now,
            server_id=ctx.server_id,
            fields={k: dict(v) for k, v in ctx.fields.items()} if ctx.fields is not None else None,
            url=ctx.url,
            host=ctx.host,
            idn=ctx.idn,
            origin_mismatch=ctx.origin_mismatch,
            server_origin=ctx.server_origin,
            draft=draft,
            expires=None if self.timeout is None else now + self.timeout,
        )
        self.broker.park(pending, model=model)
        deadline = None if self.timeout is None else time.monotonic() + self.timeout
        try:
            while not ctx.cancelled:
                step = POLL if deadline is None else min(POLL, deadline - time.monotonic())
                if step <= 0:
                    break
                try:
                    answer = self.broker.wait(pending.id, step)
                except InputNotFound:
                    return None
                if answer is not None:
                    return answer
        finally:
            late = self.broker.withdraw(pending.id)
        # answered in the last instant: the answer still counts unless the library gave up
        return late if late is not None and not ctx.cancelled else None


class WebHandler(WebElicitationHandler):
    """:class:`WebElicitationHandler` that also parks sampling requests for approval.

    The person reads the request and approves it with a reply text (the
    answer sent to the server, as ``model``), or rejects it (the server gets
    error -1). Overriding ``handle_sampling`` advertises the ``sampling``
    capability; use :class:`WebElicitationHandler` when the host offers none.

    Args:
        draft: optional ``draft(params, ctx) -> str`` run before parking (your
            LLM, say); the person sees it pre-filled and may edit it.
        model: the ``model`` of approved replies (default ``"human"``, or
            the name of the model whose draft the person approves).
        sampler: a sampler of :mod:`mcp_input_sync.llm`: the host's model
            answers first, and the person sees its reply pre-filled beside
            the request, edits it or not, and approves or rejects it; the
            reply goes as the model the provider reported
            (docs/llm.md#in-a-web-app). The request reaches the host's model
            before the person sees it: give the sampler an ``approve`` hook
            for a policy of your own. Takes the place of ``draft`` and ``model``.
    """

    def __init__(
        self,
        broker: Store,
        *,
        timeout: Optional[float] = None,
        modes: Sequence[str] = ("form", "url"),
        user_key: str = "user",
        draft: Optional[Callable[[dict[str, Any], InputContext], str]] = None,
        model: str = "human",
        sampler: Optional[Callable[[dict[str, Any], InputContext], dict[str, Any]]] = None,
    ) -> None:
        super().__init__(broker, timeout=timeout, modes=modes, user_key=user_key)
        self.draft = draft
        self.model = model
        self.sampler = sampler

    def handle_sampling(self, params: dict[str, Any], ctx: InputContext) -> dict[str, Any]:
        model = self.model
        if self.sampler is not None and self._has_user(ctx):
            drafted = self.sampler(params, ctx)
            content = drafted.get("content")
            if not isinstance(content, dict) or content.get("type") != "text":
                raise InputRefused(SAMPLING_REJECTED, "the host's model answered with something a person cannot approve here")
            text: Optional[str] = str(content.get("text", ""))
            model = str(drafted.get("model") or model)
        else:
            text = self.draft(params, ctx) if self.draft is not None and self._has_user(ctx) else None
        answer = self._park("sampling", params, ctx, draft=text, model=model)
        if answer is None:
            raise InputRefused(SAMPLING_REJECTED, "the user did not approve the sampling request")
        if answer.get("action") == "reject":
            raise InputRefused(SAMPLING_REJECTED, "the user rejected the sampling request")
        return answer
