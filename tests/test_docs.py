"""The docs are tested: examples run, the README's example and commands are the real ones.

How the ```python blocks of the docs run
========================================

Every ```python block of README.md and docs/*.md is one test case,
``test_every_python_block_in_the_docs_runs[<page>:<n>]`` (``n`` counts the
page's python blocks from 1). Each block runs as a script in a subprocess
(``python -W error``, bounded by ``BLOCK_TIMEOUT``) in a fresh directory
that holds a ``server.py``: a stdio MCP server (:func:`docs_server`, the
testing kit's ``FakeServer`` with the tools, resource and prompt the docs
name: ``greet``, ``deploy``, ``build``, ``book_trip``, ``sync_calendar``,
``file:///notes.txt``, ``review``), so ``["python", "server.py"]`` in a
doc starts a real server.

What runs is decided by the HTML comment right before the block (blank
lines allowed), which mkdocs does not render:

- no comment: the block is a complete program and runs as it is;
- ``<!-- doc-setup: NAME [NAME...] -->``: the block runs after the
  preludes, and before the epilogues, of the named entries of
  :data:`SETUPS` below (e.g. ``client`` gives an open ``client`` on the
  docs server and its handler ``MyHandler``). The name ``page`` stands for
  the page's earlier python blocks (their sources, without their own
  setups), in order. A setup may also put a name of its prelude in place
  of a literal of the block (``https_server`` puts the URL of a local
  HTTPS server in place of ``"https://mcp.example.com/mcp"``); the block
  fails if the literal is not in it;
- ``<!-- doc-test: skip REASON -->``: the block is only compiled. A reason
  is required, and there are few such marks (see :data:`SKIPPED`).

Any other comment right before a block fails the test, as does a name
SETUPS does not have. After the block (and the epilogues) the script calls
every top-level ``test_*`` function the block itself defines, as pytest
would; then closes every client and fake server left in its globals and
checks no library thread (``mcp-input-sync-*``) is left running. A
``print(...)  # TEXT`` line in a block shows its output: each such TEXT
must be a line of the script's stdout, in order. A block that imports a
package that is not installed (Flask, Django, redis, freezegun) is skipped.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import re
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import NamedTuple, Optional

import pytest

import mcp_input_sync as mis
from mcp_input_sync.testing import FakeServer, ToolCall, ToolError

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "docs" / "examples").glob("*.py"))


def fenced_blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", text, flags=re.S)


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.name for e in EXAMPLES])
def test_every_docs_example_runs(example: Path) -> None:
    done = subprocess.run([sys.executable, str(example)], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip()


def test_the_readme_example_is_the_tested_quickstart() -> None:
    readme = (ROOT / "README.md").read_text()
    quickstart = (ROOT / "docs" / "examples" / "quickstart.py").read_text()
    assert quickstart in fenced_blocks(readme, "python")


def test_ci_runs_the_readme_test_command_verbatim() -> None:
    commands = fenced_blocks((ROOT / "README.md").read_text(), "sh")
    assert len(commands) == 2
    demo, tests = (c.strip() for c in commands)
    assert "python -m mcp_input_sync demo" in demo
    assert tests in (ROOT / ".ci" / "run").read_text().splitlines()


def test_the_demo_answers_every_kind_of_request() -> None:
    done = subprocess.run([sys.executable, "-m", "mcp_input_sync", "demo"], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    for marker in ("  log ", "  roots ", "  form ", "  sampling ", "  url ", "host: checkout.example.com", "  progress ", "5/5 packed", "answered 4 server requests in all"):
        assert marker in out, out
    assert out.count("result (ok)") == 3


def test_the_public_surface_is_sorted_and_complete() -> None:
    assert mis.__all__ == sorted(mis.__all__)
    for name in mis.__all__:
        assert hasattr(mis, name)
    public = {n for n in dir(mis) if not n.startswith("_") and n not in {"annotations"}}
    # public submodules (loaded on demand) and the modules behind the re-exports
    modules = {"reflect", "cache", "telemetry", "client", "errors", "handler", "options", "transports", "testing", "terminal", "web", "conformance", "oauth", "config", "group", "pool", "skills", "llm"}
    assert public - modules - set(mis.__all__) == set()


def test_importing_the_package_loads_neither_requests_nor_jsonschema() -> None:
    code = "import sys, mcp_input_sync; print('requests' in sys.modules, 'jsonschema' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.split() == ["False", "False"]


#: Spellings of a path out of the repository: to the folder beside it, or to its parent.
_OUTSIDE = re.compile(
    "|".join(
        [
            re.escape("../" + "shared"),
            re.escape("shared" + "/spec"),
            re.escape("shared" + "/docs"),
            r"\.parent\s*/\s*[\"']" + "shared",
            r"parents\[1\]\.parent\b",
            r"\.parent\.parent\.parent\b",
        ]
    )
)


def test_nothing_in_the_repository_reads_or_points_outside_it() -> None:
    """Tests, benchmarks, peers, CI and docs use only what the repository holds."""
    files = [ROOT / name for name in ("README.md", "setup.cfg", "setup.py", "mkdocs.yml")]
    for folder in ("tests", "benchmarks", "peers", "docs", ".ci"):
        files += [p for p in (ROOT / folder).rglob("*") if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".json"]
    found = []
    for path in files:
        for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if _OUTSIDE.search(line):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert found == []


DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


@pytest.mark.parametrize("page", DOCS, ids=[p.name for p in DOCS])
def test_every_python_block_in_the_docs_compiles(page: Path) -> None:
    for block in fenced_blocks(page.read_text(), "python"):
        compile(block, str(page), "exec")


@pytest.mark.parametrize("page", DOCS, ids=[p.name for p in DOCS])
def test_links_between_doc_pages_resolve(page: Path) -> None:
    for target in re.findall(r"\]\(([^)#:]+\.(?:md|py))(?:#[^)]*)?\)", page.read_text()):
        assert (page.parent / target).exists(), target


def test_the_docs_build_with_mkdocs_in_strict_mode(tmp_path: Path) -> None:
    pytest.importorskip("mkdocs")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(tmp_path / "site")],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={**__import__("os").environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert done.returncode == 0, done.stdout + done.stderr


# --------------------------------------------------------------------------- running the docs' python blocks

BLOCK_TIMEOUT = 60  # seconds for one block's script
COMMENT = re.compile(r"<!--((?:(?!-->).)*)-->\s*\Z", re.S)  # an HTML comment right before a block
DIRECTIVE = re.compile(r"\s*(doc-[a-z-]+):\s*(.*?)\s*\Z", re.S)
FENCE = re.compile(r"^```python\n(.*?)^```", re.S | re.M)

#: The blocks that are only compiled, by test id, with why. The marks in the pages must match.
SKIPPED: dict[str, str] = {}


class Block(NamedTuple):
    page: Path
    n: int  # 1-based, among the page's python blocks
    source: str
    directive: Optional[tuple[str, str]]  # ("doc-setup" | "doc-test" | ..., its text)

    @property
    def id(self) -> str:
        return f"{self.page.name}:{self.n}"


def python_blocks(page: Path) -> list[Block]:
    text = page.read_text()
    blocks = []
    for n, match in enumerate(FENCE.finditer(text), 1):
        before = text[: match.start()].rstrip()
        comment = COMMENT.search(before)
        directive = None
        if comment is not None:
            found = DIRECTIVE.fullmatch(comment.group(1))
            directive = (found.group(1), found.group(2)) if found else ("not a doc- directive", comment.group(1))
        blocks.append(Block(page, n, match.group(1), directive))
    return blocks


ALL_BLOCKS = [b for page in DOCS for b in python_blocks(page)]


# The docs' server: the testing kit's fake with what the docs' examples call.

def docs_server(era: str = "legacy") -> FakeServer:
    """A FakeServer with the tools, resource and prompt the docs' examples use."""
    fake = FakeServer(era=era, timeout=20)
    name_form = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}

    @fake.tool
    def greet(call: ToolCall) -> str:
        return f"Hello, {call.elicit('Your name?', name_form)['content']['name']}!"

    @fake.tool
    def deploy(call: ToolCall) -> str:
        env = call.arguments.get("env", "production")
        call.log("info", f"deploying to {env}")
        call.progress(1, 2, "uploading")
        call.progress(2, 2, "done")
        return f"deployed to {env}"

    @fake.tool
    def build(call: ToolCall) -> str:
        call.log("info", "build started")
        call.notify("notifications/tools/list_changed")
        return "built"

    @fake.tool
    def book_trip(call: ToolCall) -> str:
        return f"trip to {call.arguments.get('city')} booked"

    calendar_calls: list[ToolCall] = []

    @fake.tool
    def sync_calendar(call: ToolCall) -> str:
        calendar_calls.append(call)
        if len(calendar_calls) == 1:
            link = {"mode": "url", "elicitationId": "calendar-1", "url": "https://calendar.example.com/authorize", "message": "Allow calendar access"}
            raise ToolError(-32042, "This request requires more information.", {"elicitations": [link]})
        return "calendar synced"

    fake.add_resource("file:///notes.txt", "Water the plants.")
    fake.add_prompt(
        "review",
        lambda args: f"Review this {args['language']} code.",
        description="a code review",
        arguments=[{"name": "language", "required": True}],
    )
    return fake


