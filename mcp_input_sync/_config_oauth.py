"""A configuration file's ``oauth`` object as ``OAuth`` settings: a registered client, or a machine grant.

``{"clientId": ..., "clientSecret": ..., "issuer": ..., "scopes": ...}``
refines the host's ``OAuth`` for one server (docs/config.md). With
``"grant"`` the object describes how the client gets tokens as itself
(docs/oauth.md#machine-identity):

* ``"client_credentials"``: ``clientId`` with ``clientSecret`` (and
  ``authMethod``), or with ``privateKey`` / ``privateKeyFile`` (and
  ``algorithm``);
* ``"workload_identity"``: ``assertionFile`` (read afresh for each token: a
  platform token file) or ``assertion``, and ``clientId``;
* ``"enterprise_managed"``: ``identityAssertionFile`` or
  ``identityAssertion``, ``idpTokenEndpoint``, ``idpClientId``,
  ``idpClientSecret``, ``subjectTokenType``, and the client at the
  authorization server as for client credentials.

Every grant needs ``issuer`` (or ``authorizationServer``): its credentials
go to that authorization server only.

Values come already expanded (``${env:...}`` and the rest); a grant that
cannot be made raises ``ValueError``, which the caller reports as the file's
error at its ``oauth`` key.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, Optional

if TYPE_CHECKING:
    from .config import HttpServer
    from .oauth import Grant

__all__ = ["OAUTH_KEYS", "file_grant", "oauth_settings"]

#: The ``oauth`` keys of a configuration file and the ``OAuth`` settings they stand for.
OAUTH_KEYS = {"clientId": "client_id", "clientSecret": "client_secret", "issuer": "client_issuer", "authorizationServer": "client_issuer",
              "clientMetadataUrl": "client_metadata_url", "clientName": "client_name", "scopes": "scopes"}

GRANTS = ("client_credentials", "workload_identity", "enterprise_managed")


def oauth_settings(server: "HttpServer") -> dict[str, Any]:
    """The file's ``oauth`` object of ``server`` as ``OAuth`` settings (``scopes`` as a list); unknown keys are left out.

    With a ``"grant"``, the settings are the grant (``grant=``) and the scopes.
    """
    oauth = server.oauth or {}
    settings: dict[str, Any] = {}
    for key, value in oauth.items():
        name = OAUTH_KEYS.get(key)
        if name == "scopes" and isinstance(value, str):
            value = value.split()
        if name is not None:
            settings[name] = value
    grant = file_grant(oauth)
    if grant is not None:
        return {"grant": grant, **({"scopes": settings["scopes"]} if "scopes" in settings else {})}
    return settings


def _text(oauth: Mapping[str, Any], key: str) -> Optional[str]:
    value = oauth.get(key)
    if value is not None and not isinstance(value, str):
        raise ValueError(f"oauth.{key} must be a string")
    return value


def _reader(path: str, what: str) -> Callable[[], str]:
    """Reads ``path`` afresh each time (a platform rotates the token in it)."""

    def read() -> str:
        return Path(path).read_text(encoding="utf-8").strip()

    read.__qualname__ = f"read {what}"
    return read


def file_grant(oauth: Mapping[str, Any]) -> Optional["Grant"]:
    """The machine grant an ``oauth`` object describes (None without ``"grant"``); ValueError when it cannot be made."""
    kind = oauth.get("grant")
    if kind is None:
        return None
    if kind not in GRANTS:
        raise ValueError(f"oauth.grant must be one of {', '.join(GRANTS)}")
    from .oauth import ClientCredentials, EnterpriseManaged, WorkloadIdentity

    issuer = _text(oauth, "issuer") or _text(oauth, "authorizationServer")
    if not issuer:
        raise ValueError(
            f"oauth.issuer is needed for the {kind} grant: its credentials go only to the authorization server the file names, "
            "never to one the server names"
        )
    key = _text(oauth, "privateKey") or _text(oauth, "privateKeyFile")
    if kind == "client_credentials":
        client_id = _text(oauth, "clientId")
        if client_id is None:
            raise ValueError("oauth.clientId is needed for the client_credentials grant")
        return ClientCredentials(
            client_id, secret=_text(oauth, "clientSecret"), private_key=key, algorithm=_text(oauth, "algorithm"),
            method=_text(oauth, "authMethod"), issuer=issuer,
        )
    if kind == "workload_identity":
        source = _text(oauth, "assertionFile")
        assertion: Any = _reader(source, "workload assertion") if source else _text(oauth, "assertion")
        if assertion is None:
            raise ValueError("oauth.assertionFile (or oauth.assertion) is needed for the workload_identity grant")
        return WorkloadIdentity(assertion, client_id=_text(oauth, "clientId"), issuer=issuer)
    source = _text(oauth, "identityAssertionFile")
    identity: Any = _reader(source, "identity assertion") if source else _text(oauth, "identityAssertion")
    if identity is None:
        raise ValueError("oauth.identityAssertionFile (or oauth.identityAssertion) is needed for the enterprise_managed grant")
    return EnterpriseManaged(
        identity_assertion=identity, idp_token_endpoint=_text(oauth, "idpTokenEndpoint") or "", client_id=_text(oauth, "clientId") or "",
        secret=_text(oauth, "clientSecret"), private_key=key, algorithm=_text(oauth, "algorithm"), issuer=issuer,
        idp_client_id=_text(oauth, "idpClientId"), idp_client_secret=_text(oauth, "idpClientSecret"),
        subject_token_type=_text(oauth, "subjectTokenType") or "id_token",
    )
