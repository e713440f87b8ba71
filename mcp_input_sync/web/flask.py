"""A Flask blueprint where people answer their pending inputs.

::

    from flask import Flask, session
    from mcp_input_sync.web import PendingInputBroker, WebHandler
    from mcp_input_sync.web.flask import blueprint

    broker = PendingInputBroker()
    app = Flask(__name__)
    app.secret_key = "..."                       # the CSRF token lives in the session
    app.register_blueprint(blueprint(broker, lambda: session.get("user_id")), url_prefix="/inputs")
    # clients: mis.connect_stdio(..., handler=WebHandler(broker)), calls with assigns={"user": user_id}

Routes (relative to the blueprint's prefix):

- ``GET /``: the current user's pending inputs (HTML); ``GET /pending.json``
  the same as JSON;
- ``GET /<id>``: one input as an HTML form;
- ``POST /<id>``: the answer. On success: 303 to the list (an input of a
  deferred call: to the call's page); on errors: 400 with the form shown
  again and the errors per field;
- ``GET /calls/<call_id>``: a deferred modern-era call
  (:meth:`~mcp_input_sync.web.PendingInputBroker.start_call`): its result,
  its error or its next inputs; ``GET /calls/<call_id>.json`` the same as
  JSON.

``user_loader()`` returns the signed-in user's id (compared with
``str(assigns["user"])``), or None: then every route answers 403. An input
of another user, an unknown id and an input already answered all answer
404.

:func:`login_blueprint` logs the signed-in user in to the app's protected
MCP servers (docs/oauth-flask.md).

CSRF: by default every POST must carry the per-session token the form
holds (field ``_mis_csrf``; a mismatch answers 400). A host protecting every
POST with Flask-WTF's ``CSRFProtect`` passes ``csrf_token=generate_csrf``
(from ``flask_wtf.csrf``) instead: the form then holds Flask-WTF's own
``csrf_token`` field, which Flask-WTF checks.
"""

from __future__ import annotations

import html
import secrets
from typing import Any, Callable, Optional

from flask import Blueprint, Response, abort, jsonify, redirect, request, session, url_for
from werkzeug.wrappers import Response as BaseResponse

from ..errors import ClientError
from .deferred import Store
from . import forms
from .forms import answer_submission, call_json, render_call, render_list, render_notice, render_page, submitted_values
from .logins import SESSION_KEY, Logins, login_page, safe_next
from .pending import InputNotFound

__all__ = ["CSRF_FIELD", "blueprint", "csrf_field", "login_blueprint"]

#: The hidden field (and session key) of the blueprint's own CSRF token.
CSRF_FIELD = "_mis_csrf"

_HEADERS = {
    "Cache-Control": "no-store",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
}


def _html(body: str, status: int = 200) -> Response:
    response = Response(body, status=status, mimetype="text/html")
    response.headers.update(_HEADERS)
    return response


def _session_token() -> str:
    token = session.get(CSRF_FIELD)
    if not isinstance(token, str) or len(token) < 32:
        token = secrets.token_urlsafe(32)
        session[CSRF_FIELD] = token
    return token


def _signed_in(user_loader: Callable[[], Optional[Any]]) -> str:
    """The signed-in user's id, as a string; abort with 403 when there is none."""
    user = user_loader()
    if user is None:
        abort(403)
    return str(user)


def _check_session_token() -> None:
    """Abort with 400 unless the POST carries the session's own CSRF token."""
    sent = request.form.get(CSRF_FIELD, "")
    expected = session.get(CSRF_FIELD)
    if not isinstance(expected, str) or not secrets.compare_digest(sent.encode(), expected.encode()):
        abort(400, description="CSRF token missing or invalid")


def csrf_field() -> str:
    """The hidden input carrying the blueprints' own CSRF token, for a logout form of the host's page."""
    return f'<input type="hidden" name="{CSRF_FIELD}" value="{html.escape(_session_token())}">'


