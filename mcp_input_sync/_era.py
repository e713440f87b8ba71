"""Where eras are kept: one client's decided era, and what a process learnt of each endpoint's.

:class:`ClientEra` is the one place a client's era lives: the handshake's
decision, written by the assembly (``_assembly.py``) and read by the input
desk and the notification router (``ctx.era``) and by ``Client.era``.

:class:`EraCache` owns what clients learn across their lives: the era each
endpoint (an HTTP URL, a stdio command line) was opened in, by preference,
and over HTTP the tools learnt to need the 2026-07-28 era beside a handshake
session (docs/reference.md#era-detection, docs/modern.md#which-era). A
client takes one (``Client(..., era_cache=...)``); by default every client
of the process shares :data:`PROCESS_ERA_CACHE`. Each method is one dict
operation, which CPython makes atomic: no lock.
"""

from __future__ import annotations

from typing import Optional


class ClientEra:
    """One client's era: None until the handshake decides, then ``"legacy"`` or ``"modern"``.

    ``name`` is read on every callback's context, so it is a plain attribute
    (a property costs a call each time); only :meth:`decide` writes it.
    """

    __slots__ = ("name",)

    def __init__(self) -> None:
        #: ``"legacy"`` or ``"modern"`` once decided, else None.
        self.name: Optional[str] = None

    def decide(self, era: str) -> None:
        """The handshake decided (again, when a remembered era did not hold)."""
        self.name = era

    def __repr__(self) -> str:
        return f"ClientEra({self.name!r})"


class EraCache:
    """The eras learnt per endpoint and per (endpoint, tool); see the module's docstring.

    Keys: an endpoint is a transport's ``era_key`` (the HTTP URL, or
    ``"stdio:"`` and a hash of the command line); a preference is the era
    the ``protocol`` option tries first.
    """

    __slots__ = ("_endpoints", "_tools")

    def __init__(self) -> None:
        #: (preferred era, endpoint) -> (era, version)
        self._endpoints: dict[tuple[str, str], tuple[str, str]] = {}
        #: (endpoint, tool name) -> era
        self._tools: dict[tuple[str, str], str] = {}

    # ------------------------------------------------------------------ endpoints

    def endpoint_era(self, prefers: str, endpoint: str) -> Optional[tuple[str, str]]:
        """The (era, version) an endpoint was last opened in with this preference, or None."""
        return self._endpoints.get((prefers, endpoint))

    def remember(self, prefers: str, endpoint: str, era: str, version: str) -> None:
        """A client opened ``endpoint`` in ``era`` at ``version``."""
        self._endpoints[(prefers, endpoint)] = (era, version)

    def forget(self, prefers: str, endpoint: str) -> None:
        """The remembered era did not hold: the next client probes afresh."""
        self._endpoints.pop((prefers, endpoint), None)

    # ------------------------------------------------------------------ tools beside a handshake session

    def tool_era(self, endpoint: str, tool: str) -> Optional[str]:
        """The era a tool of ``endpoint`` was learnt to need, or None."""
        return self._tools.get((endpoint, tool))

    def learn_tool(self, endpoint: str, tool: str, era: str) -> None:
        """The server's own refusal said the tool needs ``era``."""
        self._tools[(endpoint, tool)] = era

    # ------------------------------------------------------------------ reading it whole

    def endpoints(self) -> dict[tuple[str, str], tuple[str, str]]:
        """A copy: (preferred era, endpoint) -> (era, version)."""
        return dict(self._endpoints)

    def tools(self) -> dict[tuple[str, str], str]:
        """A copy: (endpoint, tool name) -> era."""
        return dict(self._tools)

    def __repr__(self) -> str:
        return f"<EraCache endpoints={len(self._endpoints)} tools={len(self._tools)}>"


#: The cache every client of this process shares unless it is given its own.
PROCESS_ERA_CACHE = EraCache()
