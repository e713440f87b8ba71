"""The command line's configuration files: which servers of the file a command means, what a file found by
itself would run or reach (shown, then confirmed), and every server's tools."""

from __future__ import annotations

import getpass
import re
import shlex
import sys
from typing import Any, Mapping, Optional

from ._cli_output import first_line
from .config import ConfigError, Outline, ServerConfig, load_config, outline, read_config
from .errors import ClientError
from .group import connect_all
from .reflect import dumps, text

#: Exit codes shared with ``__main__``.
EXIT_OK = 0
EXIT_USAGE = 2
EXIT_INPUT = 3
EXIT_CONNECTION = 4

#: How much of one string of the file a line shows (a longer one says how much is left out); commands and paths are shown whole.
_LIMIT = 500


def _cleaned(value: str, limit: int) -> tuple[str, str]:
    """A string from the file cleaned by ``reflect.text`` and cut to ``limit``, and a note saying what was done."""
    clean = text(value, len(value))
    notes = ["invisible characters removed"] if len(clean) != len(value) else []
    if len(clean) > limit:
        notes.append(f"{len(clean) - limit} more characters not shown")
        clean = clean[:limit] + "…"
    return clean, f" [{'; '.join(notes)}]" if notes else ""


def shown(value: str, limit: int = _LIMIT) -> str:
    """A string from the file, cleaned by ``reflect.text``; says when characters were removed or it was cut."""
    clean, note = _cleaned(value, limit)
    return clean + note


def _quoted(name: str) -> str:
    clean, note = _cleaned(name, 100)
    return f"'{clean}'{note}"


def _terminal() -> bool:
    """True when a person can be asked: stdin and stderr are terminals."""
    try:
        return sys.stdin is not None and sys.stderr is not None and sys.stdin.isatty() and sys.stderr.isatty()
    except (AttributeError, ValueError, OSError):
        return False


def ask_input(ident: str, spec: Mapping[str, Any]) -> Optional[str]:
    """``${input:ID}`` at the terminal (hidden for a password); None when nobody is there. The file's text is cleaned."""
    try:
        if sys.stdin is None or not sys.stdin.isatty():
            return None
    except (ValueError, OSError):
        return None
    label = shown(str(spec.get("description") or ""), 200) or shown(ident, 100) or "input"
    if spec.get("password"):
        return getpass.getpass(f"{label}: ", stream=sys.stderr)
    print(f"{label}: ", end="", file=sys.stderr, flush=True)
    return sys.stdin.readline().rstrip("\n")


_read: dict[str, Any] = {}
_loaded: dict[tuple[str, Optional[tuple[str, ...]]], dict[str, ServerConfig]] = {}


def _data(path: str) -> Any:
    """The file's JSON, read once per command: what was shown is what is opened."""
    if path not in _read:
        _read[path] = read_config(path)
    return _read[path]


def _pick_name(names: list[str], name: Optional[str], tool: Optional[str]) -> tuple[str, Optional[str]]:
    """The server a command means among ``names``, and the tool name with the server's prefix taken off."""
    if name is not None:
        if name not in names:
            raise ConfigError(f"is not in the file (it has {', '.join(names[:20]) or 'no server'})", server=name)
        return name, tool
    if tool is not None:
        for server in sorted(names, key=len, reverse=True):
            if tool.startswith(server + "/") and len(tool) > len(server) + 1:
                return server, tool[len(server) + 1 :]
    if len(names) == 1:
        return names[0], tool
    raise ConfigError(f"names {len(names)} servers: say which with --server NAME (or TOOL as server/tool)")


def plan(path: str, server: Optional[str], tool: Optional[str], command: str) -> dict[str, Outline]:
    """What each server the command will use would run or reach, without expanding a placeholder.

    ``--server NAME`` names one; ``tools`` without it means every server;
    else a ``server/tool`` TOOL, else the file's only server. Raises
    ConfigError when the file cannot be used or the command's server is unclear.
    """
    if server is not None:
        return outline(_data(path), names=[server], file=path)
    every = outline(_data(path), file=path)
    if not every:
        raise ConfigError("names no server", file=path)
    if command == "tools":
        return every
    name, _ = _pick_name(list(every), None, tool)
    return {name: every[name]}


def servers_of(path: str, names: Optional[list[str]] = None) -> dict[str, ServerConfig]:
    """The servers ``names`` of the file (default: all), read once per command: an input is asked once.

    Raises ConfigError when the file cannot be used or names no server.
    """
    key = (path, None if names is None else tuple(names))
    if key not in _loaded:
        servers = load_config(_data(path), file=path, prompt=ask_input, names=names)
        if not servers:
            raise ConfigError("names no server", file=path)
        _loaded[key] = servers
    return _loaded[key]


