"""Opening described servers: one (:func:`connect`), or many at once as a group (:func:`connect_all`).

::

    import mcp_input_sync as mis

    with mis.connect_all(".mcp.json", handler=MyHandler()) as group:
        for tool in group.list_tools():          # names like "notes/search"
            print(tool["name"])
        group.call_tool("notes/search", {"q": "tiles"})
        group["notes"].read_resource("file:///notes.txt")   # one server's own Client

One handler answers every server's requests; ``ctx.server_id`` is the
server's name in the file. Each server has its own ``Client``, so limits,
budgets and timeouts stay per server. Servers open and close in parallel.
docs/config.md tells the whole story.
"""

from __future__ import annotations

import os
import threading
from typing import Any, Iterator, Mapping, Optional, Sequence, Union

from .client import Client, connect_http, connect_stdio
from ._config_oauth import oauth_settings
from .config import ConfigError, HttpServer, ServerConfig, SseServer, StdioServer, load_config, secrets_of
from .errors import ClientError

__all__ = ["GroupError", "ServerGroup", "connect", "connect_all"]

#: What stands between a server's name and a tool's in :meth:`ServerGroup.list_tools` (a tool name never holds it).
SEPARATOR = "/"

ConfigSource = Union[str, "os.PathLike[str]", Mapping[str, Any]]


def _servers(config: Any, failed: dict[str, ConfigError]) -> dict[str, ServerConfig]:
    """Described servers from a path, a parsed file, or a mapping of already described ones (``{}``: none).

    Each server of a file fails alone: one that cannot be described is left out and its ConfigError put in ``failed``.
    """
    if isinstance(config, Mapping) and all(isinstance(v, ServerConfig) for v in config.values()):
        return dict(config)
    return load_config(config, errors=failed)


def _unknown(name: str, servers: Mapping[str, Any], failed: Mapping[str, Any]) -> ConfigError:
    return ConfigError(f"is not in the configuration (it has {', '.join(sorted([*servers, *failed])) or 'no server'})", server=name)


def _scrubbed(exc: ClientError, server: ServerConfig) -> ClientError:
    """``exc`` with every value a placeholder put into ``server``'s description replaced by ``***``."""
    message = exc.message
    for secret in secrets_of(server):
        message = message.replace(secret, "***")
    if message == exc.message:
        return exc
    return ClientError(exc.kind, message, code=exc.code, check=exc.check)


def connect(server: Union[ServerConfig, str], *, config: Optional[ConfigSource] = None, handler: Any = None, **options: Any) -> Client:
    """Open one described server (or the server ``server`` names in ``config``); the handshake runs before this returns.

    ``server_id`` defaults to the server's name. Other options go to
    :func:`~mcp_input_sync.connect_stdio` or :func:`~mcp_input_sync.connect_http`
    (``auth=`` included, for an HTTP server: an ``OAuth`` there is refined
    by the file's ``oauth`` object for that server, e.g. its ``clientId``;
    ``pool_size=``, ``cert=`` and ``proxies=`` default to the file's ``poolSize``, ``cert`` and
    ``proxies``; the file's ``proxies`` carry the ``OAuth``'s exchanges too, unless it has proxies of its own).

    Raises:
        ConfigError: a name that ``config`` does not hold, or no ``config`` for a name;
            the named server's own ConfigError when it cannot be described (the
            other servers of the file do not matter).
        ClientError: the server cannot be opened; ``kind="transport"`` for a
            server on the HTTP+SSE transport of 2024-11-05, which this library does not speak.
    """
    if isinstance(server, str):
        if config is None:
            raise ConfigError("connect(name) needs config=", server=server)
        failed: dict[str, ConfigError] = {}
        servers = _servers(config, failed)
        if server in failed:
            raise failed[server]
        if server not in servers:
            raise _unknown(server, servers, failed)
        server = servers[server]
    if not isinstance(server, ServerConfig):
        raise TypeError("connect() takes a described server (from load_config) or its name")
    options.setdefault("server_id", server.name)
    try:
        return _open(server, handler, options)
    except ClientError as exc:
        raise _scrubbed(exc, server) from None


