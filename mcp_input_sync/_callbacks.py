"""Calling the host's handler for one checked input request, in either era."""

from __future__ import annotations

import logging
from typing import Any, Mapping, Optional, Union

from ._protocol.checks import InputChecks, Prepared, Refusal
from ._protocol.jsonrpc import INTERNAL_ERROR, JsonDict
from .handler import CancelToken, InputContext, InputHandler


def input_context(
    prepared: Prepared,
    client: str,
    server_id: str,
    era: Optional[str],
    assigns: Optional[Mapping[str, Any]],
    related_request_id: Any = None,
    token: Optional[CancelToken] = None,
) -> InputContext:
    """The context of a callback answering ``prepared`` (docs/index.md#the-context)."""
    return InputContext._for_request(
        client, server_id, era, assigns, related_request_id, prepared.mode, prepared.url, prepared.fields, token
    )


log = logging.getLogger("mcp_input_sync")


def checked_answer(checks: InputChecks, prepared: Prepared, value: Any) -> Union[Refusal, JsonDict]:
    """``checks.answer``; an answer too strange to check (the checks raise on it) is an invalid answer."""
    try:
        return checks.answer(prepared, value)
    except Exception:
        log.exception("mcp_input_sync: a %s answer could not be checked; refused as invalid", prepared.kind)
        return Refusal("answer", INTERNAL_ERROR, "the input handler returned an invalid answer", "unreadable answer")


def call_handler(handler: InputHandler, prepared: Prepared, ctx: InputContext) -> Any:
    """Run the handler method for the request's kind and return what it returned."""
    if prepared.kind == "elicitation":
        return handler.handle_elicitation(prepared.params, ctx)
    if prepared.kind == "sampling":
        return handler.handle_sampling(prepared.params, ctx)
    return handler.list_roots(ctx)
