"""The Flask blueprint, through Flask's test client, with real client calls parked by WebHandler."""

from __future__ import annotations

import re
import time
from typing import Any, Iterator

import pytest

flask = pytest.importorskip("flask")

from mcp_input_sync.web import PendingInput, PendingInputBroker, WebHandler  # noqa: E402
from mcp_input_sync.web.flask import CSRF_FIELD, blueprint  # noqa: E402

from mcp_input_sync.testing import FakeServer  # noqa: E402

from .harness import schema_errors  # noqa: E402
from .test_web_core import FORM, URL_PARAMS, Background, wait_empty, wait_pending, web_client, web_server  # noqa: E402

JsonDict = dict[str, Any]


def make_app(broker: PendingInputBroker, **options: Any) -> Any:
    app = flask.Flask(__name__)
    app.secret_key = "test-secret"
    app.config["TESTING"] = True
    app.register_blueprint(blueprint(broker, lambda: flask.session.get("user"), **options), url_prefix="/inputs")
    return app


def login(client: Any, user: str) -> None:
    with client.session_transaction() as sess:
        sess["user"] = user


def csrf_of(page: str) -> str:
    match = re.search(r'name="_mis_csrf" value="([^"]+)"', page)
    assert match, "no CSRF field in the form"
    return match.group(1)


def park(broker: PendingInputBroker, kind: str = "form", user: str = "alice") -> PendingInput:
    params: JsonDict = {"message": "Who <are> you", "requestedSchema": FORM} if kind == "form" else dict(URL_PARAMS)
    pending = PendingInput(id=f"{kind}-{user}", kind=kind, params=params, user=user, created=time.time(), server_id="srv", url=params.get("url"), host="calendar.example")
    broker.park(pending)
    return pending


@pytest.fixture
def server() -> Iterator[FakeServer]:
    fake = web_server()
    yield fake
    fake.close()
    assert schema_errors(fake) == []


def test_full_flow_a_person_answers_a_real_call(server: FakeServer) -> None:
    broker = PendingInputBroker()
    app = make_app(broker)
    web = app.test_client()
    login(web, "alice")
    with web_client(server, WebHandler(broker)) as client:
        call = Background(lambda: client.call_tool("form", assigns={"user": "alice"}))
        (pending,) = wait_pending(broker, "alice")
        listing = web.get("/inputs/")
        assert listing.status_code == 200 and f'href="/inputs/{pending.id}"' in listing.text
        assert web.get("/inputs/pending.json").json[0]["id"] == pending.id
        page = web.get(f"/inputs/{pending.id}")
        assert page.status_code == 200 and page.headers["Cache-Control"] == "no-store"
        assert "Tell us &lt;who&gt; you are" in page.text and 'type="password"' in page.text
        token = csrf_of(page.text)
        # a wrong answer: 400, the form again with the errors, the call still waiting
        bad = web.post(f"/inputs/{pending.id}", data={CSRF_FIELD: token, "_action": "accept", "field:name": "G", "field:age": "x", "field:pin": "9999"})
        assert bad.status_code == 400
        assert "is shorter than 2" in bad.text and "must be an integer" in bad.text and "9999" not in bad.text
        assert broker.pending("alice") == [pending]
        good = web.post(
            f"/inputs/{pending.id}",
            data={CSRF_FIELD: csrf_of(bad.text), "_action": "accept", "field:name": "Grace", "field:age": "40", "field:plan": "pro", "field:tags": ["a", "b"]},
        )
        assert good.status_code == 303 and good.headers["Location"] == "/inputs/"
        assert call.answer() == {"result": {"action": "accept", "content": {"name": "Grace", "age": 40, "plan": "pro", "agree": False, "tags": ["a", "b"]}}}
        assert web.get(f"/inputs/{pending.id}").status_code == 404
        assert "Nothing is waiting" in web.get("/inputs/").text
    wait_empty(broker)


def test_a_url_elicitation_declined_on_the_web(server: FakeServer) -> None:
    broker = PendingInputBroker()
    web = make_app(broker).test_client()
    login(web, "alice")
    with web_client(server, WebHandler(broker), assigns={"user": "alice"}) as client:
        call = Background(lambda: client.call_tool("url"))
        (pending,) = wait_pending(broker, "alice")
        page = web.get(f"/inputs/{pending.id}").text
        assert "calendar.example" in page and 'rel="noopener noreferrer nofollow"' in page
        assert web.post(f"/inputs/{pending.id}", data={CSRF_FIELD: csrf_of(page), "_action": "decline"}).status_code == 303
        assert call.answer() == {"result": {"action": "decline"}}


