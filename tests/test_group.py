"""Opening described servers: connect() one, connect_all() several at once, the group's tools and calls.

The servers are the embedded demo server over stdio (two of them), a
command that does not exist, a server of the old HTTP+SSE transport, and a
protected HTTP server (tests/oauth_peer.py) reached through OAuth.
"""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

import mcp_input_sync as mis
from mcp_input_sync.oauth import Headless, OAuth

from .oauth_peer import OAuthPeer

DEMO = {"command": sys.executable, "args": ["-m", "mcp_input_sync._demo_server"]}


class Recorder(mis.InputHandler):
    """Keeps the server id of every log it hears."""

    def __init__(self) -> None:
        self.logs: list[str] = []
        self.heard = threading.Condition()

    def handle_log(self, entry: Any, ctx: mis.InputContext) -> None:
        with self.heard:
            self.logs.append(ctx.server_id)
            self.heard.notify_all()

    def wait_for(self, servers: set[str]) -> set[str]:
        """Logs arrive on the notification thread, after the call's answer: wait (bounded) for them."""
        with self.heard:
            self.heard.wait_for(lambda: servers <= set(self.logs), timeout=10)
            return set(self.logs)


def config(tmp_path: Path, servers: dict[str, Any]) -> Path:
    path = tmp_path / ".mcp.json"
    path.write_text(json.dumps({"mcpServers": servers}))
    return path


def test_connect_opens_one_described_server_by_value_or_by_name(tmp_path: Path) -> None:
    path = config(tmp_path, {"demo": DEMO})
    with mis.connect(mis.load_config(path)["demo"], handler=None) as client:
        assert client.server_id == "demo"
        assert client.call_tool("echo", {"text": "hi"})["content"][0]["text"] == "hi"
    with mis.connect("demo", config=path, server_id="custom") as client:
        assert client.server_id == "custom"
    with pytest.raises(mis.ConfigError, match="is not in the configuration"):
        mis.connect("nope", config=path)
    with pytest.raises(mis.ConfigError, match="needs config="):
        mis.connect("demo")


def test_an_sse_server_is_described_but_refused_when_opened() -> None:
    servers = mis.load_config({"mcpServers": {"legacy-sse": {"type": "sse", "url": "https://old.example.com/sse"}}})
    with pytest.raises(mis.ClientError) as caught:
        mis.connect(servers["legacy-sse"])
    assert caught.value.kind == "transport" and "'legacy-sse'" in caught.value.message and "HTTP+SSE" in caught.value.message


def test_connect_all_opens_in_parallel_lists_and_routes(tmp_path: Path) -> None:
    handler = Recorder()
    path = config(tmp_path, {"north": DEMO, "south": DEMO})
    with mis.connect_all(path, handler=handler) as group:
        assert list(group) == ["north", "south"] and group.errors == {}
        tools = group.list_tools()
        names = [tool["name"] for tool in tools]
        assert "north/echo" in names and "south/echo" in names and len(names) == len(set(names))
        echo = next(t for t in tools if t["name"] == "south/echo")
        assert (echo["server"], echo["tool"]) == ("south", "echo") and echo["inputSchema"]["required"] == ["text"]
        assert group.call_tool("south/echo", {"text": "from south"})["content"][0]["text"] == "from south"
        group.call_tool("north/pack_bags", {"items": 1})
        group.call_tool("south/pack_bags", {"items": 1})
        assert handler.wait_for({"north", "south"}) == {"north", "south"}  # one handler, told apart by ctx.server_id
        assert group["north"].server_id == "north"
        with pytest.raises(KeyError, match="names no tool"):
            group.resolve("west/echo")


def test_a_server_that_does_not_open_is_reported_by_name_never_skipped(tmp_path: Path) -> None:
    path = config(tmp_path, {"good": DEMO, "broken": {"command": str(tmp_path / "no-such-program")}})
    with pytest.raises(mis.GroupError) as caught:
        mis.connect_all(path)
    assert list(caught.value.errors) == ["broken"] and "broken" in caught.value.message
    with mis.connect_all(path, on_error="report") as group:
        assert list(group) == ["good"] and list(group.errors) == ["broken"]
        assert isinstance(group.errors["broken"], mis.ClientError)
        with pytest.raises(KeyError, match="did not open"):
            group["broken"]
        assert [t["server"] for t in group.list_tools()] == ["good"] * 4


