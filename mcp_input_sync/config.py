"""Servers from the configuration files editors already keep: Claude Desktop, Cursor, Claude Code, VS Code.

``mis.load_config(".mcp.json")`` returns ``{name: StdioServer | HttpServer | SseServer}``; ``mis.connect`` opens one.

Shapes read (docs/config.md has an example of each):

* ``{"mcpServers": {NAME: {...}}}`` (Claude Desktop, Cursor, Claude Code's
  ``.mcp.json``), ``{"servers": {NAME: {...}}}`` (VS Code's ``mcp.json``),
  and ``{"mcp": {"servers": {...}}}`` (VS Code's ``settings.json``);
* a server is ``{"command", "args", "env", "cwd", "envFile", "inheritEnv"}`` (stdio) or ``{"url", "headers",
  "oauth", "poolSize", "cert", "proxies"}``; ``"type"`` says which (``"stdio"``, ``"http"``,
  ``"streamable-http"``, ``"sse"``), and without it ``command`` means stdio and ``url`` means Streamable
  HTTP, as the editors read it; a relative path (``envFile``, ``cert``) is taken from ``${workspaceFolder}``;
* comments and trailing commas, which VS Code allows, are read.

Placeholders, in ``command``, ``args``, ``env``, ``cwd``, ``envFile``,
``url``, ``headers``, ``cert`` and ``proxies``: ``${VAR}``, ``${VAR:-default}``,
``${env:VAR}``, ``${input:ID}`` (asks the ``prompt`` given to :func:`load_config`),
``${workspaceFolder}`` and ``${userHome}``. A variable that is not set and
has no default is a :class:`ConfigError` naming it and its server, raised
while the file is read (or, with ``errors=``, kept for that server alone):
no server ever receives a literal ``${VAR}``.

:func:`outline` says what each server would run or reach without expanding
anything, for a host to show before it reads a file it did not write.

Every failure is a :class:`ConfigError` that names the file, the server and the key, with the file's escape codes
written out. Unknown keys are kept (``extra``) and otherwise ignored. The reprs show where a value came from
(``"${API_KEY}"``), never the value of a variable, and hide the values of ``env`` and ``headers`` and a
URL's (a proxy's too) user information and query.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from types import MappingProxyType
from typing import Any, Callable, Collection, Mapping, NamedTuple, Optional, Union

from ._config_values import cert_of, local_path, masked_url, proxies_of, route_repr, string_map  # stdlib-only too
from ._protocol.jsonc import strip_jsonc  # pure and stdlib-only, as this module is

__all__ = ["ConfigError", "HttpServer", "Outline", "ServerConfig", "SseServer", "StdioServer", "find_config", "load_config", "outline", "read_config"]

#: The files :func:`find_config` looks for in a folder, in this order.
CONFIG_FILES = (".mcp.json", "mcp.json")
#: The largest configuration file read, in bytes.
MAX_CONFIG_BYTES = 4 * 1024 * 1024
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PLACEHOLDER = re.compile(r"\$\{([^{}]*)\}")
_STDIO_KEYS = frozenset({"type", "command", "args", "env", "cwd", "envFile", "inheritEnv"})
_HTTP_KEYS = frozenset({"type", "url", "headers", "oauth", "poolSize", "cert", "proxies"})

Prompt = Callable[[str, Mapping[str, Any]], Optional[str]]


#: The longest message of a :class:`ConfigError`, in characters (a name from the file may be any length).
MAX_MESSAGE_CHARS = 2000


def _escaped(text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    """``text`` cut to ``limit``, each character Python does not print as itself (a control, format, bidi or
    separator character) written as its escape (``\\x1b``, ``\\u202e``): a file's text never acts on a terminal."""
    cut = text[:limit]
    if not cut.isprintable():
        cut = "".join(char if char.isprintable() else repr(char)[1:-1] for char in cut)
    return cut[:limit] + "…" if len(text) > limit or len(cut) > limit else cut


