"""Values of a configuration file's server entry that take more than a string: maps of strings, local paths,
a client certificate (``cert``) and proxies (``proxies``), read for ``config.py``.

Each reader takes the file's expander (``config._Expander``, or its ``_Reader``, which expands nothing): its
``text(value, server, key)`` expands placeholders, ``error(message, server, key)`` makes the ``ConfigError``,
``workspace`` is ``${workspaceFolder}`` and ``dry`` says nothing is expanded. No message shows a value: a
header's, a variable's or a proxy's (``http://user:password@proxy:3128``) may be a secret. Standard library only.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Mapping, Optional, Union

#: A line break or NUL: never in a header's or a variable's value.
CONTROL = re.compile(r"[\r\n\x00]")
#: A key of ``proxies``, as ``requests`` looks them up: a scheme or ``all``, either may add ``://host``; or ``no_proxy``.
PROXY_KEY = re.compile(r"(?:https?|all)(?:://[^\s/@]+)?|no_proxy")

Cert = Union[None, str, tuple[str, str]]


def string_map(value: Any, expander: Any, server: str, key: str) -> dict[str, str]:
    """An object of strings (``env``, ``headers``, ``proxies``), each expanded; a line break or NUL in one is refused."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise expander.error("must be an object of strings", server, key)
    out: dict[str, str] = {}
    for name, item in value.items():
        if not isinstance(name, str) or not name or CONTROL.search(name):
            raise expander.error("has a name that is not a plain string", server, key)
        text = expander.text(item, server, f"{key}.{name}")
        if CONTROL.search(text):
            raise expander.error("holds a line break or NUL (in the file or from a variable)", server, f"{key}.{name}")
        out[name] = text
    return out


def local_path(value: Any, expander: Any, server: str, key: str) -> str:
    """A local file's path (``envFile``, ``cert``): placeholders and ``~`` expanded, a relative one taken from
    ``${workspaceFolder}`` (the file's folder). The dry reader keeps it as the file writes it."""
    text = expander.text(value, server, key)
    if expander.dry:
        return str(text)
    try:
        path = Path(text).expanduser()
    except RuntimeError:  # ~user that does not exist
        raise expander.error("names a home folder that does not exist", server, key) from None
    resolved = str(path if path.is_absolute() else expander.workspace / path)
    # the expander's own string type keeps the template (for reprs) and what placeholders put in (to scrub)
    return type(text)(resolved, text.template, text.substituted) if hasattr(text, "template") else resolved


def cert_of(value: Any, expander: Any, server: str) -> Cert:
    """``cert``: a PEM file with the client certificate and its key, or ``[certificate, key]``; paths as :func:`local_path`."""
    if value is None:
        return None
    pair = isinstance(value, list) and len(value) == 2
    if not (isinstance(value, str) or pair) or not all(isinstance(part, str) and part for part in (value if pair else [value])):
        raise expander.error("must be a path (a PEM file with the certificate and its key), or a list of two: certificate, key", server, "cert")
    if pair:
        return local_path(value[0], expander, server, "cert[0]"), local_path(value[1], expander, server, "cert[1]")
    return local_path(value, expander, server, "cert")


def proxies_of(value: Any, expander: Any, server: str) -> Optional[dict[str, str]]:
    """``proxies``: scheme -> proxy URL, as ``requests`` takes them (``{"https": "http://proxy.example.com:3128"}``)."""
    if value is None:
        return None
    proxies = string_map(value, expander, server, "proxies")
    for key, url in proxies.items():
        if not PROXY_KEY.fullmatch(key):
            raise expander.error("has a key requests never looks up: use http, https or all (each may add ://host), or no_proxy", server, "proxies")
        scheme, sep, rest = url.partition("://")
        if key != "no_proxy" and not (expander.dry and url.startswith("${")) and not (sep and scheme and rest.strip("/")):
            raise expander.error("must be a proxy URL such as http://proxy.example.com:3128 (its value is not shown)", server, f"proxies.{key}")
    return proxies


def masked_url(value: str) -> str:
    """A URL as a repr or a message shows it: its template (when placeholders made it), user information and query as ``***``."""
    template = str(getattr(value, "template", value))
    scheme, sep, rest = template.partition("://")
    if sep and "@" in rest.split("/", 1)[0]:
        rest = "***@" + rest.split("@", 1)[1]
    if "?" in rest:
        rest = rest.split("?", 1)[0] + "?***"
    return scheme + sep + rest


def route_repr(cert: Cert, proxies: Optional[Mapping[str, str]]) -> str:
    """``, cert=..., proxies={...}`` for an ``HttpServer``'s repr (each only when set): templates, proxies masked."""
    def shown(path: str) -> str:
        return repr(str(getattr(path, "template", path)))

    out = ""
    if cert is not None:
        out += f", cert={shown(cert)}" if isinstance(cert, str) else f", cert=({shown(cert[0])}, {shown(cert[1])})"
    if proxies is not None:
        out += ", proxies={" + ", ".join(f"{key!r}: {masked_url(url)!r}" for key, url in proxies.items()) + "}"
    return out
