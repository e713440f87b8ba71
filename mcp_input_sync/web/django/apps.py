"""The app's configuration."""

from __future__ import annotations

from django.apps import AppConfig  # type: ignore[import-untyped, import-not-found, unused-ignore]


class McpInputSyncWebConfig(AppConfig):  # type: ignore[misc, unused-ignore]
    """``mcp_input_sync.web.django``: pages where people answer a server's requests for input."""

    name = "mcp_input_sync.web.django"
    label = "mcp_input_sync_web"
    verbose_name = "MCP pending inputs"
