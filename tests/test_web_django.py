"""The Django app, through Django's test client (with CSRF checks enforced), with real client calls parked by WebHandler."""

from __future__ import annotations

import re
import time
from typing import Any, Iterator

import pytest

django = pytest.importorskip("django")

from django.conf import settings  # noqa: E402

from mcp_input_sync.web import PendingInput, PendingInputBroker, WebHandler  # noqa: E402

from mcp_input_sync.testing import FakeServer  # noqa: E402

from .harness import schema_errors  # noqa: E402
from .test_web_core import FORM, Background, wait_empty, wait_pending, web_client, web_server  # noqa: E402

BROKER = PendingInputBroker()


def header_user(request: Any) -> Any:
    """The test's sign-in: a header (a real host uses request.user, the default)."""
    return request.headers.get("X-Test-User")


if not settings.configured:
    settings.configure(
        DEBUG=False,
        SECRET_KEY="test-secret-key-for-the-web-bridge-tests",
        ALLOWED_HOSTS=["testserver"],
        ROOT_URLCONF=__name__,
        INSTALLED_APPS=["mcp_input_sync.web.django"],
        MIDDLEWARE=["django.contrib.sessions.middleware.SessionMiddleware", "django.middleware.csrf.CsrfViewMiddleware"],
        SESSION_ENGINE="django.contrib.sessions.backends.signed_cookies",
        MCP_INPUT_SYNC_BROKER=BROKER,
        MCP_INPUT_SYNC_USER=header_user,
        USE_TZ=True,
    )
    django.setup()

from django.test import Client as DjangoClient  # noqa: E402
from django.test.utils import override_settings  # noqa: E402
from django.urls import include, path  # noqa: E402

from mcp_input_sync.web.django import views  # noqa: E402

def host_page(request: Any) -> Any:
    """A page of the host's own, with its logout form's CSRF token (what ``{% csrf_token %}`` puts there)."""
    from django.http import HttpResponse
    from django.middleware.csrf import get_token

    return HttpResponse(f'<form method="post"><input name="csrfmiddlewaretoken" value="{get_token(request)}"></form>')


urlpatterns = [
    path("inputs/", include("mcp_input_sync.web.django.urls")),
    path("mcp-login/", include("mcp_input_sync.web.django.login_urls")),
    path("page/", host_page),
]

pytestmark = pytest.mark.skipif(settings.ROOT_URLCONF != __name__, reason="Django was configured by another test module")


def csrf_of(page: str) -> str:
    match = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)
    assert match, "no CSRF field in the form"
    return match.group(1)


def browser(user: str) -> Any:
    return DjangoClient(enforce_csrf_checks=True, headers={"X-Test-User": user})


def park(broker: PendingInputBroker, user: str = "alice") -> PendingInput:
    pending = PendingInput(id=f"form-{user}", kind="form", params={"message": "m", "requestedSchema": FORM}, user=user, created=time.time())
    broker.park(pending)
    return pending


@pytest.fixture
def broker() -> Iterator[PendingInputBroker]:
    fresh = PendingInputBroker()
    with override_settings(MCP_INPUT_SYNC_BROKER=fresh):
        yield fresh


@pytest.fixture
def server() -> Iterator[FakeServer]:
    fake = web_server()
    yield fake
    fake.close()
    assert schema_errors(fake) == []


def test_full_flow_a_person_answers_a_real_call(broker: PendingInputBroker, server: FakeServer) -> None:
    web = browser("alice")
    with web_client(server, WebHandler(broker)) as client:
        call = Background(lambda: client.call_tool("form", assigns={"user": "alice"}))
        (pending,) = wait_pending(broker, "alice")
        listing = web.get("/inputs/")
        assert listing.status_code == 200 and f'href="/inputs/{pending.id}/"' in listing.text
        assert web.get("/inputs/pending.json").json()[0]["id"] == pending.id
        page = web.get(f"/inputs/{pending.id}/")
        assert page.status_code == 200 and page["Cache-Control"] == "no-store"
        assert "Tell us &lt;who&gt; you are" in page.text
        token = csrf_of(page.text)
        bad = web.post(f"/inputs/{pending.id}/", {"csrfmiddlewaretoken": token, "_action": "accept", "field:name": "Grace", "field:age": "12"})
        assert bad.status_code == 400 and "is below the minimum 18" in bad.text and "is required" in bad.text
        good = web.post(
            f"/inputs/{pending.id}/",
            {"csrfmiddlewaretoken": token, "_action": "accept", "field:name": "Grace", "field:age": "40", "field:plan": "free", "field:days": ["mon", "tue"]},
        )
        assert good.status_code == 303 and good["Location"] == "/inputs/"
        content = {"name": "Grace", "age": 40, "plan": "free", "agree": False, "days": ["mon", "tue"]}
        assert call.answer() == {"result": {"action": "accept", "content": content}}
        assert web.get(f"/inputs/{pending.id}/").status_code == 404
    wait_empty(broker)


