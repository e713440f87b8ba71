"""A Django app where people answer their pending inputs.

Add it to ``INSTALLED_APPS`` and include its URLs::

    INSTALLED_APPS = [..., "mcp_input_sync.web.django"]
    MCP_INPUT_SYNC_BROKER = "myproject.mcp.broker"   # a PendingInputBroker, or its dotted path

    # urls.py
    path("inputs/", include("mcp_input_sync.web.django.urls")),

Views (namespace ``mcp_input``): ``index`` (``""``: the user's pending inputs),
``pending_json`` (``"pending.json"``), ``show`` (``"<id>/"``: GET the form,
POST the answer; 303 to the list on success, 400 with the errors per field
otherwise). POSTs are protected by Django's own CSRF protection
(``csrf_protect``, whether or not ``CsrfViewMiddleware`` is installed).

The user is ``str(request.user.pk)`` of an authenticated user; set
``MCP_INPUT_SYNC_USER`` to a function ``(request) -> user id or None`` (or
its dotted path) to choose another. No user: 403. Another user's input, an
unknown id or an input already answered: 404.
"""
