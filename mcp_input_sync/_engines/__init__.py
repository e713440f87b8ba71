"""One engine per protocol era, behind one small interface (:class:`base.EraEngine`).

The client chooses one when the handshake has decided the era; an engine
takes the session and the input desk, never the client. The legacy engine
also receives whatever the server sends before the decision. Legacy and
modern never import each other. When eras mix per tool (HTTP), the client
holds an :class:`router.EraRouter` above the two instead. See
docs/architecture.md#the-engines.
"""
