"""Issue 32's smaller points: a server with no back-channel says what to change, the `Client` table, the posted
`_action` values, a sampling item's message, and the origin warning of a stdio server's URL elicitation.

The back-channel tests run FastMCP and an official-SDK server over Streamable HTTP with ``stateless_http`` or
``json_response`` (tests/peers/peer_cli.py), where a tool's ``ctx.elicit`` cannot reach the client in any era.
The origin tests run the demo server over stdio, a local program with no web origin, under the terminal handler
and the web bridge.
"""

from __future__ import annotations

import io
import re
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

import mcp_input_sync as mis
from mcp_input_sync._engines.base import wrong_era
from mcp_input_sync._protocol import eras
from mcp_input_sync._protocol.urls import check_elicitation_url
from mcp_input_sync.terminal import TerminalHandler
from mcp_input_sync.testing import FakeServer, ToolCall
from mcp_input_sync.transports.stdio import StdioTransport
from mcp_input_sync.web import ELICITATION_ACTIONS, SAMPLING_ACTIONS, PendingInput, PendingInputBroker, WebHandler, forms
from mcp_input_sync.web.pending import SUMMARY_LIMIT, sampling_summary

from .http_peers import http_peer
from .test_oauth_fastmcp import FASTMCP_PYTHON

ROOT = Path(__file__).resolve().parents[1]
DEMO = [sys.executable, "-m", "mcp_input_sync._demo_server"]
WAIT = 30.0
NO_BACK_CHANNEL = "Cannot send 'elicitation/create': this transport context has no back-channel for server-initiated requests."
HINT = "docs/modern.md#servers-with-no-back-channel"

JsonDict = dict[str, Any]


def one_text(text: str, is_error: bool = True) -> JsonDict:
    return {"content": [{"type": "text", "text": text}], "isError": is_error}


# ---------------------------------------------------------------------------- (a) no back-channel, the texts


def test_the_frameworks_no_back_channel_texts_are_read_in_the_handshake_era_only() -> None:
    fastmcp = one_text(f"Error calling tool 'ask': {NO_BACK_CHANNEL}")
    assert eras.back_channel_missing(eras.LEGACY, "ask", result=fastmcp) == "elicitation/create"
    assert eras.back_channel_missing(eras.LEGACY, "ask", code=-32600, message=NO_BACK_CHANNEL) == "elicitation/create"
    sampled = NO_BACK_CHANNEL.replace("elicitation/create", "sampling/createMessage")
    assert eras.back_channel_missing(eras.LEGACY, "ask", code=-32600, message=sampled) == "sampling/createMessage"
    # 2026-07-28 has no back-channel on any server: there the text is an era failure (check "era")
    assert eras.back_channel_missing(eras.MODERN, "ask", result=fastmcp) is None
    assert eras.back_channel_missing(eras.MODERN, "ask", code=-32600, message=NO_BACK_CHANNEL) is None


@pytest.mark.parametrize(
    "result",
    [
        one_text(f"Error calling tool 'other': {NO_BACK_CHANNEL}"),  # another tool's text
        one_text(f"Error calling tool 'ask': {NO_BACK_CHANNEL}", is_error=False),  # an echo
        one_text(f"Error calling tool 'ask': {NO_BACK_CHANNEL} And more."),
        one_text(f"I was told: Error calling tool 'ask': {NO_BACK_CHANNEL}"),
        {"content": [{"type": "text", "text": f"Error calling tool 'ask': {NO_BACK_CHANNEL}"}] * 2, "isError": True},
        one_text(NO_BACK_CHANNEL.replace("elicitation/create", "tools/call")),
    ],
)
def test_other_results_are_not_read_as_a_missing_back_channel(result: JsonDict) -> None:
    assert eras.back_channel_missing(eras.LEGACY, "ask", result=result) is None
    assert wrong_era(eras.LEGACY, "2025-11-25", "tools/call", {"name": "ask"}, result=result) is None