def test_django_csrf_protects_the_answer(broker: PendingInputBroker) -> None:
    pending = park(broker)
    web = browser("alice")
    assert web.post(f"/inputs/{pending.id}/", {"_action": "decline"}).status_code == 403  # no CSRF cookie or token
    token = csrf_of(web.get(f"/inputs/{pending.id}/").text)
    assert web.post(f"/inputs/{pending.id}/", {"csrfmiddlewaretoken": "x" * 64, "_action": "decline"}).status_code == 403
    assert broker.pending("alice") == [pending]
    assert web.post(f"/inputs/{pending.id}/", {"csrfmiddlewaretoken": token, "_action": "decline"}).status_code == 303
    assert broker.wait(pending.id, 0) == {"action": "decline"}


def test_csrf_is_checked_without_the_middleware(broker: PendingInputBroker) -> None:
    pending = park(broker)
    with override_settings(MIDDLEWARE=[]):
        web = browser("alice")
        assert web.post(f"/inputs/{pending.id}/", {"_action": "decline"}).status_code == 403
    assert broker.pending("alice") == [pending]


def test_only_the_owner_sees_or_answers(broker: PendingInputBroker) -> None:
    pending = park(broker, "alice")
    anonymous = DjangoClient(enforce_csrf_checks=True)
    assert anonymous.get("/inputs/").status_code == 403
    assert anonymous.get(f"/inputs/{pending.id}/").status_code == 403
    bob = browser("bob")
    assert pending.id not in bob.get("/inputs/").text
    assert bob.get("/inputs/pending.json").json() == []
    assert bob.get(f"/inputs/{pending.id}/").status_code == 404
    park(broker, "bob")
    token = csrf_of(bob.get("/inputs/form-bob/").text)
    assert bob.post(f"/inputs/{pending.id}/", {"csrfmiddlewaretoken": token, "_action": "decline"}).status_code == 404
    assert bob.put(f"/inputs/{pending.id}/").status_code in (403, 405)
    assert broker.pending("alice") == [pending]


def test_the_default_user_is_the_authenticated_user() -> None:
    class User:
        def __init__(self, pk: int, authenticated: bool) -> None:
            self.pk = pk
            self.is_authenticated = authenticated

    class Request:
        def __init__(self, user: Any) -> None:
            self.user = user

    assert views.default_user(Request(User(7, True))) == "7"
    assert views.default_user(Request(User(7, False))) is None
    assert views.default_user(object()) is None


def test_the_broker_setting_may_be_a_dotted_path() -> None:
    with override_settings(MCP_INPUT_SYNC_BROKER=f"{__name__}.BROKER"):
        assert views.get_broker() is BROKER
    with override_settings(MCP_INPUT_SYNC_BROKER=None):
        from django.core.exceptions import ImproperlyConfigured

        with pytest.raises(ImproperlyConfigured):
            views.get_broker()
    with override_settings(MCP_INPUT_SYNC_USER=f"{__name__}.header_user"):
        assert views.get_user(type("R", (), {"headers": {"X-Test-User": 5}})()) == "5"


def test_a_deferred_call_ends_on_its_page(broker: PendingInputBroker) -> None:
    from mcp_input_sync.testing import FakeServer as ModernFake, ToolCall

    fake = ModernFake(era="modern")

    @fake.tool
    def greet(call: ToolCall) -> str:
        answer = call.elicit("Your name?", {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]})
        return f"Hello, {answer['content']['name']}!"

    try:
        with fake.client(handler=WebHandler(broker)) as client:
            state = broker.start_call(client, "greet", {}, "alice")
            alice = browser("alice")
            listing = alice.get(f"/inputs/calls/{state.id}.json").json()
            assert listing["status"] == "pending"
            href = listing["inputs"][0]["url"]
            assert href == f"/inputs/{state.inputs[0].id}/"
            assert "Your name?" in alice.get(f"/inputs/calls/{state.id}/").content.decode()
            form = alice.get(href).content.decode()
            sent = alice.post(href, {"csrfmiddlewaretoken": csrf_of(form), "_action": "accept", "field:name": "Ada"})
            assert sent.status_code == 303 and sent["Location"] == f"/inputs/calls/{state.id}/"
            assert "Hello, Ada!" in alice.get(sent["Location"]).content.decode()
            assert alice.get(f"/inputs/calls/{state.id}.json").json()["status"] == "complete"
            assert browser("bob").get(f"/inputs/calls/{state.id}/").status_code == 404
            assert DjangoClient().get(f"/inputs/calls/{state.id}/").status_code == 403
    finally:
        fake.close()


