"""Logging a web app's users in to protected MCP servers: the Flask login blueprint, and the framework-neutral Logins.

Flask's test client plays the user's browser on the app; the authorization
server is tests/oauth_peer.py on 127.0.0.1, which grants at once. The same
flow in headless Chromium is in test_web_browser.py, and the Django views are
in test_web_django.py.
"""

from __future__ import annotations

import re
from typing import Any, Iterator

import pytest
import requests

import mcp_input_sync as mis
from mcp_input_sync.oauth import MemoryStore
from mcp_input_sync.web.logins import Logins, safe_next

from .oauth_peer import OAuthPeer

flask = pytest.importorskip("flask")

from mcp_input_sync.web.flask import login_blueprint  # noqa: E402


@pytest.fixture
def peer() -> Iterator[OAuthPeer]:
    server = OAuthPeer()
    yield server
    server.close()


def make_app(logins: Logins) -> Any:
    app = flask.Flask(__name__)
    app.secret_key = "test-secret"
    app.config["TESTING"] = True
    app.register_blueprint(login_blueprint(logins, lambda: flask.session.get("user")), url_prefix="/mcp-login")

    @app.get("/page")
    def page() -> str:
        from mcp_input_sync.web.flask import csrf_field

        return f'<form method="post" action="/mcp-login/notes/logout">{csrf_field()}</form>'

    return app


def signed_in(app: Any, user: str) -> Any:
    browser = app.test_client()
    with browser.session_transaction() as session:
        session["user"] = user
    return browser


def start(browser: Any, path: str) -> Any:
    """The user opens a login view (a page with a button) and presses the button: the POST that starts the login."""
    page = browser.get(path)
    assert page.status_code == 200, page.status_code
    fields = dict(re.findall(r'name="([^"]+)" value="([^"]*)"', page.get_data(as_text=True)))
    action = re.search(r'action="([^"]+)"', page.get_data(as_text=True))
    assert action is not None
    return browser.post(action.group(1), data=fields)


def authorize(location: str) -> str:
    """The authorization server grants at once; the path and query the browser comes back to."""
    back = requests.get(location, allow_redirects=False, timeout=10).headers["Location"]
    assert back.startswith("http://localhost/mcp-login/callback?")
    return back[len("http://localhost"):]


def test_safe_next_keeps_only_paths_of_this_site() -> None:
    assert safe_next("/inputs/?a=1") == "/inputs/?a=1"
    for bad in ("//evil.example/", "/\\evil.example", "https://evil.example/", "javascript:alert(1)", "", None, 3, "/a\nb"):
        assert safe_next(bad) == "/"


def test_logins_refuse_what_they_do_not_own() -> None:
    with pytest.raises(ValueError):
        Logins(MemoryStore(), {})
    with pytest.raises(TypeError):
        Logins(MemoryStore(), {"a": "https://a.example/mcp"}, consent=None)
    logins = Logins(MemoryStore(), {"a": "https://a.example/mcp"})
    with pytest.raises(mis.ClientError) as caught:
        logins.finish("alice", {"user": "bob", "server": "a", "pending": {}}, "https://app/cb?code=x")
    assert caught.value.check == "pending"
    assert "MemoryStore" in repr(logins) and "a.example" not in repr(logins)


def test_one_users_login_in_progress_never_shares_a_key_with_anothers(peer: OAuthPeer) -> None:
    # issue 31: the key was "pending-login\n<user>\n<name>", so user "a" on server "b\nnotes" and user "a\nb"
    # on server "notes" shared one; the second start replaced the first's login, which then failed
    logins = Logins(MemoryStore(), {"notes": peer.url, "b\nnotes": peer.url})
    try:
        first = logins.start("a", "b\nnotes", "http://127.0.0.1:9/cb")
        second = logins.start("a\nb", "notes", "http://127.0.0.1:9/cb")
        for user, (location, record) in (("a", first), ("a\nb", second)):
            back = requests.get(location, allow_redirects=False, timeout=10).headers["Location"]
            assert logins.finish(user, record, back) == "/"
        assert logins.status("a") == {"notes": True, "b\nnotes": True}  # one server URL under two names
        assert logins.status("a\nb") == {"notes": True, "b\nnotes": True}
    finally:
        logins.close()


def test_a_user_logs_in_through_the_flask_blueprint(peer: OAuthPeer) -> None:
    logins = Logins(MemoryStore(), {"notes": peer.url})
    app = make_app(logins)
    alice = signed_in(app, "alice")
    started = start(alice, "/mcp-login/notes/login?next=/page")
    assert started.status_code == 303 and started.headers["Location"].startswith(peer.origin + "/authorize?")
    done = alice.get(authorize(started.headers["Location"]))
    assert done.status_code == 303 and done.headers["Location"] == "/page"
    assert alice.get("/mcp-login/status.json").get_json() == {"notes": True}
    with logins.connect("alice", "notes", handler=mis.InputHandler(), protocol="legacy") as client:
        assert client.call_tool("whoami", {})["content"][0]["text"] == "mcp offline_access"
    # a second user: a login of their own, on the app's one registration
    bob = signed_in(app, "bob")
    assert bob.get("/mcp-login/status.json").get_json() == {"notes": False}
    bob.get(authorize(start(bob, "/mcp-login/notes/login").headers["Location"]))
    assert peer.counts["register"] == 1 and peer.counts["authorize"] == 2
    # logout needs the page's CSRF token
    assert alice.post("/mcp-login/notes/logout").status_code == 400
    token = re.search(r'value="([^"]+)"', alice.get("/page").get_data(as_text=True))
    assert token is not None
    out = alice.post("/mcp-login/notes/logout?next=/page", data={"_mis_csrf": token.group(1)})
    assert out.status_code == 303 and out.headers["Location"] == "/page"
    assert alice.get("/mcp-login/status.json").get_json() == {"notes": False}
    assert bob.get("/mcp-login/status.json").get_json() == {"notes": True}


def test_the_flask_login_views_refuse_what_they_should(peer: OAuthPeer) -> None:
    app = make_app(Logins(MemoryStore(), {"notes": peer.url}))
    assert app.test_client().get("/mcp-login/notes/login").status_code == 403
    alice = signed_in(app, "alice")
    assert alice.get("/mcp-login/elsewhere/login").status_code == 404
    back = authorize(start(alice, "/mcp-login/notes/login?next=https://evil.example/").headers["Location"])
    assert signed_in(app, "bob").get(back).status_code == 400
    assert alice.get(back).headers["Location"] == "/"
    peer.state_mode = "wrong"
    failed = alice.get(authorize(start(alice, "/mcp-login/notes/login").headers["Location"]))
    assert failed.status_code == 400 and "state" in failed.get_data(as_text=True)
    peer.state_mode = "echo"
    denied = authorize(start(alice, "/mcp-login/notes/login").headers["Location"]).split("?")[0] + "?error=access_denied"
    page = alice.get(denied)
    assert page.status_code == 400


def test_an_authorization_server_that_cannot_be_reached_is_a_502_page() -> None:
    app = make_app(Logins(MemoryStore(), {"notes": "http://127.0.0.1:9/mcp"}, timeout=2.0))
    page = start(signed_in(app, "alice"), "/mcp-login/notes/login")
    assert page.status_code == 502 and "The login could not start" in page.get_data(as_text=True)
