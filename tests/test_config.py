"""Configuration files: every shape the editors write, placeholders, env files, inputs, errors, reprs.

Pure: files in tmp_path, an explicit environment; no server is started here
(test_group.py opens what these describe).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import mcp_input_sync as mis
from mcp_input_sync.config import ConfigError, HttpServer, SseServer, StdioServer, find_config, load_config

ENV = {"API_KEY": "sk-live-123", "HOME_DIR": "/home/ada", "EMPTY": ""}


def write(tmp_path: Path, name: str, data: Any) -> Path:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


# ---------------------------------------------------------------------------- the shapes


def test_claude_desktop_and_cursor() -> None:
    servers = load_config({"mcpServers": {
        "files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"], "env": {"DEBUG": "1"}},
        "remote": {"url": "https://mcp.example.com/mcp", "headers": {"X-Team": "blue"}},
    }}, environ=ENV)
    files, remote = servers["files"], servers["remote"]
    assert isinstance(files, StdioServer) and files.argv == ["npx", "-y", "@modelcontextprotocol/server-filesystem", "/tmp"]
    assert dict(files.env) == {"DEBUG": "1"} and files.cwd is None and files.source is None
    assert isinstance(remote, HttpServer) and not isinstance(remote, SseServer)
    assert remote.url == "https://mcp.example.com/mcp" and dict(remote.headers) == {"X-Team": "blue"}
    assert list(servers) == ["files", "remote"]  # file order


def test_claude_code_types_and_expansion() -> None:
    servers = load_config({"mcpServers": {
        "api": {"type": "http", "url": "${API_BASE:-https://api.example.com}/mcp", "headers": {"Authorization": "Bearer ${API_KEY}"}},
        "local": {"type": "stdio", "command": "${HOME_DIR}/bin/server", "args": ["--key", "${API_KEY}"], "env": {"KEY": "${API_KEY}"}},
        "old": {"type": "sse", "url": "https://old.example.com/sse"},
    }}, environ=ENV)
    assert servers["api"].url == "https://api.example.com/mcp"  # type: ignore[attr-defined]
    assert servers["api"].headers["Authorization"] == "Bearer sk-live-123"  # type: ignore[attr-defined]
    local = servers["local"]
    assert isinstance(local, StdioServer) and local.argv == ["/home/ada/bin/server", "--key", "sk-live-123"] and local.env["KEY"] == "sk-live-123"
    assert isinstance(servers["old"], SseServer) and servers["old"].kind == "sse"


def test_vscode_mcp_json_with_comments_inputs_and_env_file(tmp_path: Path) -> None:
    write(tmp_path, ".env", "# secrets\nexport TOKEN='from-file'\nPLAIN=1\n\nKEY=overridden\n")
    path = write(tmp_path, ".vscode/mcp.json", """{
        // VS Code allows comments
        "inputs": [{"type": "promptString", "id": "pat", "description": "GitHub token", "password": true}],
        "servers": {
            "github": {"type": "http", "url": "https://api.githubcopilot.com/mcp/", "headers": {"Authorization": "Bearer ${input:pat}"}},
            /* a stdio one */
            "tool": {"type": "stdio", "command": "node", "args": ["${workspaceFolder}/server.js", "${env:HOME_DIR}"],
                     "envFile": "${workspaceFolder}/.env", "env": {"KEY": "explicit"}},
        },
    }""")
    asked: list[tuple[str, Any]] = []

    def prompt(ident: str, spec: Any) -> str:
        asked.append((ident, spec))
        return "ghp-secret"

    servers = load_config(path, prompt=prompt, environ=ENV)
    assert servers["github"].headers["Authorization"] == "Bearer ghp-secret"  # type: ignore[attr-defined]
    assert asked == [("pat", {"type": "promptString", "id": "pat", "description": "GitHub token", "password": True})]
    tool = servers["tool"]
    assert isinstance(tool, StdioServer) and tool.args == (f"{tmp_path}/server.js", "/home/ada")
    assert dict(tool.env) == {"TOKEN": "from-file", "PLAIN": "1", "KEY": "explicit"}  # env wins over envFile
    assert tool.source == str(path)


def test_vscode_settings_json_and_streamable_http_spellings() -> None:
    servers = load_config({"mcp": {"servers": {
        "a": {"type": "streamable-http", "url": "http://127.0.0.1:1/mcp"},
        "b": {"type": "streamableHttp", "url": "http://127.0.0.1:2/mcp"},
    }}}, environ=ENV)
    assert all(type(s) is HttpServer for s in servers.values())


def test_unknown_keys_are_kept_and_ignored() -> None:
    server = load_config({"mcpServers": {"x": {"command": "run", "disabled": False, "alwaysAllow": ["a"], "timeout": 60}}}, environ=ENV)["x"]
    assert dict(server.extra) == {"disabled": False, "alwaysAllow": ["a"], "timeout": 60}


def test_descriptions_are_immutable_and_compare_by_value() -> None:
    one = load_config({"mcpServers": {"x": {"command": "run", "args": ["a"]}}}, environ=ENV)["x"]
    two = load_config({"mcpServers": {"x": {"command": "run", "args": ["a"]}}}, environ=ENV)["x"]
    assert one == two and hash(one) == hash(two)
    with pytest.raises(AttributeError):
        one.name = "y"  # type: ignore[misc]
    with pytest.raises(TypeError):
        one.env["NEW"] = "1"  # type: ignore[index]


# ---------------------------------------------------------------------------- placeholders


@pytest.mark.parametrize(
    ("template", "expanded"),
    [
        ("${API_KEY}", "sk-live-123"),
        ("${env:API_KEY}", "sk-live-123"),
        ("${MISSING:-fallback}", "fallback"),
        ("${EMPTY:-fallback}", "fallback"),  # :- also covers set-but-empty, as in the shell
        ("${MISSING:-}", ""),
        ("a-${API_KEY}-b-${HOME_DIR}", "a-sk-live-123-b-/home/ada"),
        ("no placeholder $HOME or {braces}", "no placeholder $HOME or {braces}"),
    ],
)
def test_placeholders_expand(template: str, expanded: str) -> None:
    server = load_config({"mcpServers": {"x": {"command": "run", "args": [template]}}}, environ=ENV)["x"]
    assert server.args == (expanded,)  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("entry", "key", "says"),
    [
        ({"command": "run", "args": ["${NOPE}"]}, "args[0]", "NOPE is not set"),
        ({"command": "run", "env": {"K": "${env:NOPE}"}}, "env.K", "NOPE is not set"),
        ({"url": "https://x.example/${NOPE}/mcp"}, "url", "NOPE is not set"),
        ({"url": "https://x.example/mcp", "headers": {"A": "${NOPE}"}}, "headers.A", "NOPE is not set"),
        ({"command": "run", "args": ["${weird thing}"]}, "args[0]", "unknown placeholder"),
        ({"command": "run", "args": ["${API_KEY"]}, "args[0]", "opens no placeholder"),
        ({"command": "run", "args": ["${input:pat}"]}, "args[0]", "prompt="),
    ],
)
def test_a_missing_variable_or_bad_placeholder_names_server_and_key(entry: dict[str, Any], key: str, says: str, tmp_path: Path) -> None:
    path = write(tmp_path, "mcp.json", {"mcpServers": {"svc": entry}})
    with pytest.raises(ConfigError) as caught:
        load_config(path, environ=ENV)
    error = caught.value
    assert (error.file, error.server, error.key) == (str(path), "svc", key)
    assert says in str(error) and str(path) in str(error) and "'svc'" in str(error)


def test_an_input_is_asked_once_and_a_missing_answer_is_an_error() -> None:
    calls: list[str] = []
    data = {"servers": {"a": {"command": "run", "args": ["${input:x}", "${input:x}"]}}}
    server = load_config(data, prompt=lambda ident, spec: calls.append(ident) or "v", environ=ENV)["a"]
    assert server.args == ("v", "v") and calls == ["x"]  # type: ignore[attr-defined]
    with pytest.raises(ConfigError, match="got no answer"):
        load_config(data, prompt=lambda ident, spec: None, environ=ENV)


# ---------------------------------------------------------------------------- malformed files


@pytest.mark.parametrize(
    ("content", "says", "server", "key"),
    [
        ("not json at all", "is not JSON", None, None),
        ("[]", "is not a JSON object", None, None),
        ({"other": {}}, "neither 'mcpServers' nor 'servers'", None, None),
        ({"mcpServers": {}, "servers": {}}, "both", None, None),
        ({"mcpServers": []}, "object of servers", None, "mcpServers"),
        ({"mcpServers": {"a": "npx"}}, "must be an object", "a", ""),
        ({"mcpServers": {"a": {}}}, "neither a command nor a url", "a", "type"),
        ({"mcpServers": {"a": {"type": "websocket", "url": "ws://x"}}}, "known types", "a", "type"),
        ({"mcpServers": {"a": {"command": 3}}}, "must be a string", "a", "command"),
        ({"mcpServers": {"a": {"command": ""}}}, "is empty", "a", "command"),
        ({"mcpServers": {"a": {"command": "x", "args": "-y"}}}, "list of strings", "a", "args"),
        ({"mcpServers": {"a": {"command": "x", "args": [1]}}}, "must be a string", "a", "args[0]"),
        ({"mcpServers": {"a": {"command": "x", "env": ["A=1"]}}}, "object of strings", "a", "env"),
        ({"mcpServers": {"a": {"url": "ftp://x"}}}, "http or https", "a", "url"),
        ({"mcpServers": {"a": {"url": "https://x", "oauth": "yes"}}}, "must be an object", "a", "oauth"),
        ({"mcpServers": {"a": {"command": "x", "envFile": "missing.env"}}}, "cannot be read", "a", "envFile"),
    ],
)
def test_a_malformed_file_names_the_file_the_server_and_the_key(tmp_path: Path, content: Any, says: str, server: Any, key: Any) -> None:
    path = write(tmp_path, "conf.json", content)
    with pytest.raises(ConfigError) as caught:
        load_config(path, environ=ENV)
    assert says in str(caught.value) and caught.value.file == str(path)
    assert (caught.value.server, caught.value.key) == (server, key)


def test_a_missing_or_undecodable_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such file"):
        load_config(tmp_path / "nope.json")
    bad = tmp_path / "bad.json"
    bad.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(ConfigError, match="cannot be read"):
        load_config(bad)


def test_a_bad_env_file_line_is_named(tmp_path: Path) -> None:
    write(tmp_path, "x.env", "GOOD=1\nthis is not a pair\n")
    path = write(tmp_path, "mcp.json", {"servers": {"a": {"command": "x", "envFile": "x.env"}}})
    with pytest.raises(ConfigError, match="line 2 of the env file"):
        load_config(path, environ=ENV)


# ---------------------------------------------------------------------------- secrets in reprs


def test_reprs_show_templates_never_the_values_of_variables() -> None:
    servers = load_config({"mcpServers": {
        "local": {"command": "run", "args": ["--key=${API_KEY}", "--verbose"], "env": {"KEY": "${API_KEY}", "LITERAL": "hunter2"}},
        "api": {"url": "https://x.example/mcp?k=${API_KEY}", "headers": {"Authorization": "Bearer ${API_KEY}", "X-Literal": "hunter2"}},
    }}, environ=ENV)
    shown = repr(servers["local"]) + repr(servers["api"]) + repr(servers) + str(servers)
    assert "sk-live-123" not in shown and "hunter2" not in shown
    assert "--key=${API_KEY}" in shown and "--verbose" in shown and "url='https://x.example/mcp?***'" in shown
    # env and header values are hidden whole: a literal part of one may be a secret too
    assert "'KEY': '***'" in shown and "'LITERAL': '***'" in shown and "'Authorization': '***'" in shown and "'X-Literal': '***'" in shown


# ---------------------------------------------------------------------------- finding the file


def test_find_config_prefers_dot_mcp_json(tmp_path: Path) -> None:
    assert find_config(tmp_path) is None
    write(tmp_path, "mcp.json", {"mcpServers": {}})
    assert find_config(tmp_path) == tmp_path / "mcp.json"
    write(tmp_path, ".mcp.json", {"mcpServers": {}})
    assert find_config(tmp_path) == tmp_path / ".mcp.json"


def test_the_package_exports_the_config_api() -> None:
    assert mis.load_config is load_config and mis.ConfigError is ConfigError


def test_a_url_repr_hides_its_user_information_and_query() -> None:
    server = load_config({"mcpServers": {"x": {"url": "https://user:pw@x.example/mcp?token=abc"}}}, environ=ENV)["x"]
    assert "pw" not in repr(server) and "abc" not in repr(server) and "https://***@x.example/mcp?***" in repr(server)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ('{"servers": {"a": {"command": "x", "args": ["x{1,}", "a//b", "/*no*/"]}}, // c\n}', ["x{1,}", "a//b", "/*no*/"]),
        ('{"servers": {"a": {"command": "x", "args": ["1",/* c */],}},}', ["1"]),
    ],
)
def test_comments_and_trailing_commas_never_touch_strings(tmp_path: Path, text: str, value: list[str]) -> None:
    path = write(tmp_path, "mcp.json", text)
    assert list(load_config(path, environ=ENV)["a"].args) == value  # type: ignore[attr-defined]


def test_a_comment_between_numbers_does_not_join_them(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not JSON"):
        load_config(write(tmp_path, "mcp.json", '{"servers": {}, "n": 1/**/2}'))


def test_deep_nesting_a_nul_path_and_an_unknown_home_are_config_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="nested too deeply"):
        load_config(write(tmp_path, "deep.json", "[" * 100_000 + "]" * 100_000))
    for env_file in ("bad\u0000name", "~no-such-user-here/x.env"):
        with pytest.raises(ConfigError, match="envFile"):
            load_config({"servers": {"a": {"command": "x", "envFile": env_file.encode().decode("unicode_escape")}}}, environ=ENV)


def test_line_breaks_in_env_or_header_values_are_refused() -> None:
    with pytest.raises(ConfigError, match="line break") as caught:
        load_config({"mcpServers": {"a": {"url": "https://x.example/mcp", "headers": {"Authorization": "Bearer ${T}"}}}}, environ={"T": "x\nInjected: 1"})
    assert caught.value.key == "headers.Authorization"


def test_env_file_values_read_as_dotenv_reads_them(tmp_path: Path) -> None:
    write(tmp_path, ".env", 'A=plain # a comment\nB="quoted # not a comment" # comment\nC="two\\nlines"\nD=\'single \\n kept\'\n')
    env = load_config({"servers": {"s": {"command": "x", "envFile": str(tmp_path / ".env")}}}, environ=ENV)["s"].env  # type: ignore[attr-defined]
    assert dict(env) == {"A": "plain", "B": "quoted # not a comment", "C": "two\nlines", "D": "single \\n kept"}


def test_names_reads_only_the_servers_asked_for() -> None:
    data = {"mcpServers": {"a": {"command": "x", "args": ["${UNSET_HERE}"]}, "b": {"command": "y"}}}
    assert list(load_config(data, environ=ENV, names=["b"])) == ["b"]  # a's unset variable does not matter
    with pytest.raises(ConfigError, match="is not in the file"):
        load_config(data, environ=ENV, names=["c"])
    with pytest.raises(TypeError):
        load_config(data, environ=ENV, names="b")


# ---------------------------------------------------------------------------- outlines and one read


def test_outline_checks_the_file_as_load_config_does_and_expands_nothing(tmp_path: Path) -> None:
    from mcp_input_sync.config import outline

    entry = {"command": "${TOOL_BIN:-node}", "args": ["--key=${API_KEY}", "${workspaceFolder}/s.js"], "env": {"TOKEN": "${input:tok}"},
             "cwd": "${userHome}", "envFile": "${workspaceFolder}/.env"}
    found = outline({"mcpServers": {"tracker": entry}})["tracker"]
    assert found.kind == "stdio" and found.argv == ("${TOOL_BIN:-node}", "--key=${API_KEY}", "${workspaceFolder}/s.js")
    assert found.env == ("TOKEN",) and found.cwd == "${userHome}" and found.env_file == "${workspaceFolder}/.env"
    assert found.variables == ["TOOL_BIN", "API_KEY"] and found.inputs == ["tok"]
    assert ("workspaceFolder", "args[1]") in found.reads and ("userHome", "cwd") in found.reads
    for bad, says in (({"command": "x", "args": ["${1BAD}"]}, "unknown placeholder"), ({"command": 3}, "must be a string"),
                      ({"url": "ftp://x"}, "http or https")):
        with pytest.raises(ConfigError, match=says):
            outline({"mcpServers": {"s": bad}})
    with pytest.raises(ConfigError, match="is not in the file"):
        outline({"mcpServers": {"s": entry}}, names=["t"])


def test_read_once_then_outline_and_load_with_file(tmp_path: Path) -> None:
    from mcp_input_sync.config import outline, read_config

    path = write(tmp_path, "sub/.mcp.json", {"mcpServers": {"s": {"command": "run", "args": ["${workspaceFolder}", "${NOPE}"]}}})
    data = read_config(path)
    path.write_text("changed")  # what was read is what is opened
    assert outline(data, file=path)["s"].argv == ("run", "${workspaceFolder}", "${NOPE}")
    with pytest.raises(ConfigError) as caught:
        load_config(data, file=path, environ={})
    assert caught.value.file == str(path) and "NOPE" in str(caught.value)
    assert load_config(data, file=path, environ={"NOPE": "x"})["s"].args == (str(tmp_path / "sub"), "x")


def test_with_errors_each_server_fails_alone() -> None:
    config = {"mcpServers": {
        "fast": {"command": "uvx", "args": ["fast-server", "--key", "${FAST_KEY}"]},
        "everything": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-everything"]},
        "odd": {"command": 7},
    }}
    with pytest.raises(ConfigError, match="FAST_KEY"):
        load_config(config, environ={})
    failed: dict[str, ConfigError] = {}
    servers = load_config(config, environ={}, errors=failed)
    assert list(servers) == ["everything"] and list(failed) == ["fast", "odd"]
    assert failed["fast"].server == "fast" and failed["fast"].key == "args[2]" and "FAST_KEY" in str(failed["fast"])
    assert failed["odd"].key == "command"
    with pytest.raises(ConfigError, match="is not in the file"):
        load_config(config, names=["nope"], errors=failed)  # the caller's mistake is still raised


def test_a_one_argument_repr_reads_as_a_tuple() -> None:
    server = load_config({"mcpServers": {"s": {"command": "python", "args": ["server.py"]}}})["s"]
    assert "args=('server.py',)" in repr(server)
    assert eval(repr(server).split("args=", 1)[1].split(", env=", 1)[0]) == ("server.py",)
    assert "args=()" in repr(StdioServer("t", "run"))
