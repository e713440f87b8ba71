"""The command line's configuration files: which server of the file a command means, and every server's tools."""

from __future__ import annotations

import getpass
import json
import sys
from typing import Any, Mapping, Optional

from .config import ConfigError, ServerConfig, StdioServer, load_config
from .errors import ClientError
from .group import connect_all

#: Exit codes shared with ``__main__``.
EXIT_OK = 0
EXIT_CONNECTION = 4


def ask_input(ident: str, spec: Mapping[str, Any]) -> Optional[str]:
    """``${input:ID}`` at the terminal (hidden for a password); None when nobody is there."""
    try:
        if sys.stdin is None or not sys.stdin.isatty():
            return None
    except (ValueError, OSError):
        return None
    label = str(spec.get("description") or ident)
    if spec.get("password"):
        return getpass.getpass(f"{label}: ", stream=sys.stderr)
    print(f"{label}: ", end="", file=sys.stderr, flush=True)
    return sys.stdin.readline().rstrip("\n")


_loaded: dict[tuple[str, Optional[str]], dict[str, ServerConfig]] = {}


def servers_of(path: str, name: Optional[str] = None) -> dict[str, ServerConfig]:
    """The servers of the file (only ``name`` when given), read once per command: an input is asked once.

    Raises ConfigError when the file cannot be used or names no server.
    """
    key = (path, name)
    if key not in _loaded:
        servers = load_config(path, prompt=ask_input, names=None if name is None else [name])
        if not servers:
            raise ConfigError("names no server", file=path)
        _loaded[key] = servers
    return _loaded[key]


def pick(servers: Mapping[str, ServerConfig], name: Optional[str], tool: Optional[str]) -> tuple[ServerConfig, Optional[str]]:
    """The server a command means, and the tool name with the server's prefix taken off.

    ``--server NAME`` names it; else a ``server/tool`` TOOL (the longest server
    name that prefixes it, as a group resolves names); else the file's only
    server. Raises ConfigError saying what to give.
    """
    if name is not None:
        if name not in servers:
            raise ConfigError(f"is not in the file (it has {', '.join(servers) or 'no server'})", server=name)
        return servers[name], tool
    if tool is not None:
        for server in sorted(servers, key=len, reverse=True):
            if tool.startswith(server + "/") and len(tool) > len(server) + 1:
                return servers[server], tool[len(server) + 1 :]
    if len(servers) == 1:
        return next(iter(servers.values())), tool
    raise ConfigError(f"names {len(servers)} servers: say which with --server NAME (or TOOL as server/tool)")


def announce(servers: Mapping[str, ServerConfig]) -> None:
    """Say on stderr which commands a file found by itself will start (its stdio servers)."""
    for server in servers.values():
        if isinstance(server, StdioServer):
            command = str(getattr(server.command, "template", server.command))  # as the file writes it
            print(f"mcp-input-sync: server {server.name!r} runs {command!r}", file=sys.stderr)


def list_all_tools(servers: Mapping[str, ServerConfig], options: Mapping[str, Any], as_json: bool) -> int:
    """Every server's tools: a table (server, tool, description), or JSON; a server that fails is reported, the rest listed."""
    from .reflect import text

    with connect_all(dict(servers), on_error="report", **options) as group:
        tools = group.list_tools()
        errors = dict(group.errors)
    if as_json:
        print(json.dumps({"tools": tools, "errors": {name: str(exc) for name, exc in errors.items()}}, ensure_ascii=False, indent=2))
    else:
        rows = [(tool["server"], tool["tool"], str(tool.get("title") or tool.get("description") or "")) for tool in tools]
        width_server = max([len("SERVER"), *(len(text(r[0], 40)) for r in rows)])
        width_tool = max([len("TOOL"), *(len(text(r[1], 60)) for r in rows)])
        print(f"{'SERVER':<{width_server}}  {'TOOL':<{width_tool}}  DESCRIPTION")
        for server, tool, description in rows:
            print(f"{text(server, 40):<{width_server}}  {text(tool, 60):<{width_tool}}  {text(description.splitlines()[0] if description else '', 100)}")
    for name, exc in errors.items():
        message = exc.message if isinstance(exc, ClientError) else str(exc)
        print(f"mcp-input-sync: server {name!r}: {message}", file=sys.stderr)
    return EXIT_CONNECTION if errors else EXIT_OK