def test_connect_all_takes_a_subset_and_refuses_unknown_names(tmp_path: Path) -> None:
    path = config(tmp_path, {"a": DEMO, "b": DEMO})
    with mis.connect_all(path, names=["b"]) as group:
        assert list(group) == ["b"]
    with pytest.raises(mis.ConfigError, match="'c'"):
        mis.connect_all(path, names=["c"])


def test_a_protected_http_server_from_a_config_file_through_oauth(tmp_path: Path) -> None:
    peer = OAuthPeer()
    try:
        path = config(tmp_path, {"notes": {"type": "http", "url": peer.url}, "local": DEMO})
        with mis.connect_all(path, auth=OAuth(consent=Headless()), protocol="legacy") as group:
            assert group.call_tool("notes/whoami")["content"][0]["text"] == "mcp offline_access"
            assert group.call_tool("local/echo", {"text": "x"})["content"][0]["text"] == "x"
    finally:
        peer.close()


def test_a_files_oauth_settings_refine_the_given_oauth_for_that_server(tmp_path: Path) -> None:
    peer = OAuthPeer()
    try:
        peer.clients["from-the-file"] = {"client_id": "from-the-file", "redirect_uris": ["http://127.0.0.1:3000/callback"]}
        oauth = {"clientId": "from-the-file", "clientSecret": "${NOTES_SECRET}", "issuer": peer.origin, "scopes": "mcp"}
        servers = mis.load_config({"mcpServers": {"notes": {"url": peer.url, "oauth": oauth}}}, environ={"NOTES_SECRET": "s3cr3t"})
        assert "s3cr3t" not in repr(servers["notes"]) and servers["notes"].oauth["clientSecret"] == "s3cr3t"  # type: ignore[attr-defined]
        with mis.connect(servers["notes"], auth=OAuth(consent=Headless()), protocol="legacy") as client:
            assert client.call_tool("whoami", {})["content"][0]["text"] == "mcp"
        assert peer.counts["register"] == 0  # the file's client id was used, not a new registration
        bad = mis.load_config({"mcpServers": {"notes": {"url": peer.url, "oauth": {"clientSecret": "x"}}}})
        with pytest.raises(mis.ConfigError, match="oauth"):
            mis.connect(bad["notes"], auth=OAuth(consent=Headless()), protocol="legacy")
    finally:
        peer.close()


def test_a_files_machine_grant_needs_no_oauth_of_the_hosts_and_a_bad_one_is_the_files_error(tmp_path: Path) -> None:
    peer = OAuthPeer()
    try:
        peer.machine_secrets = {"worker": "w-s3cret"}
        token = tmp_path / "token"
        token.write_text("eyJ.workload.sig\n")
        peer.good_assertions = {"eyJ.workload.sig"}
        servers = mis.load_config(
            {"mcpServers": {
                "cc": {"url": peer.url, "oauth": {"grant": "client_credentials", "clientId": "worker", "clientSecret": "${S}", "issuer": peer.origin}},
                "wif": {"url": peer.url, "oauth": {"grant": "workload_identity", "assertionFile": str(token), "issuer": peer.origin}},
            }},
            environ={"S": "w-s3cret"},
        )
        for name in ("cc", "wif"):
            with mis.connect(servers[name], protocol="legacy") as client:
                assert client.call_tool("whoami", {})["content"][0]["text"] == "mcp"
        assert [f["grant_type"] for f in peer.machine_forms] == ["client_credentials", "urn:ietf:params:oauth:grant-type:jwt-bearer"]
        unnamed = ({"grant": "client_credentials", "clientId": "w", "clientSecret": "x"}, {"grant": "workload_identity", "assertion": "eyJ.a.b"})
        for oauth in (*unnamed, {"grant": "password"}):
            bad = mis.load_config({"mcpServers": {"s": {"url": peer.url, "oauth": oauth}}})
            with pytest.raises(mis.ConfigError, match="oauth") as refused:
                mis.connect(bad["s"], protocol="legacy")
            assert oauth["grant"] == "password" or "oauth.issuer is needed" in str(refused.value)
        assert peer.counts["machine"] == 2  # the two good servers' token requests; the file without an issuer sent nothing
    finally:
        peer.close()


