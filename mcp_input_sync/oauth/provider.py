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

import contextlib
import logging
import threading
import time
from typing import TYPE_CHECKING, Any, Iterator, Mapping, Optional, Sequence, Union

from .._protocol.dpop import ALGORITHM as DPOP_ALGORITHM
from .._protocol.dpop import wants_nonce
from .._protocol.oauth import BearerChallenge, OAuthRefused, bearer_challenge, scope_list
from .._protocol.oauth_flow import OFFLINE_ACCESS, AuthorizationRequest, Tokens, step_up_scopes
from ..errors import ClientError
from . import flow
from ._fetch import Fetcher
from .consent import Consent
from ._dpop import DPoPSession
from ._jwt import EXTRA, DPoPKey, signing_modules
from .grants import Grant
from .stores import MemoryStore, TokenStore, issuer_key, legacy_record_key, record_key

if TYPE_CHECKING:
    import requests

__all__ = ["OAuth"]

RECORD_VERSION = 1
#: Seconds before a refresh that failed for a reason other than a refusal is tried again.
REFRESH_BACKOFF = 30.0
#: The longest a request waits for the record's lock to refresh before it is sent (another
#: thread may hold it for a whole login); it then goes with the token it has.
HEADER_LOCK_WAIT = 2.0

log = logging.getLogger("mcp_input_sync")


def _clock() -> float:
    return time.time()  # wall-clock: an expiry is kept across processes


def auth_error(exc: OAuthRefused) -> ClientError:
    """The one mapping of a refusal in the flow to the error a host sees."""
    return ClientError("auth", f"Authorization failed: {exc.message}", check=exc.check)


@contextlib.contextmanager
def _guarded() -> Iterator[None]:
    """Whatever a store or the flow raises becomes an :class:`OAuthRefused` (``lock`` or ``store``); its text is not kept."""
    try:
        yield
    except OAuthRefused:
        raise
    except TimeoutError:
        raise OAuthRefused("lock", "Another login or refresh for this server is still running.") from None
    except Exception as exc:  # noqa: BLE001 - a host's store may raise anything
        raise OAuthRefused("store", f"The token store failed ({type(exc).__name__}).") from None


class _Entry:
    """What this process knows of one server's record (a cache of the store's), its tokens read once."""

    __slots__ = ("record", "tokens", "header", "retry_after")

    def __init__(self, record: Optional[dict[str, Any]]) -> None:
        self.record = record
        self.tokens = _tokens(record)
        self.header = None if self.tokens is None else self.tokens.authorization()
        self.retry_after = 0.0


def _tokens(record: Optional[Mapping[str, Any]]) -> Optional[Tokens]:
    if record is None or record.get("tokens") is None:
        return None
    try:
        return Tokens.from_dict(record["tokens"])
    except OAuthRefused:
        return None


