"""Many users on one stdio server (issue #22, item 3): ``ClientPool`` leases one client per call, so every server
request during a call is tied to it and sees that call's ``assigns``; the refusals that hint at it say why."""

from __future__ import annotations

import json
import logging
import threading
from typing import Any, Callable, Optional

import pytest

import mcp_input_sync as mis
from mcp_input_sync.testing import FakeServer
from mcp_input_sync.web import PendingInputBroker, WebHandler

from .harness import SDK_SERVER, wait_until

JsonDict = dict[str, Any]
USERS = 8
WAIT = 30.0


class PerUser(mis.InputHandler):
    """Answers each form with the user its call named; every callback waits until ``together`` are in at once."""

    def __init__(self, together: int = 1) -> None:
        self.barrier = threading.Barrier(together, timeout=WAIT)
        self.seen: list[Any] = []
        self.lock = threading.Lock()

    def handle_elicitation(self, params: JsonDict, ctx: mis.InputContext) -> JsonDict:
        with self.lock:
            self.seen.append(dict(ctx.assigns or {}))
        self.barrier.wait()  # every call is in flight at once: the ties cannot come from calls taking turns
        user = (ctx.assigns or {}).get("user")
        return {"action": "accept", "content": {"name": f"user-{user}"}}


def run_threads(count: int, work: Callable[[int], Any]) -> list[Any]:
    """``work(i)`` on ``count`` threads at once; each one's result (or exception), in order."""
    results: list[Any] = [None] * count

    def one(i: int) -> None:
        try:
            results[i] = work(i)
        except BaseException as exc:  # noqa: BLE001 - reported to the test
            results[i] = exc

    threads = [threading.Thread(target=one, args=(i,), name=f"test-user-{i}", daemon=True) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT * 2)
    assert not any(thread.is_alive() for thread in threads)
    return results


def legacy_fake() -> FakeServer:
    fake = FakeServer(timeout=WAIT)

    @fake.tool
    def elicit_form(call: Any) -> str:
        answer = call.elicit(call.arguments.get("message", "Your name?"), {"type": "object", "properties": {"name": {"type": "string"}}})
        return json.dumps(answer)

    return fake


class Fakes:
    """A factory of clients, each over a FakeServer of its own (a FakeServer serves one client)."""

    def __init__(self, handler: Optional[mis.InputHandler] = None, **options: Any) -> None:
        self.handler = handler
        self.options = options
        self.servers: list[FakeServer] = []
        self.lock = threading.Lock()

    def __call__(self) -> mis.Client:
        fake = legacy_fake()
        with self.lock:
            self.servers.append(fake)
        return fake.client(handler=self.handler, **self.options)

    def close(self) -> None:
        for fake in self.servers:
            fake.close()


# ---------------------------------------------------------------------------- each call sees its own assigns


def test_eight_users_through_a_pool_of_the_sdk_server_each_see_their_own_assigns() -> None:
    handler = PerUser(together=USERS)
    with mis.ClientPool(lambda: mis.connect_stdio(SDK_SERVER, handler=handler, protocol="legacy"), max_size=USERS) as pool:
        results = run_threads(USERS, lambda i: pool.call_tool("elicit_form", {"message": "Name?"}, assigns={"user": i}, timeout=WAIT))
        assert pool.size == USERS and pool.leased == 0
    for i, result in enumerate(results):
        assert not isinstance(result, BaseException), result
        assert json.loads(result["content"][0]["text"]) == {"action": "accept", "content": {"name": f"user-{i}"}}
    assert sorted(seen["user"] for seen in handler.seen) == list(range(USERS))


def test_eight_users_through_a_pool_of_fakes_each_see_their_own_assigns() -> None:
    handler = PerUser(together=USERS)
    fakes = Fakes(handler)
    try:
        with mis.ClientPool(fakes, max_size=USERS) as pool:
            results = run_threads(USERS, lambda i: pool.call_tool("elicit_form", assigns={"user": i}))
        assert [json.loads(r["content"][0]["text"])["content"]["name"] for r in results] == [f"user-{i}" for i in range(USERS)]
    finally:
        fakes.close()


def test_without_the_pool_concurrent_calls_on_one_stdio_client_lose_their_assigns() -> None:
    """The case the pool is for: over stdio a server request is tied only to a client's sole call in flight."""
    handler = PerUser(together=USERS)
    fake = legacy_fake()
    with fake.client(handler=handler) as client:
        run_threads(USERS, lambda i: client.call_tool("elicit_form", assigns={"user": i}))
    fake.close()
    assert handler.seen.count({}) >= USERS - 1  # at most the first, alone for a moment, was tied


def test_a_small_pool_makes_callers_take_turns_and_a_lease_holds_a_client_for_several_calls() -> None:
    fakes = Fakes(PerUser())
    try:
        with mis.ClientPool(fakes, max_size=2) as pool:
            results = run_threads(6, lambda i: pool.call_tool("elicit_form", assigns={"user": i}))
            assert [json.loads(r["content"][0]["text"])["content"]["name"] for r in results] == [f"user-{i}" for i in range(6)]
            assert len(fakes.servers) <= 2
            with pool.lease() as client:
                first = client.call_tool("elicit_form", assigns={"user": "a"})
                second = client.call_tool("elicit_form", assigns={"user": "b"})
                assert pool.leased == 1
            assert "user-a" in first["content"][0]["text"] and "user-b" in second["content"][0]["text"]
    finally:
        fakes.close()


