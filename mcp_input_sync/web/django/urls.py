"""``path("inputs/", include("mcp_input_sync.web.django.urls"))``: the app's routes (namespace ``mcp_input``)."""

from __future__ import annotations

from typing import Any

from django.urls import path  # type: ignore[import-untyped, import-not-found, unused-ignore]

from . import views

app_name = "mcp_input"

urlpatterns: list[Any] = [
    path("", views.index, name="index"),
    path("pending.json", views.pending_json, name="pending_json"),
    path("calls/<str:call_id>.json", views.call_state_json, name="call_json"),
    path("calls/<str:call_id>/", views.call, name="call"),
    path("<str:input_id>/", views.show, name="show"),
]