def _listed(names: Collection[Any]) -> str:
    """Server names for a message: the first 20, each cut to 100 characters."""
    shown = [str(name)[:100] for name in list(names)[:20]]
    more = len(names) - len(shown)
    return ", ".join(shown) + (f", and {more} more" if more > 0 else "") if shown else "no server"


class ConfigError(ValueError):
    """A configuration that cannot be used: ``file``, ``server`` and ``key`` say where (each may be None).

    The message escapes every character of the file's text that would act on a
    terminal (``\\x1b``, ``\\u202e``) and is at most about
    :data:`MAX_MESSAGE_CHARS` long; ``server`` and ``key`` keep the names as the file writes them.
    """

    def __init__(self, message: str, *, file: Optional[str] = None, server: Optional[str] = None, key: Optional[str] = None) -> None:
        where = [part for part in (file, f"server {server!r}" if server is not None else None, f"key {key!r}" if key is not None else None) if part]
        super().__init__(_escaped(": ".join([*where, message])))
        self.file = file
        self.server = server
        self.key = key
        self.reason = _escaped(message)


# ---------------------------------------------------------------------------- descriptions


class _Text(str):
    """A string read from the file, remembering its template (for reprs) and what its placeholders became (to scrub)."""

    template: str
    substituted: tuple[str, ...]

    def __new__(cls, value: str, template: str, substituted: tuple[str, ...] = ()) -> "_Text":
        text = super().__new__(cls, value)
        text.template = template
        text.substituted = substituted
        return text


def secrets_of(server: "ServerConfig") -> list[str]:
    """The values placeholders put into ``server``'s description, longest first: what an error about it must not show."""
    found: set[str] = set()
    values: list[Any] = []
    for slot in ("command", "cwd", "url"):
        values.append(getattr(server, slot, None))
    cert = getattr(server, "cert", None)
    values += list(getattr(server, "args", ())) + ([cert] if isinstance(cert, str) else list(cert or ()))
    values += list((getattr(server, "proxies", None) or {}).values())
    values += list(getattr(server, "env", {}).values()) + list(getattr(server, "headers", {}).values())
    oauth = getattr(server, "oauth", None) or {}
    values += [v for v in oauth.values() if isinstance(v, str)] + [x for v in oauth.values() if isinstance(v, list) for x in v]
    for value in values:
        found.update(piece for piece in getattr(value, "substituted", ()) if len(piece) >= 3)
    return sorted(found, key=len, reverse=True)


def _shown(value: str) -> str:
    """How a value appears in a repr: its template when placeholders made it, else itself."""
    template = getattr(value, "template", value)
    return repr(str(template))


def _hidden(mapping: Mapping[str, str]) -> str:
    """A mapping for a repr: the names, every value hidden (a literal part of a value may be a secret too)."""
    return "{" + ", ".join(f"{key!r}: '***'" for key in mapping) + "}"


def _shown_url(value: str) -> str:
    """A URL for a repr: its template, with any user information and query hidden."""
    return repr(masked_url(value))