def _open(server: ServerConfig, handler: Any, options: dict[str, Any]) -> Client:
    if isinstance(server, StdioServer):
        options.pop("auth", None)
        return connect_stdio(server.argv, env=dict(server.env), cwd=server.cwd, inherit_env=server.inherit_env, handler=handler, **options)
    if isinstance(server, SseServer):
        raise ClientError(
            "transport",
            f"server {server.name!r} uses the HTTP+SSE transport of 2024-11-05, which this library does not speak; "
            "ask for its Streamable HTTP endpoint (often the same URL ending in /mcp) and set \"type\": \"http\"",
        )
    assert isinstance(server, HttpServer)
    auth = options.get("auth")
    configurable = callable(getattr(auth, "configured", None))
    if (server.oauth or server.proxies) and (configurable or (auth is None and "grant" in (server.oauth or {}))):
        try:
            settings = oauth_settings(server) if server.oauth else {}
            if server.proxies is not None and getattr(auth, "proxies", None) is None:  # the file's proxies carry the
                settings["proxies"] = dict(server.proxies)  # authorization exchanges too, unless the host's OAuth has its own
            if auth is None:  # a machine grant needs no OAuth of the host's: one of its own, with a memory store
                from .oauth import OAuth

                options["auth"] = OAuth(**settings)
            elif settings:
                options["auth"] = auth.configured(**settings)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"cannot be used: {exc}", file=server.source, server=server.name, key="oauth") from None
    proxies = None if server.proxies is None else dict(server.proxies)
    for option, value in (("pool_size", server.pool_size), ("cert", server.cert), ("proxies", proxies)):
        if value is not None:  # the file's "poolSize", "cert" and "proxies"; the host's own options win
            options.setdefault(option, value)
    return connect_http(server.url, headers=dict(server.headers) or None, handler=handler, **options)


class GroupError(ClientError):
    """Some servers of :func:`connect_all` did not open; ``errors`` maps each one's name to its error.

    ``kind`` is the first failure's kind. The servers that opened were closed again.
    """

    def __init__(self, errors: Mapping[str, BaseException]) -> None:
        if not errors:
            raise ValueError("a GroupError names at least one server")
        first = next(iter(errors.values()))
        kind = first.kind if isinstance(first, ClientError) else "transport"
        names = ", ".join(f"{name!r} ({type(exc).__name__}: {exc})" for name, exc in errors.items())  # repr: a name may hold escape codes
        super().__init__(kind, f"{len(errors)} server(s) did not open: {names}")
        self.errors = dict(errors)


#: The most servers a group opens (or lists) at once.
MAX_PARALLEL = 16


def _in_parallel(
    jobs: Mapping[str, Any], *, timeout: Optional[float] = None, undo: Optional[Any] = None, most: int = MAX_PARALLEL
) -> dict[str, tuple[bool, Any]]:
    """Run the jobs on at most ``most`` threads (:data:`MAX_PARALLEL`); each name -> (True, result) or (False, exception).

    A file may name any number of servers: at most that many open at once,
    never a thread each. When the wait is interrupted (Ctrl-C), the jobs not
    started never start, ``undo(result)`` is called for each job that
    succeeded, as late as it finishes (within ``UNDO_WAIT`` seconds), and the
    interruption goes on: nothing a job opened is left behind.
    """
    results: dict[str, tuple[bool, Any]] = {}
    lock = threading.Lock()
    interrupted = threading.Event()
    waiting = list(jobs.items())[::-1]  # popped from the end: in the file's order

    def run(name: str, job: Any) -> None:
        try:
            outcome: tuple[bool, Any] = (True, job())
        except BaseException as exc:  # noqa: BLE001 - reported per name
            outcome = (False, exc)
        with lock:
            results[name] = outcome
            late = interrupted.is_set()
        if late and outcome[0] and undo is not None:
            undo(outcome[1])

    def work() -> None:
        while True:
            with lock:
                if interrupted.is_set() or not waiting:
                    return
                name, job = waiting.pop()
            run(name, job)

    threads = [threading.Thread(target=work, name=f"mcp-input-sync-group-{i}", daemon=True) for i in range(min(len(jobs), most))]
    for thread in threads:
        thread.start()
    try:
        for thread in threads:
            thread.join(timeout)
    except BaseException:
        with lock:
            interrupted.set()
            done = [value for ok, value in results.values() if ok]
        if undo is not None:
            for value in done:
                undo(value)
        raise
    return results


