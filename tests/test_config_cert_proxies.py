"""A configuration file's ``cert`` and ``proxies`` for an HTTP server: read, resolved, refused, shown (issue 34, item 6).

Pure but for one run of the command line: files in tmp_path, an explicit environment, no server
(test_http_tls_proxy.py opens what these describe).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mcp_input_sync.config import ConfigError, HttpServer, load_config, outline, secrets_of

REPO = Path(__file__).resolve().parents[1]
PASSWORD = "pr0xy-s3cret-pw"
ENV = {"CERTS": "/etc/mcp/certs", "PROXY_PASSWORD": PASSWORD}


def one(entry: dict[str, Any], *, file: Any = None, environ: Any = None) -> HttpServer:
    server = load_config({"mcpServers": {"s": entry}}, file=file, environ=ENV if environ is None else environ)["s"]
    assert isinstance(server, HttpServer)
    return server


def refused(entry: dict[str, Any]) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        load_config({"mcpServers": {"s": entry}}, environ=ENV)
    return caught.value


def test_a_cert_is_a_path_or_a_pair_resolved_as_an_env_file_is(tmp_path: Path) -> None:
    config = tmp_path / "project" / ".mcp.json"
    url = "https://mcp.example.com/mcp"
    assert one({"url": url, "cert": "certs/alice.pem"}, file=config).cert == str(tmp_path / "project" / "certs" / "alice.pem")
    assert one({"url": url, "cert": ["alice.crt", "/keys/alice.key"]}, file=config).cert == (str(tmp_path / "project" / "alice.crt"), "/keys/alice.key")
    assert one({"url": url, "cert": "${CERTS}/alice.pem"}, file=config).cert == "/etc/mcp/certs/alice.pem"
    assert one({"url": url, "cert": "${workspaceFolder}/a.pem"}, file=config).cert == str(tmp_path / "project" / "a.pem")
    assert one({"url": url, "cert": "~/a.pem"}, file=config).cert == os.path.expanduser("~/a.pem")
    vscode = tmp_path / "project" / ".vscode" / "mcp.json"  # VS Code's workspace is the folder that holds .vscode
    assert one({"url": url, "cert": "a.pem"}, file=vscode).cert == str(tmp_path / "project" / "a.pem")
    assert one({"url": url, "cert": "a.pem"}).cert == str(Path.cwd() / "a.pem")  # parsed data without a file: the current folder
    plain = one({"url": url})
    assert plain.cert is None and plain.proxies is None


def test_proxies_map_schemes_to_proxy_urls_with_placeholders() -> None:
    server = one({"url": "https://mcp.example.com/mcp", "proxies": {
        "https": "http://alice:${PROXY_PASSWORD}@proxy.example.com:3128", "http://intranet.example.com": "http://10.0.0.5:8080",
        "all": "socks5h://127.0.0.1:1080", "no_proxy": "localhost,.internal.example.com",
    }})
    assert dict(server.proxies or {}) == {
        "https": f"http://alice:{PASSWORD}@proxy.example.com:3128", "http://intranet.example.com": "http://10.0.0.5:8080",
        "all": "socks5h://127.0.0.1:1080", "no_proxy": "localhost,.internal.example.com",
    }
    assert PASSWORD in secrets_of(server)  # an error about this server shows *** in its place


@pytest.mark.parametrize(
    ("entry", "key", "says"),
    [
        ({"cert": 42}, "cert", "must be a path"),
        ({"cert": ""}, "cert", "must be a path"),
        ({"cert": []}, "cert", "must be a path"),
        ({"cert": ["alice.pem"]}, "cert", "a list of two"),
        ({"cert": ["a.crt", "a.key", "extra"]}, "cert", "a list of two"),
        ({"cert": ["a.crt", 7]}, "cert", "must be a path"),
        ({"cert": {"cert": "a.crt"}}, "cert", "must be a path"),
        ({"cert": "${NOT_SET}/a.pem"}, "cert", "NOT_SET is not set"),
        ({"proxies": "http://proxy.example.com:3128"}, "proxies", "must be an object of strings"),
        ({"proxies": {"HTTPS": "http://proxy.example.com:3128"}}, "proxies", "has a key requests never looks up"),
        ({"proxies": {"ftp": "http://proxy.example.com:3128"}}, "proxies", "has a key requests never looks up"),
        ({"proxies": {"https": 3128}}, "proxies.https", "must be a string"),
        ({"proxies": {"https": "proxy.example.com:3128"}}, "proxies.https", "must be a proxy URL"),
        ({"proxies": {"https": ""}}, "proxies.https", "must be a proxy URL"),
        ({"proxies": {"https": f"http://a:{PASSWORD}\n@proxy:3128"}}, "proxies.https", "line break"),
    ],
)
def test_a_cert_or_proxies_of_the_wrong_form_is_the_files_error_naming_the_key(entry: dict[str, Any], key: str, says: str) -> None:
    error = refused({"url": "https://mcp.example.com/mcp", **entry})
    assert error.server == "s" and error.key == key and says in error.reason, (error.key, error.reason)
    assert PASSWORD not in str(error)


def test_a_proxy_url_that_is_wrong_is_refused_without_showing_it() -> None:
    error = refused({"url": "https://mcp.example.com/mcp", "proxies": {"https": f"alice:{PASSWORD}@proxy.example.com:3128"}})
    assert error.key == "proxies.https" and PASSWORD not in str(error) and "alice" not in str(error)


def test_the_repr_shows_where_a_cert_came_from_and_hides_a_proxys_credentials(tmp_path: Path) -> None:
    server = one({"url": "https://mcp.example.com/mcp", "cert": ["${CERTS}/alice.crt", "alice.key"],
                  "proxies": {"https": "http://alice:${PROXY_PASSWORD}@proxy.example.com:3128/?token=t0k"}}, file=tmp_path / ".mcp.json")
    shown = repr(server)
    assert f"cert=('${{CERTS}}/alice.crt', {str(tmp_path / 'alice.key')!r})" in shown, shown  # a variable's value never; a path as resolved
    assert "proxies={'https': 'http://***@proxy.example.com:3128/?***'}" in shown, shown
    assert PASSWORD not in shown and "t0k" not in shown and "/etc/mcp" not in shown
    plain = repr(one({"url": "https://mcp.example.com/mcp"}))
    assert plain == "HttpServer(name='s', url='https://mcp.example.com/mcp', headers={}, oauth=None)"  # nothing new unless set


def test_the_outline_names_the_cert_files_and_the_proxies_without_expanding_anything() -> None:
    data = {"mcpServers": {"s": {"url": "https://mcp.example.com/mcp", "cert": ["${CERTS}/alice.crt", "alice.key"],
                                 "proxies": {"https": "http://alice:${PROXY_PASSWORD}@proxy.example.com:3128", "no_proxy": "localhost"}}}}
    shown = outline(data)["s"]
    assert shown.files == (("${CERTS}/alice.crt", "cert[0]"), ("alice.key", "cert[1]"))
    assert shown.proxies == (("http://***@proxy.example.com:3128", "proxies.https"),)
    assert shown.reads == (("CERTS", "cert[0]"), ("PROXY_PASSWORD", "proxies.https"))
    with pytest.raises(ConfigError, match="key 'cert'"):
        outline({"mcpServers": {"s": {"url": "https://mcp.example.com/mcp", "cert": 7}}})


def test_the_command_line_says_a_found_file_reads_a_certificate_and_goes_through_a_proxy(tmp_path: Path) -> None:
    entry = {"url": "http://127.0.0.1:9/mcp", "cert": "certs/alice.pem", "proxies": {"http": f"http://alice:{PASSWORD}@127.0.0.1:9"}}
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {"s": entry}}))
    done = subprocess.run(
        [sys.executable, "-m", "mcp_input_sync", "tools"], stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60,
        cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert done.returncode == 2, done.stderr
    assert "reads the file: certs/alice.pem (in cert)" in done.stderr
    assert "through the proxy: http://***@127.0.0.1:9 (in proxies.http)" in done.stderr
    assert "server 's' would read cert" in done.stderr  # no terminal to ask at: a found file that reads a local file is refused
    assert PASSWORD not in done.stdout + done.stderr
