"""``OAuth``: the object a host passes to ``connect_http(auth=...)``.

It keeps one record per server (in a :mod:`token store <.stores>`), hands
the HTTP transport the ``Authorization`` header of each request, and, when
the server answers 401 or 403, decides what to do: use a token another
thread just got, refresh, log in again, or ask for more scopes (step-up).
The transport retries the request after each successful step, at most
three times per request.

Locks: the store's lock of a server's record is held only while a refresh
or a login for it runs, never while an MCP request or a stream is open;
every thread that needs a fresh token at the same moment waits for the one
refresh and uses its result.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Mapping, Optional, Sequence, Union

from .._protocol.oauth import BearerChallenge, OAuthRefused, bearer_challenge, scope_list
from .._protocol.oauth_flow import AuthorizationRequest, Tokens, step_up_scopes
from ..errors import ClientError
from . import flow
from ._fetch import Fetcher
from .consent import Consent
from .stores import MemoryStore, TokenStore, record_key

__all__ = ["OAuth"]

RECORD_VERSION = 1


def _clock() -> float:
    return time.time()  # wall-clock: an expiry is kept across processes


def auth_error(exc: OAuthRefused) -> ClientError:
    """The one mapping of a refusal in the flow to the error a host sees."""
    return ClientError("auth", f"Authorization failed: {exc.message}", check=exc.check)


class _Entry:
    """What this process knows of one server's record (a cache of the store's), its tokens read once."""

    __slots__ = ("record", "tokens", "header")

    def __init__(self, record: Optional[dict[str, Any]]) -> None:
        self.record = record
        self.tokens = _tokens(record)
        self.header = None if self.tokens is None else self.tokens.authorization()


def _tokens(record: Optional[Mapping[str, Any]]) -> Optional[Tokens]:
    if record is None or record.get("tokens") is None:
        return None
    try:
        return Tokens.from_dict(record["tokens"])
    except OAuthRefused:
        return None


def _header(record: Optional[Mapping[str, Any]]) -> Optional[str]:
    tokens = _tokens(record)
    return None if tokens is None else tokens.authorization()


class OAuth:
    """OAuth 2.1 for MCP servers, as the MCP authorization specification has it (pass as ``auth=``).

    Args:
        consent: how the user logs in when one is needed: a
            :class:`~mcp_input_sync.oauth.Browser` (scripts, the command line),
            a :class:`~mcp_input_sync.oauth.Headless` (tests, automation), or
            None, where a login that is needed raises ``ClientError(kind="auth",
            check="login")`` and a web app calls :meth:`begin` and :meth:`finish`.
        store: where records are kept (default: a new :class:`~.MemoryStore`).
        account: whose tokens these are (a web app's user id); records of
            different accounts never mix.
        client_name: the name registered with authorization servers.
        client_id, client_secret: pre-registered credentials. With
            ``client_issuer`` they are presented to that authorization server
            only; without it, to whichever one the server names.
        client_metadata_url: an https URL of this client's metadata document,
            used as its client id where the authorization server supports that.
        scopes: the scopes to ask for (default: as the server suggests).
        verify: TLS verification for the authorization exchanges, as ``requests`` takes it.
        timeout: real seconds that one exchange with an authorization server may take.
        refresh_margin: refresh a token this many seconds before it expires.
        lock_timeout: how long a thread waits for another's login or refresh.
    """

    def __init__(
        self,
        *,
        consent: Optional[Consent] = None,
        store: Optional[TokenStore] = None,
        account: str = "",
        client_name: str = "mcp-input-sync",
        client_id: Optional[str] = None,
        client_secret: Optional[str] = None,
        client_issuer: Optional[str] = None,
        client_metadata_url: Optional[str] = None,
        scopes: Optional[Sequence[str]] = None,
        verify: Union[bool, str] = True,
        timeout: float = 30.0,
        refresh_margin: float = 60.0,
        lock_timeout: float = 600.0,
    ) -> None:
        if client_secret is not None and client_id is None:
            raise ValueError("client_secret needs client_id")
        try:
            chosen = None if scopes is None else scope_list(list(scopes))
        except OAuthRefused as exc:
            raise ValueError(exc.message) from None
        self.consent = consent
        self.store: TokenStore = store if store is not None else MemoryStore()
        self.account = account
        self.settings = flow.Settings(client_name, client_id, client_secret, client_issuer, client_metadata_url, chosen)
        self.fetcher = Fetcher(verify=verify, timeout=timeout)
        self.refresh_margin = float(refresh_margin)
        self.lock_timeout = float(lock_timeout)
        self._entries: dict[str, _Entry] = {}
        self._guard = threading.Lock()

    def __repr__(self) -> str:
        return f"OAuth(consent={self.consent!r}, store={self.store!r}, client_name={self.settings.client_name!r})"

    # ------------------------------------------------------------------ the transport's two hooks

    def authorization(self, server_url: str) -> Optional[str]:
        """The ``Authorization`` header for a request to ``server_url``, or None when no token is held.

        A token within ``refresh_margin`` of its expiry is refreshed first
        (one refresh for all threads); a failed refresh sends no header, and
        the server's 401 then leads to a login.
        """
        entry = self._entry(server_url)
        tokens = entry.tokens
        if tokens is None or not tokens.expired(_clock(), self.refresh_margin):
            return entry.header
        if tokens.refresh_token is None:
            return entry.header if not tokens.expired(_clock(), 0.0) else None
        try:
            self._renew(server_url, entry.header, allow_login=False)
        except OAuthRefused:
            return None
        return self._entry(server_url).header

    def challenged(self, server_url: str, status: int, headers: Mapping[str, str], sent: Optional[str]) -> None:
        """The server answered ``status`` (401 or 403) to a request that carried ``sent``; make a retry worthwhile.

        Returns when the request should be sent again with :meth:`authorization`'s
        new header. Raises :class:`OAuthRefused` when it should not.
        """
        challenge = self._challenge(headers)
        if status == 403:
            if challenge is None or not challenge.insufficient_scope:
                raise OAuthRefused("forbidden", "The server forbids this request (HTTP 403) and asks for no other scope.")
            self._step_up(server_url, challenge)
            return
        self._renew(server_url, sent, allow_login=True, challenge=challenge)

    # ------------------------------------------------------------------ the host's API

    def login(self, server_url: str) -> None:
        """Log in to ``server_url`` now (through ``consent``), replacing any tokens held.

        Raises:
            ClientError: ``kind="auth"``, with ``check`` naming the step that failed.
        """
        try:
            challenge = self._probe(server_url)
            with self.store.lock(self._key(server_url), self.lock_timeout):
                self._login(server_url, challenge, self._load(server_url), scopes=None)
        except OAuthRefused as exc:
            raise auth_error(exc) from None
        except TimeoutError as exc:
            raise ClientError("auth", f"Authorization failed: {exc}", check="lock") from None

    def logout(self, server_url: str) -> bool:
        """Forget the tokens and registration held for ``server_url``; True when there were some."""
        key = self._key(server_url)
        had = self.store.load(key) is not None
        self.store.delete(key)
        with self._guard:
            self._entries.pop(key, None)
        return had

    def tokens(self, server_url: str) -> Optional[Tokens]:
        """The tokens held for ``server_url`` (their repr hides them), or None."""
        return self._entry(server_url).tokens

    def begin(self, server_url: str, redirect_uri: str, *, application_type: str = "web") -> dict[str, Any]:
        """Start a login whose redirect comes back to ``redirect_uri`` (a web app's callback view).

        Returns the pending login as JSON-ready data: send the user to its
        ``"url"`` and keep the whole record where only this user's next
        request can read it (the session), then pass it to :meth:`finish`.
        It holds the PKCE verifier and the state; nothing here is stored.

        Raises:
            ClientError: ``kind="auth"`` when discovery or registration fails.
        """
        try:
            challenge = self._probe(server_url)
            stored = self._load(server_url)
            discovery, client = self._prepare(server_url, challenge, stored, redirect_uri, application_type)
            request = flow.start_authorization(discovery, client, redirect_uri, self.settings, challenge.scope if challenge else None)
        except OAuthRefused as exc:
            raise auth_error(exc) from None
        return {
            "url": request.url, "server": server_url, "request": request.to_dict(), "resource": discovery.resource,
            "legacy": discovery.legacy, "metadata": flow.metadata_to_dict(discovery.metadata), "client": client.to_dict(),
        }

    def finish(self, pending: Mapping[str, Any], redirect: str) -> None:
        """Finish :meth:`begin`'s login with the redirect's URL or query string; the tokens are stored.

        Raises:
            ClientError: ``kind="auth"``: the response failed a check (``iss``,
                ``state``), the user refused, or the token endpoint did.
        """
        try:
            if not isinstance(pending, Mapping) or not isinstance(pending.get("server"), str):
                raise OAuthRefused("pending", "The pending authorization is not a record.")
            request = AuthorizationRequest.from_dict(pending.get("request"))
            metadata = flow.metadata_from_dict(pending.get("metadata"))
            client = flow.Client.from_dict(pending.get("client"))
            if client is None or client.issuer != metadata.issuer or request.issuer != metadata.issuer:
                raise OAuthRefused("pending", "The pending authorization is not a record.")
            server_url = pending["server"]
            query = redirect.partition("?")[2] if "://" in redirect else redirect
            tokens = flow.exchange_code(self.fetcher, metadata, client, request, query, _clock())
            with self.store.lock(self._key(server_url), self.lock_timeout):
                discovery = flow.Discovery(request.resource, metadata, None, bool(pending.get("legacy")))
                self._save(server_url, discovery, client, tokens, request.scopes)
        except OAuthRefused as exc:
            raise auth_error(exc) from None
        except TimeoutError as exc:
            raise ClientError("auth", f"Authorization failed: {exc}", check="lock") from None

    def close(self) -> None:
        """Close the pooled connections to authorization servers."""
        self.fetcher.close()

    # ------------------------------------------------------------------ records

    def _key(self, server_url: str) -> str:
        return record_key(server_url, self.account)

    def _load(self, server_url: str) -> Optional[dict[str, Any]]:
        record = self.store.load(self._key(server_url))
        if not isinstance(record, dict) or record.get("v") != RECORD_VERSION or record.get("server") != server_url:
            return None
        return record

    def _entry(self, server_url: str) -> _Entry:
        key = self._key(server_url)
        with self._guard:
            entry = self._entries.get(key)
        if entry is None:
            entry = _Entry(self._load(server_url))
            with self._guard:
                self._entries[key] = entry
        return entry

    def _remember(self, server_url: str, record: Optional[dict[str, Any]]) -> None:
        with self._guard:
            self._entries[self._key(server_url)] = _Entry(record)

    def _save(
        self, server_url: str, discovery: flow.Discovery, client: flow.Client, tokens: Tokens, asked: Optional[Sequence[str]]
    ) -> None:
        record = {
            "v": RECORD_VERSION, "server": server_url, "resource": discovery.resource, "issuer": discovery.metadata.issuer,
            "legacy": discovery.legacy, "metadata": flow.metadata_to_dict(discovery.metadata), "client": client.to_dict(),
            "tokens": tokens.to_dict(), "scopes": list(tokens.scopes or asked or ()) or None,
        }
        self.store.save(self._key(server_url), record)
        self._remember(server_url, record)

    # ------------------------------------------------------------------ steps

    @staticmethod
    def _challenge(headers: Mapping[str, str]) -> Optional[BearerChallenge]:
        value = None
        for name, text in headers.items():
            if name.lower() == "www-authenticate":
                value = text
        return None if value is None else bearer_challenge(value)

    def _probe(self, server_url: str) -> Optional[BearerChallenge]:
        """The server's challenge to a request without a token (None when it sets none)."""
        answer = self.fetcher.exchange(
            "POST", server_url,
            headers={"Content-Type": "application/json", "Accept": "application/json, text/event-stream"},
            data=b'{"jsonrpc":"2.0","id":0,"method":"ping"}',
        )
        if answer.status not in (401, 403):
            return None
        return self._challenge(answer.headers)

    def _renew(self, server_url: str, sent: Optional[str], *, allow_login: bool, challenge: Optional[BearerChallenge] = None) -> None:
        """Under the record's lock: use a newer token, else refresh, else (when allowed) log in."""
        try:
            with self.store.lock(self._key(server_url), self.lock_timeout):
                record = self._load(server_url)
                self._remember(server_url, record)
                held = _header(record)
                tokens = _tokens(record)
                if tokens is not None and held != sent and not tokens.expired(_clock(), 0.0):
                    return  # another thread (or process) already renewed it
                if record is not None and tokens is not None and tokens.refresh_token is not None:
                    try:
                        self._refresh(server_url, record, tokens)
                        return
                    except OAuthRefused:
                        if not allow_login:
                            raise
                if not allow_login:
                    raise OAuthRefused("refresh", "No refresh token is held.")
                self._login(server_url, challenge, record, scopes=None)
        except TimeoutError as exc:
            raise OAuthRefused("lock", str(exc)) from None

    def _refresh(self, server_url: str, record: dict[str, Any], tokens: Tokens) -> None:
        metadata = flow.metadata_from_dict(record.get("metadata"))
        client = flow.Client.from_dict(record.get("client"))
        resource = record.get("resource")
        if client is None or client.issuer != metadata.issuer or not isinstance(resource, str):
            raise OAuthRefused("store", "The stored login cannot be refreshed.")
        fresh = flow.refresh(self.fetcher, metadata, client, tokens, resource, _clock())
        discovery = flow.Discovery(resource, metadata, None, bool(record.get("legacy")))
        self._save(server_url, discovery, client, fresh, record.get("scopes"))

    def _step_up(self, server_url: str, challenge: BearerChallenge) -> None:
        try:
            with self.store.lock(self._key(server_url), self.lock_timeout):
                record = self._load(server_url)
                held = record.get("scopes") if record is not None else None
                scopes = step_up_scopes(held if isinstance(held, list) else None, challenge.scope)
                self._login(server_url, challenge, record, scopes=scopes)
        except TimeoutError as exc:
            raise OAuthRefused("lock", str(exc)) from None

    def _prepare(
        self, server_url: str, challenge: Optional[BearerChallenge], stored: Optional[dict[str, Any]], redirect_uri: str, application_type: str
    ) -> tuple[flow.Discovery, flow.Client]:
        discovery = flow.discover(self.fetcher, server_url, challenge)
        issuer = discovery.metadata.issuer
        known = flow.Client.from_dict(stored.get("client")) if stored is not None else None
        shared_key = f"client\n{issuer}\n{application_type}"
        if known is None or known.issuer != issuer:
            # a registration this app made at the issuer for another server or another user
            known = flow.Client.from_dict(self.store.load(shared_key))
        client = flow.register(self.fetcher, self.settings, discovery.metadata, redirect_uri, application_type, known)
        if client.source == "dynamic" and client != known:
            self.store.save(shared_key, client.to_dict())
        return discovery, client

    def _login(self, server_url: str, challenge: Optional[BearerChallenge], stored: Optional[dict[str, Any]], scopes: Optional[Sequence[str]]) -> None:
        """The whole authorization code flow through ``consent`` (the caller holds the record's lock)."""
        consent = self.consent
        if consent is None:
            raise OAuthRefused("login", "The server needs a login and this client has no way to ask for one (OAuth(consent=None)).")
        round_ = consent.start()
        try:
            discovery, client = self._prepare(server_url, challenge, stored, round_.redirect_uri, consent.application_type)
            request = flow.start_authorization(
                discovery, client, round_.redirect_uri, self.settings, challenge.scope if challenge else None, scopes
            )
            query = round_.wait(request.url, self.fetcher)
            tokens = flow.exchange_code(self.fetcher, discovery.metadata, client, request, query, _clock())
        finally:
            round_.close()
        self._save(server_url, discovery, client, tokens, request.scopes)