class ServerGroup:
    """Several open servers, by name (from :func:`connect_all`); a context manager that closes them all."""

    def __init__(self, clients: Mapping[str, Client], errors: Mapping[str, BaseException], *, separator: str = SEPARATOR) -> None:
        #: The open clients, by server name, in the configuration's order.
        self.clients: dict[str, Client] = dict(clients)
        #: The servers that did not open (or whose tools could not be listed), by name.
        self.errors: dict[str, BaseException] = dict(errors)
        self.separator = separator
        self._routes: dict[str, tuple[str, str]] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"ServerGroup(open={list(self.clients)!r}, failed={list(self.errors)!r})"

    def __enter__(self) -> "ServerGroup":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __getitem__(self, name: str) -> Client:
        """The open client of server ``name``; KeyError (saying why) for one that failed or is unknown."""
        if name in self.clients:
            return self.clients[name]
        if name in self.errors:
            raise KeyError(f"server {name!r} did not open: {self.errors[name]}")
        raise KeyError(f"no server {name!r} in this group")

    def __contains__(self, name: object) -> bool:
        return name in self.clients

    def __iter__(self) -> Iterator[str]:
        return iter(self.clients)

    def __len__(self) -> int:
        return len(self.clients)

    def qualify(self, server: str, tool: str) -> str:
        """A tool's name in the group: ``server/tool``."""
        return f"{server}{self.separator}{tool}"

    def resolve(self, qualified: str) -> tuple[str, str]:
        """The server and the tool a group tool name stands for (as :meth:`list_tools` named it).

        Raises:
            KeyError: a name that names no open server; for a server that did
                not open, the message names it and its error (``group.errors``).
        """
        with self._lock:
            route = self._routes.get(qualified)
        if route is not None:
            return route
        for name in sorted(self.errors, key=len, reverse=True):
            prefix = name + self.separator
            if qualified.startswith(prefix) and len(qualified) > len(prefix) and name not in self.clients:
                raise KeyError(f"server {name!r} did not open, so {qualified!r} cannot be called: {self.errors[name]} (group.errors[{name!r}])")
        # not listed yet: the longest server name that prefixes it, then the separator
        for name in sorted(self.clients, key=len, reverse=True):
            prefix = name + self.separator
            if qualified.startswith(prefix) and len(qualified) > len(prefix):
                return name, qualified[len(prefix) :]
        raise KeyError(f"{qualified!r} names no tool of an open server (tool names are server{self.separator}tool)")

    def list_tools(self) -> list[dict[str, Any]]:
        """Every open server's tools, in parallel, each named ``server/tool`` (with ``"server"`` and ``"tool"`` added).

        A server whose listing fails is left out and its error kept in
        :attr:`errors`; the others are listed. Two servers whose names would
        make one tool name twice cannot both keep it: the later one's tool is
        left out (a warning is logged).
        """
        results = _in_parallel({name: client.list_tools for name, client in self.clients.items()})
        tools: list[dict[str, Any]] = []
        routes: dict[str, tuple[str, str]] = {}
        for name in self.clients:
            ok, value = results.get(name, (False, ClientError("timeout", "the listing did not end")))
            if not ok:
                self.errors[name] = value
                continue
            for tool in value:
                tool_name = tool.get("name") if isinstance(tool, Mapping) else None
                if not isinstance(tool_name, str):
                    continue
                qualified = self.qualify(name, tool_name)
                if qualified in routes:
                    import logging

                    logging.getLogger("mcp_input_sync").warning("mcp_input_sync: two servers make the tool name %r; the second is left out", qualified)
                    continue
                routes[qualified] = (name, tool_name)
                tools.append({**tool, "name": qualified, "server": name, "tool": tool_name})
        with self._lock:
            self._routes = routes
        return tools

    def call_tool(self, qualified: str, arguments: Optional[Mapping[str, Any]] = None, **options: Any) -> Any:
        """Call the tool ``qualified`` (``server/tool``) on its server; the options are ``Client.call_tool``'s."""
        server, tool = self.resolve(qualified)
        return self[server].call_tool(tool, arguments, **options)

    def close(self, timeout: float = 5.0) -> None:
        """Close every client in parallel, each within ``timeout`` real seconds (idempotent)."""
        # each close is bounded: all at once, so the group closes within timeout
        closes = {name: (lambda c=client: c.close(timeout)) for name, client in self.clients.items()}
        _in_parallel(closes, timeout=timeout + 1.0, most=len(closes))


