"""A protected MCP endpoint and its authorization server, on one 127.0.0.1 port, for the OAuth tests.

Unlike the conformance runner's mocks it issues expiring access tokens and
rotating refresh tokens, and it can be told to misbehave: the knobs are the
attributes of :class:`OAuthPeer` (set them before the request they concern).

* ``/mcp`` speaks just enough legacy MCP (``initialize``, ``tools/list``,
  ``tools/call``) and wants ``Authorization: Bearer <token>``: 401 with a
  challenge naming the PRM without one, 403 ``insufficient_scope`` for the
  ``admin`` tool without the ``admin`` scope. ``whoami`` answers the scopes
  of the token it was called with; ``hold`` answers only once ``hold_gate``
  is set (a request kept open).
* ``/.well-known/oauth-protected-resource/mcp``, ``/.well-known/oauth-authorization-server``:
  the metadata documents (``prm`` and ``metadata`` replace fields).
* ``/register`` (RFC 7591), ``/authorize`` (a 302 straight back to the
  redirect URI, as if the user had agreed), ``/token`` (``authorization_code``
  with PKCE S256, ``refresh_token`` with rotation; a reused refresh token is
  refused; the machine grants: ``client_credentials`` for the clients of
  ``machine_secrets`` or a client assertion ``machine_key`` verifies, the
  jwt-bearer grant for the assertions in ``good_assertions``).
* DPoP (RFC 9449) with ``dpop`` set: the metadata lists ES256, the 401
  challenges use the DPoP scheme, a token request with a valid proof gets
  a ``DPoP`` token bound to the proof's key, and ``/mcp`` wants a fresh
  proof with ``ath`` from that key for it (``dpop_nonces``: both servers
  first ask for their nonce). Every proof's claims are kept in ``proofs``.
* ``/idp/token``: an identity provider's RFC 8693 token exchange, which
  trades an ID token of ``good_id_tokens`` for an ID-JAG (``jag-<token>``,
  then good at ``/token`` for the ``machine_secrets`` clients).

Every request is kept in ``seen`` as ``(verb, path, headers)``. Expiry reads
``time.time()``, so freezegun moves it for both sides.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Optional
from urllib.parse import parse_qsl, urlencode, urlsplit

JsonDict = dict[str, Any]


class OAuthPeer:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.seen: list[tuple[str, str, dict[str, str]]] = []
        self.clients: dict[str, JsonDict] = {}
        self.codes: dict[str, JsonDict] = {}
        self.access: dict[str, JsonDict] = {}
        self.refresh: dict[str, JsonDict] = {}
        self.spent_refresh: set[str] = set()
        self.counts = {"register": 0, "authorize": 0, "code": 0, "refresh": 0, "mcp": 0, "machine": 0, "exchange": 0}
        # the machine grants: client secrets, the public key that checks client assertions, good assertions
        self.machine_secrets: dict[str, str] = {}
        self.machine_key: Any = None
        self.good_assertions: set[str] = set()
        self.good_id_tokens: set[str] = set()
        self.machine_forms: list[dict[str, str]] = []  # every machine-grant token request's form (and Basic header)
        # DPoP: on, with nonces asked for; each proof's (where, claims); the jtis seen at /mcp
        self.dpop = False
        self.dpop_nonces = False
        self.proofs: list[tuple[str, JsonDict]] = []
        self.dpop_jtis: set[str] = set()
        self._bound: Optional[str] = None  # the jkt the token request being answered proved (one at a time in these tests)
        # knobs
        self.expires_in: Optional[int] = 3600
        self.issue_refresh = True
        self.iss_mode = "right"  # right | wrong | absent
        self.state_mode = "echo"  # echo | wrong
        self.always_401 = False
        self.prm: JsonDict = {}
        self.metadata: JsonDict = {}
        self.metadata_body: Optional[bytes] = None
        self.metadata_redirect: Optional[str] = None
        self.token_gate: Optional[threading.Event] = None  # the token endpoint waits for it (bounded)
        self.registration_status = 201
        self.mcp_redirect: Optional[str] = None  # /mcp answers an authorised request with a 307 there
        self.hold_gate = threading.Event()  # the hold tool answers once it is set (bounded wait)
        self.prm_status = 200  # another status: the PRM URLs answer it with no document
        self.scope_always_missing = False  # every tools/call: 403 insufficient_scope for "mcp" (a scope tokens hold)
        self.invalid_client_once = False  # the next token request is refused with invalid_client
        self.resource_metadata: Optional[str] = None  # the URL the challenge names (default: its own well-known one)
        self.holding = threading.Event()  # set while a hold call waits
        self.outer = self
        peer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                parts = urlsplit(self.path)
                with peer.lock:
                    peer.seen.append((self.command, parts.path, {k.lower(): v for k, v in self.headers.items()}))
                status, headers, body = peer.route(self.command, parts.path, parts.query, dict(self.headers), raw)
                self.send_response(status)
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_DELETE = _serve

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.origin = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.url = self.origin + "/mcp"
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, name="oauth-peer", daemon=True)
        self.thread.start()

    def close(self) -> None:
        if self.token_gate is not None:
            self.token_gate.set()
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)

    # ------------------------------------------------------------------ helpers

    def requests_to(self, path: str) -> list[dict[str, str]]:
        with self.lock:
            return [headers for _, seen_path, headers in self.seen if seen_path == path]

    def revoke_all(self) -> None:
        with self.lock:
            self.access.clear()
            self.refresh.clear()

    @staticmethod
    def _json(status: int, document: Any, headers: Optional[dict[str, str]] = None) -> tuple[int, dict[str, str], bytes]:
        return status, {"Content-Type": "application/json", **(headers or {})}, json.dumps(document).encode()

    def _prm(self) -> JsonDict:
        return {"resource": self.url, "authorization_servers": [self.origin], "scopes_supported": ["mcp"], **self.prm}

    def _metadata(self) -> JsonDict:
        return {
            "issuer": self.origin,
            "authorization_endpoint": self.origin + "/authorize",
            "token_endpoint": self.origin + "/token",
            "registration_endpoint": self.origin + "/register",
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["none", "client_secret_basic", "client_secret_post"],
            "scopes_supported": ["mcp", "admin", "offline_access"],
            "authorization_response_iss_parameter_supported": True,
            **({"dpop_signing_alg_values_supported": ["ES256"]} if self.dpop else {}),
            **self.metadata,
        }

    # ------------------------------------------------------------------ routes

    def route(self, verb: str, path: str, query: str, headers: dict[str, str], raw: bytes) -> tuple[int, dict[str, str], bytes]:
        if path == "/mcp":
            return self._mcp(verb, headers, raw)
        if path == "/.well-known/oauth-protected-resource/mcp":
            if self.prm_status != 200:
                return self._json(self.prm_status, {"error": "unavailable"})
            return self._json(200, self._prm())
        if path == "/.well-known/oauth-authorization-server":
            if self.metadata_redirect is not None:
                return 302, {"Location": self.metadata_redirect}, b""
            if self.metadata_body is not None:
                return 200, {"Content-Type": "application/json"}, self.metadata_body
            return self._json(200, self._metadata())
        if path == "/register" and verb == "POST":
            return self._register(raw)
        if path == "/authorize":
            return self._authorize(dict(parse_qsl(query)))
        if path == "/token" and verb == "POST":
            return self._token(headers, dict(parse_qsl(raw.decode())))
        if path == "/idp/token" and verb == "POST":
            return self._exchange(dict(parse_qsl(raw.decode())))
        return self._json(404, {"error": "not_found"})

    def _challenge(self, status: int, error: str, scope: str) -> tuple[int, dict[str, str], bytes]:
        named = self.resource_metadata or f"{self.origin}/.well-known/oauth-protected-resource/mcp"
        value = f'{"DPoP" if self.dpop else "Bearer"} error="{error}", scope="{scope}", resource_metadata="{named}"'
        return self._json(status, {"error": error}, {"WWW-Authenticate": value})

    def _proof(self, headers: dict[str, str], where: str, url: str, token: Optional[str] = None) -> Optional[JsonDict]:
        """The claims of a request's valid DPoP proof for ``url`` (None when it has none or a bad one); its jwk thumbprint in ``jkt``."""
        import jwt  # the test extra has PyJWT

        proof = {k.lower(): v for k, v in headers.items()}.get("dpop")
        if proof is None:
            return None
        try:
            header = jwt.get_unverified_header(proof)
            key = jwt.PyJWK(header["jwk"]).key
            claims = jwt.decode(proof, key, algorithms=["ES256"])
        except (jwt.PyJWTError, KeyError, TypeError, ValueError):
            return None
        if header.get("typ") != "dpop+jwt" or "d" in header["jwk"] or claims.get("htm") != "POST" or claims.get("htu") != url:
            return None
        if abs(time.time() - claims.get("iat", 0)) > 300:
            return None
        if token is not None:
            digest = base64.urlsafe_b64encode(hashlib.sha256(token.encode()).digest()).decode().rstrip("=")
            if claims.get("ath") != digest:
                return None
        jwk = header["jwk"]
        members = json.dumps({k: jwk[k] for k in ("crv", "kty", "x", "y")}, separators=(",", ":"), sort_keys=True)
        claims["jkt"] = base64.urlsafe_b64encode(hashlib.sha256(members.encode()).digest()).decode().rstrip("=")
        with self.lock:
            self.proofs.append((where, claims))
        return claims

    def _mcp(self, verb: str, headers: dict[str, str], raw: bytes) -> tuple[int, dict[str, str], bytes]:
        if verb != "POST":
            return 405, {}, b""
        auth = {k.lower(): v for k, v in headers.items()}.get("authorization", "")
        scheme, _, token_text = auth.partition(" ")
        token = token_text if scheme in ("Bearer", "DPoP") and token_text else None
        with self.lock:
            grant = self.access.get(token) if token else None
        if self.always_401 or grant is None or (grant["expires_at"] is not None and time.time() >= grant["expires_at"]):
            return self._challenge(401, "invalid_token", "mcp")
        if grant.get("jkt") is not None:  # a DPoP-bound token: the DPoP scheme, and a fresh proof from its key
            claims = self._proof(headers, "mcp", self.url, token)
            if scheme != "DPoP" or claims is None or claims["jkt"] != grant["jkt"] or claims["jti"] in self.dpop_jtis:
                return self._challenge(401, "invalid_token", "mcp")
            self.dpop_jtis.add(claims["jti"])
            if self.dpop_nonces and claims.get("nonce") != "rs-nonce":
                named = f"{self.origin}/.well-known/oauth-protected-resource/mcp"
                challenge = f'DPoP error="use_dpop_nonce", resource_metadata="{named}"'
                return self._json(401, {"error": "use_dpop_nonce"}, {"WWW-Authenticate": challenge, "DPoP-Nonce": "rs-nonce"})
        if self.mcp_redirect is not None:
            return 307, {"Location": self.mcp_redirect}, b""
        message = json.loads(raw)
        method = message.get("method")
        with self.lock:
            self.counts["mcp"] += 1
        if "id" not in message:
            return 202, {}, b""
        if method == "initialize":
            result: Any = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": {"name": "oauth-peer", "version": "1"}}
        elif method == "tools/list":
            result = {"tools": [{"name": "whoami", "inputSchema": {"type": "object"}}, {"name": "admin", "inputSchema": {"type": "object"}}]}
        elif method == "tools/call":
            name = message["params"]["name"]
            if self.scope_always_missing:
                return self._challenge(403, "insufficient_scope", "mcp")
            if name == "admin" and "admin" not in grant["scopes"]:
                return self._challenge(403, "insufficient_scope", "admin")
            if name == "hold":
                self.holding.set()
                self.hold_gate.wait(10)
            result = {"content": [{"type": "text", "text": " ".join(grant["scopes"])}]}
        elif method == "server/discover":
            return self._json(200, {"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": "no"}})
        else:
            result = {}
        return self._json(200, {"jsonrpc": "2.0", "id": message["id"], "result": result})

    def _register(self, raw: bytes) -> tuple[int, dict[str, str], bytes]:
        body = json.loads(raw)
        with self.lock:
            self.counts["register"] += 1
        if self.registration_status >= 400:
            return self._json(self.registration_status, {"error": "invalid_client_metadata"})
        client_id = "client-" + secrets.token_hex(4)
        record = {"client_id": client_id, "redirect_uris": body["redirect_uris"], "token_endpoint_auth_method": body.get("token_endpoint_auth_method", "none"),
                  "application_type": body.get("application_type"), "grant_types": body.get("grant_types")}
        with self.lock:
            self.clients[client_id] = record
        return self._json(201, record)

    def _authorize(self, params: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        with self.lock:
            self.counts["authorize"] += 1
            client = self.clients.get(params.get("client_id", ""))
        if client is None or params.get("redirect_uri") not in client["redirect_uris"]:
            return self._json(400, {"error": "invalid_client"})
        if params.get("code_challenge_method") != "S256" or params.get("resource") != self.url:
            return self._json(400, {"error": "invalid_request"})
        code = secrets.token_urlsafe(16)
        with self.lock:
            self.codes[code] = {"client_id": params["client_id"], "redirect_uri": params["redirect_uri"], "challenge": params["code_challenge"],
                                "scopes": params.get("scope", "mcp").split(), "resource": params["resource"]}
        back = {"code": code, "state": params.get("state", "") if self.state_mode == "echo" else "forged"}
        if self.iss_mode == "right":
            back["iss"] = self.origin
        elif self.iss_mode == "wrong":
            back["iss"] = "http://evil.example"
        return 302, {"Location": params["redirect_uri"] + "?" + urlencode(back)}, b""

    def _issue(self, client_id: str, scopes: list[str]) -> JsonDict:
        access = "at-" + secrets.token_urlsafe(12)
        expires_at = None if self.expires_in is None else time.time() + self.expires_in
        bound = self._bound
        answer: JsonDict = {"access_token": access, "token_type": "DPoP" if bound else "Bearer", "scope": " ".join(scopes)}
        if self.expires_in is not None:
            answer["expires_in"] = self.expires_in
        with self.lock:
            self.access[access] = {"scopes": scopes, "expires_at": expires_at, "jkt": bound}
            if self.issue_refresh:
                refresh = "rt-" + secrets.token_urlsafe(12)
                self.refresh[refresh] = {"client_id": client_id, "scopes": scopes, "jkt": bound}
                answer["refresh_token"] = refresh
        return answer

    def _token(self, headers: dict[str, str], form: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        gate = self.token_gate
        if gate is not None:
            gate.wait(10)
        if self.invalid_client_once:
            self.invalid_client_once = False
            return self._json(401, {"error": "invalid_client"})
        lowered = {k.lower(): v for k, v in headers.items()}
        client_id = form.get("client_id")
        if lowered.get("authorization", "").startswith("Basic "):
            client_id = base64.b64decode(lowered["authorization"][6:]).decode().split(":")[0]
        if form.get("resource") != self.url:
            return self._json(400, {"error": "invalid_target"})
        self._bound = None
        if self.dpop and "dpop" in lowered:
            claims = self._proof(headers, "token", self.origin + "/token")
            if claims is None:
                return self._json(400, {"error": "invalid_dpop_proof"})
            if self.dpop_nonces and claims.get("nonce") != "as-nonce":
                return self._json(400, {"error": "use_dpop_nonce"}, {"DPoP-Nonce": "as-nonce"})
            self._bound = claims["jkt"]
        if form.get("grant_type") in ("client_credentials", "urn:ietf:params:oauth:grant-type:jwt-bearer"):
            return self._machine(lowered.get("authorization", ""), form)
        if form.get("grant_type") == "authorization_code":
            with self.lock:
                grant = self.codes.pop(form.get("code", ""), None)
                self.counts["code"] += 1
            verifier = form.get("code_verifier", "")
            challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")
            if grant is None or grant["client_id"] != client_id or grant["challenge"] != challenge or grant["redirect_uri"] != form.get("redirect_uri"):
                return self._json(400, {"error": "invalid_grant"})
            return self._json(200, self._issue(client_id or "", grant["scopes"]))
        if form.get("grant_type") == "refresh_token":
            token = form.get("refresh_token", "")
            with self.lock:
                self.counts["refresh"] += 1
                grant = self.refresh.pop(token, None)
                reused = token in self.spent_refresh
                self.spent_refresh.add(token)
            if grant is None or reused or grant["client_id"] != client_id or grant.get("jkt") != self._bound:
                return self._json(400, {"error": "invalid_grant"})  # a bound refresh token needs a proof from its key
            return self._json(200, self._issue(client_id or "", grant["scopes"]))
        return self._json(400, {"error": "unsupported_grant_type"})


    def _machine(self, authorization: str, form: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        """The machine grants: the client checked by its secret or its assertion, or the grant's own assertion."""
        import jwt  # the test extra has PyJWT

        with self.lock:
            self.counts["machine"] += 1
            self.machine_forms.append(dict(form, basic=authorization))
        client_id, secret = form.get("client_id"), form.get("client_secret")
        if authorization.startswith("Basic "):
            client_id, _, secret = base64.b64decode(authorization[6:]).decode().partition(":")
        if form.get("client_assertion_type") == "urn:ietf:params:oauth:client-assertion-type:jwt-bearer":
            try:
                claims = jwt.decode(form.get("client_assertion", ""), self.machine_key, algorithms=["ES256", "RS256"], audience=self.origin)
            except jwt.PyJWTError:
                return self._json(401, {"error": "invalid_client"})
            if claims.get("iss") != claims.get("sub"):
                return self._json(401, {"error": "invalid_client"})
            client_id = claims["sub"]
        elif client_id is None or self.machine_secrets.get(client_id) != secret:
            if form["grant_type"] == "client_credentials" or form.get("assertion", "").startswith("jag-"):
                return self._json(401, {"error": "invalid_client"})
        if form["grant_type"] != "client_credentials" and form.get("assertion") not in self.good_assertions:
            return self._json(400, {"error": "invalid_grant"})
        return self._json(200, self._issue(client_id or "workload", (form.get("scope") or "mcp").split()))

    def _exchange(self, form: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        with self.lock:
            self.counts["exchange"] += 1
            self.machine_forms.append(dict(form, basic=""))
        wanted = {
            "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange",
            "requested_token_type": "urn:ietf:params:oauth:token-type:id-jag",
            "subject_token_type": "urn:ietf:params:oauth:token-type:id_token",
            "audience": self.origin,
            "resource": self.url,
        }
        if any(form.get(key) != value for key, value in wanted.items()) or form.get("subject_token") not in self.good_id_tokens:
            return self._json(400, {"error": "invalid_grant"})
        jag = "jag-" + form["subject_token"]
        with self.lock:
            self.good_assertions.add(jag)
        return self._json(200, {"access_token": jag, "issued_token_type": wanted["requested_token_type"], "token_type": "N_A"})


def race_renewals(peer: OAuthPeer, providers: list[Any], sent: Optional[str]) -> list[Optional[BaseException]]:
    """Tell each provider, on a thread of its own, that ``sent`` met a 401; the token endpoint waits for all of them.

    Returns each thread's outcome (None: it returned). The providers stand for
    processes sharing one store: only the store's lock keeps them from two refreshes.
    """
    peer.token_gate = threading.Event()
    outcomes: list[Optional[BaseException]] = []

    def renew(provider: Any) -> None:
        try:
            provider.challenged(peer.url, 401, {"WWW-Authenticate": 'Bearer error="invalid_token"'}, sent)
            outcomes.append(None)
        except BaseException as exc:  # noqa: BLE001 - reported to the test
            outcomes.append(exc)

    threads = [threading.Thread(target=renew, args=(provider,)) for provider in providers]
    for thread in threads:
        thread.start()
    peer.token_gate.set()
    for thread in threads:
        thread.join(10)
    return outcomes
