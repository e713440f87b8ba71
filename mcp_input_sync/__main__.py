"""Command line: ``python -m mcp_input_sync`` (console script ``mcp-input-sync``).

::

    mcp-input-sync demo [--yes]
    mcp-input-sync call [--answers FILE | --yes] [--json] [--root PATH]... TOOL [JSON-ARGS] [KEY=VALUE...] SERVER
    mcp-input-sync read [--answers FILE | --yes] [--json] URI SERVER
    mcp-input-sync prompt [--answers FILE | --yes] [--json] NAME [JSON-ARGS] [KEY=VALUE...] SERVER
    mcp-input-sync tools|resources|prompts [--json] SERVER

SERVER is --url URL [--header "Name: value"]..., --config FILE [--server NAME], or -- COMMAND [ARG...]; every
command that reaches a server also takes --protocol P, --timeout S, --max-message-bytes N and --verbose.

Without a server, the first of ./.mcp.json and ./mcp.json is the configuration file: what it would
run or reach is shown first, and confirmed in a terminal (``--trust-config`` skips the question).
    mcp-input-sync login URL | logout URL

Exit codes: 0 ok, 1 tool error (``isError``), 2 usage, 3 input refused or
incomplete, 4 connection or protocol error (130 after Ctrl-C).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, NoReturn, Optional, Sequence

EXIT_OK = 0
EXIT_TOOL_ERROR = 1
EXIT_USAGE = 2
EXIT_INPUT = 3
EXIT_CONNECTION = 4

_INPUT_KINDS = frozenset({"refused", "declined", "input_handler"})

_TARGET_HELP = (
    "the server: --url URL (Streamable HTTP), --config FILE with --server NAME (a configuration file's server), "
    "or -- COMMAND [ARG...] (stdio) at the end; with none, ./.mcp.json or ./mcp.json"
)
_ARGS_HELP = "the arguments: a JSON object, KEY=VALUE pairs (typed by the tool's input schema), or both (the object first)"


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def _build_parser() -> _Parser:
    from ._version import __version__

    parser = _Parser(
        prog="mcp-input-sync",
        description="A synchronous MCP client that answers servers' input requests in the terminal.",
        epilog="exit codes: 0 ok, 1 tool error, 2 usage, 3 input refused or incomplete, 4 connection or protocol error",
    )
    parser.add_argument("--version", action="version", version=f"mcp-input-sync {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    demo = sub.add_parser("demo", help="walk through every kind of server request with the embedded demo server")
    demo.add_argument("--yes", "-y", action="store_true", help="accept the defaults without asking")

    call = sub.add_parser("call", help="call a tool, answering the server's input in the terminal", epilog=_TARGET_HELP)
    _input_options(call, "print the whole CallToolResult as JSON")
    call.add_argument("tool", metavar="TOOL")
    call.add_argument("arguments", metavar="ARG", nargs="*", help=_ARGS_HELP)
    read = sub.add_parser("read", help="read a resource: its text, or its bytes when stdout is not a terminal", epilog=_TARGET_HELP)
    _input_options(read, "print the whole ReadResourceResult as JSON")
    read.add_argument("uri", metavar="URI")
    prompt = sub.add_parser("prompt", help="get a prompt and print its messages", epilog=_TARGET_HELP)
    _input_options(prompt, "print the whole GetPromptResult as JSON")
    prompt.add_argument("name", metavar="NAME")
    prompt.add_argument("arguments", metavar="ARG", nargs="*", help="the arguments: a JSON object of strings, KEY=VALUE pairs, or both")

    login = sub.add_parser("login", help="log in to a server protected by OAuth, in the browser, and remember the login")
    login.add_argument("url", metavar="URL", help="the server's Streamable HTTP endpoint")
    login.add_argument("--timeout", type=float, default=300.0, help="seconds to wait for the browser's redirect (default 300)")
    logout = sub.add_parser("logout", help="forget the login remembered for a server")
    logout.add_argument("url", metavar="URL", help="the server's Streamable HTTP endpoint")

    for name, what in (("tools", "tools"), ("resources", "resources and resource templates"), ("prompts", "prompts")):
        listing = sub.add_parser(name, help=f"list the server's {what}", epilog=_TARGET_HELP)
        listing.add_argument("--json", action="store_true", help="print the list as JSON")
        _target_options(listing)
    return parser


def _input_options(parser: argparse.ArgumentParser, json_help: str) -> None:
    parser.add_argument("--answers", metavar="FILE", help="a JSON object of scripted answers (no questions asked)")
    parser.add_argument("--yes", "-y", action="store_true", help="ask nothing: forms take their defaults, URLs are declined")
    parser.add_argument("--json", action="store_true", help=json_help)
    parser.add_argument("--root", metavar="PATH", action="append", help="a folder offered to the server as a root (repeat for more); "
                        "default: none, so a server keeps the folders it was started with (a root can widen them)")
    _target_options(parser)


def _target_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--url", help="the server's Streamable HTTP endpoint")
    parser.add_argument("--header", metavar="'NAME: VALUE'", action="append", default=[],
                        help="a header sent with every request to --url (repeat for more); never printed back")
    parser.add_argument("--config", metavar="FILE", help="a configuration file (.mcp.json, claude_desktop_config.json, .vscode/mcp.json)")
    parser.add_argument("--server", metavar="NAME", help="the configuration file's server to use")
    parser.add_argument("--protocol", default="auto", help="auto (default), legacy, modern, or a version such as 2025-11-25")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds to wait on the server (default 60)")
    parser.add_argument("--max-message-bytes", metavar="N", type=int, default=None,
                        help="the largest message taken from the server (default 16 MiB): limits={'message_bytes': N}")
    parser.add_argument("--verbose", "-v", action="store_true", help="print what a stdio server writes to stderr as it comes, and routine notices (a listing changed)")
    parser.add_argument("--trust-config", action="store_true",
                        help="use ./.mcp.json or ./mcp.json found by itself without asking (what it would run or reach is still shown)")


def _options(args: argparse.Namespace, handler: Any) -> dict[str, Any]:
    """The options every connection of the command takes."""
    options: dict[str, Any] = {"handler": handler, "name": "mcp-input-sync", "protocol": args.protocol, "timeout": args.timeout}
    if args.max_message_bytes is not None:
        from ._protocol.limits import DEFAULT_LIMITS

        size = args.max_message_bytes
        options["limits"] = {"message_bytes": size, "sse_line_bytes": max(size, DEFAULT_LIMITS["sse_line_bytes"])}
    return options


def _handler(args: argparse.Namespace, answers: Optional[dict[str, Any]] = None, roots: Optional[list[str]] = None) -> Any:
    """The terminal handler of every command that reaches a server: the same capabilities for all, roots only when given."""
    from .terminal import TerminalHandler

    return TerminalHandler(stdout=sys.stderr, assume_yes=getattr(args, "yes", False), answers=answers, roots=roots or None, yes_urls="decline")


def _connect(args: argparse.Namespace, server: list[str], handler: Any, parser: argparse.ArgumentParser) -> Any:
    """An open client for the target, or the exit code when it cannot be had."""
    from .client import connect_http, connect_stdio
    from .errors import ClientError

    options = _options(args, handler)
    try:
        if args.config is not None:
            from ._cli_config import PREFIXED, one_server
            from .config import StdioServer
            from .group import connect

            # only the command's server is read: another server's entry, bad or not, does not matter
            described, word = one_server(args.config, args.server, _word(args), args.command)
            if args.command in PREFIXED:
                setattr(args, PREFIXED[args.command][0], word)
            _default_roots(args, handler, isinstance(described, StdioServer))
            return connect(described, auth=_oauth(), **options)
        if args.url is not None:
            from ._cli_output import parse_headers

            _default_roots(args, handler, False)
            headers = parse_headers(args.header)
            # a header that carries the credential is the user's login: an OAuth login would replace it
            auth = None if any(name.lower() == "authorization" for name in headers) else _oauth()
            return connect_http(args.url, auth=auth, headers=headers or None, **options)
        _default_roots(args, handler, True)
        # a command typed after -- runs as if the user ran it: it gets their whole environment
        return connect_stdio(server, inherit_env=True, **options)
    except (TypeError, ValueError) as exc:
        return _usage(parser, str(exc))
    except ClientError as exc:
        print(f"mcp-input-sync: cannot connect: {_error_text(exc)}", file=sys.stderr)
        return EXIT_CONNECTION
    except KeyboardInterrupt:
        print("mcp-input-sync: interrupted", file=sys.stderr)
        return 130


def _default_roots(args: argparse.Namespace, handler: Any, local: bool) -> None:
    """Without ``--root`` no server, local (``local``) or remote, is offered a folder, and the client declares no
    ``roots``: a server's roots replace the folders it was started with (server-filesystem), so the current folder
    would widen a sandboxed server's access, and a remote one would learn a local path. Roots of an answers file's
    ``_roots`` are the user's and stay."""
    if handler is not None and not getattr(args, "root", None):
        handler.roots = []


