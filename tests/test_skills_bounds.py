"""What a server's skills listing may cost the client (docs/skills.md, issue 31 finding 4).

A hostile ``skills/list`` can hold millions of entries that are not skills:
each is counted, only the first few are kept with why, and the listing
logs one warning, not one per entry. Against the kit's ``FakeServer``
(tests/test_skills.py's ``Served``) in both eras.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest

from mcp_input_sync._session import MAX_LIST_PAGES
from mcp_input_sync.errors import ClientError
from mcp_input_sync.skills import REFUSED_KEPT, Skills

from .test_skills import Served, entry


@pytest.fixture(params=["legacy", "modern"])
def era(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def paged(era: str, *pages: list[Any]) -> Served:
    """A server whose ``skills/list`` answers ``pages`` in order, each pointing to the next."""
    served = Served(era)
    done = {"resultType": "complete", "ttlMs": 0, "cacheScope": "private"} if era == "modern" else {}

    def listing(params: dict[str, Any]) -> dict[str, Any]:
        n = int(params.get("cursor", "0"))
        more = {"nextCursor": str(n + 1)} if n + 1 < len(pages) else {}
        return {**done, "skills": pages[n], **more}

    served.fake.override("skills/list", listing)
    return served


def test_refused_entries_are_counted_a_few_kept_and_logged_once(era: str, caplog: pytest.LogCaptureFixture) -> None:
    served = paged(era, [0] * 30_000, [entry()] + [{"uri": "x"}] * 20_000)
    with served.fake, served.fake.client() as client, caplog.at_level(logging.WARNING, logger="mcp_input_sync"):
        skills = Skills(client)
        (found,) = skills.list()
        assert found.name == "pdf-tools"
        assert skills.refused_count == 50_000 and len(skills.refused) == REFUSED_KEPT == 20
        assert {r.check for r in skills.refused} == {"entry"} and "not an object" in skills.refused[0].message
        warnings = [r.getMessage() for r in caplog.records if "skill" in r.getMessage()]
        assert len(warnings) == 1 and "50000 skill entries" in warnings[0], warnings[:3]
        skills.list()  # the next listing starts again
        assert skills.refused_count == 50_000 and len(skills.refused) == 20
        served.fake.override("skills/list", lambda params: {"resultType": "complete", "skills": [entry()]} if era == "modern" else {"skills": [entry()]})
        assert len(skills.list()) == 1 and skills.refused == [] and skills.refused_count == 0


def test_a_listing_is_bounded_by_the_clients_listing_bytes_across_pages(era: str) -> None:
    served = paged(era, [0] * 20_000, [0] * 20_000, [0] * 20_000)  # about 40 KB of JSON each
    with served.fake, served.fake.client(limits={"listing_bytes": 64 * 1024}) as client:
        skills = Skills(client)
        with pytest.raises(ClientError) as over:
            skills.list()
        assert over.value.check == "limit" and "listing_bytes" in str(over.value)
        assert len(served.fake.requests_seen("skills/list")) == 2 and skills.refused == [] and skills.refused_count == 0
        client.ping()  # the client carries on


def test_pages_without_end_stop_at_the_clients_page_cap(era: str) -> None:
    served = paged(era, *([[]] * 5000))
    with served.fake, served.fake.client() as client:
        with pytest.raises(ClientError) as endless:
            Skills(client).list()
    assert "pages" in str(endless.value) and len(served.fake.requests_seen("skills/list")) == MAX_LIST_PAGES
