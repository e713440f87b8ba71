"""The app's views: list the user's pending inputs, show one as a form, take the answer.

Settings:

- ``MCP_INPUT_SYNC_BROKER`` (required): the
  :class:`~mcp_input_sync.web.PendingInputBroker` the handlers park inputs
  in, or its dotted path.
- ``MCP_INPUT_SYNC_USER`` (optional): ``(request) -> user id or None``, or
  its dotted path; by default ``str(request.user.pk)`` for an authenticated
  user.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from django.conf import settings  # type: ignore[import-untyped, import-not-found, unused-ignore]
from django.core.exceptions import ImproperlyConfigured  # type: ignore[import-untyped, import-not-found, unused-ignore]
from django.http import (  # type: ignore[import-untyped, import-not-found, unused-ignore]
    Http404,
    HttpResponse,
    HttpResponseForbidden,
    HttpResponseNotAllowed,
    HttpResponseRedirect,
    JsonResponse,
)
from django.middleware.csrf import get_token  # type: ignore[import-untyped, import-not-found, unused-ignore]
from django.urls import reverse  # type: ignore[import-untyped, import-not-found, unused-ignore]
from django.utils.module_loading import import_string  # type: ignore[import-untyped, import-not-found, unused-ignore]
from django.views.decorators.csrf import csrf_protect  # type: ignore[import-untyped, import-not-found, unused-ignore]

from ..deferred import Store
from .. import forms
from ..forms import answer_submission, call_json, render_call, render_list, render_page, submitted_values
from ..pending import InputNotFound

__all__ = ["call", "call_state_json", "index", "pending_json", "show"]

#: Django's CSRF form field.
CSRF_FIELD = "csrfmiddlewaretoken"

_HEADERS = {
    "Cache-Control": "no-store",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
}


def _headers(response: Any) -> Any:
    for key, value in _HEADERS.items():
        response[key] = value
    return response


def setting_object(name: str, kind: Any, what: str) -> Any:
    """The object the setting ``name`` holds or names by dotted path; ImproperlyConfigured unless it is a ``kind``."""
    value = getattr(settings, name, None)
    if isinstance(value, str):
        value = import_string(value)
    if not isinstance(value, kind):
        raise ImproperlyConfigured(f"{name} must be {what} or its dotted path")
    return value


def get_broker() -> Store:
    """The broker named by ``MCP_INPUT_SYNC_BROKER`` (any :class:`~mcp_input_sync.web.deferred.Store`: in memory or on Redis)."""
    broker: Store = setting_object("MCP_INPUT_SYNC_BROKER", Store, "a PendingInputBroker")
    return broker


def default_user(request: Any) -> Optional[str]:
    """``str(request.user.pk)`` for an authenticated user, else None."""
    user = getattr(request, "user", None)
    if user is None or not getattr(user, "is_authenticated", False):
        return None
    return str(user.pk)


def get_user(request: Any) -> Optional[str]:
    """The request's user id, through ``MCP_INPUT_SYNC_USER`` or :func:`default_user`."""
    loader: Any = getattr(settings, "MCP_INPUT_SYNC_USER", None) or default_user
    if isinstance(loader, str):
        loader = import_string(loader)
    user = loader(request)
    return None if user is None else str(user)


def _html(body: str, status: int = 200) -> Any:
    return _headers(HttpResponse(body, status=status, content_type="text/html; charset=utf-8"))


def index(request: Any) -> Any:
    """GET: the user's pending inputs."""
    if request.method not in ("GET", "HEAD"):
        return HttpResponseNotAllowed(["GET", "HEAD"])
    user = get_user(request)
    if user is None:
        return HttpResponseForbidden()
    items = [(p, reverse("mcp_input:show", args=[p.id])) for p in get_broker().pending(user)]
    return _html(render_list(items))


def pending_json(request: Any) -> Any:
    """GET: the user's pending inputs as JSON (id, kind, message, server_id, created, url), the server's text cleaned as on the pages."""
    if request.method not in ("GET", "HEAD"):
        return HttpResponseNotAllowed(["GET", "HEAD"])
    user = get_user(request)
    if user is None:
        return HttpResponseForbidden()
    items = [(p, reverse("mcp_input:show", args=[p.id])) for p in get_broker().pending(user)]
    return _headers(JsonResponse(forms.pending_json(items), safe=False))


def _show(request: Any, input_id: str) -> Any:
    if request.method not in ("GET", "HEAD", "POST"):
        return HttpResponseNotAllowed(["GET", "HEAD", "POST"])
    user = get_user(request)
    if user is None:
        return HttpResponseForbidden()
    broker = get_broker()
    try:
        pending = broker.get(input_id, user)
    except InputNotFound:
        raise Http404("no such pending input") from None
    action = reverse("mcp_input:show", args=[input_id])
    back = reverse("mcp_input:index")
    hidden = {CSRF_FIELD: get_token(request)}
    if request.method != "POST":
        return _html(render_page(pending, action, hidden, back=back))
    try:
        errors = answer_submission(broker, pending, user, request.POST)
    except InputNotFound:
        raise Http404("no such pending input") from None
    if errors:
        values = submitted_values(pending, request.POST)
        return _html(render_page(pending, action, hidden, values=values, errors=errors, back=back), 400)
    if pending.call_id is not None:
        back = reverse("mcp_input:call", args=[pending.call_id])
    response = _headers(HttpResponseRedirect(back))
    response.status_code = 303
    return response


def _call_state(request: Any, call_id: str) -> Any:
    if request.method not in ("GET", "HEAD"):
        return HttpResponseNotAllowed(["GET", "HEAD"])
    user = get_user(request)
    if user is None:
        return HttpResponseForbidden()
    try:
        state = get_broker().result(call_id, user)
    except InputNotFound:
        raise Http404("no such call") from None
    return state, [(p, reverse("mcp_input:show", args=[p.id])) for p in state.inputs]


def call(request: Any, call_id: str) -> Any:
    """GET: a deferred call's result, error or next inputs (HTML)."""
    found = _call_state(request, call_id)
    if not isinstance(found, tuple):
        return found
    return _html(render_call(*found))


def call_state_json(request: Any, call_id: str) -> Any:
    """GET: the same as JSON (id, status, result, error, rounds, inputs)."""
    found = _call_state(request, call_id)
    if not isinstance(found, tuple):
        return found
    return _headers(JsonResponse(call_json(*found)))


#: GET: one pending input as a form; POST: its answer (Django's CSRF check first).
show: Callable[..., Any] = csrf_protect(_show)