def chosen(path: str, server: Optional[str], tool: Optional[str], command: str) -> dict[str, ServerConfig]:
    """The servers the command will use (as :func:`plan` says), read with their placeholders expanded."""
    return servers_of(path, list(plan(path, server, tool, command)))


def pick(servers: Mapping[str, ServerConfig], name: Optional[str], tool: Optional[str]) -> tuple[ServerConfig, Optional[str]]:
    """The server a command means, and the tool name with the server's prefix taken off.

    ``--server NAME`` names it; else a ``server/tool`` TOOL (the longest server
    name that prefixes it, as a group resolves names); else the file's only
    server. Raises ConfigError saying what to give.
    """
    found, tool = _pick_name(list(servers), name, tool)
    return servers[found], tool


#: A word of an option or a variable name that says its value is a secret.
_SECRET_NAME = re.compile(r"(?i)(token|secret|passw|passphrase|pwd|api[-_]?key|apikey|access[-_]?key|private[-_]?key|credential|"
                          r"auth(?!or(s|ity)?(\b|_))|bearer|cookie|session|signature|^-{0,2}key$|_key$)")
#: A value shaped like a credential: well-known token prefixes, a JWT, a scheme with its credentials.
_SECRET_VALUE = re.compile(r"(?i)^(sk|pk|rk)[-_][A-Za-z0-9_-]{8,}|^(ghp|gho|ghu|ghs|ghr|github_pat|glpat|xox[abposr]|hf|npm|pypi-?)_?[A-Za-z0-9_-]{8,}"
                           r"|^AKIA[0-9A-Z]{12,}|^eyJ[A-Za-z0-9_-]{8,}\.|^(bearer|basic|token)\s+\S")
_PLACEHOLDER = re.compile(r"\$\{[^}]*\}")
_USERINFO = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*://[^/@:]*):[^/@]*@")
MASK = "***"


def _masked_value(value: str) -> str:
    """``value`` or ``***``: a placeholder is kept as written (it names a variable, not its value)."""
    if not value or _PLACEHOLDER.fullmatch(value.strip()):
        return value
    return MASK


def masked_argv(argv: "list[str] | tuple[str, ...]") -> list[str]:
    """A command line with what looks like a secret replaced by ``***``: the value of an option or a
    ``NAME=value`` whose name says secret (``--api-key``, ``--token=``, ``API_KEY=``), a value shaped like a
    credential (``sk-...``, ``ghp_...``, a JWT, ``Bearer ...``), a URL's password, a header's value after
    ``Authorization:``. A ``${VAR}`` placeholder is never expanded here, so it is shown as written."""
    out: list[str] = []
    secret_next = False
    for word in argv:
        if secret_next and not word.startswith("-"):
            out.append(_masked_value(word))
            secret_next = False
            continue
        secret_next = False
        name, sep, value = word.partition("=")
        head, colon, rest = word.partition(":")
        if sep and _SECRET_NAME.search(name) and not name.startswith(("http:", "https:")):
            out.append(f"{name}={_masked_value(value)}")
        elif colon and rest.strip() and _SECRET_NAME.search(head) and " " not in head.strip() and "/" not in head:
            out.append(f"{head}:{rest[: len(rest) - len(rest.lstrip())]}{_masked_value(rest.strip())}")
        elif word.startswith("-") and _SECRET_NAME.search(word.lstrip("-")):
            out.append(word)
            secret_next = True
        elif _SECRET_VALUE.search(word):
            out.append(MASK)
        else:
            out.append(_USERINFO.sub(lambda m: f"{m.group(1)}:{MASK}@", word))
    return out


def _reads(item: Outline) -> str:
    return ", ".join(f"{shown(token, 100)} (in {shown(key, 100)})" for token, key in item.reads)


def _whole(value: str) -> str:
    """A string of the file shown whole (a command, a path): cleaned, never cut, so nothing hides past a cut."""
    return shown(value, max(len(value), 1))


def _env_shown(names: "tuple[str, ...]", values: "tuple[str, ...]") -> tuple[str, bool]:
    """``NAME=value`` for each entry, a value whose name or shape says secret as ``***``; and whether any was."""
    words, masked = [], False
    for name, value in zip(names, values):
        if _SECRET_NAME.search(name) or _SECRET_VALUE.search(value):
            shown_value = _masked_value(value)
            masked = masked or shown_value != value
        else:
            shown_value = value
        words.append(f"{name}={shown_value}")
    return _whole(", ".join(words)), masked


