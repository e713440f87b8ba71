"""mcp_input_sync: a synchronous MCP client that answers servers' requests for input.

Write one :class:`InputHandler` subclass with plain methods; the client does
the threads, timeouts, cancellation and capability advertisement::

    import mcp_input_sync as mis

    class MyHandler(mis.InputHandler):
        def handle_elicitation(self, params, ctx):
            return {"action": "accept", "content": {"name": "Ada"}}

    with mis.connect_stdio(["python", "server.py"], handler=MyHandler()) as client:
        result = client.call_tool("greet")
"""

from __future__ import annotations

import logging as _logging

# A library's records are the host's to show: without logging set up, none reaches stderr through Python's
# last-resort handler (a warning printed beside the exception that says the same thing).
_logging.getLogger("mcp_input_sync").addHandler(_logging.NullHandler())

from . import reflect
from ._era import EraCache
from ._protocol.modern import PendingCall
from ._version import __version__
import typing as _typing

from .cache import Cache, MemoryCache, RedisCache
from .client import Client, ClientState, Subscription, connect_http, connect_stdio
from .errors import ClientError, InputRefused
from .handler import InputContext, InputHandler
from .options import Reconnect, Retry
from .telemetry import Telemetry

if _typing.TYPE_CHECKING:
    from .config import ConfigError, HttpServer, ServerConfig, SseServer, StdioServer, load_config
    from .group import GroupError, ServerGroup, connect, connect_all
    from .pool import ClientPool

#: Names loaded on first use, so that importing the package stays as cheap as it was.
_LAZY = {
    "ConfigError": "config", "HttpServer": "config", "ServerConfig": "config", "SseServer": "config", "StdioServer": "config",
    "load_config": "config", "GroupError": "group", "ServerGroup": "group", "connect": "group", "connect_all": "group",
    "ClientPool": "pool",
}


def __getattr__(name: str) -> _typing.Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'mcp_input_sync' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value

__all__ = [
    "Cache",
    "Client",
    "ClientError",
    "ClientPool",
    "ClientState",
    "ConfigError",
    "EraCache",
    "GroupError",
    "HttpServer",
    "InputContext",
    "InputHandler",
    "InputRefused",
    "MemoryCache",
    "PendingCall",
    "Reconnect",
    "RedisCache",
    "Retry",
    "ServerConfig",
    "ServerGroup",
    "SseServer",
    "StdioServer",
    "Subscription",
    "Telemetry",
    "__version__",
    "connect",
    "connect_all",
    "connect_http",
    "connect_stdio",
    "load_config",
    "reflect",
]
