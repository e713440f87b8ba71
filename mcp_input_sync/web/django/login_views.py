"""Views that log the signed-in user in to the app's protected MCP servers (OAuth, ``application_type`` web).

Settings:

- ``MCP_INPUT_SYNC_LOGINS`` (required): a :class:`~mcp_input_sync.web.logins.Logins`
  (the servers by name, and the token store every worker shares), or its dotted path.
- ``MCP_INPUT_SYNC_USER`` (optional): as for the inputs views; by default
  ``str(request.user.pk)`` of an authenticated user.

Routes (``mcp_input_sync.web.django.login_urls``, namespace ``mcp_login``):
``login`` (``"<server>/login/"``: GET ``?next=/page`` shows a page with a
"Log in" button, whose POST, with Django's CSRF token, starts the login), ``callback``
(``"callback/"``, GET: the library registers its absolute URL with each
authorization server itself), ``logout`` (``"<server>/logout/"``, POST with Django's CSRF
token, then 303 to ``next``), ``status`` (``"status.json"``). No user: 403;
an unknown server: 404; a login that failed: 400 with what failed.
"""

from __future__ import annotations

from typing import Any, Callable

from django.http import (  # type: ignore[import-untyped, import-not-found, unused-ignore]
    Http404,
    HttpResponseForbidden,
    HttpResponseNotAllowed,
    HttpResponseRedirect,
    JsonResponse,
)
from django.middleware.csrf import get_token  # type: ignore[import-untyped, import-not-found, unused-ignore]
from django.urls import reverse  # type: ignore[import-untyped, import-not-found, unused-ignore]
from django.views.decorators.csrf import csrf_protect  # type: ignore[import-untyped, import-not-found, unused-ignore]

from ...errors import ClientError
from ..logins import SESSION_KEY, Logins, login_page, safe_next
from ..forms import render_notice
from .views import _headers, _html, get_user, setting_object

__all__ = ["callback", "login", "logout", "status"]


def get_logins() -> Logins:
    """The :class:`Logins` named by ``MCP_INPUT_SYNC_LOGINS``."""
    logins: Logins = setting_object("MCP_INPUT_SYNC_LOGINS", Logins, "a mcp_input_sync.web.logins.Logins")
    return logins


def _see_other(target: str) -> Any:
    response = _headers(HttpResponseRedirect(target))
    response.status_code = 303
    return response


def _failed(title: str, message: str, status: int) -> Any:
    return _html(render_notice(title, message), status)


def _user(request: Any, methods: tuple[str, ...]) -> Any:
    """The request's user id (a str), or the response that refuses the request (405, or 403 with no user)."""
    if request.method not in methods:
        return HttpResponseNotAllowed(list(methods))
    user = get_user(request)
    return HttpResponseForbidden() if user is None else user


def _known(logins: Logins, server: str) -> str:
    if server not in logins.servers:
        raise Http404("no such MCP server")
    return server


def _login(request: Any, server: str) -> Any:
    user = _user(request, ("GET", "HEAD", "POST"))
    if not isinstance(user, str):
        return user
    logins = get_logins()
    _known(logins, server)
    next_url = safe_next(request.POST.get("next") or request.GET.get("next"))
    if request.method != "POST":  # a page with a button: a GET from another site starts nothing
        hidden = {"csrfmiddlewaretoken": get_token(request)}
        return _html(login_page(server, reverse("mcp_login:login", args=[server]), hidden, next_url))
    callback_url = request.build_absolute_uri(reverse("mcp_login:callback"))
    try:
        target, record = logins.start(user, server, callback_url, next_url)
    except ClientError as exc:
        return _failed("The login could not start", exc.message, 502)
    request.session[SESSION_KEY] = record
    return _see_other(target)


#: GET: a page with a "Log in" button; POST (Django's CSRF check first): start the user's login to
#: ``server`` and redirect to its authorization server.
login: Callable[..., Any] = csrf_protect(_login)


def callback(request: Any) -> Any:
    """GET: the authorization server's redirect; finish the login and go on to ``next``."""
    user = _user(request, ("GET", "HEAD"))
    if not isinstance(user, str):
        return user
    record = request.session.get(SESSION_KEY)
    redirect_url = request.build_absolute_uri()
    if Logins.answers(record, redirect_url):
        request.session.pop(SESSION_KEY, None)  # used once, whatever comes of it
    try:
        target = get_logins().finish(user, record, redirect_url)
    except ClientError as exc:
        return _failed("The login did not complete", exc.message, 400)
    return _see_other(target)


def _logout(request: Any, server: str) -> Any:
    user = _user(request, ("POST",))
    if not isinstance(user, str):
        return user
    logins = get_logins()
    logins.logout(user, _known(logins, server))
    return _see_other(safe_next(request.POST.get("next") or request.GET.get("next")))


#: POST: forget the user's tokens for ``server`` (Django's CSRF check first), then 303 to ``next``.
logout: Callable[..., Any] = csrf_protect(_logout)


def status(request: Any) -> Any:
    """GET: ``{server: logged in}`` for the user."""
    user = _user(request, ("GET", "HEAD"))
    if not isinstance(user, str):
        return user
    return _headers(JsonResponse(get_logins().status(user)))
