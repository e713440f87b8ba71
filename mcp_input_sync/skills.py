"""Skills from MCP servers (extension ``io.modelcontextprotocol/skills``), read only when asked and verified.

::

    skills = Skills(client)
    for entry in skills.list():              # reads no file
        print(entry.name, entry.description)
    skill = skills.load(entry)               # reads SKILL.md, checks it against the entry
    print(skill.text)
    guide = skill.read_text("references/GUIDE.md")   # a listed file, checked the same way

A skill's files are fetched when the host asks for them, never before: not
on connect, not when listing. Each file is checked against its entry
before it is handed over: its size, then its SHA-256 digest; a
``SKILL.md``'s frontmatter is compared field by field with the entry's; a
file the entry does not list is not read. A file that fails raises
:class:`SkillRefused` and its content is not returned; ask the server
again (:meth:`Skills.get`) if it may have changed. See docs/skills.md.
"""

from __future__ import annotations

import base64
import binascii
import logging
from typing import Any, Optional, Union

from ._protocol.skills import (
    EXTENSION,
    SkillEntry,
    SkillFile,
    SkillProblem,
    check_bytes,
    check_entry,
    differing_fields,
    frontmatter_block,
    parse_flat_frontmatter,
    resolve,
)
from .client import Client
from .errors import ClientError

__all__ = ["EXTENSION", "LoadedSkill", "SkillEntry", "SkillFile", "SkillRefused", "Skills"]

log = logging.getLogger("mcp_input_sync")

#: How many refused entries of one listing are kept, with why (:attr:`Skills.refused`); the others are only counted.
REFUSED_KEPT = 20
#: What to install to compare frontmatter that is more than flat ``key: value`` lines.
YAML_EXTRA = "pip install 'mcp_input_sync[skills]'"


class SkillRefused(ClientError):
    """A skill or one of its files failed verification (``kind="refused"``); ``check`` names the rule.

    ``check`` is ``"entry"``, ``"limit"``, ``"size"``, ``"digest"``,
    ``"frontmatter"``, ``"unlisted"``, ``"dynamic"`` or ``"extension"``.
    """

    def __init__(self, check: str, message: str) -> None:
        super().__init__("refused", message, check=check)


def _refused(problem: SkillProblem) -> SkillRefused:
    return SkillRefused(problem.check, problem.message)


def _frontmatter(text: str) -> dict[str, Any]:
    """A SKILL.md's frontmatter: flat lines read here; anything more with PyYAML when installed."""
    block = frontmatter_block(text)
    flat = parse_flat_frontmatter(block)
    if flat is not None:
        return flat
    try:
        import yaml
    except ImportError:
        raise SkillProblem("frontmatter", f"The SKILL.md's frontmatter is more than flat key: value lines; comparing it needs PyYAML: {YAML_EXTRA}") from None
    try:
        loaded = yaml.safe_load(block)
    except yaml.YAMLError:
        raise SkillProblem("frontmatter", "The SKILL.md's frontmatter is not YAML.") from None
    if not isinstance(loaded, dict):
        raise SkillProblem("frontmatter", "The SKILL.md's frontmatter is not a mapping.")
    return loaded


def _contents(result: Any, uri: str) -> bytes:
    """The raw bytes of ``uri`` in a ``resources/read`` result (text as UTF-8, a blob decoded)."""
    contents = result.get("contents") if isinstance(result, dict) else None
    if not isinstance(contents, list):
        raise SkillProblem("entry", "The server's answer to resources/read holds no contents.")
    for item in contents:
        if isinstance(item, dict) and item.get("uri") in (uri, None):
            text = item.get("text")
            if isinstance(text, str):
                return text.encode("utf-8")
            if isinstance(item.get("blob"), str):
                try:
                    return base64.b64decode(item["blob"], validate=True)
                except (binascii.Error, ValueError):
                    raise SkillProblem("entry", "A skill file's blob is not base64.") from None
    raise SkillProblem("entry", "The server's answer to resources/read does not hold the file asked for.")


class LoadedSkill:
    """A skill whose ``SKILL.md`` passed verification: ``entry``, ``text``; its other files on request."""

    def __init__(self, skills: "Skills", entry: SkillEntry, text: str) -> None:
        self._skills = skills
        self.entry = entry
        #: The whole SKILL.md, frontmatter included.
        self.text = text

    def __repr__(self) -> str:
        return f"LoadedSkill(uri={self.entry.uri!r})"

    def read(self, path: str, **options: Any) -> bytes:
        """The bytes of a file of this skill, by a path relative to its root or by its URI, once checked.

        Only the files the entry lists are read (any inside the skill for a
        dynamic one, which has nothing to check them against).

        Raises:
            SkillRefused: ``check="unlisted"``, ``"size"`` or ``"digest"``.
            ClientError: as ``read_resource``.
        """
        try:
            uri = resolve(self.entry, path)
        except SkillProblem as problem:
            raise _refused(problem) from None
        listed = self.entry.file(uri)
        if listed is None and not self.entry.dynamic:
            raise SkillRefused("unlisted", "The skill's entry does not list that file: it is not read.")
        return self._skills.fetch(uri, listed, **options)

    def read_text(self, path: str, **options: Any) -> str:
        """:meth:`read`, decoded as UTF-8."""
        return self.read(path, **options).decode("utf-8", "replace")