def _word(args: argparse.Namespace) -> Optional[str]:
    """The command's TOOL, URI or NAME, which may carry its server as a prefix (``server/tool``); None for a listing."""
    from ._cli_config import PREFIXED

    return getattr(args, PREFIXED[args.command][0]) if args.command in PREFIXED else None


def _oauth(timeout: float = 300.0) -> Any:
    """The command line's OAuth: the system browser, and logins kept in the user's config folder."""
    from .oauth import Browser, FileStore, OAuth

    return OAuth(consent=Browser(timeout=timeout), store=FileStore(), client_name="mcp-input-sync")


def _login(args: argparse.Namespace) -> int:
    from .errors import ClientError

    auth = _oauth(args.timeout)
    try:
        auth.login(args.url)
    except ClientError as exc:
        print(f"mcp-input-sync: {_error_text(exc)}", file=sys.stderr)
        return EXIT_CONNECTION
    except KeyboardInterrupt:
        print("mcp-input-sync: interrupted", file=sys.stderr)
        return 130
    finally:
        auth.close()
    print(f"logged in to {args.url} (kept in {auth.store})")
    return EXIT_OK


def _logout(args: argparse.Namespace) -> int:
    auth = _oauth()
    held = auth.logout(args.url)
    print(f"logged out of {args.url}" if held else f"no login was kept for {args.url}")
    return EXIT_OK


