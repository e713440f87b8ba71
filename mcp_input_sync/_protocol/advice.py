"""How the library's advice names a setting: as Python's option by default, in a host's own words when it says so.

An error that tells its reader how to get past it (a size limit, the era, a
wait) builds that part with :func:`say`. A Python user reads the option to
pass (``limits={'message_bytes': N}``, ``protocol="legacy"``); a host whose
users never write Python, such as the command line, calls :func:`speak` once,
before it opens a client, with its own words for some keys
(``{"protocol": "run the command again with --protocol {value}"}``); the keys
it leaves out keep Python's words.

Pure: no threads, no I/O. The words are process-wide, for the one program
that is the user's interface; a library sharing the process never calls it.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any, Mapping, Optional

#: Each piece of advice as a Python user reads it, a ``str.format`` template; its fields are the keyword
#: arguments :func:`say` is given. A host may word a key for one variant only (``"raise_limit:message_bytes"``).
PYTHON: Mapping[str, str] = MappingProxyType({
    # ends an error over a size limit; ``limit``: the key of the ``limits`` option
    "raise_limit": "; to accept it, pass the client limits={{{limit!r}: N}} with a larger N",
    # the limit a message went over; ``limit`` as above
    "limit_name": "limits[{limit!r}]",
    # how to use another era; ``value``: the ``protocol`` option's value
    "protocol": 'connect with protocol="{value}" (command line: --protocol {value})',
    # ends an era failure the client learnt from; ``tool``, ``era`` (as shown), ``how`` (the "protocol" advice), ``How`` (capitalised)
    "era_learnt": "This client sends the next calls of {tool!r} in {era}; or {how}",
    # why a handshake stopped when the 2026-07-28 era was forced; ``value``: the ``protocol`` option's value
    "forced_era": 'protocol={value!r} asks for it; protocol="auto" takes the era the server speaks',
    # the bound of a handshake; ``value``: seconds
    "handshake_timeout": "within timeout={value:g} s",
    # the bound of one request; ``value``: seconds
    "call_timeout": "its timeout of {value:g} s",
})

_words: dict[str, str] = {}


def speak(words: Optional[Mapping[str, str]]) -> None:
    """Word the advice of ``words``' keys this way from now on, process-wide; None: Python's words again.

    A key is one of :data:`PYTHON`'s, alone or with ``:variant``; ValueError names any other.
    """
    unknown = [key for key in words or () if key.partition(":")[0] not in PYTHON]
    if unknown:
        raise ValueError(f"no advice is called {unknown[0]!r} (there are {', '.join(PYTHON)})")
    _words.clear()
    _words.update(words or {})


def say(key: str, variant: Optional[str] = None, **fields: Any) -> str:
    """The advice ``key`` in the words in use (the host's for ``key:variant``, then for ``key``, else Python's)."""
    template = _words.get(f"{key}:{variant}") if variant is not None else None
    if template is None:
        template = _words.get(key, PYTHON[key])
    return template.format(**fields)
