"""``path("mcp-login/", include("mcp_input_sync.web.django.login_urls"))``: the login routes (namespace ``mcp_login``)."""

from __future__ import annotations

from typing import Any

from django.urls import path  # type: ignore[import-untyped, import-not-found, unused-ignore]

from . import login_views

app_name = "mcp_login"

urlpatterns: list[Any] = [
    path("callback/", login_views.callback, name="callback"),
    path("status.json", login_views.status, name="status"),
    path("<str:server>/login/", login_views.login, name="login"),
    path("<str:server>/logout/", login_views.logout, name="logout"),
]
