"""The check pipeline (docs/reference.md#order-of-checks, docs/safety.md), table-driven and pure."""

from __future__ import annotations

from typing import Any, Optional

import pytest

from mcp_input_sync._protocol.budget import TokenBucket
from mcp_input_sync._protocol.checks import CheckConfig, InputChecks, Prepared, Refusal

ALL = CheckConfig(
    version="2025-11-25",
    kinds=frozenset({"sampling", "elicitation", "roots"}),
    modes=frozenset({"form", "url"}),
    origin="https://mcp.example.com",
)
FORM = {"type": "object", "properties": {"pin": {"type": "string"}, "name": {"type": "string"}}, "required": ["name"]}
MSG = [{"role": "user", "content": {"type": "text", "text": "hi"}}]


def checks(config: CheckConfig = ALL, rate: float = float("inf"), burst: int = 1) -> InputChecks:
    return InputChecks(config, rate, burst, now=0.0)


def sample(**extra: Any) -> dict[str, Any]:
    return {"messages": MSG, "maxTokens": 100, **extra}


def tool_turn() -> dict[str, Any]:
    return {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "calc", "input": {}}]}


# ---------------------------------------------------------------------------- steps 1-3

BEFORE: list[tuple[str, CheckConfig, str, Any, Optional[tuple[str, int]]]] = [
    ("unknown method", ALL, "tasks/get", {}, ("method", -32601)),
    ("undeclared kind", CheckConfig(kinds=frozenset({"roots"})), "sampling/createMessage", sample(), ("capability", -32601)),
    ("params not an object", ALL, "elicitation/create", "x", ("malformed", -32602)),
    ("missing messages", ALL, "sampling/createMessage", {"maxTokens": 1}, ("malformed", -32602)),
    ("undeclared url mode", CheckConfig(kinds=frozenset({"elicitation"})), "elicitation/create", {"mode": "url", "message": "m", "url": "https://x.y", "elicitationId": "e"}, ("capability", -32602)),
    ("unknown mode", ALL, "elicitation/create", {"mode": "voice", "message": "m", "requestedSchema": FORM}, ("capability", -32602)),
    ("tools without sampling.tools", ALL, "sampling/createMessage", sample(tools=[]), ("capability", -32602)),
    ("toolChoice without sampling.tools", ALL, "sampling/createMessage", sample(toolChoice={"mode": "auto"}), ("capability", -32602)),
    ("tools declared", CheckConfig(kinds=frozenset({"sampling"}), sampling_tools=True), "sampling/createMessage", sample(tools=[]), None),
    ("roots without params", ALL, "roots/list", None, None),
    ("form", ALL, "elicitation/create", {"message": "m", "requestedSchema": FORM}, None),
]


@pytest.mark.parametrize("name, config, method, params, expected", BEFORE, ids=[c[0] for c in BEFORE])
def test_before_the_budget(name: str, config: CheckConfig, method: str, params: Any, expected: Optional[tuple[str, int]]) -> None:
    refusal = checks(config).before(method, params)
    assert (None if refusal is None else (refusal.check, refusal.code)) == expected


# ---------------------------------------------------------------------------- step 4


def test_the_budget_takes_one_token_per_request_all_or_none() -> None:
    c = checks(rate=10.0, burst=20)
    assert c.budget(["elicitation"] * 20, now=0.0) is None
    refused = c.budget(["roots"], now=0.0)
    assert refused is not None and (refused.check, refused.code) == ("budget", -32000)
    assert "rate limited" in refused.message
    assert c.budget(["roots"] * 2, now=0.1) is not None  # one token back: not enough for two
    assert c.budget(["roots"], now=0.1) is None


def test_an_over_budget_sampling_request_gets_the_rejection_code() -> None:
    c = checks(CheckConfig(kinds=frozenset({"sampling"}), rejection_code=-7), rate=1.0, burst=1)
    assert c.budget(["sampling"], now=0.0) is None
    refused = c.budget(["sampling", "roots"], now=0.0)
    assert refused is not None and refused.code == -7


def test_the_bucket_refills_at_its_rate_up_to_its_burst() -> None:
    bucket = TokenBucket(10.0, 20, now=0.0)
    assert bucket.take(20, 0.0) and not bucket.take(1, 0.0)
    assert bucket.take(10, 1.0) and not bucket.take(1, 1.0)
    assert bucket.take(20, 100.0) and not bucket.take(1, 100.0)  # never more than the burst
    assert TokenBucket(float("inf"), 1, 0.0).take(10**6, 0.0)


# ---------------------------------------------------------------------------- step 5