def connect_all(
    config: ConfigSource,
    *,
    handler: Any = None,
    names: Optional[Sequence[str]] = None,
    on_error: str = "raise",
    separator: str = SEPARATOR,
    **options: Any,
) -> ServerGroup:
    """Open the servers of ``config`` (a path, a parsed file, or :func:`load_config`'s result) in parallel.

    Args:
        handler: the one InputHandler for every server (``ctx.server_id`` is the server's name).
        names: only these servers (default: all of them).
        on_error: ``"raise"`` (default): if any server does not open, close
            the others and raise :class:`GroupError` (a server of the file
            that cannot be described raises its ConfigError before any opens);
            ``"report"``: keep the ones that opened and list the others in
            ``group.errors``, a server that cannot be described with its ConfigError.
        separator: between server and tool in the group's tool names (default ``"/"``).
        **options: for every server's client (``timeout``, ``auth``, limits, ...).

    Raises:
        ConfigError: the configuration cannot be read, names a server it does not
            have, or (``on_error="raise"``) a chosen server cannot be described.
        GroupError: with ``on_error="raise"``, the servers that did not open and why.
    """
    if on_error not in ("raise", "report"):
        raise ValueError("on_error must be 'raise' or 'report'")
    if isinstance(names, str):
        raise TypeError("names must be a list of server names, not one string")
    failed: dict[str, ConfigError] = {}
    servers = _servers(config, failed)
    chosen = [*servers, *failed] if names is None else list(names)
    for name in chosen:
        if name not in servers and name not in failed:
            raise _unknown(name, servers, failed)
    unusable = {name: failed[name] for name in chosen if name in failed}
    if unusable and on_error == "raise":
        raise next(iter(unusable.values()))
    results = _in_parallel(
        {name: (lambda s=servers[name]: connect(s, handler=handler, **options)) for name in chosen if name in servers},
        undo=lambda client: client.close(),
    )
    clients = {name: results[name][1] for name in chosen if results.get(name, (False, None))[0]}
    errors: dict[str, BaseException] = {name: results[name][1] for name in chosen if name in results and not results[name][0]}
    mistakes = [
        exc for name, exc in errors.items()
        if isinstance(exc, (TypeError, ValueError)) and not isinstance(exc, ClientError) and not (isinstance(exc, ConfigError) and exc.server == name)
    ]
    if mistakes:  # the caller's own error (a bad option): not a server's (an entry found unusable as it opens, its oauth, is that server's)
        ServerGroup(clients, {}).close()
        raise mistakes[0]
    every = {**errors, **unusable}
    group = ServerGroup(clients, {name: every[name] for name in chosen if name in every}, separator=separator)
    if errors and on_error == "raise":
        group.close()
        raise GroupError(errors)
    return group