def serve_stdio() -> None:
    """The ``server.py`` of a block's directory: :func:`docs_server` over stdio, one message a line."""
    fake = docs_server()
    out = sys.stdout.buffer
    lock = threading.Lock()

    def deliver(data: bytes) -> None:
        with lock:
            out.write(data.rstrip(b"\n") + b"\n")
            out.flush()

    fake.transport.start(deliver, lambda exc: None)
    for line in sys.stdin.buffer:
        if line.strip():
            fake.transport.send(line.strip())
    fake.close()
    fake.transport.close(2.0)


SERVER_PY = f"import sys\n\nsys.path.insert(0, {str(ROOT)!r})  # a stdio server gets no PYTHONPATH\nfrom tests.test_docs import serve_stdio\n\nserve_stdio()\n"


class Setup(NamedTuple):
    prelude: str
    epilogue: str = ""
    #: (literal of the block, what runs in its place), e.g. a local URL for the docs' example one.
    replace: tuple[tuple[str, str], ...] = ()


_HANDLER = '''
import mcp_input_sync as mis


class MyHandler(mis.InputHandler):
    """Answers everything the docs' server asks."""

    def handle_elicitation(self, params, ctx):
        if ctx.mode == "url":
            return {"action": "accept"}
        return {"action": "accept", "content": {"name": "Ada"}}

    def elicitation_modes(self):
        return ("form", "url")

    def handle_sampling(self, params, ctx):
        return {"role": "assistant", "content": {"type": "text", "text": "Fine."}, "model": "doc-model"}

    def list_roots(self, ctx):
        return {"roots": [{"uri": "file:///srv/project"}]}
'''