class ServerConfig:
    """One server of a configuration file (immutable). ``name`` is its key in the file; ``source`` the file's path."""

    __slots__ = ("name", "source", "extra")
    kind = ""
    name: str
    source: Optional[str]
    extra: Mapping[str, Any]

    def __init__(self, name: str, source: Optional[str], extra: Mapping[str, Any]) -> None:
        for slot, value in (("name", name), ("source", source), ("extra", MappingProxyType(dict(extra)))):
            object.__setattr__(self, slot, value)

    def __setattr__(self, key: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __delattr__(self, key: str) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")

    def _fields(self) -> tuple[Any, ...]:
        return tuple(getattr(self, slot) for cls in type(self).__mro__ for slot in getattr(cls, "__slots__", ()))

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and isinstance(other, ServerConfig) and self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash((type(self).__name__, self.name, self.source))


class StdioServer(ServerConfig):
    """A server started as a command: ``command`` and ``args`` (strings), ``env`` (``envFile``'s values first), ``cwd``.

    The process gets ``env`` on top of a short allow-list of this process's variables (``HOME``, ``PATH``...), or on
    top of all of them when ``inherit_env`` (the file's ``"inheritEnv": true``) is set."""

    __slots__ = ("command", "args", "env", "cwd", "inherit_env")
    kind = "stdio"
    command: str
    args: tuple[str, ...]
    env: Mapping[str, str]
    cwd: Optional[str]
    inherit_env: bool

    def __init__(self, name: str, command: str, args: tuple[str, ...] = (), env: Optional[Mapping[str, str]] = None,
                 cwd: Optional[str] = None, *, source: Optional[str] = None, extra: Optional[Mapping[str, Any]] = None,
                 inherit_env: bool = False) -> None:
        super().__init__(name, source, extra or {})
        for slot, value in (("command", command), ("args", tuple(args)), ("env", MappingProxyType(dict(env or {}))), ("cwd", cwd),
                            ("inherit_env", bool(inherit_env))):
            object.__setattr__(self, slot, value)

    @property
    def argv(self) -> list[str]:
        """``[command, *args]``, as ``connect_stdio`` takes it."""
        return [self.command, *self.args]

    def __repr__(self) -> str:
        args = ", ".join(_shown(arg) for arg in self.args) + ("," if len(self.args) == 1 else "")
        cwd = None if self.cwd is None else _shown(self.cwd)
        inherit = ", inherit_env=True" if self.inherit_env else ""
        return f"StdioServer(name={self.name!r}, command={_shown(self.command)}, args=({args}), env={_hidden(self.env)}, cwd={cwd}{inherit})"


class HttpServer(ServerConfig):
    """A Streamable HTTP server: ``url``, ``headers`` sent with every request, ``oauth``, the file's OAuth settings
    for it (``clientId``, ``clientSecret``, ``issuer``, ``scopes``) or None, ``pool_size`` (``"poolSize"``) or None,
    ``cert`` (a client certificate's path, or the paths of the certificate and its key) or None, and ``proxies``
    (scheme -> proxy URL, as ``requests`` takes them) or None."""

    __slots__ = ("url", "headers", "oauth", "pool_size", "cert", "proxies")
    kind = "http"
    url: str
    headers: Mapping[str, str]
    oauth: Optional[Mapping[str, Any]]
    pool_size: Optional[int]
    cert: Union[None, str, tuple[str, str]]
    proxies: Optional[Mapping[str, str]]

    def __init__(self, name: str, url: str, headers: Optional[Mapping[str, str]] = None, oauth: Optional[Mapping[str, Any]] = None,
                 *, source: Optional[str] = None, extra: Optional[Mapping[str, Any]] = None, pool_size: Optional[int] = None,
                 cert: Union[None, str, tuple[str, str]] = None, proxies: Optional[Mapping[str, str]] = None) -> None:
        super().__init__(name, source, extra or {})
        for slot, value in (("url", url), ("headers", MappingProxyType(dict(headers or {}))), ("pool_size", pool_size),
                            ("oauth", None if oauth is None else MappingProxyType(dict(oauth))), ("cert", cert),
                            ("proxies", None if proxies is None else MappingProxyType(dict(proxies)))):
            object.__setattr__(self, slot, value)

    def __repr__(self) -> str:
        oauth = None if self.oauth is None else sorted(self.oauth)
        route = route_repr(self.cert, self.proxies)
        return f"{type(self).__name__}(name={self.name!r}, url={_shown_url(self.url)}, headers={_hidden(self.headers)}, oauth={oauth!r}{route})"


class SseServer(HttpServer):
    """A server on the HTTP+SSE transport of 2024-11-05: described, but refused when opened (this library does not speak it)."""

    __slots__ = ()
    kind = "sse"


# ---------------------------------------------------------------------------- reading the file


def _read_file(path: Path) -> Any:
    where = str(path)
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_CONFIG_BYTES + 1)
        if len(data) > MAX_CONFIG_BYTES:
            raise ConfigError(f"the file is larger than {MAX_CONFIG_BYTES} bytes", file=where)
        text = data.decode("utf-8-sig")
    except FileNotFoundError:
        raise ConfigError("no such file", file=where) from None
    except (OSError, ValueError) as exc:  # UnicodeDecodeError is a ValueError, as is a NUL in the path
        raise ConfigError(f"cannot be read ({type(exc).__name__})", file=where) from None
    try:
        return json.loads(text)
    except RecursionError:
        raise ConfigError("is nested too deeply", file=where) from None
    except ValueError:
        pass
    try:
        return json.loads(strip_jsonc(text))
    except (ValueError, RecursionError) as exc:
        line = getattr(exc, "lineno", None)
        raise ConfigError("is not JSON" + (f" (line {line})" if line else ""), file=where) from None