PREPARE: list[tuple[str, CheckConfig, str, Any, bool, Optional[tuple[str, int]]]] = [
    ("maxTokens zero", ALL, "sampling/createMessage", sample(maxTokens=0), True, ("max_tokens", -32602)),
    ("maxTokens bool", ALL, "sampling/createMessage", sample(maxTokens=True), True, ("max_tokens", -32602)),
    ("maxTokens float", ALL, "sampling/createMessage", sample(maxTokens=10.0), True, ("max_tokens", -32602)),
    ("maxTokens string", ALL, "sampling/createMessage", sample(maxTokens="10"), True, ("max_tokens", -32602)),
    ("idle sampling", ALL, "sampling/createMessage", sample(), False, ("idle", -1)),
    ("idle allowed", CheckConfig(kinds=ALL.kinds, allow_idle=True), "sampling/createMessage", sample(), False, None),
    ("five tool turns", ALL, "sampling/createMessage", sample(messages=MSG + [tool_turn()] * 5), True, None),
    ("six tool turns", ALL, "sampling/createMessage", sample(messages=MSG + [tool_turn()] * 6), True, ("tool_loop", -1)),
    ("user tool_use does not count", ALL, "sampling/createMessage", sample(messages=[{"role": "user", "content": [{"type": "tool_use"}]}] * 9), True, None),
    ("bad url", ALL, "elicitation/create", {"mode": "url", "message": "m", "url": "javascript:alert(1)", "elicitationId": "e"}, True, ("url", -32602)),
    ("http url", ALL, "elicitation/create", {"mode": "url", "message": "m", "url": "http://mcp.example.com/x", "elicitationId": "e"}, True, ("url", -32602)),
    ("bad schema", ALL, "elicitation/create", {"message": "m", "requestedSchema": {"type": "object", "properties": {"o": {"type": "object"}}}}, True, ("schema", -32602)),
    ("roots", ALL, "roots/list", {}, False, None),
]


@pytest.mark.parametrize("name, config, method, params, in_flight, expected", PREPARE, ids=[c[0] for c in PREPARE])
def test_the_kind_checks(name: str, config: CheckConfig, method: str, params: Any, in_flight: bool, expected: Optional[tuple[str, int]]) -> None:
    result = checks(config).prepare(method, params, in_flight=in_flight)
    if expected is None:
        assert isinstance(result, Prepared)
    else:
        assert isinstance(result, Refusal) and (result.check, result.code) == expected


def test_sampling_params_are_clamped_and_context_narrowed_for_the_handler() -> None:
    sent = sample(maxTokens=100_000, includeContext="allServers")
    prepared = checks().prepare("sampling/createMessage", sent, in_flight=True)
    assert isinstance(prepared, Prepared)
    assert prepared.params["maxTokens"] == 4096 and prepared.params["includeContext"] == "none"
    assert sent["maxTokens"] == 100_000  # the server's params are not modified in place
    with_context = checks(CheckConfig(kinds=ALL.kinds, sampling_context=True, max_tokens=50))
    prepared = with_context.prepare("sampling/createMessage", sample(includeContext="thisServer"), in_flight=True)
    assert isinstance(prepared, Prepared)
    assert prepared.params["includeContext"] == "thisServer" and prepared.params["maxTokens"] == 50
    absent = checks().prepare("sampling/createMessage", sample(), in_flight=True)
    assert isinstance(absent, Prepared) and "includeContext" not in absent.params


def test_a_url_elicitation_carries_the_url_facts() -> None:
    params = {"mode": "url", "message": "m", "url": "https://MCP.example.com/auth?x=1", "elicitationId": "e"}
    prepared = checks().prepare("elicitation/create", params, in_flight=True)
    assert isinstance(prepared, Prepared) and prepared.url is not None
    assert (prepared.mode, prepared.url.host, prepared.url.idn, prepared.url.origin_mismatch) == ("url", "mcp.example.com", False, False)
    elsewhere = checks().prepare("elicitation/create", dict(params, url="https://evil.example/x"), in_flight=True)
    assert isinstance(elsewhere, Prepared) and elsewhere.url is not None and elsewhere.url.origin_mismatch


def test_a_form_elicitation_carries_the_fields() -> None:
    prepared = checks().prepare("elicitation/create", {"message": "m", "requestedSchema": FORM}, in_flight=True)
    assert isinstance(prepared, Prepared) and prepared.mode == "form"
    assert prepared.fields == {"pin": {"sensitive_suspected": True}, "name": {"sensitive_suspected": False}}


# ---------------------------------------------------------------------------- step 8


def prepared_form() -> Prepared:
    p = checks().prepare("elicitation/create", {"message": "m", "requestedSchema": FORM}, in_flight=True)
    assert isinstance(p, Prepared)
    return p


