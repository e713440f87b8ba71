"""HTML rendering of pending inputs, and submitted forms read back into typed answers."""

from __future__ import annotations

import re
import time
from html.parser import HTMLParser
from typing import Any, Optional

import pytest

from mcp_input_sync.web import PendingInput, PendingInputBroker
from mcp_input_sync.web.forms import parse_submission, render_form, render_list, render_page, submitted_values

from .test_web_core import FORM, URL_PARAMS, VALID

JsonDict = dict[str, Any]


class Inputs(HTMLParser):
    """Every element with a ``name`` (or an option), as (tag, attrs); and the text."""

    def __init__(self) -> None:
        super().__init__()
        self.elements: list[tuple[str, dict[str, Optional[str]]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, Optional[str]]]) -> None:
        self.elements.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)

    def named(self, name: str) -> list[dict[str, Optional[str]]]:
        return [a for _, a in self.elements if a.get("name") == name]


def parse(page: str) -> Inputs:
    parser = Inputs()
    parser.feed(page)
    return parser


def form_pending(schema: Optional[JsonDict] = None, message: str = "Tell us <who> you are") -> PendingInput:
    schema = schema or FORM
    from mcp_input_sync._protocol.fields import sensitive_fields

    return PendingInput(
        id="p1", kind="form", params={"message": message, "requestedSchema": schema}, user="alice", created=time.time(),
        server_id="srv<1>", fields=sensitive_fields(schema),
    )


def test_every_field_kind_gets_the_right_input() -> None:
    page = render_form(form_pending(), "/inputs/p1", {"_mis_csrf": "tok\"en"})
    html = parse(page)
    one = lambda name: html.named("field:" + name)[0]  # noqa: E731
    assert one("name")["type"] == "text" and one("name")["value"] == "Ada" and one("name")["minlength"] == "2"
    assert "required" in one("name")
    assert one("email")["type"] == "email" and "required" not in one("email")
    assert one("age") == {"id": one("age")["id"], "name": "field:age", "type": "number", "min": "18", "max": "130", "step": "1", "required": None}
    assert one("ratio")["step"] == "any" and one("ratio")["min"] == "0"
    assert one("agree")["type"] == "checkbox" and "checked" not in one("agree")
    assert one("when")["type"] == "datetime-local" and one("day")["type"] == "date" and one("site")["type"] == "url"
    assert one("pin")["type"] == "password" and one("pin")["autocomplete"] == "off"
    assert one("code")["type"] == "text" and "pattern" not in one("code")  # enforced on the server only
    size = [(t, a) for t, a in html.elements if t == "option" and a.get("value") in ("s", "m", "l")]
    assert [a["value"] for _, a in size] == ["s", "m", "l"]
    assert "Medium" in html.text
    plan = html.named("field:plan")
    assert [a["type"] for a in plan] == ["radio", "radio"] and [a["value"] for a in plan] == ["free", "pro"]
    assert html.named("field:tags")[0].get("multiple") is None and "multiple" in html.named("field:tags")[0]
    days = html.named("field:days")
    assert [(a["type"], a["value"]) for a in days] == [("checkbox", "mon"), ("checkbox", "tue")]
    assert html.named("_mis_csrf")[0]["value"] == 'tok"en'
    buttons = html.named("_action")
    assert [a["value"] for a in buttons] == ["accept", "decline", "cancel"]
    assert "formnovalidate" in buttons[1] and "formnovalidate" not in buttons[0]


def test_defaults_are_prefilled() -> None:
    schema = {
        "type": "object",
        "properties": {
            "agree": {"type": "boolean", "default": True},
            "size": {"type": "string", "enum": ["s", "m"], "default": "m"},
            "plan": {"type": "string", "oneOf": [{"const": "a", "title": "A"}, {"const": "b", "title": "B"}], "default": "b"},
            "tags": {"type": "array", "items": {"type": "string", "enum": ["x", "y"]}, "default": ["y"]},
            "n": {"type": "number", "default": 2.5},
            "when": {"type": "string", "format": "date-time", "default": "2026-03-01T10:00:00+02:00"},
        },
    }
    html = parse(render_form(form_pending(schema), "/x", {}))
    assert "checked" in html.named("field:agree")[0]
    selected = [a["value"] for t, a in html.elements if t == "option" and "selected" in a]
    assert selected == ["m", "y"]
    assert ["checked" in a for a in html.named("field:plan")] == [False, True]
    assert html.named("field:n")[0]["value"] == "2.5"
    assert html.named("field:when")[0]["value"] == "2026-03-01T08:00:00"