def _read_answers(path: str) -> dict[str, Any]:
    from .terminal import validate_answers

    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError) as exc:
        raise ValueError(f"cannot read the answers file {path}: {exc}") from None
    return validate_answers(data)


def _usage(parser: argparse.ArgumentParser, message: str) -> int:
    from .reflect import text

    parser.print_usage(sys.stderr)
    print(f"{parser.prog}: error: {text(message, 4000)}", file=sys.stderr)  # may quote a configuration file
    return EXIT_USAGE


def _error_text(exc: object) -> str:
    """An error (or any text) for the terminal: it may quote a server, so it is cleaned (``reflect.text``)."""
    from .reflect import text

    return text(str(exc), 8000, lines=True)  # lines kept: a stdio server's last stderr lines end the message


class _Usage(Exception):
    """A usage error found once the server answered (a KEY=VALUE argument its tool's schema does not take)."""


def _input_schema(client: Any, tool: str) -> Any:
    for item in client.list_tools():
        if item.get("name") == tool:
            return item.get("inputSchema")
    from .reflect import text

    raise _Usage(f"the server lists no tool {text(tool, 200)!r}, so KEY=VALUE arguments cannot be typed: pass a JSON object")


def _answered(client: Any, send: Any) -> Any:
    """``send()``, and once more after the URL elicitations of a -32042 error were answered; an int exit code
    when one of them was not accepted."""
    from .errors import ClientError

    try:
        return send()
    except ClientError as exc:
        if exc.code != -32042:
            raise
        answered = client.handle_url_elicitations(exc)
        if any(a.get("action") != "accept" for a in answered):
            return EXIT_INPUT
        return send()


