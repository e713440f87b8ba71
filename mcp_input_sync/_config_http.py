"""The HTTP entries' client certificate and proxies in a configuration file (docs/config.md#client-certificates-and-proxies).

Read by :mod:`mcp_input_sync.config`: ``"cert"`` (a path, or a
``[certificate, key]`` pair of paths, a relative one from the file's
workspace folder, as ``envFile``) and ``"proxies"`` (scheme, or
``scheme://host``, to a proxy URL), placeholders expanded, as
``connect_http`` takes them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Optional, Protocol, Union


class _Expander(Protocol):
    """What these readers need of the configuration reader's expander (``config._Expander``)."""

    dry: bool
    workspace: Path

    def text(self, value: Any, server: str, key: str) -> str: ...

    def error(self, message: str, server: str, key: str) -> Exception: ...


def http_cert(value: Any, expander: _Expander, server: str) -> Union[None, str, tuple[str, str]]:
    """``cert``: a path, or a ``[certificate, key]`` pair of paths, each from the file's folder when relative."""
    if value is None:
        return None
    items = value if isinstance(value, list) else [value]
    if len(items) not in (1, 2) or not all(isinstance(item, str) for item in items):
        raise expander.error("must be a path, or a [certificate, key] pair of paths", server, "cert")
    paths = [expander.text(item, server, f"cert[{i}]" if isinstance(value, list) else "cert") for i, item in enumerate(items)]
    if not expander.dry:
        paths = [str(Path(p).expanduser() if Path(p).expanduser().is_absolute() else expander.workspace / p) for p in paths]
    return (paths[0], paths[1]) if len(paths) == 2 else paths[0]


def http_proxies(value: Any, expander: _Expander, server: str) -> Optional[dict[str, str]]:
    """``proxies``: scheme (or ``scheme://host``) to a proxy URL."""
    if value is None:
        return None
    if not isinstance(value, Mapping) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise expander.error("must be an object of proxy URLs", server, "proxies")
    proxies = {key: expander.text(url, server, f"proxies.{key}") for key, url in value.items()}
    for key, url in proxies.items():
        if not url.startswith(("http://", "https://", "socks5://", "socks5h://")) and not (expander.dry and url.startswith("${")):
            raise expander.error("must be an http, https or socks5 URL", server, f"proxies.{key}")
    return proxies