def _scopes(record: Optional[Mapping[str, Any]]) -> tuple[str, ...]:
    held = record.get("scopes") if record is not None else None
    try:
        return scope_list(held) if isinstance(held, list) else ()
    except OAuthRefused:
        return ()


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
        client_id: a client id registered by hand. With ``client_issuer`` it
            is presented to that authorization server only; without it, to
            whichever one the server names.
        client_secret: its secret; needs ``client_issuer``, so that a secret
            is only ever sent to the authorization server it belongs to.
        client_issuer: the issuer ``client_id`` and ``client_secret`` belong to.
        client_metadata_url: an https URL of this client's metadata document,
            used as its client id where the authorization server supports that.
        scopes: the scopes to ask for (default: as the server suggests).
        verify: TLS verification for the authorization exchanges, as ``requests`` takes it.
        proxies: the proxies the authorization exchanges go through, as ``requests``
            takes them (``{"https": "http://proxy.example.com:3128"}``); they win over
            ``HTTP(S)_PROXY``. ``connect_http(proxies=...)`` does not set them: pass both.
        timeout: real seconds that one exchange with an authorization server may take.
        refresh_margin: refresh a token this many seconds before it expires.
        lock_timeout: how long a thread waits for another's login or refresh.
        session: a ``requests.Session`` for the authorization exchanges (proxies,
            adapters; shared by many ``OAuth``); it stays open when this closes.
        grant: a machine grant (:class:`~mcp_input_sync.oauth.ClientCredentials`,
            :class:`~mcp_input_sync.oauth.WorkloadIdentity`,
            :class:`~mcp_input_sync.oauth.EnterpriseManaged`): the client gets
            its tokens with it and never asks for a login, so ``consent`` and
            the ``client_*`` settings are not used (docs/oauth.md#machine-identity).
        dpop: DPoP (RFC 9449): None (the default) binds tokens to a key of
            this client's where the server takes DPoP-bound tokens (its
            metadata says so, or it challenges with the DPoP scheme) and its
            authorization server signs them with ES256; True always; False
            never. Needs the ``jwt`` extra (docs/oauth.md#dpop).
        private_networks: let the flow reach private, link-local and loopback
            addresses, and plain http to loopback, whatever the MCP server's
            own address (development; an authorization server on a private
            network behind a public MCP server). Off, a URL found during
            discovery may lead to no address more local than the server's.
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
        session: Optional["requests.Session"] = None,
        private_networks: bool = False,
        grant: Optional[Grant] = None,
        dpop: Optional[bool] = None,
        proxies: Optional[Mapping[str, Optional[str]]] = None,
    ) -> None:
        if dpop is not None and not isinstance(dpop, bool):
            raise TypeError("dpop must be None, True or False")
        if dpop:
            signing_modules()  # DPoP signs: without PyJWT, say so now, naming the extra
        if grant is not None and not isinstance(grant, Grant):
            raise TypeError("grant must be a ClientCredentials, WorkloadIdentity or EnterpriseManaged")
        if client_secret is not None and client_id is None:
            raise ValueError("client_secret needs client_id")
        if client_secret is not None and client_issuer is None:
            raise ValueError("client_secret needs client_issuer: a secret is only ever sent to the authorization server it belongs to")
        try:
            chosen = None if scopes is None else scope_list(list(scopes))
        except OAuthRefused as exc:
            raise ValueError(exc.message) from None
        self.consent = consent
        self.grant = grant
        self.dpop = dpop
        #: Each server's DPoP key, by record key (loaded from the store or made at a login).
        self._dpop_sessions: dict[str, DPoPSession] = {}
        self.store: TokenStore = store if store is not None else MemoryStore()
        self.account = account
        self.settings = flow.Settings(client_name, client_id, client_secret, client_issuer, client_metadata_url, chosen)
        self.fetcher = Fetcher(verify=verify, timeout=timeout, session=session, private_networks=private_networks, proxies=proxies)
        #: The proxies of the authorization exchanges (None: the environment's alone).
        self.proxies: Optional[dict[str, Optional[str]]] = None if proxies is None else dict(proxies)
        self.refresh_margin = float(refresh_margin)
        self.lock_timeout = float(lock_timeout)
        self._entries: dict[str, _Entry] = {}
        self._guard = threading.Lock()
        self._options: dict[str, Any] = {
            "consent": consent, "store": self.store, "account": account, "client_name": client_name, "client_id": client_id,
            "client_secret": client_secret, "client_issuer": client_issuer, "client_metadata_url": client_metadata_url,
            "scopes": scopes, "verify": verify, "timeout": timeout, "refresh_margin": refresh_margin, "lock_timeout": lock_timeout,
            "private_networks": private_networks, "grant": grant, "dpop": dpop, "proxies": self.proxies,
        }

    def configured(self, **changes: Any) -> "OAuth":
        """A copy with some settings changed (a configuration file's ``clientId`` for one server, say).

        It shares this one's consent, store, account and connection pool, so
        logins made through either are the same logins.
        """
        unknown = set(changes) - set(self._options)
        if unknown:
            raise TypeError(f"unknown OAuth settings: {', '.join(sorted(unknown))}")
        copy = OAuth(**{**self._options, **changes}, session=self.fetcher.session)
        return copy

    def __repr__(self) -> str:
        if self.grant is not None:
            return f"OAuth(grant={self.grant!r}, store={self.store!r})"
        return f"OAuth(consent={self.consent!r}, store={self.store!r}, client_name={self.settings.client_name!r})"

    # ------------------------------------------------------------------ the transport's two hooks

    def authorization(self, server_url: str) -> Optional[str]:
        """The ``Authorization`` header for a request to ``server_url``, or None when no usable token is held.

        A token within ``refresh_margin`` of its expiry is refreshed first (one
        refresh for all threads). When that cannot happen now (another thread
        holds the record for a login, the authorization server is down), the
        token goes as it is while it has not expired; the server's 401 then
        leads to a refresh or a login.
        """
        try:
            with _guarded():
                entry = self._entry(server_url)
        except OAuthRefused:
            return None  # a store that fails: the server's 401 then says so, through challenged()
        tokens, now = entry.tokens, _clock()
        if tokens is None or not tokens.expired(now, self.refresh_margin):
            return entry.header
        fallback = entry.header if not tokens.expired(now, 0.0) else None
        granted = self.grant is not None  # a grant asks again for a token near its expiry: no person is involved
        if (tokens.refresh_token is None and not granted) or now < entry.retry_after:
            return fallback
        try:
            self._renew(server_url, entry.header, allow_login=granted, wait=min(self.lock_timeout, HEADER_LOCK_WAIT))
        except OAuthRefused as exc:
            if exc.check != "lock":
                self._entry(server_url).retry_after = now + REFRESH_BACKOFF
            return fallback
        return self._entry(server_url).header

    def dpop_proof(self, server_url: str, method: str, authorization: str, target: Optional[str] = None) -> Optional[str]:
        """The ``DPoP`` header of a request to ``server_url`` that carries ``authorization`` (None for a Bearer token).

        A fresh proof each time: the request's method and URL (``target``, where
        a redirect within the server's origin took it; else ``server_url``),
        ``ath`` of the token, and the nonce the server asked for last.
        """
        if not authorization.startswith("DPoP "):
            return None
        try:
            with _guarded():
                session = self._dpop_session(server_url)
        except OAuthRefused:
            return None  # the server's 401 then says so, through challenged()
        return None if session is None else session.proof(method, target or server_url, authorization[5:])

    def challenged(self, server_url: str, status: int, headers: Mapping[str, str], sent: Optional[str]) -> None:
        """The server answered ``status`` (401 or 403) to a request that carried ``sent``; make a retry worthwhile.

        Returns when the request should be sent again with :meth:`authorization`'s
        new header. Raises :class:`OAuthRefused` when it should not.
        """
        challenge = self._challenge(headers)
        if status == 401 and challenge is not None and wants_nonce(401, None, challenge.error):
            # RFC 9449 section 9: the token is fine, the proof lacks the server's nonce; no new token
            session = self._dpop_session(server_url) if sent is not None and sent.startswith("DPoP ") else None
            if session is not None and session.remember(server_url, headers):
                return
            raise OAuthRefused("dpop", "The server asks for a DPoP nonce it does not give, or refuses the one it gave.")
        if status == 403:
            if challenge is None or not challenge.insufficient_scope:
                raise OAuthRefused("forbidden", "The server forbids this request (HTTP 403) and asks for no other scope.")
            self._step_up(server_url, challenge, sent)
            return
        self._renew(server_url, sent, allow_login=True, challenge=challenge)

    # ------------------------------------------------------------------ the host's API

    def login(self, server_url: str) -> None:
        """Log in to ``server_url`` now (through ``consent``), replacing any tokens held.

        Raises:
            ClientError: ``kind="auth"``, with ``check`` naming the step that failed.
        """
        try:
            with _guarded():
                challenge = self._probe(server_url)
                with self.store.lock(self._key(server_url), self.lock_timeout):
                    self._login(server_url, challenge, scopes=None)
        except OAuthRefused as exc:
            raise auth_error(exc) from None

    def logout(self, server_url: str) -> bool:
        """Forget the tokens held for ``server_url``; True when there were some.

        The app's registration at the authorization server is kept, for the next login.
        """
        key, old = self._key(server_url), legacy_record_key(server_url, self.account)
        try:
            with _guarded(), self.store.lock(key, self.lock_timeout):
                had = self.store.load(key) is not None
                self.store.delete(key)
                if old is not None:  # a record an earlier version kept: forgotten too, or the next load would find it
                    had = self.store.load(old) is not None or had
                    self.store.delete(old)
        except OAuthRefused as exc:
            raise auth_error(exc) from None
        with self._guard:
            self._entries.pop(key, None)
        return had

    def tokens(self, server_url: str) -> Optional[Tokens]:
        """The tokens held for ``server_url`` (their repr hides them), or None."""
        try:
            with _guarded():
                return self._entry(server_url).tokens
        except OAuthRefused as exc:
            raise auth_error(exc) from None

    def begin(self, server_url: str, redirect_uri: str, *, application_type: str = "web") -> dict[str, Any]:
        """Start a login whose redirect comes back to ``redirect_uri`` (a web app's callback view).

        Returns the pending login as JSON-ready data: send the user to its
        ``"url"`` and keep the whole record where only this user's next
        request can read it (the session), then pass it to :meth:`finish`.
        It holds the PKCE verifier and the state of this one login, and no
        client secret: the authorization server's metadata and the app's
        registration stay in the store.

        Raises:
            ClientError: ``kind="auth"`` when discovery or registration fails.
        """
        if self.grant is not None:
            raise auth_error(OAuthRefused("grant", "This OAuth gets its tokens with a grant: there is no login to begin."))
        try:
            with _guarded():
                challenge = self._probe(server_url)
                discovery, client = self._prepare(self.fetcher.toward(server_url), server_url, challenge, redirect_uri, application_type)
                request = flow.start_authorization(discovery, client, redirect_uri, self.settings, challenge.scope if challenge else None)
        except OAuthRefused as exc:
            raise auth_error(exc) from None
        return {
            "url": request.url, "server": server_url, "request": request.to_dict(), "legacy": discovery.legacy, "dpop": discovery.dpop,
            "client_id": client.client_id, "client_source": client.source, "application_type": application_type,
        }

    def finish(self, pending: Mapping[str, Any], redirect: str) -> None:
        """Finish :meth:`begin`'s login with the redirect's URL or query string; the tokens are stored.

        Raises:
            ClientError: ``kind="auth"``: the response failed a check (``iss``,
                ``state``), the user refused, or the token endpoint did;
                ``check="pending"`` for a record :meth:`begin` did not make.
        """
        try:
            with _guarded():
                if not isinstance(pending, Mapping) or not isinstance(pending.get("server"), str) or not isinstance(redirect, str):
                    raise OAuthRefused("pending", "The pending authorization is not a record.")
                request = AuthorizationRequest.from_dict(pending.get("request"))
                server_url = pending["server"]
                metadata, client = self._pending_parts(request.issuer, pending)
                query = redirect.partition("?")[2] if "://" in redirect else redirect
                session = self._dpop_for(server_url, metadata, pending.get("dpop") is True)
                tokens = self._exchange(self.fetcher.toward(server_url).with_dpop(session), metadata, client, request, query)
                with self.store.lock(self._key(server_url), self.lock_timeout):
                    discovery = flow.Discovery(request.resource, metadata, None, pending.get("legacy") is True)
                    self._save(server_url, discovery, client, tokens, request.scopes, session)
        except OAuthRefused as exc:
            raise auth_error(exc) from None

    def close(self) -> None:
        """Close the pooled connections to authorization servers."""
        self.fetcher.close()

    # ------------------------------------------------------------------ records

    def _key(self, server_url: str) -> str:
        return record_key(server_url, self.account)

    def cache_principal(self, server_url: str) -> Optional[str]:
        """Whom this provider's tokens for ``server_url`` speak for, as a shared response cache keys it.

        The ``account`` and the client's id name one user across workers;
        without an account (the process's own logins) nothing names the user
        beyond this object, and None keeps its cached results to the client.
        """
        if not self.account:
            return None
        return "\n".join(("oauth", self.account, self.settings.client_id or "", record_key(server_url, self.account)))

    def _load(self, server_url: str) -> Optional[dict[str, Any]]:
        record = self.store.load(self._key(server_url))
        old = legacy_record_key(server_url, self.account) if record is None else None
        if old is not None:  # kept by an earlier version (see stores.legacy_record_key): read until the next save moves it
            record = self.store.load(old)
        # a record of this version, for this very server (whatever else a key might hold)
        if not isinstance(record, dict) or record.get("v") != RECORD_VERSION or record.get("server") != server_url:
            return None
        return record

    def _entry(self, server_url: str) -> _Entry:
        key = self._key(server_url)
        with self._guard:
            entry = self._entries.get(key)
        if entry is None:
            fresh = _Entry(self._load(server_url))
            with self._guard:  # a record remembered meanwhile (after a refresh) is newer: keep it
                entry = self._entries.setdefault(key, fresh)
        return entry

    def _remember(self, server_url: str, record: Optional[dict[str, Any]]) -> None:
        with self._guard:
            self._entries[self._key(server_url)] = _Entry(record)

    def _save(
        self, server_url: str, discovery: flow.Discovery, client: flow.Client, tokens: Tokens, asked: Optional[Sequence[str]],
        session: Optional[DPoPSession] = None,
    ) -> None:
        record = {
            "v": RECORD_VERSION, "server": server_url, "resource": discovery.resource, "issuer": discovery.metadata.issuer,
            "legacy": discovery.legacy, "metadata": flow.metadata_to_dict(discovery.metadata), "client": client.to_dict(),
            "tokens": tokens.to_dict(), "scopes": list(tokens.scopes or asked or ()) or None,
        }
        if session is not None:  # the key its tokens are bound to: a refresh after a restart needs it
            record["dpop_key"] = session.key.to_pem()
        self._write(server_url, record)

    def _write(self, server_url: str, record: dict[str, Any]) -> None:
        """Save ``server_url``'s record under its key, and forget any copy an earlier version kept (it is moved)."""
        self.store.save(self._key(server_url), record)
        old = legacy_record_key(server_url, self.account)
        if old is not None:
            self.store.delete(old)  # after the save: a failure between the two loses nothing
        self._remember(server_url, record)

    def _issuer_record(self, issuer: str) -> dict[str, Any]:
        found = self.store.load(issuer_key(issuer))
        return found if isinstance(found, dict) else {}

    def _keep_issuer(self, metadata: Any, application_type: str, client: Optional[flow.Client]) -> None:
        """Keep the issuer's metadata (for :meth:`finish`) and the app's dynamic registration there."""
        record = self._issuer_record(metadata.issuer)
        record["metadata"] = flow.metadata_to_dict(metadata)
        if client is not None:
            record[application_type] = client.to_dict()
        self.store.save(issuer_key(metadata.issuer), record)

    def _forget_registration(self, client: flow.Client, application_type: str) -> None:
        """The authorization server no longer knows a registration of ours: drop it, so the next login registers again."""
        record = self._issuer_record(client.issuer)
        if isinstance(record.get(application_type), dict) and record[application_type].get("client_id") == client.client_id:
            del record[application_type]
            self.store.save(issuer_key(client.issuer), record)

    def _pending_parts(self, issuer: str, pending: Mapping[str, Any]) -> tuple[Any, flow.Client]:
        """The metadata and client a pending login began with, from the store and the settings (never from the session)."""
        record = self._issuer_record(issuer)
        metadata = flow.metadata_from_dict(record.get("metadata"))
        client_id, source, kind = pending.get("client_id"), pending.get("client_source"), pending.get("application_type")
        redirect = AuthorizationRequest.from_dict(pending.get("request")).redirect_uri
        settings = self.settings
        if metadata.issuer == issuer and isinstance(client_id, str) and isinstance(kind, str):
            if source == "preregistered" and client_id == settings.client_id and settings.client_issuer in (None, issuer):
                return metadata, flow.Client(issuer, client_id, settings.client_secret, None, (redirect,), source)
            if source == "metadata-document" and client_id == settings.client_metadata_url:
                return metadata, flow.Client(issuer, client_id, None, "none", (redirect,), source)
            kept = flow.Client.from_dict(record.get(kind))
            if source == "dynamic" and kept is not None and kept.client_id == client_id and kept.issuer == issuer:
                return metadata, kept
        raise OAuthRefused("pending", "The pending authorization does not match what this app keeps for its authorization server.")

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
        answer = self.fetcher.probe(
            server_url, b'{"jsonrpc":"2.0","id":0,"method":"ping"}',
            {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"},
        )
        if answer.status not in (401, 403):
            return None
        return self._challenge(answer.headers)

    def _renew(
        self, server_url: str, sent: Optional[str], *, allow_login: bool, challenge: Optional[BearerChallenge] = None, wait: Optional[float] = None
    ) -> None:
        """Under the record's lock: use a newer token, else refresh, else (when allowed) log in.

        A refresh the token endpoint refuses forgets the refresh token (it is
        dead) and, when allowed, logs in; a refresh that fails otherwise (the
        network, the server down) is raised, not turned into a login.
        """
        with _guarded(), self.store.lock(self._key(server_url), self.lock_timeout if wait is None else wait):
            record = self._load(server_url)
            self._remember(server_url, record)
            tokens = _tokens(record)
            if tokens is not None and tokens.authorization() != sent and not tokens.expired(_clock(), self.refresh_margin):
                return  # another thread (or process) already renewed it
            if record is not None and tokens is not None and tokens.refresh_token is not None:
                try:
                    self._refresh(server_url, record, tokens)
                    return
                except flow.TokenRefused:
                    self._drop_refresh_token(server_url, record, tokens)
                    if not allow_login:
                        raise
                except OAuthRefused as exc:
                    if not allow_login or exc.check not in ("store", "metadata", "issuer", "endpoint"):
                        raise
            if not allow_login:
                raise OAuthRefused("refresh", "No refresh token is held.")
            self._login(server_url, challenge, scopes=None)

    def _drop_refresh_token(self, server_url: str, record: dict[str, Any], tokens: Tokens) -> None:
        kept = dict(record, tokens=Tokens(tokens.access_token, tokens.token_type, tokens.expires_at, None, tokens.scopes).to_dict())
        self._write(server_url, kept)

    def _refresh(self, server_url: str, record: dict[str, Any], tokens: Tokens) -> None:
        metadata = flow.metadata_from_dict(record.get("metadata"))
        client = flow.Client.from_dict(record.get("client"))
        resource = record.get("resource")
        if client is None or client.issuer != metadata.issuer or not isinstance(resource, str):
            raise OAuthRefused("store", "The stored login cannot be refreshed.")
        session = self._dpop_session(server_url, record) if tokens.token_type == "DPoP" else None
        try:
            fresh = flow.refresh(self.fetcher.toward(server_url).with_dpop(session), metadata, client, tokens, resource, _clock())
        except flow.TokenRefused as exc:
            self._forget_if_unknown(exc, client)
            raise
        discovery = flow.Discovery(resource, metadata, None, record.get("legacy") is True)
        self._save(server_url, discovery, client, fresh, record.get("scopes"), session)

    def _step_up(self, server_url: str, challenge: BearerChallenge, sent: Optional[str]) -> None:
        """A 403 ``insufficient_scope``: log in again for the scopes held and the scopes challenged."""
        with _guarded(), self.store.lock(self._key(server_url), self.lock_timeout):
            record = self._load(server_url)
            self._remember(server_url, record)
            held, challenged = _scopes(record), tuple(challenge.scope or ())
            tokens = _tokens(record)
            covered = set(challenged) <= set(held)
            if tokens is not None and tokens.authorization() != sent and covered:
                return  # another thread already stepped up
            if covered:
                raise OAuthRefused("scope", "The server asks for scopes this client already holds: another login would not help.")
            self._login(server_url, challenge, scopes=step_up_scopes(held, challenged))

    def _prepare(
        self, fetcher: Fetcher, server_url: str, challenge: Optional[BearerChallenge], redirect_uri: str, application_type: str
    ) -> tuple[flow.Discovery, flow.Client]:
        discovery = flow.discover(fetcher, server_url, challenge)
        metadata = discovery.metadata
        # the registration this app made at the issuer (for any server or user), kept with the issuer;
        # the copy in a server's record serves its refreshes only
        known = flow.Client.from_dict(self._issuer_record(metadata.issuer).get(application_type))
        client = flow.register(fetcher, self.settings, metadata, redirect_uri, application_type, known)
        self._keep_issuer(metadata, application_type, client if client.source == "dynamic" else None)
        return discovery, client

    def _exchange(self, fetcher: Fetcher, metadata: Any, client: flow.Client, request: AuthorizationRequest, query: str) -> Tokens:
        try:
            return flow.exchange_code(fetcher, metadata, client, request, query, _clock())
        except flow.TokenRefused as exc:
            self._forget_if_unknown(exc, client)
            raise

    def _forget_if_unknown(self, refused: flow.TokenRefused, client: flow.Client) -> None:
        """The token endpoint does not know our dynamic registration: drop it, so the next login registers again."""
        if refused.error in ("invalid_client", "unauthorized_client") and client.source == "dynamic":
            for application_type in ("native", "web"):
                self._forget_registration(client, application_type)

    def _obtain(self, grant: Grant, server_url: str, challenge: Optional[BearerChallenge], scopes: Optional[Sequence[str]]) -> None:
        """Tokens with the machine grant (the caller holds the record's lock): discovery, then the token endpoint."""
        fetcher = self.fetcher.toward(server_url)
        discovery = flow.discover(fetcher, server_url, challenge)
        chosen = flow.choose_scopes(discovery, self.settings, challenge.scope if challenge else None, scopes)
        scopes = tuple(scope for scope in chosen or () if scope != OFFLINE_ACCESS)  # no refresh token is kept: the grant asks again
        session = self._dpop_for(server_url, discovery.metadata, discovery.dpop)
        try:
            tokens = grant.obtain(fetcher.with_dpop(session), discovery, scopes)
        except OAuthRefused as exc:
            # the caller gets this as its ClientError: one message per error, the log only at DEBUG
            log.debug("mcp_input_sync: the %s grant for %s failed: %s (check %s)", grant.kind, server_url, exc.message, exc.check)
            raise
        client = flow.Client(discovery.metadata.issuer, grant.client_id or grant.kind, None, None, (), "grant")
        self._save(server_url, discovery, client, tokens, scopes, session)

    def _login(self, server_url: str, challenge: Optional[BearerChallenge], scopes: Optional[Sequence[str]]) -> None:
        """The whole authorization code flow through ``consent`` (the caller holds the record's lock)."""
        if self.grant is not None:
            self._obtain(self.grant, server_url, challenge, scopes)
            return
        consent = self.consent
        if consent is None:
            raise OAuthRefused("login", "The server needs a login and this client has no way to ask for one (OAuth(consent=None)).")
        fetcher = self.fetcher.toward(server_url)
        round_ = consent.start()
        try:
            discovery, client = self._prepare(fetcher, server_url, challenge, round_.redirect_uri, consent.application_type)
            request = flow.start_authorization(
                discovery, client, round_.redirect_uri, self.settings, challenge.scope if challenge else None, scopes
            )
            query = round_.wait(request.url, fetcher)
            session = self._dpop_for(server_url, discovery.metadata, discovery.dpop)
            tokens = self._exchange(fetcher.with_dpop(session), discovery.metadata, client, request, query)
        finally:
            round_.close()
        self._save(server_url, discovery, client, tokens, request.scopes, session)

    # ------------------------------------------------------------------ DPoP

    def _dpop_for(self, server_url: str, metadata: Any, wanted: bool) -> Optional[DPoPSession]:
        """The DPoP session a login or grant for ``server_url`` uses, or None for Bearer tokens (see ``dpop``).

        ``wanted``: the resource takes DPoP-bound tokens. A host that asked
        for DPoP (``dpop=True``) and an authorization server that lists no
        ES256 is refused (check ``"dpop"``) before any token request.
        """
        if self.dpop is False:
            return None
        algorithms = metadata.dpop_signing_alg_values_supported
        if self.dpop is None and not (wanted and algorithms is not None):
            return None
        if algorithms is not None and DPOP_ALGORITHM not in algorithms:
            if self.dpop:
                raise OAuthRefused("dpop", f"The authorization server takes no DPoP proof signed with {DPOP_ALGORITHM}.")
            return None
        if self.dpop is None:
            try:
                signing_modules()
            except ValueError:
                log.info("mcp_input_sync: %s takes DPoP-bound tokens; Bearer tokens instead (%s)", server_url, EXTRA)
                return None
        return self._dpop_session(server_url, create=True)

    def _dpop_session(self, server_url: str, record: Optional[Mapping[str, Any]] = None, *, create: bool = False) -> Optional[DPoPSession]:
        """The DPoP key of ``server_url``'s record: in memory, else from the store, else (``create``) a new one."""
        key = self._key(server_url)
        with self._guard:
            session = self._dpop_sessions.get(key)
        if session is not None:
            return session
        if record is None:
            record = self._load(server_url)
        pem = record.get("dpop_key") if record is not None else None
        if isinstance(pem, str):
            try:
                session = DPoPSession(DPoPKey.from_pem(pem))
            except ValueError:
                raise OAuthRefused("store", "The stored DPoP key cannot be read.") from None
        elif create:
            session = DPoPSession(DPoPKey.generate())
        else:
            return None
        with self._guard:
            return self._dpop_sessions.setdefault(key, session)
