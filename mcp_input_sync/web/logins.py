"""Logging a web app's users in to protected MCP servers: the framework-neutral part of the login views.

A web app names its servers once (``{"notes": "https://notes.example/mcp"}``)
and keeps every user's tokens in one shared store, under the user's id::

    from mcp_input_sync.oauth import FileStore
    from mcp_input_sync.web.logins import Logins

    logins = Logins(FileStore("/var/lib/myapp/mcp-tokens"), {"notes": "https://notes.example/mcp"})

The login views (:mod:`mcp_input_sync.web.flask` ``login_blueprint``, and
``mcp_input_sync.web.django.login_urls``) call :meth:`Logins.start` to send
the user to the authorization server, keeping what :meth:`~Logins.start`
returns in the user's session, and :meth:`Logins.finish` in the callback.
Elsewhere the app calls a server for a user with :meth:`Logins.connect`,
which raises ``ClientError(kind="auth", check="login")`` when that user has
not logged in there (send them to the login view).
"""

from __future__ import annotations

import hmac
from typing import Any, Mapping, Optional
from urllib.parse import urlsplit

from .._protocol.oauth import OAuthRefused
from .._protocol.oauth_flow import parse_redirect_query
from ..client import Client, connect_http
from ..errors import ClientError
from ..oauth import OAuth, TokenStore, new_session

__all__ = ["Logins", "safe_next"]

#: The session key the login views keep a login in progress under.
SESSION_KEY = "mcp_input_sync_login"


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
        request = record.get("pending", {}).get("request") if isinstance(record, Mapping) else None
        expected = request.get("state") if isinstance(request, Mapping) else None
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

        Raises:
            KeyError: an unknown server name.
            ClientError: ``kind="auth"``: discovery or registration failed.
        """
        url = self.url(name)
        pending = self.oauth(user).begin(url, self.callback_url or callback_url, application_type="web")
        record = {"user": str(user), "server": name, "next": safe_next(next_url), "pending": pending}
        return str(pending["url"]), record

    def finish(self, user: str, record: Any, redirect_url: str) -> str:
        """Finish the login ``record`` (from the session) with the URL the user came back on; the page to go to next.

        Raises:
            ClientError: ``kind="auth"``: no login in progress for this user
                (``check="pending"``), or the response failed a check, or the
                user or the authorization server refused.
        """
        if not isinstance(record, Mapping) or record.get("user") != str(user) or record.get("server") not in self.servers:
            raise ClientError("auth", "No login to an MCP server is in progress for this user.", check="pending")
        self.oauth(user).finish(record.get("pending") or {}, redirect_url)
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
