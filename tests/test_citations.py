"""The repository carries its own rules: nothing points outside it, and every docs pointer resolves.

Two checks over every text file of the repository (version control, virtual
environments, caches and build outputs excluded, see :data:`SKIPPED_DIRS`):

- no file names a design document kept outside the repository, or a path
  outside it (:data:`OUTSIDE`): the rules the code relies on are in docs/,
  and a pure protocol fact is cited as the MCP specification's revision and
  page ("MCP 2025-11-25, basic/lifecycle");
- every ``docs/<page>.md`` or ``docs/<page>.md#<anchor>`` pointer (in code
  comments, docstrings, tests, the README, the CHANGELOG, the docs
  themselves) names a page that exists and, when it has an anchor, a heading
  of that page. Anchors are the heading's slug as mkdocs makes it
  (Python-Markdown's ``toc`` extension): the heading's text without inline
  markup, lowercased, punctuation dropped, runs of spaces and hyphens made
  one hyphen; a repeated slug gets ``_1``, ``_2``, ... Links between the docs
  pages themselves (``[x](safety.md#budget)``) are checked by the strict
  mkdocs build in tests/test_docs.py.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterator

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: Folders never searched: version control, environments, caches and build outputs.
SKIPPED_DIRS = frozenset(
    {".git", ".venv", ".venvs", "venv", "site", "build", "dist", "node_modules", "__pycache__", ".mypy_cache", ".pytest_cache", ".hypothesis"}
)

#: What no file may mention. The patterns are written so that this file does not match them itself.
OUTSIDE = re.compile(
    "|".join(
        [
            r"behaviour\.md",  # the outside product specification
            r"mcp-protocol\.md",  # the outside protocol digest
            r"\.\./(?:shared|seeds|spec)\b",  # folders beside the checkout
            r"\bshared/(?:docs|spec)\b",
            r"/work(?=/)",  # an absolute path of the build machine
        ]
    ),
    re.IGNORECASE,
)

#: Files allowed to mention :data:`OUTSIDE` for now, each with why.
#: TODO(lead): empty this when merging. The first four are being rewritten by the
#: lead (their citations to replace are listed in the refdocs report); the last two
#: belong to the branch that brings the schemas into the repository.
#: test_every_exemption_is_still_needed fails as soon as an entry is no longer needed.
EXEMPT: dict[str, str] = {
}

#: A pointer at a docs page: ``docs/<page>.md`` with an optional ``#anchor``
#: (not part of a longer path or URL, such as ``site/docs/x.md``).
POINTER = re.compile(r"(?<![\w./-])docs/((?:[\w-]+/)*[\w-]+\.md)(?:#([\w-]+))?")


def repository_files() -> Iterator[Path]:
    """Every file under the repository root, outside :data:`SKIPPED_DIRS`, ``*.egg-info`` and any
    virtual environment (a folder holding ``pyvenv.cfg``, such as .ci/pythons' ``.venvs/py3.10``)."""
    stack = [ROOT]
    while stack:
        folder = stack.pop()
        for entry in sorted(folder.iterdir()):
            if entry.name == ".git":  # a folder, or in a worktree a file naming one elsewhere
                continue
            if entry.is_dir():
                if entry.name not in SKIPPED_DIRS and not entry.name.endswith(".egg-info") and not (entry / "pyvenv.cfg").exists():
                    stack.append(entry)
            elif entry.is_file():
                yield entry


@lru_cache(maxsize=None)
def text_of(path: Path) -> str:
    """A file's text, or "" for a binary file."""
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return ""


def relative(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


TEXT_FILES = [p for p in repository_files() if text_of(p)]


# --------------------------------------------------------------------------- slugs


def slugify(text: str) -> str:
    """A heading's text as mkdocs makes it an anchor (Python-Markdown's default ``toc`` slug)."""
    value = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    value = re.sub(r"[^\w\s-]", "", value).strip().lower()
    return re.sub(r"[-\s]+", "-", value)


def heading_text(markdown: str) -> str:
    """The rendered text of a heading's markdown: no code ticks, links reduced to their text, no emphasis stars."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", markdown)
    text = re.sub(r"<[^>]+>", "", text)
    return text.replace("`", "").replace("*", "")


def headings(page: str) -> list[str]:
    """The ATX headings of a markdown text, outside fenced code blocks, in order."""
    found = []
    fence = None
    for line in page.splitlines():
        marker = re.match(r"\s*(```|~~~)", line)
        if marker:
            if fence is None:
                fence = marker.group(1)
            elif marker.group(1) == fence:
                fence = None
            continue
        if fence is not None:
            continue
        match = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if match:
            found.append(match.group(1))
    return found


def anchors(page: str) -> list[str]:
    """The anchor of every heading, with ``_1``, ``_2``, ... for repeats, as mkdocs gives them."""
    seen: set[str] = set()
    out = []
    for heading in headings(page):
        slug = base = slugify(heading_text(heading))
        n = 0
        while slug in seen:
            n += 1
            slug = f"{base}_{n}"
        seen.add(slug)
        out.append(slug)
    return out


@lru_cache(maxsize=None)
def page_anchors(page: str) -> frozenset[str]:
    return frozenset(anchors((ROOT / "docs" / page).read_text(encoding="utf-8")))


# --------------------------------------------------------------------------- the checks


def outside_mentions(path: Path) -> list[str]:
    """``line: text`` for every line of ``path`` that mentions :data:`OUTSIDE`."""
    return [f"{n}: {line.strip()}" for n, line in enumerate(text_of(path).splitlines(), 1) if OUTSIDE.search(line)]


def bad_pointers(path: Path) -> list[str]:
    """Every docs pointer in ``path`` whose page or anchor does not exist, with why."""
    problems = []
    for n, line in enumerate(text_of(path).splitlines(), 1):
        for match in POINTER.finditer(line):
            page, anchor = match.group(1), match.group(2)
            if not (ROOT / "docs" / page).is_file():
                problems.append(f"{n}: docs/{page} does not exist")
            elif anchor is not None and anchor not in page_anchors(page):
                problems.append(f"{n}: docs/{page} has no heading with the anchor #{anchor}")
    return problems


@pytest.mark.parametrize("path", TEXT_FILES, ids=[relative(p) for p in TEXT_FILES])
def test_no_file_points_outside_the_repository(path: Path) -> None:
    if relative(path) in EXEMPT:
        pytest.skip(f"exempt for now: {EXEMPT[relative(path)]}")
    found = outside_mentions(path)
    assert not found, (
        f"{relative(path)} points outside the repository; point at a docs/<page>.md#anchor of this "
        "repository or at the MCP specification's section instead:\n" + "\n".join(found)
    )


def test_every_exemption_is_still_needed() -> None:
    for name in EXEMPT:
        path = ROOT / name
        assert path.is_file() and outside_mentions(path), (
            f"{name} no longer points outside the repository: remove it from EXEMPT in tests/test_citations.py"
        )


@pytest.mark.parametrize("path", TEXT_FILES, ids=[relative(p) for p in TEXT_FILES])
def test_every_docs_pointer_resolves(path: Path) -> None:
    problems = bad_pointers(path)
    assert not problems, f"{relative(path)}:\n" + "\n".join(problems)


def test_the_checks_find_what_they_look_for(tmp_path: Path) -> None:
    """The patterns and the slugs on made-up text (the real files are checked above)."""
    dot, slash = ".", "/"  # joined here, so that this file does not hold what it forbids
    for text in (f"see behaviour{dot}md section 5", f"(Behaviour{dot}md sections 5 and 7)", f"mcp-protocol{dot}md 2.2", f"{dot}{dot}/shared{slash}spec/README.md", f"{slash}work{slash}x"):
        assert OUTSIDE.search(text), text
    for text in ("MCP-Protocol-Version", "mcp-protocol-version: 2025-11-25", "behaviour", "file:///a/../b", "docs/reference.md#limits"):
        assert not OUTSIDE.search(text), text
    found = [m.groups() for m in POINTER.finditer("docs/reference.md#order-of-checks, docs/index.md. x/docs/no.md https://e.com/docs/no.md")]
    assert found == [("reference.md", "order-of-checks"), ("index.md", None)]
    page = "# A page\n## URL elicitation required (-32042)\n```\n# not a heading\n```\n## `connect_stdio`\n## Limits\n### Limits\n## Cancelling the client's own calls\n"
    assert anchors(page) == ["a-page", "url-elicitation-required-32042", "connect_stdio", "limits", "limits_1", "cancelling-the-clients-own-calls"]


def test_the_slugs_are_the_ones_mkdocs_makes() -> None:
    """Every docs page's anchors, computed here, equal the ids Python-Markdown's toc gives its headings."""
    markdown = pytest.importorskip("markdown")
    for page in sorted((ROOT / "docs").glob("*.md")):
        md = markdown.Markdown(extensions=["toc", "tables", "admonition", "pymdownx.superfences"])
        md.convert(page.read_text(encoding="utf-8"))
        ids: list[str] = []

        def walk(tokens: list[dict[str, Any]]) -> None:
            for token in tokens:
                ids.append(token["id"])
                walk(token["children"])

        walk(md.toc_tokens)  # type: ignore[attr-defined]
        assert anchors(page.read_text(encoding="utf-8")) == ids, page.name
