"""Skills over MCP (extension ``io.modelcontextprotocol/skills``, SEP-2640): the pure decisions.

A server lists skills (``skills/list``, ``skills/get``); each entry names a
skill's ``SKILL.md`` by URI, its frontmatter as JSON, and its files
(``resources``), each with the SHA-256 digest and the size of its raw
bytes, or ``"dynamic"`` for content with no stable digests. Here: the
checks of an entry, of a file's bytes against its entry, of a ``SKILL.md``'s
frontmatter against the entry's (a flat ``key: value`` subset of YAML is
read here; the caller may read the rest with a YAML library), and where a
relative path inside a skill leads. Nothing here does I/O.

Every refusal is a :class:`SkillProblem` whose ``check`` names the rule:
``"entry"`` (an entry that may not be loaded), ``"limit"``, ``"size"``,
``"digest"``, ``"frontmatter"``, ``"unlisted"``. Messages never quote a
file's content.

Sources: the skills extension (ext-skills, specification/stable/skills.mdx;
SEP-2640): skill entries, limits, integrity and verification.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from typing import Any, Optional
from urllib.parse import urlsplit

from .record import Record

__all__ = [
    "EXTENSION",
    "MAX_FILES",
    "MAX_TOTAL_BYTES",
    "SkillEntry",
    "SkillFile",
    "SkillProblem",
    "check_bytes",
    "check_entry",
    "differing_fields",
    "frontmatter_block",
    "parse_flat_frontmatter",
    "resolve",
]

EXTENSION = "io.modelcontextprotocol/skills"
#: The most files and bytes one skill may have (a host must take at least these; more is refused).
MAX_FILES = 512
MAX_TOTAL_BYTES = 16 * 1024 * 1024
#: Agent Skills naming: 1-64 lowercase letters, digits and single hyphens inside.
_NAME = re.compile(r"(?!.*--)[a-z0-9]([a-z0-9-]{0,62}[a-z0-9])?")
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
_MAX_URI = 2048


class SkillProblem(ValueError):
    """A skill or a file of it was refused; ``check`` names the rule."""

    def __init__(self, check: str, message: str) -> None:
        super().__init__(message)
        self.check = check
        self.message = message


class SkillFile(Record):
    """One file of a skill as its entry lists it: ``uri``, ``digest`` (``sha256:<hex>``) and ``size`` in bytes."""

    __slots__ = ("uri", "digest", "size")

    def __init__(self, uri: str, digest: str, size: int) -> None:
        self.uri = uri
        self.digest = digest
        self.size = size


class SkillEntry(Record):
    """A checked skill entry: its ``SKILL.md`` ``uri``, ``name``, ``description``, ``frontmatter`` and ``files``.

    ``files`` is None for a dynamic skill (no digests to check its files
    against); ``root`` is the skill's directory URI (``uri`` without
    ``/SKILL.md``), against which relative paths resolve.
    """

    __slots__ = ("uri", "name", "description", "frontmatter", "files", "root")

    def __init__(self, uri: str, frontmatter: dict[str, Any], files: Optional[tuple[SkillFile, ...]]) -> None:
        self.uri = uri
        self.frontmatter = frontmatter
        self.name: str = frontmatter["name"]
        self.description: str = frontmatter["description"]
        self.files = files
        self.root = uri[: -len("/SKILL.md")]

    @property
    def dynamic(self) -> bool:
        return self.files is None

    def file(self, uri: str) -> Optional[SkillFile]:
        """The listed file with this URI, if any."""
        for listed in self.files or ():
            if listed.uri == uri:
                return listed
        return None


def _uri(value: object, what: str) -> str:
    if not isinstance(value, str) or not value or len(value) > _MAX_URI or not value.isprintable() or " " in value:
        raise SkillProblem("entry", f"{what} is not a URI.")
    parts = urlsplit(value)
    if not parts.scheme or parts.query or parts.fragment or "/../" in parts.path + "/" or "/./" in parts.path + "/":
        raise SkillProblem("entry", f"{what} is not a plain URI inside a skill.")
    return value


def check_entry(value: object) -> SkillEntry:
    """Check one entry of ``skills/list`` or ``skills/get``: the rules an entry must meet to be loaded.

    The URI names a ``SKILL.md`` whose directory's last segment is the
    frontmatter's ``name`` (Agent Skills naming); the frontmatter has a
    string ``name`` and ``description``; ``resources`` is ``"dynamic"`` or a
    complete list (the ``SKILL.md`` among it, every file once and inside the
    skill, each with a ``sha256:`` digest and a size), within
    :data:`MAX_FILES` files and :data:`MAX_TOTAL_BYTES` bytes.
    """
    if not isinstance(value, Mapping):
        raise SkillProblem("entry", "A skill entry is not an object.")
    uri = _uri(value.get("uri"), "The skill's URI")
    if not uri.endswith("/SKILL.md"):
        raise SkillProblem("entry", "The skill's URI does not name a SKILL.md.")
    frontmatter = value.get("frontmatter")
    if not isinstance(frontmatter, Mapping) or not isinstance(frontmatter.get("name"), str) or not isinstance(frontmatter.get("description"), str):
        raise SkillProblem("entry", "The skill's frontmatter lacks a name or a description.")
    name = frontmatter["name"]
    if not _NAME.fullmatch(name) or uri[: -len("/SKILL.md")].rsplit("/", 1)[-1] != name:
        raise SkillProblem("entry", "The skill's name is not a skill name, or not the last segment of its path.")
    resources = value.get("resources")
    if resources == "dynamic":
        return SkillEntry(uri, dict(frontmatter), None)
    if not isinstance(resources, list) or not resources:
        raise SkillProblem("entry", "The skill entry lists neither its files nor \"dynamic\".")
    if len(resources) > MAX_FILES:
        raise SkillProblem("limit", f"The skill has more than {MAX_FILES} files.")
    root = uri[: -len("SKILL.md")]
    files: list[SkillFile] = []
    seen: set[str] = set()
    for item in resources:
        if not isinstance(item, Mapping):
            raise SkillProblem("entry", "A file of the skill entry is not an object.")
        file_uri = _uri(item.get("uri"), "A file's URI")
        digest, size = item.get("digest"), item.get("size")
        if not file_uri.startswith(root) or file_uri in seen:
            raise SkillProblem("entry", "A file of the skill entry is outside the skill, or listed twice.")
        if not isinstance(digest, str) or not _DIGEST.fullmatch(digest):
            raise SkillProblem("entry", "A file of the skill entry has no sha256 digest.")
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            raise SkillProblem("entry", "A file of the skill entry has no size.")
        seen.add(file_uri)
        files.append(SkillFile(file_uri, digest, size))
    if uri not in seen:
        raise SkillProblem("entry", "The skill entry does not list its SKILL.md.")
    if sum(file.size for file in files) > MAX_TOTAL_BYTES:
        raise SkillProblem("limit", f"The skill's files take more than {MAX_TOTAL_BYTES} bytes.")
    return SkillEntry(uri, dict(frontmatter), tuple(files))


def check_bytes(listed: SkillFile, data: bytes) -> None:
    """A file's raw bytes against its entry: the size first (a mismatch fails at once), then the SHA-256."""
    if len(data) != listed.size:
        raise SkillProblem("size", "A skill file's size is not the one its entry lists.")
    if "sha256:" + hashlib.sha256(data).hexdigest() != listed.digest:
        raise SkillProblem("digest", "A skill file's SHA-256 digest is not the one its entry lists.")