# ---------------------------------------------------------------------------- waiting, breaking, closing


def test_a_lease_waits_at_most_its_timeout_then_says_why() -> None:
    fakes = Fakes()
    try:
        with mis.ClientPool(fakes, max_size=1, timeout=0) as pool:
            with pool.lease():
                with pytest.raises(mis.ClientError) as caught:
                    with pool.lease():
                        pass
                assert caught.value.kind == "timeout" and caught.value.check == "pool"
                assert "max_size" in caught.value.message and "all 1 are leased" in caught.value.message
                got = threading.Event()

                def waiter() -> None:
                    with pool.lease(timeout=WAIT):
                        got.set()

                thread = threading.Thread(target=waiter, daemon=True)
                thread.start()
                assert not got.wait(0.05)  # still leased
            assert got.wait(WAIT)  # freed: the waiter has it
            thread.join(WAIT)
    finally:
        fakes.close()


def test_a_client_whose_connection_broke_is_replaced() -> None:
    fakes = Fakes()
    try:
        with mis.ClientPool(fakes, max_size=1) as pool:
            with pool.lease() as first:
                first.ping()
            fakes.servers[0].peer.close()  # the server goes away while the client is idle
            assert wait_until(lambda: first.state is mis.ClientState.CLOSED, WAIT)
            with pytest.raises(mis.ClientError) as caught:
                with pool.lease() as second:
                    assert second is not first and second.state is mis.ClientState.OPEN
                    fakes.servers[1].peer.close()  # and this one during a lease
                    second.call_tool("elicit_form")
            assert caught.value.kind == "transport"
            with pool.lease() as third:
                third.ping()
            assert len(fakes.servers) == 3 and pool.size == 1
    finally:
        fakes.close()


def test_a_factory_that_fails_frees_its_slot() -> None:
    fakes = Fakes()
    attempts: list[int] = []

    def flaky() -> mis.Client:
        attempts.append(1)
        if len(attempts) == 1:
            raise mis.ClientError("transport", "cannot start the server")
        return fakes()

    try:
        with mis.ClientPool(flaky, max_size=1, timeout=0) as pool:
            with pytest.raises(mis.ClientError, match="cannot start"):
                pool.call_tool("elicit_form")
            with pool.lease() as client:
                client.ping()
    finally:
        fakes.close()


def test_close_closes_every_client_even_a_leased_one() -> None:
    fakes = Fakes()
    try:
        pool = mis.ClientPool(fakes, max_size=2)
        with pool.lease() as held:
            with pool.lease() as other:
                pass
            pool.close()
            assert held.state is mis.ClientState.CLOSED and other.state is mis.ClientState.CLOSED
        with pytest.raises(mis.ClientError) as caught:
            pool.call_tool("elicit_form")
        assert caught.value.kind == "closed"
        pool.close()  # idempotent
    finally:
        fakes.close()


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(TypeError):
        mis.ClientPool("not callable")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        mis.ClientPool(lambda: None, max_size=0)  # type: ignore[arg-type, return-value]
    with pytest.raises(ValueError):
        mis.ClientPool(lambda: None, timeout=-1)  # type: ignore[arg-type, return-value]
    pool = mis.ClientPool(lambda: "nope")  # type: ignore[arg-type, return-value]
    with pytest.raises(TypeError, match="not a Client"):
        pool.call_tool("x")
    pool.close()


# ---------------------------------------------------------------------------- the refusals point at the fix


def test_the_web_handler_says_why_an_untied_request_names_no_user(caplog: pytest.LogCaptureFixture) -> None:
    fake = legacy_fake()
    holding, release = threading.Event(), threading.Event()

    @fake.tool
    def hold(call: Any) -> str:
        holding.set()
        release.wait(WAIT)
        return "held"

    with fake.client(handler=WebHandler(PendingInputBroker())) as client:
        box: list[Any] = []
        thread = threading.Thread(target=lambda: box.append(client.call_tool("hold", assigns={"user": "bob"})), daemon=True)
        thread.start()
        assert holding.wait(WAIT)
        with caplog.at_level(logging.WARNING, logger="mcp_input_sync.web"):
            answer = json.loads(client.call_tool("elicit_form", assigns={"user": "alice"})["content"][0]["text"])
        release.set()
        thread.join(WAIT)
    fake.close()
    assert answer["action"] == "decline"
    message = next(r.getMessage() for r in caplog.records if "names no user" in r.getMessage())
    assert "several were" in message and "ClientPool" in message


def test_the_budget_refusal_names_the_option() -> None:
    fake = FakeServer(era="modern")

    @fake.tool
    def three(call: Any) -> str:
        for _ in range(3):
            call.elicit("Again?")
        return "done"

    class Yes(mis.InputHandler):
        def handle_elicitation(self, params: JsonDict, ctx: mis.InputContext) -> JsonDict:
            return {"action": "accept", "content": {}}

    with fake.client(handler=Yes(), input_rate_limit=(1e-6, 2)) as client:
        with pytest.raises(mis.ClientError) as caught:
            client.call_tool("three")
    fake.close()
    assert caught.value.kind == "refused" and caught.value.check == "budget"
    assert "input_rate_limit=(1e-06, 2)" in caught.value.message and "docs/web.md#sizing-input_rate_limit" in caught.value.message
