"""Test a handler with mcp_input_sync.testing: forms, a refusal, a timeout by time travel, both eras."""

import threading
import time

from freezegun import freeze_time

import mcp_input_sync as mis
from mcp_input_sync.testing import ClientRefused, FakeServer

SEAT_FORM = {
    "type": "object",
    "properties": {"seat": {"type": "string"}, "window": {"type": "boolean", "default": True}},
    "required": ["seat"],
}


class MyHandler(mis.InputHandler):
    """The handler under test: fills forms, serves URL elicitations."""

    def handle_elicitation(self, params, ctx):
        if ctx.mode == "url":
            return {"action": "accept"}
        return {"action": "accept", "content": {"seat": "12A", "window": True}}

    def elicitation_modes(self):
        return ("form", "url")


def book(call):
    """One tool, written once, served in both eras."""
    answer = call.elicit("Which seat?", SEAT_FORM)
    if answer["action"] != "accept":
        return f"no booking ({answer['action']})"
    return f"booked {answer['content']['seat']}"


def log_in(call):
    try:
        call.elicit_url("Log in to continue", "http://insecure.example/login")
    except ClientRefused as exc:  # legacy: the client answered with an error
        return f"refused with {exc.code}"
    return "logged in"


# 1. A handler's form answer, tested in milliseconds, in both eras.
for era in ("legacy", "modern"):
    started = time.perf_counter()
    with FakeServer(era=era) as fake:
        fake.add_tool("book", book)
        with fake.client(handler=MyHandler()) as client:
            result = client.call_tool("book")
        assert result["content"][0]["text"] == "booked 12A"
        [form] = fake.assert_answered("elicitation/create", count=1)
        assert form == {"action": "accept", "content": {"seat": "12A", "window": True}}
    print(f"{era}: {result['content'][0]['text']} in {(time.perf_counter() - started) * 1000:.0f} ms")

# 2. A refusal: the client never serves a plain-http URL.
with FakeServer(era="legacy") as fake:
    fake.add_tool("log_in", log_in)
    with fake.client(handler=MyHandler()) as client:
        print("legacy:", client.call_tool("log_in")["content"][0]["text"])
    fake.assert_refused(-32602, "elicitation/create")

with FakeServer(era="modern") as fake:
    fake.add_tool("log_in", log_in)
    with fake.client(handler=MyHandler()) as client:
        try:
            client.call_tool("log_in")
        except mis.ClientError as err:  # modern: the call itself raises
            print("modern: refused, check =", err.check)
            assert (err.kind, err.check) == ("refused", "url")


# 3. A 300 s handler_timeout, fired by time travel.
class WalkedAway(mis.InputHandler):
    def __init__(self):
        self.asked = threading.Event()

    def handle_elicitation(self, params, ctx):
        self.asked.set()
        ctx.wait_cancelled(10)  # the user went for coffee; stop when the library says so
        return {"action": "cancel"}


def ask_name(call):
    try:
        return call.elicit("Name?", SEAT_FORM)["action"]
    except ClientRefused as exc:
        return f"the client gave up: {exc.code}"


with freeze_time("2026-01-01") as frozen, FakeServer(era="legacy") as fake:
    fake.add_tool("ask_name", ask_name)
    handler = WalkedAway()
    with fake.client(handler=handler) as client:
        results = []
        caller = threading.Thread(target=lambda: results.append(client.call_tool("ask_name")))
        caller.start()
        handler.asked.wait(5)  # the form is on screen
        frozen.tick(301)  # past the 300 s elicitation timeout
        caller.join(5)
    fake.assert_refused(-32603)
    print("timeout:", results[0]["content"][0]["text"])


# 4. Resources and prompts, served statically in both eras.
for era in ("legacy", "modern"):
    with FakeServer(era=era) as fake:
        fake.add_resource("file:///notes.txt", "Water the plants.")
        fake.add_prompt("review", lambda args: f"Review this {args['language']} code.", arguments=[{"name": "language", "required": True}])
        with fake.client(handler=MyHandler()) as client:
            note = client.read_resource("file:///notes.txt")["contents"][0]["text"]
            prompt = client.get_prompt("review", {"language": "python"})["messages"][0]["content"]["text"]
        print(f"{era}: {note} / {prompt}")