#: What ``<!-- doc-setup: NAME -->`` puts before (prelude) and after (epilogue) a block.
SETUPS: dict[str, Setup] = {
    # MyHandler, an InputHandler that answers everything the docs' server asks
    "my_handler": Setup(_HANDLER),
    # an open client on the docs' server (in memory), with MyHandler
    "client": Setup(
        _HANDLER + "from tests.test_docs import docs_server\n\nfake = docs_server()\nclient = fake.client(handler=MyHandler()).open()\n",
        "fake.close()\n",
    ),
    # the user a web call is made for
    "user_id": Setup('user_id = "alice"\n', 'assert result["content"][0]["text"] == "trip to Porto booked"\n'),
    # the block defines MyHandler: a client advertises exactly what it overrides
    "advertised": Setup(
        "import mcp_input_sync as mis\n",
        "from tests.test_docs import docs_server\n\n"
        "with docs_server() as fake, fake.client(handler=MyHandler()):\n"
        "    assert set(fake.client_capabilities) == {'sampling', 'elicitation', 'roots'}, fake.client_capabilities\n",
    ),
    # the block defines bearer(request): it sets the header from token_store
    "token_store": Setup(
        "class token_store:\n    @staticmethod\n    def current():\n        return 'doc-token'\n",
        "import requests\n\n"
        "prepared = bearer(requests.Request('POST', 'https://mcp.example.com/mcp').prepare())\n"
        "assert prepared.headers['Authorization'] == 'Bearer doc-token'\n",
    ),
    # the docs' server over HTTPS on 127.0.0.1 (tests/fake_https.py): its URL runs in place of the
    # docs' example one, and the test CA that issued its certificate is passed through the
    # documented verify option in place of the example's PEM path. my_auth is a bearer-token hook. After
    # the block: every POST carried the block's header and my_auth's token, and deploy ran.
    "https_server": Setup(
        "import json\nimport os\nfrom pathlib import Path\n\n"
        "from tests.fake_https import FakeOverHttps\nfrom tests.test_docs import docs_server\n\n"
        "https_server = FakeOverHttps(docs_server(), Path.cwd())\n\n"
        "def my_auth(request):\n    request.headers['Authorization'] = 'Bearer doc-token'\n    return request\n",
        "posts = [seen for seen in https_server.requests if seen.verb == 'POST']\n"
        "assert posts, 'the block posted nothing'\n"
        "for seen in posts:\n"
        "    assert seen.headers.get('x-tenant') == 'acme' and seen.headers.get('authorization') == 'Bearer doc-token', seen\n"
        "calls = https_server.fake.requests_seen('tools/call')\n"
        "assert [(call['name'], call['arguments']) for call in calls] == [('deploy', {'env': 'staging'})], calls\n"
        "assert any('deployed to staging' in json.dumps(sent) for sent in https_server.fake.sent)\n"
        "https_server.close()\n",
        replace=(('"https://mcp.example.com/mcp"', "https_server.url"), ('"/etc/ssl/company-ca.pem"', "str(https_server.ca_path)")),
    ),
    # the docs' server over HTTPS on 127.0.0.1, asking for a client certificate from a test CA (mutual TLS), and a
    # forwarding proxy (tests/forward_proxy.py) that alone resolves the name its URL runs with: the block's
    # certificate paths, CA bundle and proxy become the test ones; after the block, the proxy carried the requests
    # and deploy ran
    "mtls_proxy": Setup(
        "from pathlib import Path\n\nimport trustme\n\n"
        "from tests.fake_https import FakeOverHttps\nfrom tests.forward_proxy import ForwardProxy\nfrom tests.test_docs import docs_server\n\n"
        "_clients = trustme.CA()\n_issued = _clients.issue_cert('docs@example.com')\n"
        "_issued.cert_chain_pems[0].write_to_path('client.crt')\n_issued.private_key_pem.write_to_path('client.key')\n"
        "mtls_server = FakeOverHttps(docs_server(), Path.cwd(), names=('mcp.proxied.test',), client_ca=_clients)\n"
        "mtls_proxy = ForwardProxy(hosts={'mcp.proxied.test': '127.0.0.1'})\n",
        "assert mtls_proxy.carried('CONNECT'), 'nothing went through the proxy'\n"
        "assert [call['name'] for call in mtls_server.fake.requests_seen('tools/call')] == ['deploy']\n"
        "mtls_proxy.close()\nmtls_server.close()\n",
        replace=(
            ('"https://mcp.example.com/mcp"', "mtls_server.url.replace('127.0.0.1', 'mcp.proxied.test')"),
            ('"/etc/ssl/mcp-client.crt"', "'client.crt'"), ('"/etc/ssl/mcp-client.key"', "'client.key'"),
            ('"http://proxy.example.com:3128"', "mtls_proxy.url"), ('"/etc/ssl/company-ca.pem"', "str(mtls_server.ca_path)"),
        ),
    ),
    # a protected MCP endpoint with its authorization server on 127.0.0.1 (tests/oauth_peer.py):
    # its URL runs in place of the docs' example one; after the block, the server was reached
    "oauth_server": Setup(
        "from tests.oauth_peer import OAuthPeer\n\noauth_server = OAuthPeer()\n",
        "assert oauth_server.requests_to('/mcp'), 'the block never reached the server'\n"
        "oauth_server.close()\n",
        replace=(('"https://mcp.example.com/mcp"', "oauth_server.url"),),
    ),
    # a protected MCP endpoint whose authorization server knows the client "billing-worker" and its
    # secret (tests/oauth_peer.py): its URL and issuer run in place of the docs' example ones; after
    # the block, one client_credentials token request was made
    "machine_server": Setup(
        "import os\n\nfrom tests.oauth_peer import OAuthPeer\n\n"
        "machine_server = OAuthPeer()\nmachine_server.machine_secrets = {'billing-worker': 'doc-secret'}\n"
        "os.environ['BILLING_CLIENT_SECRET'] = 'doc-secret'\n",
        "assert machine_server.counts['machine'] == 1, machine_server.counts\n"
        "assert machine_server.machine_forms[0]['grant_type'] == 'client_credentials'\n"
        "machine_server.close()\n",
        replace=(('"https://mcp.example.com/mcp"', "machine_server.url"), ('"https://auth.example.com"', "machine_server.origin")),
    ),
    # an open client on a server that offers one skill, pdf-tools (tests/test_skills.py's Served)
    "skills_client": Setup(
        "from tests.test_skills import Served\n\nserved = Served('legacy')\nclient = served.fake.client().open()\n",
        "client.close()\nserved.fake.close()\n",
    ),
    # a stand-in OpenAI endpoint on 127.0.0.1 (tests/llm_peers.py) in place of OpenAI(), with one
    # scripted answer; after the block, the demo server's sampling request reached it
    "openai_stand_in": Setup(
        "from tests.llm_peers import ProviderStandIn, completion\n\n"
        "stand_in = ProviderStandIn()\nstand_in.script(completion('The Belem Tower, at sunset.'))\n",
        "(body,) = stand_in.bodies('/v1/chat/completions')\n"
        "assert body['messages'][0] == {'role': 'system', 'content': 'You are a travel guide.'}, body\n"
        "stand_in.close()\n",
        replace=(("OpenAI()", "stand_in.openai()"),),
    ),
    # the same stand-in, scripted to call the demo server's echo tool once, then to answer
    "openai_tool_loop": Setup(
        "import json as _json\n\nfrom tests.llm_peers import ProviderStandIn, completion\n\n"
        "stand_in = ProviderStandIn()\n"
        "stand_in.script(completion(None, finish='tool_calls', tool_calls=[{'id': 'c1', 'type': 'function', "
        "'function': {'name': 'echo', 'arguments': _json.dumps({'text': 'Porto in May'})}}]), "
        "completion('You said: Porto in May.'))\n",
        "first, second = stand_in.bodies('/v1/chat/completions')\n"
        "assert [t['function']['name'] for t in first['tools']] == ['plan_trip', 'book_hotel', 'pack_bags', 'echo'], first['tools']\n"
        "assert second['messages'][-1] == {'role': 'tool', 'tool_call_id': 'c1', 'content': 'Porto in May'}, second['messages']\n"
        "stand_in.close()\n",
        replace=(("OpenAI()", "stand_in.openai()"),),
    ),
    # Browser() opens no real browser: a stand-in follows the authorization server's redirect to the
    # loopback listener, as a browser would; FileStore() writes in the block's folder, not ~/.config
    "browser": Setup(
        "from pathlib import Path\n\nimport requests as _requests\n\n"
        "def _browser(url):\n"
        "    assert 'close this window' in _requests.get(url, timeout=10).text\n"
        "    return True\n",
        "assert FileStore(Path.cwd() / 'tokens').path(oauth_server.url).exists()\n",
        replace=(("Browser()", "Browser(open_browser=_browser)"), ("FileStore()", "FileStore(Path.cwd() / 'tokens')")),
    ),
    # a web app's session (a dict) and request (request.url: where the user's browser came back
    # after logging in at the URL begin() gave); the block's store folder is made in its own folder
    "web_request": Setup(
        "from pathlib import Path\n\nimport requests as _requests\n\n"
        "class _Session(dict):\n"
        "    def __setitem__(self, key, value):\n"
        "        super().__setitem__(key, value)\n"
        "        request.login_url = value['url']\n\n"
        "class _Request:\n"
        "    login_url = None\n\n"
        "    @property\n"
        "    def url(self):\n"
        "        return _requests.get(self.login_url, allow_redirects=False, timeout=10).headers['Location']\n\n"
        "session, request = _Session(), _Request()\n",
        "assert session == {}\n",
        replace=(('"/var/lib/myapp/mcp-tokens"', "str(Path.cwd() / 'mcp-tokens')"),),
    ),
    # the block builds a Flask app with the login blueprint and a /notes view: a signed-in user
    # meets the login, logs in at the authorization server, and /notes then answers
    "flask_logins": Setup(
        "import re as _re\nfrom pathlib import Path\n\nimport requests as _requests\n",
        "with app.test_client() as _browser:\n"
        "    with _browser.session_transaction() as _session:\n"
        "        _session['user_id'] = 'alice'\n"
        "    _first = _browser.get('/notes')\n"
        "    assert _first.status_code == 302, _first.status_code\n"
        "    _page = _browser.get(_first.headers['Location'])\n"
        "    assert _page.status_code == 200, _page.status_code\n"
        "    _fields = dict(_re.findall(r'name=\"([^\"]+)\" value=\"([^\"]*)\"', _page.get_data(as_text=True)))\n"
        "    _started = _browser.post(_first.headers['Location'].split('?')[0], data=_fields)\n"
        "    assert _started.status_code == 303, _started.get_data(as_text=True)\n"
        "    _back = _requests.get(_started.headers['Location'], allow_redirects=False, timeout=10).headers['Location']\n"
        "    _done = _browser.get(_back.replace('http://localhost', ''))\n"
        "    assert _done.status_code == 303 and _done.headers['Location'] == '/notes', _done.status_code\n"
        "    assert _browser.get('/notes').get_data(as_text=True) == 'mcp offline_access'\n",
        replace=(('FileStore("/var/lib/myapp/mcp-tokens")', "FileStore(Path.cwd() / 'mcp-tokens')"),),
    ),
    # the block is a Django settings.py and urls.py in one module: configure Django with that
    # module's names (sessions included), then the login routes resolve under the block's prefix
    "django_logins": Setup(
        "import django\nfrom django.conf import settings\n\n"
        "settings.configure(SECRET_KEY='doc', ROOT_URLCONF='__main__', INSTALLED_APPS=['django.contrib.sessions', 'mcp_input_sync.web.django'])\n"
        "django.setup()\n",
        "from django.urls import reverse\n\n"
        "assert 'mcp_input_sync.web.django' in INSTALLED_APPS and MCP_INPUT_SYNC_LOGINS\n"
        "assert reverse('mcp_login:login', args=['notes']) == '/mcp-login/notes/login/'\n"
        "assert reverse('mcp_login:callback') == '/mcp-login/callback/'\n"
        "assert reverse('mcp_login:logout', args=['notes']) == '/mcp-login/notes/logout/'\n",
    ),
    # the LLM a TerminalHandler drafts sampling replies with
    "my_llm": Setup("def my_llm(request):\n    return 'Looks good.'\n"),
    # the block defines handle_elicitation(self, params, ctx) on a ui toolkit; nobody answers, so
    # handler_timeout cancels it: it must close the form, and the server gets -32603
    "ui": Setup(
        "class Job:\n"
        "    closed = False\n"
        "    def done(self):\n        return False\n"
        "    def close(self):\n        self.closed = True\n"
        "    def answer(self):\n        raise AssertionError('nobody answered')\n\n"
        "class ui:\n    jobs = []\n"
        "    @classmethod\n    def show_form(cls, params):\n        cls.jobs.append(Job())\n        return cls.jobs[-1]\n",
        "import mcp_input_sync as mis\nfrom tests.test_docs import docs_server\n\n"
        "class Handler(mis.InputHandler):\n    handle_elicitation = handle_elicitation\n\n"
        "with docs_server() as fake:\n"
        "    with fake.client(handler=Handler(), handler_timeout=0.2) as client:\n"
        "        assert client.call_tool('greet')['isError'] is True\n"
        "    fake.assert_refused(-32603, 'elicitation/create')\n"
        "assert [job.closed for job in ui.jobs] == [True]\n",
    ),
    # a transport to a server, and SlowUser, a handler whose user never answers
    "slow_user": Setup(
        "import mcp_input_sync as mis\nfrom tests.test_docs import docs_server\n\n"
        "class SlowUser(mis.InputHandler):\n"
        "    def handle_elicitation(self, params, ctx):\n"
        "        ctx.wait_cancelled(10)\n"
        "        return {'action': 'cancel'}\n\n"
        "fake = docs_server()\ntransport = fake.transport\n",
        "fake.close()\n",
    ),
    # the block is a Django settings.py and urls.py in one module: configure Django with
    # that module's names, then the app's routes resolve under the block's prefix
    "django_project": Setup(
        "import django\nfrom django.conf import settings\nfrom mcp_input_sync.web import PendingInputBroker\n\n"
        "settings.configure(SECRET_KEY='doc', ROOT_URLCONF='__main__', INSTALLED_APPS=['mcp_input_sync.web.django'],\n"
        "                   MCP_INPUT_SYNC_BROKER=PendingInputBroker())\n"
        "django.setup()\n",
        "from django.urls import reverse\n\n"
        "assert 'mcp_input_sync.web.django' in INSTALLED_APPS\n"
        "assert reverse('mcp_input:index') == '/inputs/'\n"
        "assert reverse('mcp_input:show', args=['abc']) == '/inputs/abc/'\n",
    ),
    # the block builds a Flask app: its inputs page answers a signed-in user
    "then_open_the_inputs_page": Setup(
        "",
        "with app.test_client() as browser:\n"
        "    assert browser.get('/inputs/').status_code == 403\n"
        "    with browser.session_transaction() as session_:\n"
        "        session_['user_id'] = 'alice'\n"
        "    assert browser.get('/inputs/').status_code == 200\n"
        "    assert browser.get('/inputs/pending.json').get_json() == []\n",
    ),
}

