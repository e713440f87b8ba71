"""Calling the host's handler for one checked input request, in either era."""

from __future__ import annotations

import logging
from typing import Any, Mapping, Optional, Union

from ._protocol.checks import InputChecks, Prepared, Refusal
from ._protocol.jsonrpc import INTERNAL_ERROR, JsonDict
from .handler import _UNSET_TOKEN, CancelToken, InputContext, InputHandler


def input_context(
    prepared: Prepared,
    client: str,
    server_id: str,
    era: Optional[str],
    assigns: Optional[Mapping[str, Any]],
    related_request_id: Any = None,
    token: Optional[CancelToken] = None,
) -> InputContext:
    """The context of a callback answering ``prepared`` (behaviour.md section 9)."""
    ctx = _new_context(InputContext)
    ctx.client = client
    ctx.server_id = server_id
    ctx.era = era
    ctx.assigns = assigns
    ctx.related_request_id = related_request_id
    ctx.mode = prepared.mode
    url = prepared.url
    if url is None:
        ctx.url = ctx.host = ctx.idn = ctx.origin_mismatch = None
    else:
        ctx.url = url.url
        ctx.host = url.host
        ctx.idn = url.idn
        ctx.origin_mismatch = url.origin_mismatch
    ctx._fields = None
    ctx._form_fields = prepared.fields  # the form's own: ctx.fields copies it when read
    ctx._token = token if token is not None else _UNSET_TOKEN
    return ctx


#: ``InputContext`` without its keyword-only ``__init__``: one per server request.
_new_context = object.__new__


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
