"""The command line's configuration files: which servers of the file a command means, what a file found by
itself would run or reach (shown, then confirmed), and every server's tools, resources or prompts; each server
of a file fails alone."""

from __future__ import annotations

import getpass
import re
import shlex
import sys
from typing import Any, Mapping, Optional, Union

from ._cli_output import aligned, cells
from .config import ConfigError, Outline, ServerConfig, _servers_in, load_config, outline, read_config
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
_loaded: dict[tuple[str, tuple[str, ...]], tuple[dict[str, ServerConfig], dict[str, ConfigError]]] = {}

#: The commands that list every server of a file when no ``--server`` names one.
LISTINGS = ("tools", "resources", "prompts")
#: The argument of each command that may carry its server as a prefix (``server/word``), and how a hint says so.
PREFIXED = {"call": ("tool", "TOOL as server/tool"), "read": ("uri", "URI as server/URI"), "prompt": ("name", "NAME as server/name")}


def _data(path: str) -> Any:
    """The file's JSON, read once per command: what was shown is what is opened."""
    if path not in _read:
        _read[path] = read_config(path)
    return _read[path]


def names_in(path: str) -> list[str]:
    """The file's server names, in file order, read without describing any server: one bad entry hides no other.

    Raises ConfigError when the file cannot be used or names no server.
    """
    _, entries, _ = _servers_in(_data(path), path)  # the configuration module's own reader of the file's shapes
    if not entries:
        raise ConfigError("names no server", file=path)
    return list(entries)


def _pick_name(names: list[str], name: Optional[str], word: Optional[str], command: str) -> tuple[str, Optional[str]]:
    """The server a command means among ``names``, and its TOOL, URI or NAME with the server's prefix taken off."""
    if name is not None:
        if name not in names:
            raise ConfigError(f"is not in the file (it has {', '.join(names[:20]) or 'no server'})", server=name)
        return name, word
    if word is not None and command in PREFIXED:
        for server in sorted(names, key=len, reverse=True):
            if word.startswith(server + "/") and len(word) > len(server) + 1:
                return server, word[len(server) + 1 :]
    if len(names) == 1:
        return names[0], word
    how = f" (or {PREFIXED[command][1]})" if command in PREFIXED else ""
    raise ConfigError(f"names {len(names)} servers: say which with --server NAME{how}")


def targets(path: str, server: Optional[str], word: Optional[str], command: str) -> tuple[list[str], Optional[str]]:
    """The servers the command uses, and its TOOL, URI or NAME with the server's prefix taken off.

    ``--server NAME`` names one; a listing (``tools``, ``resources``,
    ``prompts``) without it means every server of the file; else a
    ``server/word`` prefix (the longest server name that prefixes it, as a
    group resolves names), else the file's only server. Raises ConfigError
    when the file cannot be used or the command's server is unclear.
    """
    names = names_in(path)
    if server is None and command in LISTINGS:
        return names, word
    name, word = _pick_name(names, server, word, command)
    return [name], word


def plan(path: str, server: Optional[str], word: Optional[str], command: str) -> dict[str, Union[Outline, ConfigError]]:
    """What each server the command will use (:func:`targets`) would run or reach, without expanding a
    placeholder, in file order. Of several, one that cannot be described has its ConfigError instead (it fails
    alone, as it will when opened); the command's only server raises its own."""
    names, _ = targets(path, server, word, command)
    planned: dict[str, Union[Outline, ConfigError]] = {}
    for name in names:
        try:
            planned.update(outline(_data(path), names=[name], file=path))
        except ConfigError as exc:
            if len(names) == 1:
                raise
            planned[name] = exc
    return planned


def load(path: str, names: list[str]) -> tuple[dict[str, ServerConfig], dict[str, ConfigError]]:
    """The servers ``names`` of the file, placeholders expanded, read once per command (an input is asked once);
    and the ConfigError of each of several that cannot be described (each fails alone). A command's only server
    raises its own: the command cannot run."""
    key = (path, tuple(names))
    if key not in _loaded:
        failed: dict[str, ConfigError] = {}
        servers = load_config(_data(path), file=path, prompt=ask_input, names=names, errors=failed if len(names) > 1 else None)
        _loaded[key] = servers, failed
    return _loaded[key]


def one_server(path: str, server: Optional[str], word: Optional[str], command: str) -> tuple[ServerConfig, Optional[str]]:
    """The one server the command means (as :func:`targets` picks it), read alone: another server's entry, bad or
    not, is neither expanded nor checked. Returns it and the word with the server's prefix taken off."""
    name, word = _pick_name(names_in(path), server, word, command)
    return load(path, [name])[0][name], word


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