def announce(outlines: Mapping[str, Outline]) -> None:
    """Say on stderr what each server of a file found by itself would run, read or reach; every string is cleaned.

    A command, its environment, each file it would read and each URL a grant posts to are shown whole, what
    looks like a secret as ``***``.
    """
    for item in outlines.values():
        if item.kind == "stdio":
            argv = masked_argv(item.argv)
            hidden = " (what looks like a secret is shown as ***)" if argv != list(item.argv) else ""
            print(f"  server {_quoted(item.name)} runs: {_whole(shlex.join(argv))}{hidden}", file=sys.stderr)
            if item.env:
                env, masked = _env_shown(item.env, item.env_values) if item.env_values else (shown(", ".join(item.env)), False)
                print(f"    with env: {env}{' (what looks like a secret is shown as ***)' if masked else ''}", file=sys.stderr)
            if item.cwd is not None:
                print(f"    in folder: {_whole(item.cwd)}", file=sys.stderr)
        else:
            where = shown(item.origin) if item.origin is not None else "an address a placeholder makes"
            rest = " (the rest of the URL not shown)" if item.url_goes_on else ""
            sse = ", on HTTP+SSE, which this client does not speak: opening it fails" if item.kind == "sse" else ""
            print(f"  server {_quoted(item.name)} sends HTTP requests to {where}{rest}{sse}", file=sys.stderr)
            if item.headers:
                print(f"    headers set: {shown(', '.join(item.headers))} (values not shown)", file=sys.stderr)
            if item.oauth:
                print(f"    oauth settings: {shown(', '.join(item.oauth))}", file=sys.stderr)
            for url, key in item.posts:
                print(f"    oauth sends to: {_whole(url)} (in {shown(key, 100)})", file=sys.stderr)
        for path, key in item.files:
            print(f"    reads the file: {_whole(path)} (in {shown(key, 100)})", file=sys.stderr)
        if item.reads:
            print(f"    placeholders read: {_reads(item)}", file=sys.stderr)


def vet(outlines: Mapping[str, Outline], *, trusted: bool, name: str) -> Optional[int]:
    """Whether the command may go on with a file found by itself: None to go on, else the exit code.

    A file found by itself is data, not authority: ``--trust-config`` goes
    on; in a terminal the person is asked (y/N). Without one, a server that
    would run a command, read a local file, or send what a placeholder reads
    to an HTTP server is refused (each named); only HTTP servers that do none
    of these go on.
    """
    if trusted:
        return None
    if _terminal():
        print("mcp-input-sync: use these servers? [y/N] ", end="", file=sys.stderr, flush=True)
        try:
            answer = sys.stdin.readline()
        except (OSError, ValueError):
            answer = ""
        if answer.strip().lower() in ("y", "yes"):
            return None
        print(f"mcp-input-sync: not using {shown(name)}: nothing was run or sent", file=sys.stderr)
        return EXIT_INPUT
    refused = False
    for item in outlines.values():
        whys = []
        if item.kind == "stdio":
            whys.append("would run a command")
        if item.files:
            whys.append(f"would read {', '.join(shown(key, 100) for _, key in item.files)}")
        if item.kind != "stdio" and item.reads:
            whys.append(f"would send what its placeholders read ({_reads(item)}) to an HTTP server")
        for why in whys:
            print(f"mcp-input-sync: server {_quoted(item.name)} {why}", file=sys.stderr)
        refused = refused or bool(whys)
    if not refused:
        return None
    print(f"mcp-input-sync: {shown(name)} was found, not named, and there is no terminal to confirm it at, so nothing was run, read "
          f"or sent; to use it, run the command in a terminal, pass --trust-config, or name the file with --config {shlex.quote(shown(name))}",
          file=sys.stderr)
    return EXIT_USAGE


def list_all_tools(servers: Mapping[str, ServerConfig], options: Mapping[str, Any], as_json: bool) -> int:
    """Every server's tools: a table (server, tool, description), or JSON; a server that fails is reported, the rest listed."""
    with connect_all(dict(servers), on_error="report", **options) as group:
        tools = group.list_tools()
        errors = dict(group.errors)
    if as_json:
        print(dumps({"tools": tools, "errors": {name: str(exc) for name, exc in errors.items()}}, indent=2))  # hidden characters as \u escapes
    else:
        rows = [(tool["server"], tool["tool"], first_line(tool)) for tool in tools]
        width_server = max([len("SERVER"), *(len(text(r[0], 40)) for r in rows)])
        width_tool = max([len("TOOL"), *(len(text(r[1], 60)) for r in rows)])
        print(f"{'SERVER':<{width_server}}  {'TOOL':<{width_tool}}  DESCRIPTION")
        for server, tool, description in rows:
            print(f"{text(server, 40):<{width_server}}  {text(tool, 60):<{width_tool}}  {description}")
    for name, exc in errors.items():
        message = exc.message if isinstance(exc, ClientError) else str(exc)
        print(f"mcp-input-sync: server {_quoted(name)}: {text(message, 2000)}", file=sys.stderr)
    return EXIT_CONNECTION if errors else EXIT_OK