def resolve(entry: SkillEntry, path: str) -> str:
    """The URI of ``path`` inside ``entry``'s skill: a URI inside it, or a path relative to its root."""
    if not isinstance(path, str) or not path:
        raise SkillProblem("unlisted", "No file was named.")
    uri = path if "://" in path else f"{entry.root}/{path.lstrip('/')}"
    if not uri.startswith(entry.root + "/") or "/../" in uri + "/" or "/./" in uri + "/":
        raise SkillProblem("unlisted", "The file named is outside the skill.")
    return uri


def frontmatter_block(text: str) -> str:
    """The YAML frontmatter of a ``SKILL.md`` (between a first ``---`` line and the next)."""
    lines = text.lstrip("\ufeff").split("\n")
    if not lines or lines[0].rstrip("\r") != "---":
        raise SkillProblem("frontmatter", "The SKILL.md does not begin with a frontmatter block.")
    for end in range(1, len(lines)):
        if lines[end].rstrip("\r") in ("---", "..."):
            return "\n".join(line.rstrip("\r") for line in lines[1:end])
    raise SkillProblem("frontmatter", "The SKILL.md's frontmatter block never ends.")


_KEY = re.compile(r"([A-Za-z0-9_][A-Za-z0-9_.-]*):(?:[ \t]+(.*))?")
_INT = re.compile(r"[-+]?(0|[1-9][0-9]*)")
_FLOAT = re.compile(r"[-+]?([0-9]+\.[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?")
_PLAIN_UNSAFE = re.compile(r"^[\[\]{}&*!|>%@`'\"#]|: | #|^- ")


def _scalar(raw: str) -> Any:
    """One flat YAML scalar (core schema); raises KeyError for anything the subset does not read."""
    value = raw.strip()
    if len(value) >= 2 and value[0] == value[-1] == "'":
        return value[1:-1].replace("''", "'")
    if len(value) >= 2 and value[0] == value[-1] == '"':
        inner = value[1:-1]
        if "\\" in inner or '"' in inner:
            raise KeyError(value)
        return inner
    if not value or _PLAIN_UNSAFE.search(value):
        raise KeyError(value)
    if value in ("null", "Null", "NULL", "~"):
        return None
    if value in ("true", "True", "TRUE"):
        return True
    if value in ("false", "False", "FALSE"):
        return False
    if _INT.fullmatch(value):
        return int(value)
    if _FLOAT.fullmatch(value):
        return float(value)
    return value


def parse_flat_frontmatter(block: str) -> Optional[dict[str, Any]]:
    """The frontmatter when it is flat ``key: scalar`` lines (comments and blank lines aside); None when it is more."""
    out: dict[str, Any] = {}
    for line in block.split("\n"):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        match = _KEY.fullmatch(line)
        if match is None or match.group(2) is None or match.group(1) in out:
            return None
        try:
            out[match.group(1)] = _scalar(match.group(2))
        except KeyError:
            return None
    return out


def differing_fields(listed: Mapping[str, Any], found: Mapping[str, Any]) -> list[str]:
    """The frontmatter fields whose values differ between the entry and the file (absent on one side included)."""
    return sorted(str(key) for key in set(listed) | set(found) if listed.get(key, _ABSENT) != found.get(key, _ABSENT))


_ABSENT = object()
