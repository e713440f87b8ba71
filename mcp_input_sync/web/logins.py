"""Logging a web app's users in to protected MCP servers: the framework-neutral part of the login views.

A web app names its servers once (``{"notes": "https://notes.example/mcp"}``)
and keeps every user's tokens in one shared store, under the user's id::

    from mcp_input_sync.oauth import FileStore
    from mcp_input_sync.web.logins import Logins

    logins = Logins(FileStore("/var/lib/myapp/mcp-tokens"), {"notes": "https://notes.example/mcp"})

The login views (:mod:`mcp_input_sync.web.flask` ``login_blueprint``, and
``mcp_input_sync.web.django.login_urls``) show a page with a "Log in"
button on a GET (:func:`login_page`) and, on its POST (CSRF-checked), call
:meth:`Logins.start` to send the user to the authorization server, keeping
what :meth:`~Logins.start` returns in the user's session, and
:meth:`Logins.finish` in the callback. The login in progress (its PKCE
verifier) stays in the token store; the session holds a random ticket that
names it, the login's ``state``, the server's name and ``next``.
Elsewhere the app calls a server for a user with :meth:`Logins.connect`,
which raises ``ClientError(kind="auth", check="login")`` when that user has
not logged in there (send them to the login view).
"""

from __future__ import annotations

import hmac
import html
import secrets
from typing import Any, Mapping, Optional
from urllib.parse import urlsplit

from .._protocol.oauth import OAuthRefused
from .._protocol.oauth_flow import parse_redirect_query
from ..client import Client, connect_http
from ..errors import ClientError
from ..oauth import OAuth, TokenStore, new_session
from ..oauth.stores import store_key

__all__ = ["Logins", "login_page", "safe_next"]

#: The session key the login views keep a login in progress under.
SESSION_KEY = "mcp_input_sync_login"


def pending_key(user: str, name: str) -> str:
    """The store key of ``user``'s login in progress to server ``name`` (one at a time per user and server).

    A typed key (``["pending-login", user, name]``), so that no user id and
    no server name can spell another user's key, a token record's or an
    authorization server's (:mod:`mcp_input_sync.oauth.stores`). A login in
    progress while the app is upgraded from a version that spelt it
    otherwise is not found: the user presses "Log in" again.
    """
    return store_key("pending-login", user, name)


def login_page(name: str, action: str, hidden: Mapping[str, str], next_url: str) -> str:
    """The page a GET of a login view shows: a button that POSTs (with the CSRF fields in ``hidden``) to start the login.

    A login starts on a POST only, so a page of another site cannot start
    (and so cancel or replace) a user's login.
    """
    fields = "".join(
        f'<input type="hidden" name="{html.escape(key, quote=True)}" value="{html.escape(value, quote=True)}">'
        for key, value in {**hidden, "next": next_url}.items()
    )
    title = f"Log in to {html.escape(name)}"
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{title}</title></head><body><h1>{title}</h1>"
        f"<p>This app calls the server {html.escape(name)} for you. Its authorization server asks you to log in and to allow it.</p>"
        f'<form method="post" action="{html.escape(action, quote=True)}">{fields}<button type="submit">Log in</button></form>'
        "</body></html>"
    )


def safe_next(value: object, default: str = "/") -> str:
    """``value`` when it is a path on this site (``/...``), else ``default``: no open redirect."""
    if not isinstance(value, str) or not value.startswith("/") or value.startswith(("//", "/\\")):
        return default
    parts = urlsplit(value)
    if parts.scheme or parts.netloc or any(ord(c) < 0x20 for c in value):
        return default
    return value