def prepared_url() -> Prepared:
    p = checks().prepare("elicitation/create", {"mode": "url", "message": "m", "url": "https://x.example", "elicitationId": "e"}, in_flight=True)
    assert isinstance(p, Prepared)
    return p


def prepared_kind(kind: str) -> Prepared:
    method = {"sampling": "sampling/createMessage", "roots": "roots/list"}[kind]
    p = checks().prepare(method, sample() if kind == "sampling" else {}, in_flight=True)
    assert isinstance(p, Prepared)
    return p


TEXT = {"type": "text", "text": "hi"}
ANSWERS: list[tuple[str, Any, Any, Any]] = [
    ("form accept", prepared_form, {"action": "accept", "content": {"name": "Ada"}}, {"action": "accept", "content": {"name": "Ada"}}),
    ("form accept missing required", prepared_form, {"action": "accept", "content": {}}, "answer"),
    ("decline drops content", prepared_form, {"action": "decline", "content": {"pin": "1234"}}, {"action": "decline"}),
    ("cancel drops content", prepared_form, {"action": "cancel", "content": {"x": 1}}, {"action": "cancel"}),
    ("unknown action", prepared_form, {"action": "maybe"}, "answer"),
    ("no action", prepared_form, {"content": {"name": "Ada"}}, "answer"),
    ("not a dict", prepared_form, ["accept"], "answer"),
    ("url accept", prepared_url, {"action": "accept"}, {"action": "accept"}),
    ("url accept with content", prepared_url, {"action": "accept", "content": {"x": "y"}}, "answer"),
    ("sampling ok", lambda: prepared_kind("sampling"), {"role": "assistant", "content": TEXT, "model": "m"}, {"role": "assistant", "content": TEXT, "model": "m"}),
    ("sampling list of blocks", lambda: prepared_kind("sampling"), {"role": "assistant", "content": [TEXT, {"type": "tool_use", "id": "1", "name": "n", "input": {}}], "model": "m", "stopReason": "toolUse"}, "ok"),
    ("sampling without model", lambda: prepared_kind("sampling"), {"role": "assistant", "content": TEXT}, "answer"),
    ("sampling model not a string", lambda: prepared_kind("sampling"), {"role": "assistant", "content": TEXT, "model": 4}, "answer"),
    ("sampling without role", lambda: prepared_kind("sampling"), {"content": TEXT, "model": "m"}, "answer"),
    ("sampling unknown block", lambda: prepared_kind("sampling"), {"role": "assistant", "content": {"type": "video"}, "model": "m"}, "answer"),
    ("sampling text block without text", lambda: prepared_kind("sampling"), {"role": "assistant", "content": {"type": "text"}, "model": "m"}, "answer"),
    ("sampling empty list", lambda: prepared_kind("sampling"), {"role": "assistant", "content": [], "model": "m"}, "answer"),
    ("roots kept", lambda: prepared_kind("roots"), {"roots": [{"uri": "file:///a", "name": "a"}]}, {"roots": [{"uri": "file:///a", "name": "a"}]}),
    ("roots malformed", lambda: prepared_kind("roots"), {"roots": "file:///a"}, "answer"),
]


@pytest.mark.parametrize("name, make, value, expected", ANSWERS, ids=[c[0] for c in ANSWERS])
def test_answers_are_validated_and_cleaned(name: str, make: Any, value: Any, expected: Any) -> None:
    result = checks().answer(make(), value)
    if expected == "answer":
        assert isinstance(result, Refusal) and (result.check, result.code) == ("answer", -32603)
        assert "invalid answer" in result.message and result.detail
    elif expected == "ok":
        assert not isinstance(result, Refusal)
    else:
        assert result == expected


def test_2025_06_18_sampling_answers_hold_one_block() -> None:
    c = checks(CheckConfig(version="2025-06-18", kinds=frozenset({"sampling"})))
    p = c.prepare("sampling/createMessage", sample(), in_flight=True)
    assert isinstance(p, Prepared)
    assert isinstance(c.answer(p, {"role": "assistant", "content": [TEXT], "model": "m"}), Refusal)
    assert not isinstance(c.answer(p, {"role": "assistant", "content": TEXT, "model": "m"}), Refusal)


def test_dropped_roots_are_noted_for_the_log() -> None:
    p = prepared_kind("roots")
    result = checks().answer(p, {"roots": [{"uri": "https://x.example/"}, {"uri": "file://localhost/srv"}]})
    assert result == {"roots": [{"uri": "file:///srv"}]}
    assert len(p.notes) == 1
