"""The docs are tested: examples run, the README's example and commands are the real ones."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import mcp_input_sync as mis

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "docs" / "examples").glob("*.py"))


def fenced_blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", text, flags=re.S)


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.name for e in EXAMPLES])
def test_every_docs_example_runs(example: Path) -> None:
    done = subprocess.run([sys.executable, str(example)], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip()


def test_the_readme_example_is_the_tested_quickstart() -> None:
    readme = (ROOT / "README.md").read_text()
    quickstart = (ROOT / "docs" / "examples" / "quickstart.py").read_text()
    assert quickstart in fenced_blocks(readme, "python")


def test_ci_runs_the_readme_test_command_verbatim() -> None:
    commands = fenced_blocks((ROOT / "README.md").read_text(), "sh")
    assert len(commands) == 2
    demo, tests = (c.strip() for c in commands)
    assert "python -m mcp_input_sync demo" in demo
    assert tests in (ROOT / ".ci" / "run").read_text().splitlines()


def test_the_demo_answers_every_kind_of_request() -> None:
    done = subprocess.run([sys.executable, "-m", "mcp_input_sync", "demo"], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    for marker in ("  log ", "  roots ", "  form ", "  sampling ", "  url ", "host: checkout.example.com", "  progress ", "5/5 packed", "answered 4 server requests in all"):
        assert marker in out, out
    assert out.count("result (ok)") == 3


def test_the_public_surface_is_sorted_and_complete() -> None:
    assert mis.__all__ == sorted(mis.__all__)
    for name in mis.__all__:
        assert hasattr(mis, name)
    public = {n for n in dir(mis) if not n.startswith("_") and n not in {"annotations"}}
    # public submodules (loaded on demand) and the modules behind the re-exports
    modules = {"reflect", "client", "errors", "handler", "options", "transports", "testing", "terminal", "web", "conformance"}
    assert public - modules - set(mis.__all__) == set()


def test_importing_the_package_loads_neither_requests_nor_jsonschema() -> None:
    code = "import sys, mcp_input_sync; print('requests' in sys.modules, 'jsonschema' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.split() == ["False", "False"]


DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


@pytest.mark.parametrize("page", DOCS, ids=[p.name for p in DOCS])
def test_every_python_block_in_the_docs_compiles(page: Path) -> None:
    for block in fenced_blocks(page.read_text(), "python"):
        compile(block, str(page), "exec")


@pytest.mark.parametrize("page", DOCS, ids=[p.name for p in DOCS])
def test_links_between_doc_pages_resolve(page: Path) -> None:
    for target in re.findall(r"\]\(([^)#:]+\.(?:md|py))(?:#[^)]*)?\)", page.read_text()):
        assert (page.parent / target).exists(), target


def test_the_docs_build_with_mkdocs_in_strict_mode(tmp_path: Path) -> None:
    pytest.importorskip("mkdocs")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "-d", str(tmp_path / "site")],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={**__import__("os").environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert done.returncode == 0, done.stdout + done.stderr