class Logins:
    """A web app's protected MCP servers, by name, and its users' logins to them.

    Args:
        store: the token store every worker shares (a ``FileStore`` on a
            shared disk, a ``RedisStore``, or your own).
        servers: name -> MCP endpoint URL. Names appear in the login URLs.
        callback_url: the absolute URL of the login callback view, as the
            authorization servers must see it. Set it in production: otherwise
            the views build it from the request's Host header.
        **oauth_options: passed to every :class:`~mcp_input_sync.oauth.OAuth`
            (``client_name``, ``client_id``, ``scopes``, ``verify``, ...).
    """

    def __init__(self, store: TokenStore, servers: Mapping[str, str], *, callback_url: Optional[str] = None, **oauth_options: Any) -> None:
        if not servers or not all(isinstance(k, str) and k and isinstance(v, str) for k, v in servers.items()):
            raise ValueError("servers must map names to MCP endpoint URLs")
        for reserved in ("consent", "store", "account", "session"):
            if reserved in oauth_options:
                raise TypeError(f"Logins sets {reserved} itself")
        if callback_url is not None and not callback_url.startswith(("https://", "http://")):
            raise ValueError("callback_url must be the absolute URL of the login callback")
        self.store = store
        self.servers = dict(servers)
        #: The absolute URL of the callback view, when the app names it (else the views build it from the request).
        self.callback_url = callback_url
        self.options = oauth_options
        self._session = new_session()  # one connection pool to the authorization servers, for every user

    def __repr__(self) -> str:
        return f"Logins(servers={sorted(self.servers)!r}, store={self.store!r})"

    def close(self) -> None:
        """Close the connections to authorization servers."""
        self._session.close()

    def oauth(self, user: str) -> OAuth:
        """The OAuth of ``user``: no consent (a needed login raises), tokens kept under the user's id."""
        return OAuth(store=self.store, account=str(user), session=self._session, **self.options)

    @staticmethod
    def answers(record: Any, redirect_url: str) -> bool:
        """Whether ``redirect_url`` carries the state of the login in ``record`` (compared in constant time).

        The callback views take the login out of the session only then, so a
        stray or forged request to the callback does not cancel a login in progress.
        """
        expected = record.get("state") if isinstance(record, Mapping) else None
        query = redirect_url.partition("?")[2] if "://" in redirect_url else redirect_url
        try:
            sent = parse_redirect_query(query).get("state")
        except OAuthRefused:
            return False
        return isinstance(expected, str) and isinstance(sent, str) and hmac.compare_digest(sent.encode(), expected.encode())

    def url(self, name: str) -> str:
        """The endpoint of server ``name``; KeyError for a name the app did not list."""
        return self.servers[name]

    def start(self, user: str, name: str, callback_url: str, next_url: Optional[str] = None) -> tuple[str, dict[str, Any]]:
        """Begin ``user``'s login to server ``name``: the URL to redirect to, and the record for the session.

        The login in progress, with its PKCE verifier, is kept in the store
        (one per user and server: a new start replaces an older one); the
        record for the session names it with a random ticket and holds its
        ``state``, the server's name and ``next``, nothing secret.

        Raises:
            KeyError: an unknown server name.
            ClientError: ``kind="auth"``: discovery or registration failed.
        """
        url = self.url(name)
        pending = self.oauth(user).begin(url, self.callback_url or callback_url, application_type="web")
        ticket = secrets.token_urlsafe(32)
        self.store.save(pending_key(str(user), name), {"ticket": ticket, "pending": pending})
        state = pending["request"]["state"]
        record = {"user": str(user), "server": name, "next": safe_next(next_url), "ticket": ticket, "state": state}
        return str(pending["url"]), record

    def finish(self, user: str, record: Any, redirect_url: str) -> str:
        """Finish the login ``record`` (from the session) with the URL the user came back on; the page to go to next.

        The login kept in the store is used once: it is forgotten when the
        redirect carries its ``state`` (whatever comes of it), and kept
        otherwise, so a forged callback cancels nothing.

        Raises:
            ClientError: ``kind="auth"``: no login in progress for this user
                (``check="pending"``), or the response failed a check, or the
                user or the authorization server refused.
        """
        nothing = ClientError("auth", "No login to an MCP server is in progress for this user.", check="pending")
        if not isinstance(record, Mapping) or record.get("user") != str(user) or record.get("server") not in self.servers:
            raise nothing
        ticket = record.get("ticket")
        key = pending_key(str(user), str(record["server"]))
        kept = self.store.load(key)
        if not isinstance(ticket, str) or not isinstance(kept, dict) or not isinstance(kept.get("ticket"), str):
            raise nothing
        if not hmac.compare_digest(kept["ticket"].encode(), ticket.encode()):
            raise nothing
        if self.answers(record, redirect_url):
            self.store.delete(key)
        self.oauth(user).finish(kept.get("pending") or {}, redirect_url)
        return safe_next(record.get("next"))

    def logout(self, user: str, name: str) -> bool:
        """Forget ``user``'s tokens for server ``name``; True when there were some."""
        return self.oauth(user).logout(self.url(name))

    def status(self, user: str) -> dict[str, bool]:
        """Server name -> whether ``user`` holds tokens for it."""
        return {name: self.oauth(user).tokens(url) is not None for name, url in self.servers.items()}

    def connect(self, user: str, name: str, **options: Any) -> Client:
        """An open client to server ``name`` on ``user``'s tokens (``handler=`` and the other options of ``connect_http``).

        Raises:
            ClientError: ``kind="auth", check="login"`` when the user must log in first.
        """
        return connect_http(self.url(name), auth=self.oauth(user), **options)