def _parse(body: str) -> tuple[str, str, Optional[str]]:
    """A placeholder's body as ``(kind, name, default)``: kind is ``"workspaceFolder"``, ``"userHome"``,
    ``"input"`` (name: the id) or ``"env"`` (name: the variable; default: after ``:-``, else None).
    Raises ValueError for a body that is none of them."""
    if body in ("workspaceFolder", "userHome"):
        return body, "", None
    if body.startswith("input:"):
        return "input", body[len("input:") :], None
    name, has_default, default = body.partition(":-")
    if name.startswith("env:") and not has_default:
        name = name[len("env:") :]
    if not _NAME.fullmatch(name):
        raise ValueError(body)
    return "env", name, default if has_default else None


class _Expander:
    """Expands the placeholders of one file's values (see the module docstring)."""

    #: True for a reader that only records what the placeholders would read (:class:`_Reader`).
    dry = False

    def __init__(self, file: Optional[str], workspace: Path, environ: Mapping[str, str], prompt: Optional[Prompt], inputs: Mapping[str, Any]) -> None:
        self.file = file
        self.workspace = workspace
        self.environ = environ
        self.prompt = prompt
        self.inputs = inputs
        self.answers: dict[str, str] = {}

    def error(self, message: str, server: str, key: str) -> ConfigError:
        return ConfigError(message, file=self.file, server=server, key=key)

    def text(self, value: Any, server: str, key: str) -> str:
        if not isinstance(value, str):
            raise self.error("must be a string", server, key)
        if "${" not in value:
            return value
        pieces: list[str] = []

        def substitute(match: "re.Match[str]") -> str:
            piece = self._one(match.group(1), server, key)
            if not match.group(1) in ("workspaceFolder", "userHome"):
                pieces.append(piece)
            return piece

        expanded = _PLACEHOLDER.sub(substitute, value)
        if "${" in _PLACEHOLDER.sub("", value):
            raise self.error("holds a '${' that opens no placeholder", server, key)
        return _Text(expanded, value, tuple(pieces))

    def _parse(self, body: str, server: str, key: str) -> tuple[str, str, Optional[str]]:
        try:
            return _parse(body)
        except ValueError:
            raise self.error(f"holds an unknown placeholder ${{{body}}}", server, key) from None

    def _one(self, body: str, server: str, key: str) -> str:
        kind, name, default = self._parse(body, server, key)
        if kind == "workspaceFolder":
            return str(self.workspace)
        if kind == "userHome":
            return os.path.expanduser("~")
        if kind == "input":
            return self._input(name, server, key)
        value = self.environ.get(name)
        if value is None or (default is not None and value == ""):
            if default is not None:
                return default
            raise self.error(f"the environment variable {name} is not set (write ${{{name}:-default}} to give a default)", server, key)
        return value

    def _input(self, ident: str, server: str, key: str) -> str:
        if ident in self.answers:
            return self.answers[ident]
        if self.prompt is None:
            raise self.error(f"${{input:{ident}}} needs an answer: pass load_config(..., prompt=...)", server, key)
        spec = self.inputs.get(ident)
        answer = self.prompt(ident, dict(spec) if isinstance(spec, Mapping) else {"id": ident})
        if not isinstance(answer, str):
            raise self.error(f"${{input:{ident}}} got no answer", server, key)
        self.answers[ident] = answer
        return answer


