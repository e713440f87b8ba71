"""Deferred modern-era calls through the web bridge: no thread waits while a person answers."""

from __future__ import annotations

import re
from typing import Any, Iterator

import pytest

import mcp_input_sync as mis
from mcp_input_sync.testing import FakeServer, ToolCall
from mcp_input_sync.web import InputNotFound, PendingInputBroker, WebHandler

JsonDict = dict[str, Any]

NAME = {"type": "object", "properties": {"name": {"type": "string", "minLength": 2}}, "required": ["name"]}
SEATS = {"type": "object", "properties": {"seats": {"type": "integer", "minimum": 1, "maximum": 9}}, "required": ["seats"]}


@pytest.fixture
def fake() -> Iterator[FakeServer]:
    server = FakeServer(era="modern")

    @server.tool
    def book(call: ToolCall) -> str:
        who = call.elicit("Your name?", NAME)
        if who["action"] != "accept":
            return f"no booking ({who['action']})"
        seats = call.elicit("How many seats?", SEATS)
        return f"{who['content']['name']} x{seats['content']['seats']}"

    @server.tool
    def plain(call: ToolCall) -> str:
        return "no questions"

    @server.tool
    def ask_model(call: ToolCall) -> str:
        reply = call.request("sampling/createMessage", {"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}], "maxTokens": 10})
        return str(reply["content"]["text"])

    yield server
    server.close()


def test_two_rounds_without_a_waiting_thread(fake: FakeServer) -> None:
    broker = PendingInputBroker()
    with fake.client(handler=WebHandler(broker)) as client:
        state = broker.start_call(client, "book", {}, "alice")
        assert (state.status, state.rounds, len(state.inputs)) == ("pending", 1, 1)
        first = state.inputs[0]
        assert (first.kind, first.message, first.call_id, first.user) == ("form", "Your name?", state.id, "alice")
        assert broker.pending("alice") == [first] and broker.pending("bob") == []
        # the same rules as a parked handler's input
        assert set(broker.answer(first.id, "alice", {"action": "accept", "content": {"name": "A"}})) == {"name"}
        with pytest.raises(InputNotFound):
            broker.answer(first.id, "bob", {"action": "accept", "content": {"name": "Ada"}})
        assert broker.answer(first.id, "alice", {"action": "accept", "content": {"name": "Ada"}}) == {}
        state = broker.result(state.id, "alice")
        assert (state.status, state.rounds, [p.message for p in state.inputs]) == ("pending", 2, ["How many seats?"])
        with pytest.raises(InputNotFound):
            broker.get(first.id, "alice")  # answered and gone
        assert set(broker.answer(state.inputs[0].id, "alice", {"action": "accept", "content": {"seats": 0}})) == {"seats"}
        assert broker.answer(state.inputs[0].id, "alice", {"action": "accept", "content": {"seats": 2}}) == {}
        done = broker.result(state.id, "alice")
        assert (done.status, done.error, done.inputs) == ("complete", None, [])
        assert done.result is not None and done.result["content"][0]["text"] == "Ada x2"
        assert len(broker) == 0
        with pytest.raises(InputNotFound):
            broker.result(state.id, "bob")
        with pytest.raises(InputNotFound):
            broker.result("nope", "alice")


def test_the_first_field_error_is_reported(fake: FakeServer) -> None:
    broker = PendingInputBroker()
    with fake.client(handler=WebHandler(broker)) as client:
        state = broker.start_call(client, "book", {}, "alice")
        errors = broker.answer(state.inputs[0].id, "alice", {"action": "accept", "content": {"name": 5}})
        assert set(errors) == {"name"}
        assert broker.result(state.id, "alice").status == "pending"


def test_a_complete_result_is_stored_and_returned(fake: FakeServer) -> None:
    broker = PendingInputBroker()
    with fake.client(handler=WebHandler(broker)) as client:
        state = broker.start_call(client, "plain", None, 7)
        assert state.status == "complete" and state.result is not None
        assert state.result["content"][0]["text"] == "no questions"
        assert broker.result(state.id, "7") == state


def test_a_decline_resumes_and_the_server_sees_it(fake: FakeServer) -> None:
    broker = PendingInputBroker()
    with fake.client(handler=WebHandler(broker)) as client:
        state = broker.start_call(client, "book", {}, "alice")
        assert broker.answer(state.inputs[0].id, "alice", {"action": "decline"}) == {}
        done = broker.result(state.id, "alice")
        assert done.status == "complete" and done.result is not None
        assert done.result["content"][0]["text"] == "no booking (decline)"


def test_sampling_approved_or_rejected(fake: FakeServer) -> None:
    broker = PendingInputBroker()
    with fake.client(handler=WebHandler(broker, model="clerk")) as client:
        state = broker.start_call(client, "ask_model", {}, "alice")
        assert state.inputs[0].kind == "sampling"
        assert broker.answer(state.inputs[0].id, "alice", {"action": "approve", "text": " "}) == {"text": "a reply is required to approve"}
        assert broker.answer(state.inputs[0].id, "alice", {"action": "approve", "text": "hello"}) == {}
        done = broker.result(state.id, "alice")
        assert done.result is not None and done.result["content"][0]["text"] == "hello"
        state = broker.start_call(client, "ask_model", {}, "alice")
        assert broker.answer(state.inputs[0].id, "alice", {"action": "reject"}) == {}
        failed = broker.result(state.id, "alice")
        assert (failed.status, failed.error) == ("error", "the user rejected the sampling request")


def test_the_legacy_era_refuses_and_a_user_is_required() -> None:
    legacy = FakeServer()
    broker = PendingInputBroker()
    try:
        with legacy.client(handler=WebHandler(broker)) as client:
            with pytest.raises(ValueError):
                broker.start_call(client, "x", {}, None)
            with pytest.raises(mis.ClientError) as info:
                broker.start_call(client, "x", {}, "alice")
            assert info.value.kind == "protocol"
    finally:
        legacy.close()


def test_the_flask_blueprint_ends_on_the_call_page(fake: FakeServer) -> None:
    flask = pytest.importorskip("flask")
    from mcp_input_sync.web.flask import blueprint

    broker = PendingInputBroker()
    app = flask.Flask(__name__)
    app.secret_key = "test-secret"
    app.register_blueprint(blueprint(broker, lambda: flask.session.get("user")), url_prefix="/inputs")
    web = app.test_client()
    with web.session_transaction() as sess:
        sess["user"] = "alice"
    with fake.client(handler=WebHandler(broker)) as client:
        state = broker.start_call(client, "book", {}, "alice")
        page = web.get(f"/inputs/calls/{state.id}")
        assert page.status_code == 200 and "Your name?" in page.text
        listing = web.get(f"/inputs/calls/{state.id}.json").get_json()
        assert listing["status"] == "pending" and listing["inputs"][0]["url"] == f"/inputs/{state.inputs[0].id}"
        for field, value in (("name", "Ada"), ("seats", "3")):
            href = web.get(f"/inputs/calls/{state.id}.json").get_json()["inputs"][0]["url"]
            form = web.get(href).text
            token = re.search(r'name="_mis_csrf" value="([^"]+)"', form)
            assert token is not None
            bad = web.post(href, data={"_mis_csrf": token.group(1), "_action": "accept", f"field:{field}": "x" if field == "seats" else "A"})
            assert bad.status_code == 400
            sent = web.post(href, data={"_mis_csrf": token.group(1), "_action": "accept", f"field:{field}": value})
            assert sent.status_code == 303 and sent.headers["Location"].endswith(f"/inputs/calls/{state.id}")
        done = web.get(f"/inputs/calls/{state.id}.json").get_json()
        assert done["status"] == "complete" and done["result"]["content"][0]["text"] == "Ada x3"
        assert "Ada x3" in web.get(f"/inputs/calls/{state.id}").text
        with web.session_transaction() as sess:
            sess["user"] = "bob"
        assert web.get(f"/inputs/calls/{state.id}").status_code == 404
        assert web.get(f"/inputs/calls/{state.id}.json").status_code == 404


def test_the_docs_example_runs() -> None:
    from pathlib import Path
    import subprocess
    import sys

    text = (Path(__file__).resolve().parents[1] / "docs" / "web.md").read_text()
    blocks = [b for b in re.findall(r"```python\n(.*?)```", text, flags=re.S) if "start_call" in b and "def greet" in b]
    assert len(blocks) == 1
    done = subprocess.run([sys.executable, "-c", blocks[0]], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "complete Hello, Ada!"
