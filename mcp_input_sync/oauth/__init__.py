"""OAuth 2.1 for protected MCP servers, as the MCP authorization specification defines it.

Pass an :class:`OAuth` to :func:`mcp_input_sync.connect_http`::

    import mcp_input_sync as mis
    from mcp_input_sync.oauth import OAuth, Browser, FileStore

    auth = OAuth(consent=Browser(), store=FileStore())
    with mis.connect_http("https://mcp.example.com/mcp", handler=MyHandler(), auth=auth) as client:
        client.call_tool("search", {"q": "tiles"})

The first request that meets a 401 discovers the authorization server,
registers the client, asks the user's consent and stores the tokens; later
requests carry the token, refresh it before it expires, and ask for more
scopes when the server says so. A worker or a backend that calls as itself
passes a machine grant instead of a consent: ``OAuth(grant=ClientCredentials(...))``.
docs/oauth.md tells the whole story: the
ways of consenting, the token stores, and what is sent where.
"""

from __future__ import annotations

from .._protocol.oauth_flow import Tokens
from ._fetch import new_session
from .consent import Browser, Consent, ConsentRound, Headless
from .grants import ClientCredentials, EnterpriseManaged, Grant, WorkloadIdentity
from .provider import OAuth
from .stores import FileStore, MemoryStore, TokenStore

__all__ = [
    "Browser", "ClientCredentials", "Consent", "ConsentRound", "EnterpriseManaged", "FileStore", "Grant", "Headless", "MemoryStore",
    "OAuth", "TokenStore", "Tokens", "WorkloadIdentity", "new_session",
]