class _Reader(_Expander):
    """Checks a file's values as :class:`_Expander` does but expands nothing (each value stays its template);
    ``reads[server]`` records each placeholder met, as ``(placeholder, key)``."""

    dry = True

    def __init__(self, file: Optional[str], workspace: Path, inputs: Mapping[str, Any]) -> None:
        super().__init__(file, workspace, {}, None, inputs)
        self.reads: dict[str, list[tuple[str, str]]] = {}

    def _one(self, body: str, server: str, key: str) -> str:
        kind, name, _ = self._parse(body, server, key)
        token = (name if kind == "env" else f"input:{name}" if kind == "input" else kind, key)
        if token not in self.reads.setdefault(server, []):
            self.reads[server].append(token)
        return "${" + body + "}"


def _env_file(path: Path, expander: _Expander, server: str) -> dict[str, str]:
    """``KEY=VALUE`` lines (``#`` comments, ``export``, quotes), as VS Code's ``envFile`` reads them."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, ValueError) as exc:
        raise expander.error(f"the env file cannot be read ({type(exc).__name__})", server, "envFile") from None
    found: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("export "):
            line = line[len("export ") :].lstrip()
        name, equals, value = line.partition("=")
        name, value = name.strip(), value.strip()
        if not equals or not _NAME.fullmatch(name):
            raise expander.error(f"line {number} of the env file is not NAME=VALUE", server, "envFile")
        found[name] = _env_value(value)
    return found


def _env_value(value: str) -> str:
    """A value of an env file: quoted (``"..."`` with ``\\n`` escapes, ``'...'`` as it is) up to its closing
    quote, else up to a `` #`` comment."""
    if value[:1] in ("'", '"'):
        quote = value[0]
        end = value.find(quote, 1)
        if end > 0:
            inner = value[1:end]
            return inner.replace("\\n", "\n").replace('\\"', '"') if quote == '"' else inner
    return value.split(" #", 1)[0].rstrip()


def _oauth_value(value: Any, expander: _Expander, server: str, key: str) -> Any:
    """An ``oauth`` setting: strings (and lists of strings) expanded, anything else kept as it is."""
    if isinstance(value, str):
        return expander.text(value, server, key)
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return [expander.text(item, server, f"{key}[{i}]") for i, item in enumerate(value)]
    return value


def _server(name: str, entry: Any, expander: _Expander, source: Optional[str]) -> ServerConfig:
    if not isinstance(entry, Mapping):
        raise expander.error("must be an object", name, "")
    kind = entry.get("type")
    if kind is None:
        kind = "stdio" if "command" in entry else "http" if "url" in entry else None
        if kind is None:
            raise expander.error("names neither a command nor a url", name, "type")
    if kind in ("streamable-http", "streamableHttp", "http"):
        kind = "http"
    if kind == "stdio":
        command = expander.text(entry.get("command"), name, "command")
        if not command:
            raise expander.error("is empty", name, "command")
        raw_args = entry.get("args", [])
        if not isinstance(raw_args, list):
            raise expander.error("must be a list of strings", name, "args")
        args = tuple(expander.text(arg, name, f"args[{i}]") for i, arg in enumerate(raw_args))
        env: dict[str, str] = {}
        if entry.get("envFile") is not None:
            env_path = local_path(entry["envFile"], expander, name, "envFile")
            if not expander.dry:
                env.update(_env_file(Path(env_path), expander, name))
        env.update(string_map(entry.get("env"), expander, name, "env"))
        cwd = None if entry.get("cwd") is None else expander.text(entry["cwd"], name, "cwd")
        inherit = entry.get("inheritEnv", False)
        if not isinstance(inherit, bool):
            raise expander.error("must be true or false", name, "inheritEnv")
        extra = {k: v for k, v in entry.items() if k not in _STDIO_KEYS}
        return StdioServer(name, command, args, env, cwd, source=source, extra=extra, inherit_env=inherit)
    if kind in ("http", "sse"):
        url = expander.text(entry.get("url"), name, "url")
        if not url.startswith(("http://", "https://")) and not (expander.dry and url.startswith("${")):
            raise expander.error("must be an http or https URL", name, "url")
        headers = string_map(entry.get("headers"), expander, name, "headers")
        oauth, size = entry.get("oauth"), entry.get("poolSize")
        if oauth is not None and not isinstance(oauth, Mapping):
            raise expander.error("must be an object", name, "oauth")
        if size is not None and (type(size) is not int or not 1 <= size <= 1024):  # what connect_http's pool_size takes
            raise expander.error("must be a whole number from 1 to 1024", name, "poolSize")
        oauth = None if oauth is None else {key: _oauth_value(value, expander, name, f"oauth.{key}") for key, value in oauth.items()}
        cert, proxies = cert_of(entry.get("cert"), expander, name), proxies_of(entry.get("proxies"), expander, name)
        extra = {k: v for k, v in entry.items() if k not in _HTTP_KEYS}
        return (SseServer if kind == "sse" else HttpServer)(name, url, headers, oauth, source=source, extra=extra, pool_size=size, cert=cert,
                                                            proxies=proxies)
    raise expander.error(f"is {kind!r}; known types are stdio, http and sse", name, "type")


