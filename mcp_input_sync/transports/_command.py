"""The server's command line: the name it goes by, and the environment it starts with."""

from __future__ import annotations

import os
import re
import sys
from typing import Mapping, Optional, Sequence


#: The variables of this process a server gets without ``inherit_env`` (the official SDKs' list), besides its ``env``.
DEFAULT_ENV_VARS: tuple[str, ...] = (
    (
        "APPDATA", "HOMEDRIVE", "HOMEPATH", "LOCALAPPDATA", "PATH", "PATHEXT", "PROCESSOR_ARCHITECTURE", "PROGRAMFILES",
        "SYSTEMDRIVE", "SYSTEMROOT", "TEMP", "USERNAME", "USERPROFILE",
    )
    if sys.platform == "win32"
    else ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER")
)


def server_environment(env: Optional[Mapping[str, str]] = None, *, inherit_env: bool = False) -> dict[str, str]:
    """The environment a stdio server starts with.

    Without ``inherit_env``: the variables of :data:`DEFAULT_ENV_VARS` that
    this process has (a value that starts with ``()``, a shell function, is
    left out), then ``env``. With it: this whole process's environment, then
    ``env``. ``env`` wins either way.
    """
    if inherit_env:
        found = dict(os.environ)
    else:
        found = {name: value for name in DEFAULT_ENV_VARS if (value := os.environ.get(name)) is not None and not value.startswith("()")}
    found.update(env or {})
    return found


_PYTHON = re.compile(r"(python[0-9.]*w?|py|pypy[0-9.]*)(\.exe)?", re.IGNORECASE)
_SCRIPT_RUNNERS = frozenset({"node", "bun", "deno", "tsx", "ts-node"})
_PACKAGE_RUNNERS = {("npx",): 1, ("bunx",): 1, ("uvx",): 1, ("pipx", "run"): 2, ("pnpm", "dlx"): 2, ("yarn", "dlx"): 2}
#: Options of the runners above that take a value (``--from x``, ``-p pkg``), so the value is no package.
_VALUED = frozenset({"--from", "--with", "-p", "--package", "--python", "--directory", "--project", "--spec", "--index"})
_FOLDERS = frozenset({"dist", "build", "lib", "src", "bin", "out"})


def _stem(path: str) -> str:
    """A script's name without its folders and extension; ``index`` and ``main`` become their package's folder."""
    parts = [part for part in re.split(r"[\\/]", path) if part]
    if not parts:
        return ""
    stem = parts[-1].rsplit(".", 1)[0] if "." in parts[-1][1:] else parts[-1]
    if stem in ("index", "main", "__main__"):
        named = [folder for folder in parts[:-1] if folder not in _FOLDERS]
        return named[-1] if named else stem
    return stem


def server_name(command: Sequence[str]) -> str:
    """The default ``server_id`` of a stdio server: what its argv runs, not the interpreter that runs it.

    ``python server.py`` is ``server``, ``python -m pkg.mod`` is ``pkg.mod``,
    ``node dist/index.js`` of a package is the package's folder, ``npx -y
    @scope/pkg@1`` is ``pkg``, ``uvx name``, ``pipx run name`` and ``uv run
    server.py`` name their package or script; any other command is its
    program's file name. Read from the argv alone, so the logger that
    receives the server's stderr keeps one name from the start.
    """
    argv = [str(part) for part in command]
    program = _stem(argv[0]) if argv else ""
    rest = argv[1:]
    if program == "uv" and rest[:1] == ["run"]:
        rest = _after_options(rest[1:])
        return server_name(rest) if rest else program
    for runner, skip in _PACKAGE_RUNNERS.items():
        if (program, *rest[: skip - 1]) == runner:
            found = _after_options(rest[skip - 1 :])
            if found:
                package = re.sub(r"(?<=.)(@|==|>=|\[).*$", "", found[0])  # no version, no extras
                return package.rsplit("/", 1)[-1] or program
            return program
    if _PYTHON.fullmatch(re.split(r"[\\/]", argv[0])[-1] if argv else ""):
        for i, arg in enumerate(rest):
            if arg == "-m" and i + 1 < len(rest):
                return rest[i + 1]
            if arg == "-c":
                break
            if not arg.startswith("-"):
                return _stem(arg) or program
        return program
    if program in _SCRIPT_RUNNERS:
        scripts = [arg for arg in rest if not arg.startswith("-") and arg != "run"]
        return (_stem(scripts[0]) if scripts else "") or program
    return program or "server"


def _after_options(words: list[str]) -> list[str]:
    """``words`` from the first that is no option (nor an option's value) on."""
    i = 0
    while i < len(words) and words[i].startswith("-"):
        i += 2 if words[i] in _VALUED else 1
    return words[i:]