def announce(planned: Mapping[str, Union[Outline, ConfigError]]) -> None:
    """Say on stderr what each server of a file found by itself would run, read or reach (:func:`plan`); every
    string is cleaned.

    A command, its environment, each file it would read, each URL a grant posts to and each proxy are shown
    whole, what looks like a secret as ``***`` (a proxy's user information too). A server that cannot be described is named with why: it will neither run
    nor be reached.
    """
    for name, item in planned.items():
        if isinstance(item, ConfigError):
            print(f"  server {_quoted(name)} cannot be used, so it runs and reaches nothing: {failure(item)}", file=sys.stderr)
            continue
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
            for url, key in item.proxies:  # a proxy's user information and query show as ***
                print(f"    through the proxy: {_whole(url)} (in {shown(key, 100)})", file=sys.stderr)
        for path, key in item.files:
            print(f"    reads the file: {_whole(path)} (in {shown(key, 100)})", file=sys.stderr)
        if item.reads:
            print(f"    placeholders read: {_reads(item)}", file=sys.stderr)


def vet(planned: Mapping[str, Union[Outline, ConfigError]], *, trusted: bool, name: str) -> Optional[int]:
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
    for item in planned.values():
        if isinstance(item, ConfigError):
            continue  # it cannot be opened: nothing of it runs, is read or is sent
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


def failure(exc: BaseException) -> str:
    """Why a server did not open or list, on one line, cleaned (a server or a file may have written it): a
    ConfigError's key and reason (its file and server are said already), a ClientError's message."""
    if isinstance(exc, ConfigError):
        said = (f"key {exc.key!r}: " if exc.key is not None else "") + exc.reason
    else:
        said = exc.message if isinstance(exc, ClientError) else str(exc)
    return text(" ".join(said.split("\n")), 2000)  # a stdio server's last stderr lines, joined


def listing(client: Any, command: str) -> Optional[dict[str, list[dict[str, Any]]]]:
    """An open server's items for a listing command, by kind (``tools``; ``resources`` and
    ``resource_templates``; ``prompts``); None when the server offers none of them."""
    if not isinstance((client.server_capabilities or {}).get(command), dict):
        return None
    if command == "tools":
        return {"tools": client.list_tools()}
    if command == "prompts":
        return {"prompts": client.list_prompts()}
    return {"resources": client.list_resources(), "resource_templates": client.list_resource_templates()}


def _open(servers: Mapping[str, ServerConfig], errors: dict[str, BaseException], options: Mapping[str, Any]) -> Any:
    """The servers opened as a group that keeps the ones that open; each that does not is put in ``errors``."""
    group = connect_all(dict(servers), on_error="report", **options)  # an entry unusable as it opens (its oauth) fails alone
    errors.update(group.errors)
    return group


#: The heading of each column of the every-server tables.
_HEADINGS = {"tools": ("TOOL", "DESCRIPTION"), "prompts": ("PROMPT", "ARGUMENTS", "DESCRIPTION"),
             "resources": ("URI", "NAME", "DESCRIPTION"), "resource_templates": ("URI TEMPLATE", "NAME", "DESCRIPTION")}


def list_every(path: str, names: list[str], command: str, options: Mapping[str, Any], as_json: bool) -> int:
    """Every server's tools, resources or prompts, opened in parallel: a table (SERVER first), or JSON.

    Each server fails alone: one that cannot be described, opened or
    listed is reported on stderr, one line each, and the others are listed;
    the exit code is then 4. An item of the JSON has ``"server"`` added (a
    tool is also named ``server/tool``, as a group names it).
    """
    servers, failed = load(path, names)
    errors: dict[str, BaseException] = dict(failed)
    kinds = ["resources", "resource_templates"] if command == "resources" else [command]
    found: dict[str, list[dict[str, Any]]] = {kind: [] for kind in kinds}
    with _open(servers, errors, options) as group:
        if command == "tools":  # in parallel, each named server/tool, as a group lists them
            found["tools"] = group.list_tools()
            errors.update(group.errors)
        for name in group if command != "tools" else ():
            try:
                items = listing(group[name], command) or {}
            except ClientError as exc:
                errors[name] = exc
                continue
            for kind, listed in items.items():
                found[kind].extend({**item, "server": name} for item in listed)
    if as_json:
        said = {name: str(errors[name]) for name in names if name in errors}
        print(dumps({**found, "errors": said}, indent=2))  # hidden characters as \u escapes
    else:
        for kind in kinds:
            if kind == "resource_templates" and not found[kind]:
                continue
            # the tool column shows the tool's own name: the SERVER column says the rest
            rows = [[text(item["server"], 40), *cells({**item, "name": item.get("tool", item.get("name"))} if kind == "tools" else item, kind)]
                    for item in found[kind]]
            print("\n".join(([""] if kind == "resource_templates" else []) + aligned([["SERVER", *_HEADINGS[kind]], *rows])))
    for name in names:  # in file order
        if name in errors:
            print(f"mcp-input-sync: server {_quoted(name)}: {failure(errors[name])}", file=sys.stderr)
    return EXIT_CONNECTION if errors else EXIT_OK