def _workspace(path: Optional[Path]) -> Path:
    """``${workspaceFolder}``: the folder that holds ``.vscode`` for a file in it, else the file's folder."""
    if path is None:
        return Path.cwd()
    folder = path.resolve().parent
    return folder.parent if folder.name == ".vscode" else folder


Source = Union[str, "os.PathLike[str]", Mapping[str, Any]]


def read_config(path: Union[str, "os.PathLike[str]"]) -> Any:
    """A configuration file's JSON (comments and trailing commas allowed), at most :data:`MAX_CONFIG_BYTES`.

    Read it once and hand the result to :func:`outline` and :func:`load_config`
    (with ``file=path``): what was shown is then what is opened, even if the
    file changes in between. Raises ConfigError when it cannot be read.
    """
    return _read_file(Path(os.fspath(path)))


def _servers_in(source: Source, file: Union[str, "os.PathLike[str]", None]) -> tuple[Optional[Path], Mapping[str, Any], dict[str, Any]]:
    """The file's path (None for parsed data without ``file``), its servers' entries, and its ``inputs`` by id."""
    path = Path(os.fspath(file)) if file is not None else None if isinstance(source, Mapping) else Path(os.fspath(source))
    where = None if path is None else str(path)
    data = source if isinstance(source, Mapping) else _read_file(Path(os.fspath(source)))
    if not isinstance(data, Mapping):
        raise ConfigError("is not a JSON object", file=where)
    found = [key for key in ("mcpServers", "servers") if key in data]
    if not found and isinstance(data.get("mcp"), Mapping) and "servers" in data["mcp"]:
        data = data["mcp"]
        found = ["servers"]
    if len(found) != 1:
        raise ConfigError("names its servers in neither 'mcpServers' nor 'servers'" if not found else "has both 'mcpServers' and 'servers'", file=where)
    servers = data[found[0]]
    if not isinstance(servers, Mapping):
        raise ConfigError("must be an object of servers", file=where, key=found[0])
    for name in servers:
        if not isinstance(name, str) or not name:
            raise ConfigError("has a server whose name is not a string", file=where)
    raw_inputs = data.get("inputs", [])
    inputs = {item["id"]: item for item in raw_inputs if isinstance(item, Mapping) and isinstance(item.get("id"), str)} if isinstance(raw_inputs, list) else {}
    return path, servers, inputs


def _wanted(servers: Mapping[str, Any], names: Optional[Collection[str]], where: Optional[str]) -> list[str]:
    """The names to read, in file order; a name the file lacks is a ConfigError."""
    if isinstance(names, str):
        raise TypeError("names must be a collection of server names, not one string")
    for wanted in names or ():
        if wanted not in servers:
            raise ConfigError(f"is not in the file (it has {_listed(servers)})", file=where, server=wanted)
    return [name for name in servers if names is None or name in names]