def _request(args: argparse.Namespace, server: list[str], parser: argparse.ArgumentParser) -> int:
    """``call``, ``read`` and ``prompt``: one request, the server's input answered in the terminal."""
    from . import _cli_output as output
    from .errors import ClientError

    try:
        words = getattr(args, "arguments", [])
        given, pairs = output.split_arguments(words) if args.command == "call" else (None, [])
        prompt_arguments = output.prompt_arguments(words) if args.command == "prompt" else None
        answers = _read_answers(args.answers) if args.answers is not None else None
    except ValueError as exc:
        return _usage(parser, str(exc))
    roots = [os.path.abspath(path) for path in args.root or ()]
    if answers is not None and roots:
        answers["_roots"] = roots  # the command line's roots win over the file's
    handler = _handler(args, answers, roots)
    if not args.verbose:
        output.quiet_routine(handler)
    client = _connect(args, server, handler, parser)
    if isinstance(client, int):
        return client
    try:
        with client:
            if args.command == "call":
                arguments = given
                if pairs:
                    arguments = {**(given or {}), **output.coerce(pairs, _input_schema(client, args.tool))}
                result = _answered(client, lambda: client.call_tool(args.tool, arguments, progress=handler.progress))
            elif args.command == "read":
                result = _answered(client, lambda: client.read_resource(args.uri, progress=handler.progress))
            else:
                result = _answered(client, lambda: client.get_prompt(args.name, prompt_arguments, progress=handler.progress))
    except (_Usage, ValueError) as exc:
        return _usage(parser, str(exc))
    except ClientError as exc:
        handler.fold_done()
        print(f"mcp-input-sync: {_error_text(exc)}", file=sys.stderr)
        if handler.refusals or exc.kind in _INPUT_KINDS:
            return EXIT_INPUT
        return EXIT_CONNECTION
    except KeyboardInterrupt:
        print("mcp-input-sync: interrupted", file=sys.stderr)
        return 130
    handler.fold_done()
    if isinstance(result, int):
        return result
    if args.json:
        from .reflect import dumps

        print(dumps(result, indent=2))  # hidden characters written as \u escapes: valid, faithful JSON
    elif args.command == "call":
        output.print_result(result)
    elif args.command == "read":
        problem = output.print_contents(result)
        if problem is not None:
            print(f"mcp-input-sync: {problem}", file=sys.stderr)
            return EXIT_CONNECTION
    else:
        output.print_prompt(result)
    if handler.refusals:
        print(f"mcp-input-sync: input refused or incomplete: {_error_text('; '.join(handler.refusals))}", file=sys.stderr)
        return EXIT_INPUT
    return EXIT_TOOL_ERROR if args.command == "call" and result.get("isError") is True else EXIT_OK


def _list(args: argparse.Namespace, server: list[str], parser: argparse.ArgumentParser) -> int:
    """``tools``, ``resources`` and ``prompts``: one server's, or every server's of a file (each failing alone)."""
    from ._cli_config import listing
    from ._cli_output import aligned, cells, quiet_routine
    from .errors import ClientError

    handler = _handler(args)
    if not args.verbose:
        quiet_routine(handler)
    if args.config is not None and args.server is None:
        from ._cli_config import list_every, targets

        try:
            servers, _ = targets(args.config, None, None, args.command)
        except ValueError as exc:
            return _usage(parser, str(exc))
        if len(servers) != 1:
            handler.roots = []  # one handler for every server of the file, HTTP ones included: no local path
            try:
                return list_every(args.config, servers, args.command, {**_options(args, handler), "auth": _oauth()}, args.json)
            except (TypeError, ValueError) as exc:  # an option no server takes: the command's, not a server's
                return _usage(parser, str(exc))
            except KeyboardInterrupt:
                return 130
            finally:
                handler.fold_done()
    client = _connect(args, server, handler, parser)
    if isinstance(client, int):
        return client
    try:
        with client:
            found = listing(client, args.command)
    except ClientError as exc:
        handler.fold_done()
        print(f"mcp-input-sync: {_error_text(exc)}", file=sys.stderr)
        return EXIT_CONNECTION
    except KeyboardInterrupt:
        return 130
    handler.fold_done()
    if args.json:
        from .reflect import dumps

        print(dumps(found or {}, indent=2))
        return EXIT_OK
    if found is None:
        print(f"(the server offers no {args.command})")
    for kind, items in (found or {}).items():
        if kind == "resource_templates" and not items:
            continue
        print(f"{kind.replace('_', ' ')}: {len(items)}")
        if items:
            print("\n".join(aligned([cells(item, kind) for item in items], indent="  ")))
    return EXIT_OK


