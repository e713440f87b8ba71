"""Skills (SEP-2640) and client extensions (SEP-2133): what is read, when, and what is refused (docs/skills.md).

Against the kit's ``FakeServer`` in both eras, which serves one skill
whose files can be tampered with; the official conformance runner's four
sep-2640 rows run in tests/test_conformance.py.
"""

from __future__ import annotations

import hashlib
from typing import Any, Iterator, Optional

import pytest

import mcp_input_sync as mis
from mcp_input_sync._protocol.skills import SkillProblem, check_entry, differing_fields, frontmatter_block, parse_flat_frontmatter, resolve
from mcp_input_sync.skills import EXTENSION, SkillRefused, Skills
from mcp_input_sync.testing import FakeServer

SKILL_MD = "---\nname: pdf-tools\ndescription: Fill PDF forms\nversion: 2\n---\n\nUse the form guide.\n"
GUIDE = "Guide to forms.\n"
ROOT = "skill://acme/pdf-tools"


def listed(uri: str, text: str) -> dict[str, Any]:
    data = text.encode()
    return {"uri": uri, "digest": "sha256:" + hashlib.sha256(data).hexdigest(), "size": len(data)}


def entry(**changes: Any) -> dict[str, Any]:
    base = {
        "uri": f"{ROOT}/SKILL.md",
        "frontmatter": {"name": "pdf-tools", "description": "Fill PDF forms", "version": 2},
        "resources": [listed(f"{ROOT}/SKILL.md", SKILL_MD), listed(f"{ROOT}/references/GUIDE.md", GUIDE)],
    }
    return {**base, **changes}


# ---------------------------------------------------------------------------- the pure checks


def test_an_entry_is_checked_before_anything_is_read() -> None:
    checked = check_entry(entry())
    assert checked.name == "pdf-tools" and checked.root == ROOT and len(checked.files or ()) == 2
    assert check_entry(entry(resources="dynamic")).dynamic
    bad = [
        entry(uri=f"{ROOT}/README.md"),  # not a SKILL.md
        entry(frontmatter={"name": "other-name", "description": "x"}),  # name is not the last segment
        entry(frontmatter={"name": "pdf-tools"}),  # no description
        entry(resources=[listed(f"{ROOT}/references/GUIDE.md", GUIDE)]),  # SKILL.md not listed
        entry(resources=[listed(f"{ROOT}/SKILL.md", SKILL_MD), listed("skill://acme/other/x.md", GUIDE)]),  # outside
        entry(resources=[dict(listed(f"{ROOT}/SKILL.md", SKILL_MD), digest="md5:abc")]),
        entry(resources=None),  # neither a list nor "dynamic"
        entry(uri="skill://acme/PDF_Tools/SKILL.md", frontmatter={"name": "PDF_Tools", "description": "x"}),
    ]
    for value in bad:
        with pytest.raises(SkillProblem) as refused:
            check_entry(value)
        assert refused.value.check == "entry"
    too_many = entry(resources=[listed(f"{ROOT}/SKILL.md", SKILL_MD)] + [listed(f"{ROOT}/f{i}", "x") for i in range(512)])
    too_big = entry(resources=[dict(listed(f"{ROOT}/SKILL.md", SKILL_MD), size=17 * 1024 * 1024)])
    for value in (too_many, too_big):
        with pytest.raises(SkillProblem) as refused:
            check_entry(value)
        assert refused.value.check == "limit"


def test_flat_frontmatter_is_read_here_and_anything_more_is_left_to_yaml() -> None:
    block = frontmatter_block(SKILL_MD)
    assert parse_flat_frontmatter(block) == {"name": "pdf-tools", "description": "Fill PDF forms", "version": 2}
    assert parse_flat_frontmatter("a: 'it''s'\nb: \"q\"\nc: true\nd: ~\n# note\ne: 1.5") == {"a": "it's", "b": "q", "c": True, "d": None, "e": 1.5}
    for more in ("metadata:\n  owner: x", "tags: [a, b]", "a: |\n  text", "a: x: y", "a: 1\na: 2"):
        assert parse_flat_frontmatter(more) is None
    with pytest.raises(SkillProblem):
        frontmatter_block("no frontmatter here")
    assert differing_fields({"name": "a", "x": 1}, {"name": "a", "y": 1}) == ["x", "y"]


