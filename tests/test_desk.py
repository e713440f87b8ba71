"""The input desk alone, without a client: one check path behind four ways in, accounting, the callback.

Every input request, whichever era asked, goes through the same steps
(docs/reference.md#order-of-checks) and a refusal maps to one error
(docs/modern.md#errors). The table below runs each case through all four
ways in: a legacy server request (``admit``), a modern round
(``check_round``), the URL elicitations of a -32042 error and a resumed
round (``check_answers``).
"""

from __future__ import annotations

import threading
from typing import Any, Optional

import pytest
from freezegun import freeze_time

import mcp_input_sync as mis
from mcp_input_sync._era import ClientEra
from mcp_input_sync._input import InputDesk
from mcp_input_sync._input_rounds import refusal_error
from mcp_input_sync._protocol.checks import Prepared, Refusal
from mcp_input_sync._protocol.deadlines import CallClock
from mcp_input_sync._protocol.legacy_conn import LegacyConnection, Said
from mcp_input_sync._protocol.modern import PendingCall
from mcp_input_sync._protocol.urls import UrlFacts
from mcp_input_sync._runtime.deadlines import DeadlineSweep
from mcp_input_sync._runtime.watchdog import Watchdog
from mcp_input_sync._stats import Stats
from mcp_input_sync import _clock
from mcp_input_sync.handler import CancelToken
from mcp_input_sync.options import Options

JsonDict = dict[str, Any]
WAIT = 10.0

SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}}}
FORM = {"mode": "form", "message": "Your answer?", "requestedSchema": SCHEMA}
URL = {"mode": "url", "message": "Log in", "url": "https://example.com/login", "elicitationId": "e1"}
SAMPLE = {"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}], "maxTokens": 10}
EVERYTHING: JsonDict = {"elicitation": {"form": {}, "url": {}}, "sampling": {}, "roots": {"listChanged": True}}
FORMS_ONLY: JsonDict = {"elicitation": {"form": {}}}


class Recorder(mis.InputHandler):
    """Answers every kind and keeps each context it was given."""

    def __init__(self, answer: Optional[JsonDict] = None) -> None:
        self.answer = answer
        self.contexts: list[mis.InputContext] = []

    def handle_elicitation(self, params: JsonDict, ctx: mis.InputContext) -> JsonDict:
        self.contexts.append(ctx)
        if self.answer is not None:
            return self.answer
        if params.get("mode") == "url":
            return {"action": "accept"}
        return {"action": "accept", "content": {"answer": "yes"}}

    def handle_sampling(self, params: JsonDict, ctx: mis.InputContext) -> JsonDict:
        self.contexts.append(ctx)
        return {"role": "assistant", "content": {"type": "text", "text": "hello"}, "model": "m"}

    def list_roots(self, ctx: mis.InputContext) -> JsonDict:
        self.contexts.append(ctx)
        return {"roots": [{"uri": "file:///tmp"}]}


def admit(desk: InputDesk, method: str, params: Any) -> Any:
    """A legacy server request through the connection the legacy engine builds on ``desk`` (its checks, budget and
    timeouts), its refusal counted and logged by the desk as the engine has it: the Prepared, or the Refusal."""
    conn = LegacyConnection(desk.checks, desk.take_budget, desk.timeouts, CancelToken, threading.Lock())
    got = conn.receive(1, method, params, _clock.monotonic(), True)
    if isinstance(got, Said):
        assert got.refusal is not None
        desk.note_refusal(got.kind, got.refusal)
        return got.refusal
    return got.prepared


def legacy_answer(desk: InputDesk, prepared: Prepared, assigns: Any, related: Any, token: CancelToken, what: str) -> Any:
    """A legacy callback as the engine runs it: the desk's callback, then its answer check."""
    return desk.check_answer(prepared, desk.callback(prepared, assigns, related, token), what)


def make_desk(
    handler: Optional[mis.InputHandler] = None, caps: Optional[JsonDict] = None, version: str = "2025-11-25",
    sweep: Optional[DeadlineSweep] = None, **options: Any
) -> InputDesk:
    """A desk as a client builds it, configured for ``version``; its watchdog never starts (sweeps are called by hand).

    ``sweep``: the runtime's deadline sweep the desk is handed (a test keeps it to look at it)."""
    opts = Options.parse({"input_rate_limit": (float("inf"), 1), **options})
    era = ClientEra()
    era.decide("legacy" if version < "2026" else "modern")
    watchdog = Watchdog()
    desk = InputDesk(
        handler=handler or Recorder(), options=opts, stats=Stats(), client_name="desk-test", server_id="srv", watchdog=watchdog,
        sweep=DeadlineSweep(watchdog.watch) if sweep is None else sweep, era=era,  # an empty sweep is falsy
    )
    desk.configure(version, EVERYTHING if caps is None else caps, "https://example.com")
    return desk


def refused(desk: InputDesk) -> dict[str, dict[str, int]]:
    return {kind: dict(checks) for kind, checks in desk.stats.snapshot()["refused"].items()}


# ---------------------------------------------------------------------------- the one check path, as a table

#: (case, method, params, declared capabilities) -> the kind of the Prepared, or the refusal's (check, code).
CASES: list[tuple[str, str, Any, JsonDict, Any]] = [
    ("a form elicitation", "elicitation/create", FORM, EVERYTHING, "elicitation"),
    ("a URL elicitation", "elicitation/create", URL, EVERYTHING, "elicitation"),
    ("a sampling request", "sampling/createMessage", SAMPLE, EVERYTHING, "sampling"),
    ("roots without params", "roots/list", None, EVERYTHING, "roots"),
    ("not an input method", "tools/call", {}, EVERYTHING, ("method", -32601)),
    ("an undeclared kind", "sampling/createMessage", SAMPLE, FORMS_ONLY, ("capability", -32601)),
    ("an undeclared elicitation mode", "elicitation/create", URL, FORMS_ONLY, ("capability", -32602)),
    ("params that are not an object", "elicitation/create", [1], EVERYTHING, ("malformed", -32602)),
    ("a form without its schema", "elicitation/create", {"message": "m"}, EVERYTHING, ("malformed", -32602)),
    ("a URL that is not https", "elicitation/create", dict(URL, url="http://example.com/"), EVERYTHING, ("url", -32602)),
    ("a schema that is no form", "elicitation/create", dict(FORM, requestedSchema={"type": "array"}), EVERYTHING, ("schema", -32602)),
    ("maxTokens below 1", "sampling/createMessage", dict(SAMPLE, maxTokens=0), EVERYTHING, ("max_tokens", -32602)),
]

#: How each refusal surfaces as a ClientError (docs/modern.md#errors): (kind, check).
RAISED = {
    "method": ("protocol", "malformed"),
    "capability": ("protocol", "capability"),
    "malformed": ("protocol", "malformed"),
    "url": ("refused", "url"),
    "schema": ("refused", "schema"),
    "max_tokens": ("refused", "max_tokens"),
}

KINDS = {"elicitation/create": "elicitation", "sampling/createMessage": "sampling", "roots/list": "roots"}


@pytest.mark.parametrize(("method", "params", "caps", "outcome"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_legacy_request_is_checked_by_the_table(method: str, params: Any, caps: JsonDict, outcome: Any) -> None:
    desk = make_desk(caps=caps)
    got = admit(desk, method, params)
    if isinstance(outcome, str):
        assert isinstance(got, Prepared) and got.kind == outcome
        assert refused(desk) == {}
    else:
        assert isinstance(got, Refusal) and (got.check, got.code) == outcome
        assert refused(desk) == {KINDS.get(method, "other"): {outcome[0]: 1}}  # counted once, under its kind


@pytest.mark.parametrize(("method", "params", "caps", "outcome"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_modern_round_is_checked_by_the_same_table(method: str, params: Any, caps: JsonDict, outcome: Any) -> None:
    desk = make_desk(caps=caps, version="2026-07-28")
    request = {"method": method} if params is None else {"method": method, "params": params}
    if isinstance(outcome, str):
        prepared = desk.check_round({"q": request})
        assert list(prepared) == ["q"] and prepared["q"].kind == outcome
        return
    with pytest.raises(mis.ClientError) as info:
        desk.check_round({"q": request})
    assert (info.value.kind, info.value.check) == RAISED[outcome[0]]
    assert info.value.code == outcome[1]
    assert refused(desk) == {KINDS.get(method, "other"): {outcome[0]: 1}}


@pytest.mark.parametrize(("method", "params", "caps", "outcome"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_resumed_round_is_checked_by_the_same_table_and_not_counted(method: str, params: Any, caps: JsonDict, outcome: Any) -> None:
    desk = make_desk(caps=caps, version="2026-07-28")
    request = {"method": method} if params is None else {"method": method, "params": params}
    pending = PendingCall("tools/call", {"name": "t"}, {"q": request}, None, 1, [])
    answer = {
        "elicitation": {"action": "decline"},
        "sampling": {"role": "assistant", "content": {"type": "text", "text": "x"}, "model": "m"},
        "roots": {"roots": []},
    }.get(outcome if isinstance(outcome, str) else "elicitation")
    if isinstance(outcome, str):
        answers, declined = desk.check_answers(pending, {"q": answer})
        assert list(answers) == ["q"] and desk.stats.snapshot()["served"] == 1
        assert len(declined) == (1 if outcome == "elicitation" else 0)
        return
    with pytest.raises(mis.ClientError) as info:
        desk.check_answers(pending, {"q": answer})
    assert (info.value.kind, info.value.check, info.value.code) == (*RAISED[outcome[0]], outcome[1])
    assert refused(desk) == {}  # the client's own configuration refused what it once took


@pytest.mark.parametrize(
    ("case", "entry", "caps", "outcome"),
    [
        ("a URL elicitation", URL, EVERYTHING, None),
        ("an undeclared URL mode", URL, FORMS_ONLY, ("capability", -32602)),
        ("a URL that is not https", dict(URL, url="http://example.com/"), EVERYTHING, ("url", -32602)),
        ("a URL elicitation without its message", {"mode": "url", "url": "https://example.com/", "elicitationId": "e"}, EVERYTHING, ("malformed", -32602)),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_the_url_elicitations_of_a_minus_32042_error_are_checked_the_same_way(case: str, entry: JsonDict, caps: JsonDict, outcome: Any) -> None:
    desk = make_desk(caps=caps)
    if outcome is None:
        (prepared,) = desk.check_url_elicitations([entry])
        assert prepared.kind == "elicitation" and prepared.mode == "url"
        return
    with pytest.raises(mis.ClientError) as info:
        desk.check_url_elicitations([entry])
    assert (info.value.kind, info.value.check, info.value.code) == (*RAISED[outcome[0]], outcome[1])
    assert refused(desk) == {"elicitation": {outcome[0]: 1}}


@pytest.mark.parametrize(
    ("check", "kind", "raised_check"),
    [
        ("method", "protocol", "malformed"),
        ("malformed", "protocol", "malformed"),
        ("capability", "protocol", "capability"),
        ("answer", "input_handler", "answer"),
        ("budget", "refused", "budget"),
        ("url", "refused", "url"),
        ("schema", "refused", "schema"),
        ("max_tokens", "refused", "max_tokens"),
        ("idle", "refused", "idle"),
        ("tool_loop", "refused", "tool_loop"),
    ],
)
def test_every_refusal_maps_to_one_error(check: str, kind: str, raised_check: str) -> None:
    error = refusal_error(Refusal(check, -32000, "generic", "for the log"))
    assert (error.kind, error.check, error.code) == (kind, raised_check, -32000)
    # the server's generic message; only a budget refusal names the option to the caller, only an answer carries detail
    assert error.message == ("generic: for the log" if check == "budget" else "generic")
    assert error.data == ("for the log" if check == "answer" else None)


def test_a_round_without_a_method_is_malformed_and_not_counted() -> None:
    desk = make_desk(version="2026-07-28")
    with pytest.raises(mis.ClientError) as info:
        desk.check_round({"a": {"method": "elicitation/create", "params": FORM}, "b": {"params": FORM}})
    assert (info.value.kind, info.value.check, info.value.code) == ("protocol", "malformed", -32601)
    assert "'b'" in info.value.message or '"b"' in info.value.message
    assert refused(desk) == {}


def test_a_round_is_checked_in_phases_so_the_earliest_step_decides() -> None:
    # step 1-3 of every request comes before step 5 of any: the undeclared kind of "b" decides, not the schema of "a"
    desk = make_desk(caps=FORMS_ONLY, version="2026-07-28")
    bad_schema = {"method": "elicitation/create", "params": dict(FORM, requestedSchema={"type": "array"})}
    with pytest.raises(mis.ClientError) as info:
        desk.check_round({"a": bad_schema, "b": {"method": "sampling/createMessage", "params": SAMPLE}})
    assert info.value.check == "capability"
    assert refused(desk) == {"sampling": {"capability": 1}}


def test_a_round_over_its_limits_is_refused_before_any_check() -> None:
    desk = make_desk(version="2026-07-28", limits={"round_requests": 1})
    with pytest.raises(mis.ClientError) as info:
        desk.check_round({"a": {"method": "tools/call"}, "b": {"method": "tools/call"}})
    assert (info.value.kind, info.value.check) == ("protocol", "limit")
    assert desk.stats.snapshot()["malformed"] == 1 and refused(desk) == {}


# ---------------------------------------------------------------------------- the budget and its accounting


def test_a_legacy_request_over_the_budget_is_refused_generically_and_logged_with_the_option(caplog: pytest.LogCaptureFixture) -> None:
    desk = make_desk(input_rate_limit=(0.001, 1))
    now = _clock.monotonic()
    assert isinstance(admit(desk, "elicitation/create", FORM), Prepared)
    over = admit(desk, "elicitation/create", FORM)
    assert isinstance(over, Refusal) and (over.check, over.code) == ("budget", -32000)
    assert "input_rate_limit" not in over.message and "input_rate_limit" in over.detail  # the server never sees the option
    assert "input_rate_limit" in caplog.text
    assert refused(desk) == {"elicitation": {"budget": 1}}


def test_a_refused_request_takes_no_token() -> None:
    desk = make_desk(input_rate_limit=(0.001, 1))
    now = _clock.monotonic()
    assert isinstance(admit(desk, "tools/call", {}), Refusal)  # step 1 refuses before the budget
    assert isinstance(admit(desk, "elicitation/create", FORM), Prepared)


def test_a_round_takes_its_tokens_all_or_none_and_says_which_option_to_raise() -> None:
    desk = make_desk(version="2026-07-28", input_rate_limit=(0.001, 2))
    three = {key: {"method": "elicitation/create", "params": FORM} for key in "abc"}
    with pytest.raises(mis.ClientError) as info:
        desk.check_round(three)
    assert (info.value.kind, info.value.check, info.value.code) == ("refused", "budget", -32000)
    assert "input_rate_limit" in info.value.message
    two = {key: three[key] for key in "ab"}
    assert list(desk.check_round(two)) == ["a", "b"]  # the refused round spent nothing
    assert refused(desk) == {"elicitation": {"budget": 1}}


def test_sampling_over_the_budget_gets_the_rejection_code() -> None:
    desk = make_desk(input_rate_limit=(0.001, 1))
    now = _clock.monotonic()
    assert isinstance(admit(desk, "sampling/createMessage", SAMPLE), Prepared)
    over = admit(desk, "sampling/createMessage", SAMPLE)
    assert isinstance(over, Refusal) and (over.check, over.code) == ("budget", -1)


# ---------------------------------------------------------------------------- the callback


def test_a_legacy_answer_runs_the_handler_with_its_context_and_checks_the_answer() -> None:
    handler = Recorder()
    desk = make_desk(handler)
    prepared = admit(desk, "elicitation/create", FORM)
    assert isinstance(prepared, Prepared)
    token = CancelToken()
    answer = legacy_answer(desk, prepared, {"user": "ada"}, 42, token, "elicitation/create")
    assert answer == {"action": "accept", "content": {"answer": "yes"}}
    (ctx,) = handler.contexts
    assert (ctx.client, ctx.server_id, ctx.era, ctx.related_request_id, ctx.mode) == ("desk-test", "srv", "legacy", 42, "form")
    assert ctx.assigns == {"user": "ada"} and set(ctx.fields or {}) == {"answer"}
    assert not ctx.cancelled
    token.cancel("timeout")
    assert ctx.cancelled  # the context carries the request's token


def test_a_url_elicitation_context_carries_the_checked_url() -> None:
    handler = Recorder()
    desk = make_desk(handler)
    prepared = admit(desk, "elicitation/create", URL)
    assert isinstance(prepared, Prepared)
    assert legacy_answer(desk, prepared, None, None, CancelToken(), "elicitation/create") == {"action": "accept"}
    (ctx,) = handler.contexts
    assert (ctx.mode, ctx.url, ctx.host, ctx.origin_mismatch) == ("url", URL["url"], "example.com", False)


def test_an_invalid_answer_is_refused_counted_and_never_raised() -> None:
    desk = make_desk(Recorder(answer={"action": "sure"}))
    prepared = admit(desk, "elicitation/create", FORM)
    assert isinstance(prepared, Prepared)
    verdict = legacy_answer(desk, prepared, None, None, CancelToken(), "elicitation/create")
    assert isinstance(verdict, Refusal) and (verdict.check, verdict.code) == ("answer", -32603)
    assert refused(desk) == {"elicitation": {"answer": 1}}


def test_what_the_handler_raises_reaches_the_engine() -> None:
    class Refusing(mis.InputHandler):
        def handle_elicitation(self, params: JsonDict, ctx: mis.InputContext) -> JsonDict:
            raise mis.InputRefused(-1, "no")

    desk = make_desk(Refusing())
    prepared = admit(desk, "elicitation/create", FORM)
    assert isinstance(prepared, Prepared)
    with pytest.raises(mis.InputRefused):
        legacy_answer(desk, prepared, None, None, CancelToken(), "elicitation/create")


def test_a_callback_here_is_served_and_counted() -> None:
    sweep = DeadlineSweep(Watchdog().watch)
    desk = make_desk(version="2026-07-28", sweep=sweep)
    prepared = desk.check_round({"q": {"method": "elicitation/create", "params": FORM}})
    answers = desk.answer_round(prepared, CallClock(_clock.monotonic(), 60.0, 600.0), None)
    assert answers == {"q": {"action": "accept", "content": {"answer": "yes"}}}
    assert desk.stats.snapshot()["served"] == 1
    assert len(sweep) == 0  # its deadline was taken off the runtime's sweep


def test_a_callback_here_past_its_handler_timeout_raises_timeout_and_its_answer_is_discarded() -> None:
    with freeze_time("2026-12-01") as frozen:
        desk: Optional[InputDesk] = None

        class Slow(Recorder):
            def handle_elicitation(self, params: JsonDict, ctx: mis.InputContext) -> JsonDict:
                assert desk is not None
                frozen.tick(5)
                sweep.sweep()  # what the watchdog does on its next wake
                assert ctx.cancelled
                return {"action": "accept", "content": {"answer": "late"}}

        sweep = DeadlineSweep(Watchdog().watch)
        desk = make_desk(Slow(), version="2026-07-28", sweep=sweep, handler_timeout=2.0)
        prepared = desk.check_round({"q": {"method": "elicitation/create", "params": FORM}})
        with pytest.raises(mis.ClientError) as info:
            desk.answer_round(prepared, CallClock(_clock.monotonic(), 60.0, 600.0), None)
        assert info.value.kind == "timeout"
        assert desk.stats.snapshot()["timed_out"] == 1 and desk.stats.snapshot()["served"] == 0


def test_a_parallel_round_answers_every_request_on_worker_threads() -> None:
    seen: set[str] = set()
    both = threading.Barrier(2, timeout=WAIT)

    class Parallel(Recorder):
        input_parallelism = 2

        def handle_elicitation(self, params: JsonDict, ctx: mis.InputContext) -> JsonDict:
            both.wait()  # both run at once, or this times out
            seen.add(threading.current_thread().name)
            return {"action": "accept", "content": {"answer": params["message"]}}

    desk = make_desk(Parallel(), version="2026-07-28")
    prepared = desk.check_round({key: {"method": "elicitation/create", "params": dict(FORM, message=key)} for key in "ab"})
    answers = desk.answer_round(prepared, CallClock(_clock.monotonic(), 60.0, 600.0), None)
    assert answers == {key: {"action": "accept", "content": {"answer": key}} for key in "ab"}
    assert len(seen) == 2 and all(name.startswith("mcp-input-sync-input-") for name in seen)
    for thread in desk.worker_threads():
        thread.join(WAIT)
        assert not thread.is_alive()


def test_the_first_failure_of_a_parallel_round_cancels_the_others() -> None:
    started = threading.Event()

    class OneRefuses(Recorder):
        input_parallelism = 2

        def handle_elicitation(self, params: JsonDict, ctx: mis.InputContext) -> JsonDict:
            if params["message"] == "bad":
                assert started.wait(WAIT)
                raise mis.InputRefused(-1, "the user said no")
            started.set()
            assert ctx.wait_cancelled(WAIT)  # set by the other callback's failure
            return {"action": "accept", "content": {"answer": "late"}}

    desk = make_desk(OneRefuses(), version="2026-07-28")
    prepared = desk.check_round({key: {"method": "elicitation/create", "params": dict(FORM, message=key)} for key in ("bad", "good")})
    with pytest.raises(mis.ClientError) as info:
        desk.answer_round(prepared, CallClock(_clock.monotonic(), 60.0, 600.0), None)
    assert (info.value.kind, info.value.code) == ("input_handler", -1)  # the failure, not the cancellation it caused
    for thread in desk.worker_threads():
        thread.join(WAIT)


def test_close_sets_the_tokens_of_callbacks_running_here() -> None:
    desk: Optional[InputDesk] = None

    class Closing(Recorder):
        def handle_elicitation(self, params: JsonDict, ctx: mis.InputContext) -> JsonDict:
            assert desk is not None
            desk.close()
            assert ctx.cancelled
            return {"action": "decline"}

    desk = make_desk(Closing(), version="2026-07-28")
    prepared = desk.check_round({"q": {"method": "elicitation/create", "params": FORM}})
    with pytest.raises(mis.ClientError) as info:
        desk.answer_round(prepared, CallClock(_clock.monotonic(), 60.0, 600.0), None)
    assert info.value.kind == "closed"
    assert desk.live_callbacks() == 0


def test_the_public_factory_builds_what_the_keywords_build() -> None:
    facts = {"pin": {"sensitive_suspected": True}}
    url = UrlFacts(url="https://pay.example/x", host="pay.example", port=443, idn=False, origin_mismatch=True)
    token = CancelToken()
    made = mis.InputContext.for_request("c", "s", "modern", {"a": 1}, 7, "url", url, facts, token)
    kept = mis.InputContext(
        client="c", server_id="s", era="modern", assigns={"a": 1}, related_request_id=7, mode="url", url=url.url,
        host="pay.example", idn=False, origin_mismatch=True, server_origin=None, fields=facts, token=token,
    )
    names = ("client", "server_id", "era", "assigns", "related_request_id", "mode", "url", "host", "idn", "origin_mismatch", "server_origin", "fields")
    assert [getattr(made, n) for n in names] == [getattr(kept, n) for n in names]
    assert made.fields is not None and made.fields is not facts  # each request's own copy: a callback may change it
    made.fields["pin"]["sensitive_suspected"] = False
    assert facts["pin"]["sensitive_suspected"] is True
    token.cancel("closed")
    assert made.cancelled and kept.cancelled
    assert not mis.InputContext.for_request("c", "s", None, None, None, None, None, None, None).cancelled