def test_other_errors_are_not_read_as_a_missing_back_channel() -> None:
    assert eras.back_channel_missing(eras.LEGACY, "ask", code=-32603, message=NO_BACK_CHANNEL) is None
    assert eras.back_channel_missing(eras.LEGACY, "ask", code=-32600, message="oops: " + NO_BACK_CHANNEL) is None
    error = mis.ClientError("remote", NO_BACK_CHANNEL, code=-32600)
    assert wrong_era(eras.LEGACY, "2025-11-25", "resources/read", {"uri": "x"}, exc=error) is None  # tools only


# ---------------------------------------------------------------------------- (a) against FastMCP and the SDK


class Answers(mis.InputHandler):
    """Would answer any form: the server never gets to ask."""

    def handle_elicitation(self, params: JsonDict, ctx: mis.InputContext) -> JsonDict:
        return {"action": "accept", "content": {"name": "Ada", "age": 36}}

    def handle_sampling(self, params: JsonDict, ctx: mis.InputContext) -> JsonDict:
        return {"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "m"}


def assert_back_channel_error(error: mis.ClientError, tool: str, method: str) -> None:
    assert (error.kind, error.check) == ("protocol", "back-channel")
    assert error.data["tool"] == tool and error.data["method"] == method and error.data["version"] == "2025-11-25"
    text = str(error)
    for part in (f"tool {tool!r}", method, "stateless_http=True", "json_response=True", "not sent again",
                 "InputRequiredResult", 'protocol="2026-07-28"', HINT, "The server said: "):
        assert part in text, (part, text)


@pytest.mark.skipif(not FASTMCP_PYTHON.exists(), reason="run peers/setup.sh to install FastMCP (pinned)")
@pytest.mark.parametrize("mode", ["--stateless", "--json-response"])
def test_a_fastmcp_server_with_no_back_channel_gets_a_hint_not_a_bare_error_result(mode: str) -> None:
    with http_peer("fastmcp_server.py", mode, python=str(FASTMCP_PYTHON), seconds=60) as url:
        with mis.connect_http(url, handler=Answers(), era_cache=mis.EraCache()) as client:
            assert client.protocol_version == "2025-11-25"
            for tool, method in (("elicit_dataclass", "elicitation/create"), ("sample", "sampling/createMessage")):
                with pytest.raises(mis.ClientError) as caught:
                    client.call_tool(tool)
                assert_back_channel_error(caught.value, tool, method)
                said = caught.value.data["result"]["content"][0]["text"]
                assert said == f"Error calling tool '{tool}': " + NO_BACK_CHANNEL.replace("elicitation/create", method)
                assert caught.value.code is None
            assert client.call_tool("echo", {"text": "still here"})["content"][0]["text"] == "still here"


def test_an_sdk_server_with_no_back_channel_gets_the_same_hint() -> None:
    with http_peer("sdk_dual_server.py", "--stateless") as url:
        with mis.connect_http(url, handler=Answers(), era_cache=mis.EraCache()) as client:
            with pytest.raises(mis.ClientError) as caught:
                client.call_tool("elicit")
            assert_back_channel_error(caught.value, "elicit", "elicitation/create")
            assert caught.value.code == -32600
            assert caught.value.data["error"]["message"] == NO_BACK_CHANNEL
            runs = client.call_tool("runs")["content"][0]["text"]
            assert '"elicit": 1' in runs  # sent once, never again


def test_the_hint_points_at_a_heading_of_modern_md() -> None:
    headings = re.findall(r"^#+ (.+)$", (ROOT / "docs" / "modern.md").read_text(), flags=re.M)
    assert "Servers with no back-channel" in headings


# ---------------------------------------------------------------------------- (b) the Client table


def test_the_reference_table_names_every_public_client_method_and_attribute() -> None:
    text = (ROOT / "docs" / "reference.md").read_text()
    table = text.split("Every public method and attribute of a `Client`:", 1)[1].split("\n\n", 2)[1]
    first_cells = [row.split("|")[1] for row in table.splitlines()[2:]]
    named = {name for cell in first_cells for name in re.findall(r"`(?:with client:|([a-z_]+))", cell) if name}
    client = mis.Client(StdioTransport(DEMO))  # built, never opened: starts nothing
    public = {n for n in dir(mis.Client) if not n.startswith("_")} | {n for n in vars(client) if not n.startswith("_")}
    assert public - named == set(), "not in the table"
    assert named - public == set(), "not a Client member"
    assert "### Resource subscriptions" in text


# ---------------------------------------------------------------------------- (c) what the forms post


def test_web_md_lists_every_action_a_form_may_post_and_the_reply_field() -> None:
    text = (ROOT / "docs" / "web.md").read_text()
    section = text.split("## What the forms post", 1)[1].split("\n## ", 1)[0]
    rows = {row.split("|")[2].strip(): row for row in section.splitlines() if row.startswith("| `_action`")}
    assert set(re.findall(r"`([a-z]+)`", rows["form, URL"].split("|")[3])) == set(ELICITATION_ACTIONS)
    assert set(re.findall(r"`([a-z]+)`", rows["sampling"].split("|")[3])) == set(SAMPLING_ACTIONS)
    assert "| `text` | sampling |" in section
    for kind, actions in (("form", ELICITATION_ACTIONS), ("url", ELICITATION_ACTIONS), ("sampling", SAMPLING_ACTIONS)):
        buttons = forms.render_buttons(PendingInput(id="i", kind=kind, params={}, user="u", created=0.0))
        assert re.findall(r'name="_action" value="([a-z]+)"', buttons) == list(actions)


# ---------------------------------------------------------------------------- (d) a sampling item's message


def sampling(*messages: JsonDict) -> PendingInput:
    return PendingInput(id="s", kind="sampling", params={"messages": list(messages), "maxTokens": 10}, user="u", created=0.0)


def test_a_sampling_item_in_pending_json_has_its_last_user_message_as_message() -> None:
    fake = FakeServer(era="modern")

    @fake.tool
    def sight(call: ToolCall) -> str:
        prompt: list[JsonDict] = [
            {"role": "user", "content": {"type": "text", "text": "An old question"}},
            {"role": "assistant", "content": {"type": "text", "text": "An old answer"}},
            {"role": "user", "content": [{"type": "text", "text": "Name\u200b one\n\tsight\u202e in Porto."}, {"type": "image", "data": "", "mimeType": "image/png"}]},
        ]
        return str(call.sample(prompt, max_tokens=50)["content"]["text"])

    broker = PendingInputBroker()
    with fake.client(handler=WebHandler(broker)) as client:
        state = broker.start_call(client, "sight", {}, "alice")
        [item] = forms.pending_json([(p, "/inputs/" + p.id) for p in broker.pending("alice")])
        assert (item["kind"], item["message"]) == ("sampling", "Name one sight in Porto. [image]")
        assert "Approve a prompt: Name one sight in Porto. [image]" in forms.render_list([(broker.pending("alice")[0], "/x")])
        assert broker.answer(item["id"], "alice", {"action": "approve", "text": "The Lello"}) == {}
        assert broker.result(state.id, "alice").status == "complete"
    fake.close()


def test_a_sampling_summary_is_one_cleaned_line_cut_with_an_ellipsis() -> None:
    long = sampling({"role": "user", "content": {"type": "text", "text": "  word " * 500}})
    assert len(long.message) == SUMMARY_LIMIT and long.message.endswith("…") and not long.message.startswith(" ")
    huge = sampling({"role": "user", "content": {"type": "text", "text": " " * 10_000 + "x" * 1_000_000}})
    assert huge.message == "x" * (SUMMARY_LIMIT - 1) + "…"
    assert sampling({"role": "assistant", "content": {"type": "text", "text": "no user"}}).message == ""
    assert sampling_summary({"messages": "not a list"}) == ""
    plain = sampling({"role": "user", "content": {"type": "text", "text": "Hi"}})
    assert forms.render_list([(plain, "/x")]).count("Approve a prompt: Hi") == 1
    assert PendingInput(id="f", kind="form", params={"message": "Fill it"}, user="u", created=0.0).message == "Fill it"


# ---------------------------------------------------------------------------- (e) the origin of a stdio server


def test_the_url_facts_carry_the_origin_they_were_compared_with() -> None:
    assert check_elicitation_url("https://pay.example/x", None).server_origin is None
    facts = check_elicitation_url("https://pay.example/x", "https://mcp.example.com/mcp")
    assert (facts.origin_mismatch, facts.server_origin) == (True, "https://mcp.example.com")
    assert check_elicitation_url("https://pay.example/x", "http://[::1]:8080").server_origin == "http://[::1]:8080"
    same = check_elicitation_url("https://MCP.example.com:443/auth", "https://mcp.example.com")
    assert (same.origin_mismatch, same.server_origin) == (False, "https://mcp.example.com")
    assert check_elicitation_url("https://pay.example/x", "ftp://nope").server_origin is None


def test_the_terminal_handler_says_a_stdio_server_has_no_origin() -> None:
    out, err = io.StringIO(), io.StringIO()
    handler = TerminalHandler(stdin=io.StringIO(), stdout=out, stderr=err, assume_yes=True, yes_urls="decline")
    with mis.connect_stdio(DEMO, handler=handler, era_cache=mis.EraCache()) as client:
        result = client.call_tool("book_hotel", {"city": "Porto"})
    assert result["isError"] is True  # declined
    shown = out.getvalue() + err.getvalue()
    assert "host: checkout.example.com" in shown
    assert "the server is a local program with no web origin" in shown
    assert "own origin" not in shown


def test_the_terminal_handler_names_the_origin_a_link_is_not_on() -> None:
    out = io.StringIO()
    handler = TerminalHandler(stdin=io.StringIO(), stdout=out, stderr=io.StringIO(), assume_yes=True, yes_urls="decline")
    params = {"mode": "url", "message": "Pay", "url": "https://pay.example/x", "elicitationId": "e"}
    ctx = mis.InputContext(client="c", server_id="s", era="legacy", mode="url", url=params["url"], host="pay.example",
                           idn=False, origin_mismatch=True, server_origin="https://mcp.example.com")
    assert handler.handle_elicitation(params, ctx) == {"action": "decline"}
    assert "! this link is not on the server's own origin (https://mcp.example.com)" in out.getvalue()


def test_the_web_page_says_a_stdio_server_has_no_origin() -> None:
    parked = threading.Event()
    broker = PendingInputBroker(on_park=lambda pending: parked.set())
    outcome: dict[str, Any] = {}
    with mis.connect_stdio(DEMO, handler=WebHandler(broker), era_cache=mis.EraCache(), assigns={"user": "alice"}) as client:
        def call() -> None:
            outcome["result"] = client.call_tool("book_hotel", {"city": "Porto"})

        worker = threading.Thread(target=call, name="issue32-call")
        worker.start()
        try:
            assert parked.wait(WAIT)
            [pending] = broker.pending("alice")
            assert (pending.kind, pending.origin_mismatch, pending.server_origin) == ("url", True, None)
            page = forms.render_body(pending)
            assert "program with no web address" in page and "different site" not in page
        finally:
            for waiting in broker.pending("alice"):
                broker.answer(waiting.id, "alice", {"action": "decline"})
            worker.join(WAIT)
    assert not worker.is_alive() and outcome["result"]["isError"] is True
    away = PendingInput(id="u", kind="url", params={"message": "Pay"}, user="u", created=0.0, url="https://pay.example/",
                        host="pay.example", origin_mismatch=True, server_origin="https://mcp.example.com")
    assert "different site than the server that asks (https://mcp.example.com)" in forms.render_body(away)