_CLEANUP = '''
import threading as _threading

import mcp_input_sync as _mis
from mcp_input_sync.testing import FakeServer as _FakeServer

for _value in list(globals().values()):
    if isinstance(_value, (_mis.Client, _FakeServer)):
        _value.close()
for _thread in _threading.enumerate():
    if _thread.name.startswith("mcp-input-sync-"):
        _thread.join(5)
_left = [t.name for t in _threading.enumerate() if t.name.startswith("mcp-input-sync-") and t.is_alive()]
assert not _left, f"library threads left running: {_left}"
'''


def setup_names(block: Block) -> list[str]:
    if block.directive is None:
        return []
    kind, text = block.directive
    assert kind in ("doc-setup", "doc-test"), f"{block.id}: unknown directive {kind}"
    if kind == "doc-test":
        assert text.startswith("skip ") and len(text) > 10, f"{block.id}: doc-test must be 'skip REASON', not {text!r}"
        return []
    names = text.split()
    for name in names:
        assert name == "page" or name in SETUPS, f"{block.id}: no setup named {name!r} (see SETUPS in tests/test_docs.py)"
    return names


def script_for(block: Block) -> str:
    preludes: list[str] = []
    epilogues: list[str] = []
    source = block.source
    for name in setup_names(block):
        if name == "page":
            preludes += [b.source for b in python_blocks(block.page)[: block.n - 1]]
        else:
            preludes.append(SETUPS[name].prelude)
            epilogues.append(SETUPS[name].epilogue)
            for literal, stand_in in SETUPS[name].replace:
                assert literal in source, f"{block.id}: setup {name!r} puts {stand_in} in place of {literal}, which the block lacks"
                source = source.replace(literal, stand_in)
    tree = ast.parse(source)
    tests = [n.name for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")]
    calls = "".join(f"{name}()\n" for name in tests)
    parts = [*preludes, f"# ---- {block.id}\n" + source, *epilogues, calls, _CLEANUP]
    return "\n\n".join(textwrap.dedent(p) for p in parts if p)


def missing_packages(source: str) -> list[str]:
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".")[0])
    return sorted(n for n in names if importlib.util.find_spec(n) is None)