def test_an_error_about_a_server_never_shows_what_a_placeholder_put_in(tmp_path: Path) -> None:
    servers = mis.load_config(
        {"mcpServers": {"s": {"command": "${TOOLS}/server", "args": []}, "h": {"url": "http://127.0.0.1:9/mcp?key=${KEY}"}}},
        environ={"TOOLS": str(tmp_path / "top-secret-dir"), "KEY": "k-top-secret"},
    )
    for name in ("s", "h"):
        with pytest.raises(mis.ClientError) as caught:
            mis.connect(servers[name], timeout=5.0)
        shown = str(caught.value)  # an HTTP error names the URL without its query
        assert "top-secret" not in shown and ("***" in shown or name == "h"), caught.value
    with pytest.raises(mis.GroupError) as grouped:
        mis.connect_all(servers, timeout=5.0)
    assert "top-secret" not in str(grouped.value)


def test_an_empty_configuration_a_name_string_and_a_bad_option(tmp_path: Path) -> None:
    with mis.connect_all({}) as group:
        assert len(group) == 0 and group.list_tools() == []
    path = config(tmp_path, {"a": DEMO})
    with pytest.raises(TypeError):
        mis.connect_all(path, names="a")  # type: ignore[arg-type]
    with pytest.raises(TypeError):  # the caller's mistake is raised as it is, not as a server's failure
        mis.connect_all(path, no_such_option=1)


def test_a_server_whose_placeholders_cannot_be_filled_fails_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FAST_KEY", raising=False)
    broken = {"command": sys.executable, "args": ["-m", "mcp_input_sync._demo_server", "${FAST_KEY}"]}
    path = config(tmp_path, {"fast": broken, "everything": DEMO})
    with mis.connect("everything", config=path) as client:  # the other server's unset variable does not matter
        assert client.server_id == "everything"
    with pytest.raises(mis.ConfigError) as caught:
        mis.connect("fast", config=path)
    assert caught.value.server == "fast" and "FAST_KEY" in str(caught.value)
    with pytest.raises(mis.ConfigError, match="is not in the configuration .*everything, fast"):
        mis.connect("nope", config=path)
    with mis.connect_all(path, on_error="report") as group:
        assert list(group) == ["everything"] and list(group.errors) == ["fast"]
        assert isinstance(group.errors["fast"], mis.ConfigError) and "FAST_KEY" in str(group.errors["fast"])
    with mis.connect_all(path, names=["everything"]) as group:
        assert list(group) == ["everything"] and group.errors == {}
    with pytest.raises(mis.ConfigError, match="FAST_KEY"):  # on_error="raise": before any server opens
        mis.connect_all(path)


def test_a_call_through_the_group_to_a_server_that_did_not_open_names_it_and_its_error(tmp_path: Path) -> None:
    path = config(tmp_path, {"good": DEMO, "gone": {"command": str(tmp_path / "no-such-program")}})
    with mis.connect_all(path, on_error="report") as group:
        with pytest.raises(KeyError) as caught:
            group.call_tool("gone/add", {"a": 1})
        text = str(caught.value)
        assert "'gone' did not open" in text and "no-such-program" in text and "group.errors['gone']" in text
        with pytest.raises(KeyError, match="names no tool"):
            group.call_tool("elsewhere/add")


def test_a_server_whose_oauth_cannot_be_used_fails_alone_when_reported() -> None:
    # its grant is made as it opens (no issuer: refused); with on_error="report" that is the server's failure, not the caller's
    config = {"mcpServers": {
        "demo": {"command": sys.executable, "args": ["-m", "mcp_input_sync._demo_server"]},
        "billing": {"url": "https://billing.example/mcp", "oauth": {"grant": "workload_identity", "assertion": "eyJ.a.b"}},
    }}
    with mis.connect_all(config, on_error="report", timeout=30.0) as group:
        assert "demo" in group and "billing" not in group
        assert isinstance(group.errors["billing"], mis.ConfigError) and "oauth.issuer is needed" in str(group.errors["billing"])
    with pytest.raises(mis.GroupError) as stopped:
        mis.connect_all(config, timeout=30.0)  # on_error="raise": as any server that does not open
    assert list(stopped.value.errors) == ["billing"]


def test_a_file_of_many_servers_opens_at_most_sixteen_at_once() -> None:
    from mcp_input_sync.group import MAX_PARALLEL, _in_parallel

    lock, running, peak = threading.Lock(), [0], [0]
    gate = threading.Barrier(MAX_PARALLEL, timeout=10.0)  # the first sixteen all run at once

    def job(i: int) -> int:
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        if i < MAX_PARALLEL:
            gate.wait()
        with lock:
            running[0] -= 1
        return i

    results = _in_parallel({f"s{i}": (lambda i=i: job(i)) for i in range(40)})
    assert [results[f"s{i}"] for i in range(40)] == [(True, i) for i in range(40)]
    assert peak[0] == MAX_PARALLEL