#: The library's advice in the command line's words (``_protocol.advice``): its flags, not Python's options; and a
#: failed call is run again by the person, since the process that could have learnt from it ends.
ADVICE = {
    "raise_limit:message_bytes": "; to accept it, pass --max-message-bytes N with a larger N",
    "raise_limit:sse_line_bytes": "; to accept it, pass --max-message-bytes N with a larger N",  # the flag raises both
    "limit_name:message_bytes": "--max-message-bytes",
    "protocol": "run the command again with --protocol {value}",
    "era_learnt": "{How}",
    "forced_era": "--protocol {value} asks for it; --protocol auto takes the era the server speaks",
    "handshake_timeout": "within --timeout {value:g} s",
    "call_timeout": "its --timeout of {value:g} s",
}


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the command line; returns the exit code (argparse usage errors exit 2). The library's advice names the
    command line's flags while it runs (:data:`ADVICE`), and Python's options again after."""
    from ._protocol import advice

    advice.speak(ADVICE)
    try:
        return _run(argv)
    finally:
        advice.speak(None)


def _run(argv: Optional[Sequence[str]]) -> int:
    """The command line itself (:func:`main` sets the words of its advice around it)."""
    words = list(sys.argv[1:] if argv is None else argv)
    server: list[str] = []
    dashes = False
    if "--" in words:
        at = words.index("--")
        words, server, dashes = words[:at], words[at + 1 :], True
    parser = _build_parser()
    args = parser.parse_args(words)
    sub = parser if args.command is None else _sub_parser(parser, args.command)
    if args.command == "demo":
        if dashes:
            return _usage(sub, "demo takes no server command")
        from ._demo import run_demo

        return run_demo(assume_yes=args.yes)
    if args.command in ("login", "logout"):
        if dashes:
            return _usage(sub, f"{args.command} takes a URL, not a server command")
        return _login(args) if args.command == "login" else _logout(args)
    if (args.url is not None) + dashes + (args.config is not None) > 1:
        return _usage(sub, "give one server: --url URL, --config FILE or -- COMMAND")
    if args.server is not None and args.config is None and (args.url is not None or dashes):
        return _usage(sub, "--server NAME goes with a configuration file")
    if args.trust_config and (args.url is not None or dashes):
        return _usage(sub, "--trust-config goes with a configuration file")
    if dashes and not server:
        return _usage(sub, "give the server's command after --")
    if getattr(args, "answers", None) is not None and args.yes:
        return _usage(sub, "--answers and --yes do not go together")
    if args.header and args.url is None:
        return _usage(sub, "--header goes with --url (a configuration file's server sets its own headers)")
    if args.max_message_bytes is not None and args.max_message_bytes < 1:
        return _usage(sub, "--max-message-bytes takes a positive number of bytes")
    if args.url is None and not dashes and args.config is None:
        found = _found(args, sub)
        if found is not None:
            return found
    if args.verbose:
        from ._cli_output import show_server_stderr

        show_server_stderr()
    if args.command in ("call", "read", "prompt"):
        return _request(args, server, sub)
    return _list(args, server, sub)


def _found(args: argparse.Namespace, parser: argparse.ArgumentParser) -> Optional[int]:
    """Use ./.mcp.json or ./mcp.json: show what it would run or reach before anything is expanded, asked, run or
    sent, then confirm (see ``_cli_config.vet``). None to go on, else the exit code."""
    from ._cli_config import announce, plan, shown, vet
    from .config import find_config

    found = find_config()
    if found is None:
        return _usage(parser, "give the server: --url URL, --config FILE or -- COMMAND [ARG...] (no .mcp.json or mcp.json here)")
    args.config = str(found)
    name = os.path.relpath(found)
    print(f"mcp-input-sync: using {shown(name)}, found in this folder (not named with --config); this command would use:", file=sys.stderr)
    try:
        planned = plan(args.config, args.server, _word(args), args.command)
        announce(planned)
        return vet(planned, trusted=args.trust_config, name=name)
    except ValueError as exc:
        return _usage(parser, str(exc))
    except KeyboardInterrupt:
        print("", file=sys.stderr)
        return 130


def _sub_parser(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            found = action.choices.get(name)
            if isinstance(found, argparse.ArgumentParser):
                return found
    return parser


if __name__ == "__main__":
    sys.exit(main())