def test_everything_the_server_sent_is_escaped() -> None:
    evil = "<script>alert(1)</script>\u202e\"'"
    schema = {
        "type": "object",
        "properties": {
            "x\"><script>": {"type": "string", "title": evil, "description": evil, "default": evil},
            "c": {"type": "string", "enum": [evil], "enumNames": [evil]},
            "r": {"type": "string", "oneOf": [{"const": evil, "title": evil}]},
            "m": {"type": "array", "items": {"anyOf": [{"const": evil, "title": evil}]}},
        },
    }
    page = render_page(form_pending(schema, message=evil), "/x?a=<b>", {}, back="/list")
    assert "<script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    html = parse(page)
    assert "\u202e" not in "".join(html.text)  # nothing shown hides or reorders text
    assert html.named('field:x"><script>')[0]["value"] == "<script>alert(1)</script>\"'"
    # a choice's value is what the server gets back: kept exactly (escaped, never shown)
    assert [a["value"] for t, a in html.elements if t == "option"] == ["", evil]
    url = PendingInput(id="u", kind="url", params=dict(URL_PARAMS, message=evil), user="a", created=0.0, url=URL_PARAMS["url"], host="calendar.example", idn=True, origin_mismatch=True,
                       server_origin="https://mcp.example.com")
    page = render_page(url, "/x", {})
    assert "<script>" not in page and 'href="https://calendar.example/connect?x=&lt;1&gt;"' in page
    assert 'rel="noopener noreferrer nofollow"' in page and "international characters" in page and "different site" in page
    sampling = PendingInput(
        id="s", kind="sampling", user="a", created=0.0, draft=evil,
        params={"messages": [{"role": "user", "content": [{"type": "text", "text": evil}, {"type": "image", "data": "", "mimeType": "x"}]}], "systemPrompt": evil, "maxTokens": 9},
    )
    page = render_page(sampling, "/x", {})
    assert "<script>" not in page and "[image]" in page and "at most 9 tokens" in page
    assert [a["value"] for a in parse(page).named("_action")] == ["approve", "reject"]
    listing = render_list([(form_pending(message=evil), "/p?<1>")])
    assert "<script>" not in listing and 'href="/p?&lt;1&gt;"' in listing


def test_a_submission_becomes_typed_content_the_broker_accepts() -> None:
    data = {
        "_action": "accept",
        "field:name": "Grace",
        "field:email": "g@example.com",
        "field:age": "40",
        "field:ratio": "0.5",
        "field:agree": "true",
        "field:size": "m",
        "field:plan": "pro",
        "field:tags": ["a", "c"],
        "field:days": ["tue"],
        "field:when": "2026-03-01T08:00",
        "field:day": "2026-03-01",
        "field:site": "",
        "field:pin": "1234",
        "field:code": "ABC",
        "field:unknown": "dropped",
    }
    pending = form_pending()
    answer, errors = parse_submission(pending, data)
    assert errors == {}
    assert answer == {
        "action": "accept",
        "content": {
            "name": "Grace", "email": "g@example.com", "age": 40, "ratio": 0.5, "agree": True, "size": "m", "plan": "pro",
            "tags": ["a", "c"], "days": ["tue"], "when": "2026-03-01T08:00:00Z", "day": "2026-03-01", "pin": "1234", "code": "ABC",
        },
    }
    broker = PendingInputBroker()
    broker.park(pending)
    assert broker.answer("p1", "alice", answer) == {}


def test_bad_submissions_give_errors_per_field() -> None:
    pending = form_pending()
    answer, errors = parse_submission(pending, {"_action": "accept", "field:age": "forty", "field:ratio": "nan", "field:name": "Grace"})
    assert errors == {"age": "must be an integer", "ratio": "must be a number"}
    answer, errors = parse_submission(pending, {"_action": "accept", "field:age": "40.0", "field:name": "Grace"})
    assert errors == {} and answer["content"]["age"] == 40 and answer["content"]["agree"] is False
    broker = PendingInputBroker()
    broker.park(pending)
    assert broker.answer("p1", "alice", answer) == {"plan": "is required"}
    assert parse_submission(pending, {"_action": "decline", "field:age": "forty"}) == ({"action": "decline"}, {})


def test_values_are_shown_again_but_never_secrets() -> None:
    pending = form_pending()
    data = {"field:name": "G<r>", "field:pin": "1234", "field:tags": ["a"], "field:agree": "true"}
    values = submitted_values(pending, data)
    assert "pin" not in values and values["tags"] == ["a"] and values["agree"] is True
    page = render_page(pending, "/x", {}, values=values, errors={"name": "is shorter than <2>", "__all__": "whole <form>"})
    assert "1234" not in page and "is shorter than &lt;2&gt;" in page and "whole &lt;form&gt;" in page
    assert parse(page).named("field:name")[0]["value"] == "G<r>"


@pytest.mark.parametrize(
    ("kind", "data", "expected"),
    [
        ("url", {"_action": "accept", "field:x": "1"}, {"action": "accept"}),
        ("url", {"_action": "cancel"}, {"action": "cancel"}),
        ("sampling", {"_action": "approve", "text": "a\r\nb"}, {"action": "approve", "text": "a\nb"}),
        ("sampling", {"_action": "reject", "text": "x"}, {"action": "reject"}),
        ("form", {}, {"action": ""}),
    ],
)
def test_other_kinds_parse(kind: str, data: JsonDict, expected: JsonDict) -> None:
    pending = PendingInput(id="x", kind=kind, params={"requestedSchema": FORM}, user="a", created=0.0)
    assert parse_submission(pending, data) == (expected, {})


def test_the_list_page() -> None:
    assert "Nothing is waiting" in render_list([])
    page = render_list([(form_pending(), "/inputs/p1")])
    assert re.search(r'<a href="/inputs/p1">Form: Tell us &lt;who&gt; you are</a>', page)
    assert VALID  # shared fixture data stays importable