def test_only_the_owner_sees_or_answers() -> None:
    broker = PendingInputBroker()
    pending = park(broker, user="alice")
    web = make_app(broker).test_client()
    assert web.get("/inputs/").status_code == 403  # nobody signed in
    assert web.get(f"/inputs/{pending.id}").status_code == 403
    login(web, "bob")
    assert pending.id not in web.get("/inputs/").text
    assert web.get(f"/inputs/{pending.id}").status_code == 404
    park(broker, user="bob")
    token = csrf_of(web.get("/inputs/form-bob").text)
    assert web.post(f"/inputs/{pending.id}", data={CSRF_FIELD: token, "_action": "decline"}).status_code == 404
    assert web.get("/inputs/no-such-id").status_code == 404
    assert broker.pending("alice") == [pending]


def test_posts_need_the_session_csrf_token() -> None:
    broker = PendingInputBroker()
    pending = park(broker)
    web = make_app(broker).test_client()
    login(web, "alice")
    assert web.post(f"/inputs/{pending.id}", data={"_action": "decline"}).status_code == 400  # no token yet
    token = csrf_of(web.get(f"/inputs/{pending.id}").text)
    assert web.post(f"/inputs/{pending.id}", data={CSRF_FIELD: token + "x", "_action": "decline"}).status_code == 400
    # another browser (another session) has another token
    other = make_app(broker).test_client()
    login(other, "alice")
    csrf_of(other.get(f"/inputs/{pending.id}").text)
    assert other.post(f"/inputs/{pending.id}", data={CSRF_FIELD: token, "_action": "decline"}).status_code == 400
    assert broker.pending("alice") == [pending]
    assert web.post(f"/inputs/{pending.id}", data={CSRF_FIELD: token, "_action": "decline"}).status_code == 303
    assert broker.wait(pending.id, 0) == {"action": "decline"}


def test_a_host_csrf_token_replaces_the_blueprints() -> None:
    broker = PendingInputBroker()
    pending = park(broker)
    web = make_app(broker, csrf_token=lambda: "host-token").test_client()
    login(web, "alice")
    page = web.get(f"/inputs/{pending.id}").text
    assert 'name="csrf_token" value="host-token"' in page and CSRF_FIELD not in page
    # the host's CSRF protection (Flask-WTF) checks the POST; the blueprint does not
    assert web.post(f"/inputs/{pending.id}", data={"_action": "cancel"}).status_code == 303


def test_a_sampling_request_approved_on_the_web(server: FakeServer) -> None:
    broker = PendingInputBroker()
    web = make_app(broker).test_client()
    login(web, "alice")
    with web_client(server, WebHandler(broker, draft=lambda params, ctx: "Draft <reply>"), assigns={"user": "alice"}) as client:
        call = Background(lambda: client.call_tool("sample"))
        (pending,) = wait_pending(broker, "alice")
        page = web.get(f"/inputs/{pending.id}").text
        assert "Draft &lt;reply&gt;" in page and "Say &lt;hi&gt;" in page
        empty = web.post(f"/inputs/{pending.id}", data={CSRF_FIELD: csrf_of(page), "_action": "approve", "text": ""})
        assert empty.status_code == 400 and "a reply is required" in empty.text
        assert web.post(f"/inputs/{pending.id}", data={CSRF_FIELD: csrf_of(page), "_action": "approve", "text": "Hello"}).status_code == 303
        assert call.answer()["result"]["content"] == {"type": "text", "text": "Hello"}


def test_the_docs_flask_example_runs() -> None:
    from pathlib import Path

    page = (Path(__file__).parent.parent / "docs" / "web.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", page, re.S)
    (example,) = [b for b in blocks if "app.register_blueprint" in b]
    namespace: dict[str, Any] = {"__name__": "web_docs_example"}
    exec(compile(example, "docs/web.md", "exec"), namespace)
    try:
        with namespace["trips"].lease() as client:  # the example's ClientPool of the stdio server
            assert client.era in ("legacy", "modern")
        web = namespace["app"].test_client()
        with web.session_transaction() as sess:
            sess["user_id"] = "alice"
        assert "Nothing is waiting" in web.get("/inputs/").text
    finally:
        namespace["trips"].close()
    (timing,) = [b for b in blocks if "handler_timeout" in b]
    exec(compile(timing, "docs/web.md", "exec"), {})