def expected_output(source: str) -> list[str]:
    return [m.group(1).strip() for m in re.finditer(r"^\s*print\(.*\)\s+#\s*(.+)$", source, flags=re.M)]


@pytest.mark.parametrize("block", ALL_BLOCKS, ids=[b.id for b in ALL_BLOCKS])
def test_every_python_block_in_the_docs_runs(block: Block, tmp_path: Path) -> None:
    if block.directive is not None and block.directive[0] == "doc-test":
        setup_names(block)  # checks the mark's form
        assert SKIPPED.get(block.id) == block.directive[1][len("skip ") :], f"{block.id}: list the skip in SKIPPED"
        compile(block.source, block.id, "exec")
        pytest.skip(block.directive[1])
    script = script_for(block)
    missing = missing_packages(script)
    if missing:
        pytest.skip(f"not installed: {', '.join(missing)}")
    (tmp_path / "server.py").write_text(SERVER_PY)
    (tmp_path / "doc_block.py").write_text(script)
    python_dir = str(Path(sys.executable).parent)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PATH": python_dir + os.pathsep + os.environ.get("PATH", "")}
    done = subprocess.run(
        [sys.executable, "-W", "error", "doc_block.py"],
        capture_output=True,
        text=True,
        timeout=BLOCK_TIMEOUT,
        cwd=tmp_path,
        env=env,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, f"{block.id} failed; the script was:\n{script}\n--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}"
    lines = [line.strip() for line in done.stdout.splitlines()]
    position = 0
    for want in expected_output(block.source):
        assert want in lines[position:], f"{block.id}: {want!r} not printed (in order); stdout:\n{done.stdout}"
        position = lines.index(want, position) + 1


def test_the_skip_marks_are_few_and_listed() -> None:
    marked = {b.id for b in ALL_BLOCKS if b.directive is not None and b.directive[0] == "doc-test"}
    assert marked == set(SKIPPED)
    assert len(marked) <= len(ALL_BLOCKS) // 10 + 1


def test_the_docs_server_serves_what_the_docs_name() -> None:
    with docs_server() as fake, fake.client(handler=None) as client:
        assert {t["name"] for t in client.list_tools()} == {"greet", "deploy", "build", "book_trip", "sync_calendar"}
        assert client.read_resource("file:///notes.txt")["contents"][0]["text"] == "Water the plants."
        assert client.get_prompt("review", {"language": "python"})["messages"][0]["content"]["text"] == "Review this python code."