class Skills:
    """The skills of one server, through an open :class:`~mcp_input_sync.Client`.

    ``allow_dynamic`` (default False) loads skills whose entries give no
    digests (``"dynamic"``): nothing then checks their files' bytes.
    """

    def __init__(self, client: Client, *, allow_dynamic: bool = False) -> None:
        self.client = client
        self.allow_dynamic = allow_dynamic
        #: The first :data:`REFUSED_KEPT` entries of the last :meth:`list` that were refused, with why.
        self.refused: list[SkillRefused] = []
        #: How many entries the last :meth:`list` refused in all.
        self.refused_count = 0

    def __repr__(self) -> str:
        return f"Skills(client={self.client!r})"

    @property
    def offered(self) -> bool:
        """Whether the server declared the skills extension (only then are skills asked for)."""
        return EXTENSION in self.client.server_extensions

    def _need_offer(self) -> None:
        if not self.offered:
            raise SkillRefused("extension", f"the server does not declare the {EXTENSION} extension")

    def list(self, **options: Any) -> list[SkillEntry]:
        """Every skill the server lists, following ``nextCursor``; no file is read.

        The pages are read by :meth:`Client.request_pages <mcp_input_sync.Client.request_pages>`
        as ``list_tools`` reads its own: over the client's
        ``limits["listing_bytes"]`` (all pages together) the listing raises
        ``ClientError(check="limit")``, past its page cap ``kind="protocol"``.

        An entry that may not be loaded (malformed, over the limits) is left
        out and counted in :attr:`refused_count`; the first
        :data:`REFUSED_KEPT` are kept in :attr:`refused`, and one warning per
        listing gives the count (a server may send millions).
        """
        self._need_offer()
        self.refused, self.refused_count = [], 0
        listed = self.client.request_pages("skills/list", "skills", **options)  # the client's bounds: listing_bytes, its page cap
        entries: list[SkillEntry] = []
        refused: list[SkillRefused] = []
        count = 0
        for item in listed:
            if type(item) is not dict and len(refused) == REFUSED_KEPT:
                count += 1  # junk past the sample (a page of 0s, say): counted without making its error
                continue
            try:
                entries.append(check_entry(item))
            except SkillProblem as problem:
                count += 1
                if len(refused) < REFUSED_KEPT:
                    refused.append(_refused(problem))
        self.refused, self.refused_count = refused, count
        if count:
            log.warning("mcp_input_sync: server %s listed %d skill entries that may not be loaded; left out (the first: %s)",
                        self.client.server_id, count, refused[0].message)
        return entries

    def get(self, uri: str, **options: Any) -> SkillEntry:
        """The entry of one skill by its ``SKILL.md`` URI (``skills/get``), checked as in :meth:`list`."""
        self._need_offer()
        result = self.client.request("skills/get", {"uri": uri}, **options)
        try:
            entry = check_entry(result.get("skill"))
        except SkillProblem as problem:
            raise _refused(problem) from None
        if entry.uri != uri:
            raise SkillRefused("entry", "skills/get answered with another skill than the one asked for")
        return entry

    def load(self, skill: Union[SkillEntry, str], **options: Any) -> LoadedSkill:
        """Read a skill's ``SKILL.md`` and check it: size and digest as listed, frontmatter field by field.

        ``skill`` is an entry from :meth:`list` or :meth:`get`, or a
        ``SKILL.md`` URI (its entry is asked for first). Nothing else is read.

        Raises:
            SkillRefused: the file fails a check (``check`` says which), or the
                skill is dynamic and ``allow_dynamic`` is off.
            ClientError: as ``read_resource``.
        """
        entry = self.get(skill, **options) if isinstance(skill, str) else skill
        if entry.dynamic and not self.allow_dynamic:
            raise SkillRefused("dynamic", "the skill is dynamic (no digests to check its files against); pass allow_dynamic=True to load it")
        data = self.fetch(entry.uri, entry.file(entry.uri), **options)
        text = data.decode("utf-8", "replace")
        try:
            differing = differing_fields(entry.frontmatter, _frontmatter(text))
        except SkillProblem as problem:
            raise _refused(problem) from None
        if differing:
            raise SkillRefused("frontmatter", f"the SKILL.md's frontmatter differs from its entry's in {', '.join(differing[:8])}")
        return LoadedSkill(self, entry, text)

    def fetch(self, uri: str, listed: Optional[SkillFile], **options: Any) -> bytes:
        """Read one file and check it against ``listed`` (None: a dynamic skill's file, not checked)."""
        result = self.client.read_resource(uri, **options)
        try:
            data = _contents(result, uri)
            if listed is not None:
                check_bytes(listed, data)
        except SkillProblem as problem:
            log.warning("mcp_input_sync: a skill file of server %s was refused: %s", self.client.server_id, problem.message)
            raise _refused(problem) from None
        return data