def load_config(
    source: Source,
    *,
    prompt: Optional[Prompt] = None,
    environ: Optional[Mapping[str, str]] = None,
    names: Optional[Collection[str]] = None,
    file: Union[str, "os.PathLike[str]", None] = None,
    errors: Optional[dict[str, ConfigError]] = None,
) -> dict[str, ServerConfig]:
    """Read a configuration file (or an already parsed mapping) and return its servers by name, in file order.

    Args:
        source: the file's path, or the parsed JSON.
        prompt: answers ``${input:ID}``: called as ``prompt(id, input)``, where
            ``input`` is the file's ``inputs`` entry of that id (``description``,
            ``password``, ...), it returns the text (None: no answer). Each id is
            asked once per file.
        environ: the variables for ``${VAR}`` (default: ``os.environ``).
        names: read only these servers (the others are not expanded, asked
            for or checked); a name the file lacks is a ConfigError.
        file: for parsed JSON, the file it was read from (:func:`read_config`):
            errors name it, and ``${workspaceFolder}`` is its folder.
        errors: a dict that makes each server fail alone, as the editors do: a
            server that cannot be described (malformed, or naming a variable
            that is not set) is left out and its ConfigError put here by name.

    Raises:
        ConfigError: the file cannot be read, is not such a configuration, or
            (without ``errors``) a server in it is malformed or names a variable that is not set.
    """
    path, servers, inputs = _servers_in(source, file)
    where = None if path is None else str(path)
    expander = _Expander(where, _workspace(path), os.environ if environ is None else environ, prompt, inputs)
    found: dict[str, ServerConfig] = {}
    for name in _wanted(servers, names, where):
        try:
            found[name] = _server(name, servers[name], expander, where)
        except ConfigError as exc:
            if errors is None:
                raise
            errors[name] = exc
    return found


class Outline(NamedTuple):
    """What one server of a file would run or reach, read without expanding a placeholder (:func:`outline`).

    ``kind`` is ``"stdio"``, ``"http"`` or ``"sse"``. A stdio server has
    ``argv``, the names its ``env`` sets, ``env_file`` and ``cwd``; an HTTP one
    has ``origin`` (``scheme://host[:port]``, user information as ``***@``;
    None when a placeholder begins the URL), ``url_goes_on`` (a path or query
    follows, not kept here), its header names and its ``oauth`` keys.
    ``reads`` holds each placeholder and the key it is in, in file order:
    ``("GITHUB_TOKEN", "url")``, ``("input:token", "env.TOKEN")``,
    ``("userHome", "cwd")``. ``files`` holds each local file the server
    would read and its key (``envFile``, ``cert``, ``oauth.assertionFile``,
    ``oauth.identityAssertionFile``, ``oauth.privateKeyFile``, a
    ``oauth.privateKey`` that is a path), ``env_values`` the values of its
    ``env`` (in ``env``'s order), ``posts`` each URL its ``oauth`` grant
    names and its key (``oauth.issuer``, ``oauth.idpTokenEndpoint``...), and
    ``proxies`` each proxy its requests go through (user information and
    query as ``***``) and its key (``proxies.https``).
    Strings are as the file writes them and may hold anything: clean them
    before showing them, and mask what looks like a secret. No value of
    ``headers`` or of other ``oauth`` keys is kept.
    """

    name: str
    kind: str
    argv: tuple[str, ...] = ()
    env: tuple[str, ...] = ()
    env_file: Optional[str] = None
    cwd: Optional[str] = None
    origin: Optional[str] = None
    url_goes_on: bool = False
    headers: tuple[str, ...] = ()
    oauth: tuple[str, ...] = ()
    reads: tuple[tuple[str, str], ...] = ()
    files: tuple[tuple[str, str], ...] = ()
    env_values: tuple[str, ...] = ()
    posts: tuple[tuple[str, str], ...] = ()
    proxies: tuple[tuple[str, str], ...] = ()

    @property
    def variables(self) -> list[str]:
        """The environment variables the placeholders read, each once."""
        return list(dict.fromkeys(token for token, _ in self.reads if token not in ("workspaceFolder", "userHome") and not token.startswith("input:")))

    @property
    def inputs(self) -> list[str]:
        """The ``${input:ID}`` ids the placeholders ask for, each once."""
        return list(dict.fromkeys(token[len("input:") :] for token, _ in self.reads if token.startswith("input:")))