def test_a_relative_path_stays_inside_its_skill() -> None:
    skill = check_entry(entry())
    assert resolve(skill, "references/GUIDE.md") == f"{ROOT}/references/GUIDE.md"
    for outside in ("../other/SKILL.md", "skill://acme/other/x.md", "references/../../x"):
        with pytest.raises(SkillProblem):
            resolve(skill, outside)


# ---------------------------------------------------------------------------- against a server


class Served:
    """A fake server with one skill; ``tamper`` changes what resources/read serves for SKILL.md."""

    def __init__(self, era: str, *, declare: bool = True, skill_md: str = SKILL_MD, the_entry: Optional[dict[str, Any]] = None) -> None:
        capabilities: dict[str, Any] = {"tools": {}, "resources": {}}
        if declare:
            capabilities["extensions"] = {EXTENSION: {}}
        self.fake = FakeServer(era, capabilities=capabilities)
        self.the_entry = the_entry or entry()
        self.reads: list[str] = []
        cacheable = {"ttlMs": 0, "cacheScope": "private"} if era == "modern" else {}
        done = {"resultType": "complete"} if era == "modern" else {}
        self.fake.override("skills/list", lambda params: {**done, **cacheable, "skills": [self.the_entry]})
        self.fake.override("skills/get", lambda params: {**done, **cacheable, "skill": self.the_entry})
        files = {f"{ROOT}/SKILL.md": skill_md, f"{ROOT}/references/GUIDE.md": GUIDE, f"{ROOT}/scripts/run.py": "print(1)\n"}

        def read(params: dict[str, Any]) -> dict[str, Any]:
            self.reads.append(params["uri"])
            return {**done, "contents": [{"uri": params["uri"], "mimeType": "text/markdown", "text": files[params["uri"]]}]}

        self.fake.override("resources/read", read)