def blueprint(
    broker: Store,
    user_loader: Callable[[], Optional[Any]],
    *,
    name: str = "mcp_input",
    csrf_token: Optional[Callable[[], str]] = None,
) -> Blueprint:
    """A blueprint serving ``broker``'s pending inputs to their owners.

    Args:
        broker: the broker the :class:`~mcp_input_sync.web.WebHandler` parks inputs in.
        user_loader: returns the signed-in user's id, or None.
        name: the blueprint's name (for ``url_for``: ``"<name>.index"``,
            ``"<name>.show"``, ``"<name>.call"``, ``"<name>.call_json"``).
        csrf_token: the host's CSRF token function (Flask-WTF's
            ``generate_csrf``); None uses the blueprint's own token.
    """
    bp = Blueprint(name, __name__)

    def current_user() -> str:
        return _signed_in(user_loader)

    def hidden() -> dict[str, str]:
        if csrf_token is not None:
            return {"csrf_token": csrf_token()}
        return {CSRF_FIELD: _session_token()}

    @bp.get("/")
    def index() -> Response:
        user = current_user()
        items = [(p, url_for(".show", input_id=p.id)) for p in broker.pending(user)]
        return _html(render_list(items))

    @bp.get("/pending.json")
    def pending_json() -> Response:
        user = current_user()
        response = jsonify(forms.pending_json([(p, url_for(".show", input_id=p.id)) for p in broker.pending(user)]))
        response.headers.update(_HEADERS)
        return response

    @bp.route("/<input_id>", methods=["GET", "POST"])
    def show(input_id: str) -> BaseResponse:
        user = current_user()
        try:
            pending = broker.get(input_id, user)
        except InputNotFound:
            abort(404)
        action = url_for(".show", input_id=input_id)
        back = url_for(".index")
        if request.method == "GET":
            return _html(render_page(pending, action, hidden(), back=back))
        if csrf_token is None:
            _check_session_token()
        try:
            errors = answer_submission(broker, pending, user, request.form)
        except InputNotFound:
            abort(404)
        if errors:
            values = submitted_values(pending, request.form)
            return _html(render_page(pending, action, hidden(), values=values, errors=errors, back=back), 400)
        if pending.call_id is not None:
            back = url_for(".call", call_id=pending.call_id)
        response = redirect(back, 303)
        response.headers.update(_HEADERS)
        return response

    def call_state(call_id: str) -> Any:
        user = current_user()
        try:
            state = broker.result(call_id, user)
        except InputNotFound:
            abort(404)
        return state, [(p, url_for(".show", input_id=p.id)) for p in state.inputs]

    @bp.get("/calls/<call_id>.json")
    def call_json_view(call_id: str) -> Response:
        state, items = call_state(call_id)
        response = jsonify(call_json(state, items))
        response.headers.update(_HEADERS)
        return response

    @bp.get("/calls/<call_id>")
    def call(call_id: str) -> Response:
        state, items = call_state(call_id)
        return _html(render_call(state, items))

    return bp


def login_blueprint(
    logins: Logins,
    user_loader: Callable[[], Optional[Any]],
    *,
    name: str = "mcp_login",
    csrf_token: Optional[Callable[[], str]] = None,
) -> Blueprint:
    """A blueprint that logs the signed-in user in to the app's protected MCP servers (OAuth, ``application_type`` web).

    Routes (relative to the blueprint's prefix; ``<server>`` is a name of ``logins.servers``):

    - ``GET /<server>/login?next=/page``: a page with a "Log in" button;
    - ``POST /<server>/login``: (CSRF token as in :func:`blueprint`) start the
      login and redirect to the authorization server; the login in progress
      is kept in the store, its ticket and ``state`` in the session;
    - ``GET /callback``: where the authorization server sends the user back
      (register this URL's absolute form, as ``url_for(name + ".callback",
      _external=True)`` gives it); on success 303 to ``next`` (a path on
      this site only), else 400 with what failed;
    - ``POST /<server>/logout``: forget the user's tokens (CSRF token as in
      :func:`blueprint`), then 303 to ``next``;
    - ``GET /status.json``: ``{server: logged in}`` for the user.

    No signed-in user: 403. An unknown server name: 404.
    """
    bp = Blueprint(name, __name__)

    def current_user() -> str:
        return _signed_in(user_loader)

    def known(server: str) -> str:
        if server not in logins.servers:
            abort(404)
        return server

    def see_other(target: str) -> BaseResponse:
        response = redirect(target, 303)
        response.headers.update(_HEADERS)
        return response

    @bp.route("/<server>/login", methods=["GET", "POST"])
    def login(server: str) -> BaseResponse:
        user = current_user()
        known(server)
        next_url = safe_next(request.values.get("next"))
        if request.method == "GET":  # a page with a button: a GET from another site starts nothing
            hidden = {"csrf_token": csrf_token()} if csrf_token is not None else {CSRF_FIELD: _session_token()}
            return _html(login_page(server, url_for(".login", server=server), hidden, next_url))
        if csrf_token is None:
            _check_session_token()
        try:
            target, record = logins.start(user, server, url_for(".callback", _external=True), next_url)
        except ClientError as exc:
            return _html(render_notice("The login could not start", exc.message), 502)
        session[SESSION_KEY] = record
        return see_other(target)

    @bp.get("/callback")
    def callback() -> BaseResponse:
        user = current_user()
        record = session.get(SESSION_KEY)
        if Logins.answers(record, request.url):
            session.pop(SESSION_KEY, None)  # used once, whatever comes of it
        try:
            target = logins.finish(user, record, request.url)
        except ClientError as exc:
            return _html(render_notice("The login did not complete", exc.message), 400)
        return see_other(target)

    @bp.post("/<server>/logout")
    def logout(server: str) -> BaseResponse:
        user = current_user()
        if csrf_token is None:
            _check_session_token()
        logins.logout(user, known(server))
        return see_other(safe_next(request.form.get("next") or request.args.get("next")))

    @bp.get("/status.json")
    def status() -> Response:
        response = jsonify(logins.status(current_user()))
        response.headers.update(_HEADERS)
        return response

    return bp