def _origin(template: str) -> tuple[Optional[str], bool]:
    """A URL template's ``scheme://authority`` (user information hidden), and whether the URL goes on past it."""
    scheme, sep, rest = template.partition("://")
    if not sep or scheme.lower() not in ("http", "https"):
        return None, True
    cut = min([at for at in (rest.find(char) for char in "/?#") if at >= 0], default=len(rest))
    authority, more = rest[:cut], rest[cut:]
    if "@" in authority:
        authority = "***@" + authority.rsplit("@", 1)[1]
    return f"{scheme}://{authority}", more not in ("", "/")


def outline(source: Source, *, names: Optional[Collection[str]] = None, file: Union[str, "os.PathLike[str]", None] = None) -> dict[str, Outline]:
    """What each server of a file would run or reach, by name, without expanding a placeholder.

    Nothing is asked, no variable or env file is read: a host shows this
    before :func:`load_config` (the command line does, for a file found by
    itself). The file is checked as :func:`load_config` checks it, so a
    malformed server is the same ConfigError; an unset variable is not an
    error here. ``names`` and ``file`` are :func:`load_config`'s.
    """
    path, servers, inputs = _servers_in(source, file)
    where = None if path is None else str(path)
    reader = _Reader(where, _workspace(path), inputs)
    out: dict[str, Outline] = {}
    for name in _wanted(servers, names, where):
        described = _server(name, servers[name], reader, where)
        reads = tuple(reader.reads.get(name, ()))
        if isinstance(described, StdioServer):
            env_file = servers[name].get("envFile")
            files = ((env_file, "envFile"),) if isinstance(env_file, str) else ()
            out[name] = Outline(name, "stdio", tuple(described.argv), tuple(described.env), env_file, described.cwd, reads=reads,
                                files=files, env_values=tuple(described.env.values()))
        else:
            assert isinstance(described, HttpServer)
            origin, goes_on = _origin(described.url)
            read, posts = _oauth_reach(described.oauth or {})
            cert = described.cert
            certs = () if cert is None else ((cert, "cert"),) if isinstance(cert, str) else ((cert[0], "cert[0]"), (cert[1], "cert[1]"))
            proxies = tuple((masked_url(url), f"proxies.{key}") for key, url in (described.proxies or {}).items() if key != "no_proxy")
            out[name] = Outline(name, described.kind, origin=origin, url_goes_on=goes_on, headers=tuple(described.headers),
                                oauth=tuple(described.oauth or ()), reads=reads, files=certs + read, posts=posts, proxies=proxies)
    return out


#: The ``oauth`` keys whose value is a local file the grant reads (a ``privateKey`` without PEM text is a path), and URLs it posts to.
_OAUTH_FILE_KEYS = ("assertionFile", "identityAssertionFile", "privateKeyFile", "privateKey")
_OAUTH_URL_KEYS = ("issuer", "authorizationServer", "idpTokenEndpoint")


def _oauth_reach(oauth: Mapping[str, Any]) -> tuple[tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]]:
    files = tuple((v, f"oauth.{k}") for k in _OAUTH_FILE_KEYS if isinstance(v := oauth.get(k), str) and "-----BEGIN" not in v)
    return files, tuple((v, f"oauth.{k}") for k in _OAUTH_URL_KEYS if isinstance(v := oauth.get(k), str))


def find_config(folder: Union[str, "os.PathLike[str]", None] = None) -> Optional[Path]:
    """The first of :data:`CONFIG_FILES` in ``folder`` (default: the current one), or None."""
    base = Path(folder) if folder is not None else Path.cwd()
    for name in CONFIG_FILES:
        candidate = base / name
        if candidate.is_file():
            return candidate
    return None