# ---------------------------------------------------------------------------- logging users in to protected MCP servers


@pytest.fixture
def logins() -> Iterator[Any]:
    from mcp_input_sync.oauth import MemoryStore
    from mcp_input_sync.web.logins import Logins

    from .oauth_peer import OAuthPeer

    peer = OAuthPeer()
    found = Logins(MemoryStore(), {"notes": peer.url}, client_name="django-test")
    try:
        with override_settings(MCP_INPUT_SYNC_LOGINS=found):
            yield found, peer
    finally:
        peer.close()


def start(client: Any, path: str) -> Any:
    """The user opens the login view (a page with a button) and presses it: the POST, with Django's CSRF token, starts the login."""
    page = client.get(path)
    assert page.status_code == 200, page.status_code
    fields = dict(re.findall(r'name="([^"]+)" value="([^"]*)"', page.content.decode()))
    return client.post(path.split("?")[0], fields)


def authorize(location: str) -> str:
    """The user at the authorization server: it grants at once and redirects back to the callback."""
    import requests

    back = requests.get(location, allow_redirects=False, timeout=10).headers["Location"]
    assert back.startswith("http://testserver/mcp-login/callback/?")
    return back[len("http://testserver"):]


def test_a_user_logs_in_to_a_protected_server_and_the_app_calls_it_for_them(logins: Any) -> None:
    import mcp_input_sync as mis

    found, peer = logins
    alice = browser("alice")
    assert alice.post("/mcp-login/notes/login/", {"next": "/inputs/"}).status_code == 403  # no CSRF token: nothing starts
    started = start(alice, "/mcp-login/notes/login/?next=/inputs/")
    assert started.status_code == 303 and started["Location"].startswith(peer.origin + "/authorize?")
    registered = next(iter(peer.clients.values()))
    assert registered["application_type"] == "web" and registered["redirect_uris"] == ["http://testserver/mcp-login/callback/"]
    done = alice.get(authorize(started["Location"]))
    assert done.status_code == 303 and done["Location"] == "/inputs/"
    assert alice.get("/mcp-login/status.json").json() == {"notes": True}
    assert browser("bob").get("/mcp-login/status.json").json() == {"notes": False}
    with found.connect("alice", "notes", handler=mis.InputHandler(), protocol="legacy") as client:
        assert client.call_tool("whoami", {})["content"][0]["text"] == "mcp offline_access"
    with pytest.raises(mis.ClientError) as caught:
        found.connect("bob", "notes", handler=mis.InputHandler(), protocol="legacy")
    assert caught.value.check == "login"
    # logout takes Django's CSRF token
    assert alice.post("/mcp-login/notes/logout/", {"next": "/inputs/"}).status_code == 403
    token = csrf_of(alice.get("/page/").content.decode())
    out = alice.post("/mcp-login/notes/logout/", {"next": "/inputs/", "csrfmiddlewaretoken": token})
    assert out.status_code == 303 and out["Location"] == "/inputs/"
    assert alice.get("/mcp-login/status.json").json() == {"notes": False}


def test_the_login_views_refuse_what_they_should(logins: Any) -> None:
    found, peer = logins
    assert DjangoClient().get("/mcp-login/notes/login/").status_code == 403
    alice = browser("alice")
    assert alice.get("/mcp-login/nowhere/login/").status_code == 404
    started = start(alice, "/mcp-login/notes/login/?next=//evil.example/")
    back = authorize(started["Location"])
    assert browser("bob").get(back).status_code == 400  # another user's browser has no login in progress
    done = alice.get(back)
    assert done.status_code == 303 and done["Location"] == "/"  # never an open redirect
    again = alice.get(back)  # the login was used up with the session's record
    assert again.status_code == 400 and "No login to an MCP server is in progress" in again.content.decode()
    peer.iss_mode = "wrong"
    started = start(alice, "/mcp-login/notes/login/")
    failed = alice.get(authorize(started["Location"]))
    assert failed.status_code == 400 and "another issuer" in failed.content.decode()


def test_the_json_endpoints_carry_no_server_text_raw() -> None:
    from .test_hostile_display import CLEAN, CallBroker, hostile_pending, raw_hidden, strings

    hostile = CallBroker()
    hostile.park(hostile_pending("form"))
    with override_settings(MCP_INPUT_SYNC_BROKER=hostile):
        alice = browser("alice")
        for path in ("/inputs/pending.json", "/inputs/calls/call-1.json"):
            answer = alice.get(path)
            assert answer.status_code == 200, path
            found = list(strings(answer.json()))
            assert CLEAN in "".join(found), path
            assert [text for text in found if raw_hidden(text)] == [], path
        for path in ("/inputs/", "/inputs/form-alice/", "/inputs/calls/call-1/"):
            assert raw_hidden(alice.get(path).content.decode()) == [], path