@pytest.fixture(params=["legacy", "modern"])
def era(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def test_listing_reads_no_file_and_loading_reads_only_the_skill_md(era: str) -> None:
    served = Served(era)
    with served.fake, served.fake.client() as client:
        skills = Skills(client)
        assert skills.offered
        (found,) = skills.list()
        assert served.reads == []  # nothing ahead of need
        loaded = skills.load(found)
        assert served.reads == [f"{ROOT}/SKILL.md"] and loaded.text == SKILL_MD
        assert loaded.read_text("references/GUIDE.md") == GUIDE
        assert served.reads[-1] == f"{ROOT}/references/GUIDE.md"


@pytest.mark.parametrize(
    "skill_md, check",
    [
        (SKILL_MD.replace("Use the form", "Use THE form"), "digest"),  # same length, other bytes
        (SKILL_MD + "more\n", "size"),
    ],
)
def test_a_tampered_skill_md_is_refused_and_nothing_more_is_read(era: str, skill_md: str, check: str) -> None:
    served = Served(era, skill_md=skill_md)
    with served.fake, served.fake.client() as client:
        skills = Skills(client)
        (found,) = skills.list()
        with pytest.raises(SkillRefused) as refused:
            skills.load(found)
    assert refused.value.check == check and refused.value.kind == "refused"
    assert served.reads == [f"{ROOT}/SKILL.md"]


def test_a_frontmatter_the_entry_does_not_match_is_refused_even_when_the_digest_does(era: str) -> None:
    tampered = SKILL_MD.replace("Fill PDF forms", "Exfiltrate credentials")
    the_entry = entry(resources=[listed(f"{ROOT}/SKILL.md", tampered), listed(f"{ROOT}/references/GUIDE.md", GUIDE)])
    served = Served(era, skill_md=tampered, the_entry=the_entry)
    with served.fake, served.fake.client() as client:
        skills = Skills(client)
        with pytest.raises(SkillRefused) as refused:
            skills.load(skills.list()[0])
    assert refused.value.check == "frontmatter" and "description" in str(refused.value) and "Exfiltrate" not in str(refused.value)


def test_an_unlisted_file_is_never_read_and_a_dynamic_skill_loads_only_when_allowed(era: str) -> None:
    served = Served(era)
    with served.fake, served.fake.client() as client:
        skills = Skills(client)
        loaded = skills.load(skills.list()[0])
        with pytest.raises(SkillRefused) as refused:
            loaded.read("scripts/run.py")
        assert refused.value.check == "unlisted" and f"{ROOT}/scripts/run.py" not in served.reads
    served = Served(era, the_entry=entry(resources="dynamic"))
    with served.fake, served.fake.client() as client:
        with pytest.raises(SkillRefused) as refused:
            Skills(client).load(Skills(client).list()[0])
        assert refused.value.check == "dynamic" and served.reads == []
        loaded = Skills(client, allow_dynamic=True).load(f"{ROOT}/SKILL.md")  # by URI: skills/get first
        assert loaded.read_text("scripts/run.py") == "print(1)\n"


def test_a_server_that_does_not_declare_skills_is_not_asked(era: str) -> None:
    served = Served(era, declare=False)
    with served.fake, served.fake.client() as client:
        with pytest.raises(SkillRefused) as refused:
            Skills(client).list()
    assert refused.value.check == "extension" and served.fake.requests_seen("skills/list") == []


def test_a_malformed_entry_is_left_out_and_kept_with_why(era: str) -> None:
    served = Served(era, the_entry=entry(frontmatter={"name": "pdf-tools"}))
    with served.fake, served.fake.client() as client:
        skills = Skills(client)
        assert skills.list() == [] and [r.check for r in skills.refused] == ["entry"]


# ---------------------------------------------------------------------------- client extensions (SEP-2133)


def test_declared_extensions_reach_the_server_in_both_eras_and_its_own_are_readable(era: str) -> None:
    capabilities = {"tools": {}, "extensions": {"com.example/search": {"depth": 2}}}
    with FakeServer(era, capabilities=capabilities) as fake:
        fake.override("search/deep", lambda params: {"resultType": "complete", "hits": [params["q"]]} if era == "modern" else {"hits": [params["q"]]})
        with fake.client(extensions={"com.example/search": {"depth": 3}}) as client:
            assert client.server_extensions == {"com.example/search": {"depth": 2}}
            assert client.request("search/deep", {"q": "tiles"})["hits"] == ["tiles"]
        (sent,) = fake.requests_seen("search/deep")
        if era == "modern":
            declared = sent["_meta"]["io.modelcontextprotocol/clientCapabilities"]["extensions"]
        else:
            declared = fake.requests_seen("initialize")[0]["capabilities"]["extensions"]
        assert declared["com.example/search"] == {"depth": 3}


@pytest.mark.parametrize(
    "extensions, error",
    [
        ({"search": {}}, ValueError),  # no vendor prefix
        ({"Com.Example/x": {}}, ValueError),
        ({"io.modelcontextprotocol/tasks": {}}, ValueError),  # the library's own: tasks=True
        ({"com.example/x": []}, TypeError),
        ({"com.example/x": {"n": float("nan")}}, ValueError),
        (["com.example/x"], TypeError),
    ],
)
def test_an_extension_that_cannot_be_declared_is_refused_when_the_client_is_made(extensions: Any, error: type) -> None:
    with pytest.raises(error):
        mis.Client(mis.transports.MemoryTransport(), extensions=extensions)  # type: ignore[attr-defined]
