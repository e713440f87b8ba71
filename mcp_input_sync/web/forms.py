"""HTML for pending inputs, and submitted HTML forms back to typed answers.

Everything the server sent (messages, titles, descriptions, enum labels,
defaults, URLs) is cleaned with :func:`mcp_input_sync.reflect.text` (no
control, format, bidi, zero-width or other invisible characters) and escaped
with :func:`html.escape` before it is written into the page; the JSON
endpoints (:func:`pending_json`, :func:`call_json`) carry the same cleaned
text.

Form fields (``requestedSchema`` properties) become:

=======================================  =====================================
schema                                   HTML
=======================================  =====================================
string                                   ``<input type="text">`` (``minlength``, ``maxlength``)
string ``format`` email / uri / date     ``type="email"`` / ``"url"`` / ``"date"``
string ``format`` date-time              ``type="datetime-local"`` (read as UTC)
string suspected sensitive               ``type="password"``, ``autocomplete="off"``
string ``enum`` (``enumNames``)          ``<select>``
string ``oneOf`` ``{const, title}``      radio buttons
number / integer                         ``type="number"`` (``min``, ``max``, ``step``)
boolean                                  a checkbox
array of ``enum``                        ``<select multiple>``
array of ``anyOf`` ``{const, title}``    checkboxes
=======================================  =====================================

``pattern`` is enforced on the server only (HTML anchors it, the schema
does not). Each input is named ``field:<name>``, so field names never clash
with the form's own ``_action`` and CSRF fields.
"""

from __future__ import annotations

import datetime
import html
import math
from typing import Any, Iterable, Mapping, Optional, Protocol, Sequence

from .. import reflect
from .._protocol import formview
from .deferred import Store
from .pending import NON_FIELD, CallState, PendingInput

__all__ = [
    "FIELD_PREFIX",
    "FormData",
    "answer_submission",
    "call_json",
    "pending_json",
    "parse_submission",
    "render_body",
    "render_buttons",
    "render_form",
    "render_input",
    "render_list",
    "render_notice",
    "render_page",
    "submitted_values",
]

JsonDict = dict[str, Any]

#: The prefix of every field's ``name`` in the HTML form.
FIELD_PREFIX = "field:"
#: The longest server text shown (code points).
TEXT_LIMIT = 4096


class FormData(Protocol):
    """A submitted form: Werkzeug's ``MultiDict``, Django's ``QueryDict``, or a dict of lists."""

    def get(self, key: str, default: Any = None) -> Any: ...  # pragma: no cover

    def getlist(self, key: str) -> list[Any]: ...  # pragma: no cover


def _getlist(data: Any, key: str) -> list[str]:
    getlist = getattr(data, "getlist", None)
    if getlist is not None:
        values = list(getlist(key))
    else:
        value = data.get(key)
        values = [] if value is None else list(value) if isinstance(value, (list, tuple)) else [value]
    return [v for v in values if isinstance(v, str)]


def _first(data: Any, key: str) -> Optional[str]:
    values = _getlist(data, key)
    return values[0] if values else None


def esc(value: Any, limit: int = TEXT_LIMIT) -> str:
    """Server text on one line, cleaned and escaped for HTML text and quoted attributes (a line break becomes a space)."""
    kept = reflect.text(value if isinstance(value, str) else str(value), limit, lines=True)
    return html.escape(kept.replace("\n", " ").replace("\t", " "), quote=True)


def esc_lines(value: Any, limit: int = TEXT_LIMIT) -> str:
    """Server text of several lines, cleaned (line feeds kept), escaped, each line break a ``<br>``."""
    kept = reflect.text(value if isinstance(value, str) else str(value), limit, lines=True)
    return html.escape(kept, quote=True).replace("\n", "<br>")


# ---------------------------------------------------------------------------- one field


def _num_attr(value: Any) -> Optional[str]:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return repr(value) if isinstance(value, float) else str(value)


def _datetime_local(value: Any) -> str:
    """A date-time default as a ``datetime-local`` value (UTC, seconds kept)."""
    if not isinstance(value, str):
        return ""
    try:
        moment = datetime.datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return ""
    if moment.tzinfo is not None:
        moment = moment.astimezone(datetime.timezone.utc).replace(tzinfo=None)
    return moment.strftime("%Y-%m-%dT%H:%M:%S")


def _attrs(pairs: Iterable[tuple[str, Optional[str]]]) -> str:
    out = []
    for key, value in pairs:
        if value is None:
            continue
        out.append(f' {key}="{html.escape(value, quote=True)}"' if value != "" or key == "value" else f" {key}")
    return "".join(out)


def render_input(pending: PendingInput, name: str, prop: Mapping[str, Any], value: Any, *, required: bool, index: int, error: Optional[str] = None) -> str:
    """The HTML of one form field (label, input, help text and error).

    Args:
        value: what to show: the submitted value after an error, else the default.
    """
    dom_id = f"mis-field-{index}"
    field_name = FIELD_PREFIX + name
    kind = prop.get("type")
    label = esc(prop.get("title") if isinstance(prop.get("title"), str) else name, 256)
    star = ' <span class="mis-required" aria-hidden="true">*</span>' if required else ""
    help_text = ""
    if isinstance(prop.get("description"), str):
        help_text = f'<div class="mis-help" id="{dom_id}-help">{esc(prop["description"])}</div>'
    described = f"{dom_id}-help" if help_text else None
    err = f'<div class="mis-error" role="alert">{esc(error, 512)}</div>' if error else ""
    req = "" if required else None
    sensitive = pending.sensitive(name)

    if kind == "boolean":
        checked = "" if value is True else None
        box = f'<input type="checkbox"{_attrs([("id", dom_id), ("name", field_name), ("value", "true"), ("checked", checked), ("aria-describedby", described)])}>'
        return f'<div class="mis-field mis-boolean">{box} <label for="{dom_id}">{label}{star}</label>{help_text}{err}</div>'

    view = formview.choices(prop)
    if kind == "array":
        choices = view.options if view is not None else ()
        titled = view is not None and view.source == "anyOf"
        chosen = {v for v in value if isinstance(v, str)} if isinstance(value, list) else set()
        if titled:
            boxes = []
            for k, (v, text) in enumerate(choices):
                attrs = _attrs([("id", f"{dom_id}-{k}"), ("name", field_name), ("value", v), ("checked", "" if v in chosen else None)])
                boxes.append(f'<label><input type="checkbox"{attrs}> {esc(text, 256)}</label>')
            return f'<fieldset class="mis-field mis-multi"><legend>{label}{star}</legend>{"".join(boxes)}{help_text}{err}</fieldset>'
        opts = "".join(
            f'<option{_attrs([("value", v), ("selected", "" if v in chosen else None)])}>{esc(text, 256)}</option>' for v, text in choices
        )
        attrs = _attrs([("id", dom_id), ("name", field_name), ("multiple", ""), ("aria-describedby", described)])
        return f'<div class="mis-field mis-multi"><label for="{dom_id}">{label}{star}</label><select{attrs}>{opts}</select>{help_text}{err}</div>'

    shown = value if isinstance(value, str) else ""
    if view is not None:
        options = view.options
        if view.source == "oneOf":
            radios = []
            for k, (v, text) in enumerate(options):
                attrs = _attrs([("id", f"{dom_id}-{k}"), ("name", field_name), ("value", v), ("checked", "" if v == shown else None), ("required", req)])
                radios.append(f'<label><input type="radio"{attrs}> {esc(text, 256)}</label>')
            return f'<fieldset class="mis-field mis-choice"><legend>{label}{star}</legend>{"".join(radios)}{help_text}{err}</fieldset>'
        blank = "" if required and shown else '<option value="">—</option>'
        opts = "".join(f'<option{_attrs([("value", v), ("selected", "" if v == shown else None)])}>{esc(text, 256)}</option>' for v, text in options)
        attrs = _attrs([("id", dom_id), ("name", field_name), ("required", req), ("aria-describedby", described)])
        return f'<div class="mis-field mis-choice"><label for="{dom_id}">{label}{star}</label><select{attrs}>{blank}{opts}</select>{help_text}{err}</div>'

    pairs: list[tuple[str, Optional[str]]] = [("id", dom_id), ("name", field_name)]
    if kind in ("number", "integer"):
        shown_num = _num_attr(value) if not isinstance(value, str) else value
        pairs += [
            ("type", "number"),
            ("min", _num_attr(prop.get("minimum"))),
            ("max", _num_attr(prop.get("maximum"))),
            ("step", "1" if kind == "integer" else "any"),
            ("value", shown_num),
        ]
    else:
        fmt = prop.get("format")
        if sensitive:
            input_type = "password"
        else:
            input_type = {"email": "email", "uri": "url", "date": "date", "date-time": "datetime-local"}.get(fmt if isinstance(fmt, str) else "", "text")
        if input_type == "datetime-local":
            shown = _datetime_local(shown) or shown
            pairs += [("step", "1")]
        pairs += [
            ("type", input_type),
            ("minlength", _num_attr(prop.get("minLength"))),
            ("maxlength", _num_attr(prop.get("maxLength"))),
            ("value", shown or None),
            ("autocomplete", "off" if sensitive else None),
        ]
    pairs += [("required", req), ("aria-describedby", described)]
    note = ' <span class="mis-utc">(UTC)</span>' if prop.get("format") == "date-time" and not sensitive else ""
    return f'<div class="mis-field"><label for="{dom_id}">{label}{star}{note}</label><input{_attrs(pairs)}>{help_text}{err}</div>'


# ---------------------------------------------------------------------------- pages


def _form_fields(pending: PendingInput, values: Optional[Mapping[str, Any]], errors: Mapping[str, str]) -> str:
    parts = []
    for field in formview.fields(pending.schema):
        name = field.name
        if values is not None:
            value = values.get(name)
            if pending.sensitive(name):
                value = None  # a secret the person typed is never sent back into a page
        else:
            value = field.prop.get("default")
            view = field.choices
            if isinstance(value, str) and not (view is not None and view.options and not view.multiple):
                value = reflect.text(value, TEXT_LIMIT)  # a suggestion shown in a text box: no hidden characters
        parts.append(render_input(pending, name, field.prop, value, required=field.required, index=field.index, error=errors.get(name)))
    return "".join(parts)


def _block_text(content: Any) -> str:
    return "<br>".join(
        esc_lines(block.text) if block.text is not None else f"<em>[{esc(block.type if block.type is not None else 'unknown', 64)}]</em>"
        for block in formview.blocks(content)
    )


def render_body(pending: PendingInput, *, values: Optional[Mapping[str, Any]] = None, errors: Optional[Mapping[str, str]] = None) -> str:
    """The inside of the ``<form>`` for one pending input (without the CSRF field and buttons)."""
    errors = errors or {}
    top = f'<div class="mis-error" role="alert">{esc(errors[NON_FIELD], 512)}</div>' if errors.get(NON_FIELD) else ""
    server = f'<p class="mis-server">Asked by server <strong>{esc(pending.server_id, 256)}</strong></p>'
    if pending.kind == "form":
        return f'{server}<p class="mis-message">{esc_lines(pending.message)}</p>{top}{_form_fields(pending, values, errors)}'
    if pending.kind == "url":
        warnings = []
        if pending.idn:
            warnings.append('<p class="mis-warning">This address uses international characters: check the host below (its ASCII form) carefully.</p>')
        if pending.origin_mismatch and pending.server_origin is None:  # a stdio server has no site to compare with
            warnings.append('<p class="mis-warning">The server that asks is a program with no web address, so nothing tells whether '
                            'this link belongs to it: check the host below yourself.</p>')
        elif pending.origin_mismatch:
            warnings.append(f'<p class="mis-warning">This link leads to a different site than the server that asks '
                            f'({esc(pending.server_origin, 256)}).</p>')
        url = esc(pending.url or "")
        return (
            f'{server}<p class="mis-message">{esc_lines(pending.message)}</p>{top}'
            f'<p class="mis-url">Host: <strong>{esc(pending.host or "", 256)}</strong><br>'
            f'<a href="{url}" rel="noopener noreferrer nofollow" target="_blank">{url}</a></p>{"".join(warnings)}'
        )
    params = pending.params
    messages = params.get("messages") if isinstance(params.get("messages"), list) else []
    assert isinstance(messages, list)
    rows = []
    for message in messages:
        if isinstance(message, dict):
            rows.append(f'<dt>{esc(message.get("role", ""), 32)}</dt><dd>{_block_text(message.get("content"))}</dd>')
    system = f'<p class="mis-system">System prompt: {esc_lines(params["systemPrompt"])}</p>' if isinstance(params.get("systemPrompt"), str) else ""
    reply = values.get("text") if values is not None and isinstance(values.get("text"), str) else pending.draft or ""
    # the reply keeps its lines (a browser sends them as CR LF); the line feed after the tag is the one HTML drops
    shown = html.escape(reflect.text(reply if isinstance(reply, str) else "", 100_000, lines=True), quote=True)
    err = f'<div class="mis-error" role="alert">{esc(errors["text"], 512)}</div>' if errors.get("text") else ""
    limit = _num_attr(params.get("maxTokens"))
    return (
        f'{server}<p class="mis-message">The server asks to run a prompt through a model'
        f'{f" (at most {esc(limit)} tokens)" if limit else ""}.</p>{top}{system}<dl class="mis-messages">{"".join(rows)}</dl>'
        f'<div class="mis-field"><label for="mis-reply">Reply</label>'
        f'<textarea id="mis-reply" name="text" rows="6">\n{shown}</textarea>{err}</div>'
    )


def render_buttons(pending: PendingInput) -> str:
    """The submit buttons (named ``_action``); only accepting runs the browser's field checks."""
    if pending.kind == "sampling":
        return (
            '<button type="submit" name="_action" value="approve">Approve and send the reply</button> '
            '<button type="submit" name="_action" value="reject" formnovalidate>Reject</button>'
        )
    accept = "Accept (I will open the link)" if pending.kind == "url" else "Submit"
    return (
        f'<button type="submit" name="_action" value="accept">{accept}</button> '
        '<button type="submit" name="_action" value="decline" formnovalidate>Decline</button> '
        '<button type="submit" name="_action" value="cancel" formnovalidate>Cancel</button>'
    )


def render_form(pending: PendingInput, action: str, hidden: Mapping[str, str], *, values: Optional[Mapping[str, Any]] = None, errors: Optional[Mapping[str, str]] = None) -> str:
    """A complete ``<form method="post">`` for one pending input.

    Args:
        action: the URL to post to.
        hidden: hidden fields to include (the CSRF token).
    """
    hidden_html = "".join(f'<input type="hidden"{_attrs([("name", k), ("value", v)])}>' for k, v in hidden.items())
    return (
        f'<form method="post" action="{html.escape(action, quote=True)}" class="mis-form mis-{pending.kind}">'
        f"{hidden_html}{render_body(pending, values=values, errors=errors)}"
        f'<div class="mis-buttons">{render_buttons(pending)}</div></form>'
    )


#: The bundled pages' small stylesheet (class names start with ``mis-``; restyle them in your own pages).
STYLE = (
    "body{font-family:system-ui,sans-serif;max-width:42rem;margin:2rem auto;padding:0 1rem;line-height:1.4}"
    ".mis-field{margin:0 0 1rem;border:0;padding:0}.mis-field>label,.mis-field>legend{display:block;font-weight:600;margin-bottom:.25rem}"
    ".mis-boolean>label{display:inline;font-weight:600}.mis-field input:not([type=checkbox]):not([type=radio]),.mis-field select,"
    ".mis-field textarea{width:100%;box-sizing:border-box;padding:.4rem;font:inherit}.mis-choice label,.mis-multi label{margin-right:1rem}"
    ".mis-help{color:#555;font-size:.9em}.mis-error{color:#b00020;font-weight:600}.mis-warning{background:#fff4e5;padding:.5rem;"
    "border-left:4px solid #e65100}.mis-required{color:#b00020}.mis-buttons button{font:inherit;padding:.4rem 1rem;margin-right:.5rem}"
    "fieldset.mis-field>label{font-weight:400}.mis-url a{word-break:break-all}"
)


def _page(title: str, body: str) -> str:
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{html.escape(title)}</title><style>{STYLE}</style></head><body><main>{body}</main></body></html>"
    )


def render_notice(title: str, text: str) -> str:
    """A whole HTML page that says one thing: ``title`` and ``text``, both escaped (e.g. why a login failed)."""
    return _page(title, f"<h1>{html.escape(title)}</h1><p>{esc(text)}</p>")


def render_page(pending: PendingInput, action: str, hidden: Mapping[str, str], *, values: Optional[Mapping[str, Any]] = None, errors: Optional[Mapping[str, str]] = None, back: str = "") -> str:
    """A whole HTML page holding :func:`render_form` (what the bundled routes serve)."""
    title = {"form": "Information requested", "url": "Link to open", "sampling": "Approve a model request"}[pending.kind]
    link = f'<p><a href="{html.escape(back, quote=True)}">All pending requests</a></p>' if back else ""
    return _page(title, f"<h1>{title}</h1>{render_form(pending, action, hidden, values=values, errors=errors)}{link}")


def render_list(items: Sequence[tuple[PendingInput, str]]) -> str:
    """A whole HTML page listing pending inputs, each ``(pending, its URL)``."""
    if not items:
        return _page("Pending requests", '<h1>Pending requests</h1><p class="mis-empty">Nothing is waiting for you.</p>')
    kinds = {"form": "Form", "url": "Link", "sampling": "Model request"}
    rows = []
    for pending, href in items:
        summary = esc(pending.message, 200) if pending.kind != "sampling" else _prompt_summary(pending)
        when = datetime.datetime.fromtimestamp(pending.created, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
        rows.append(
            f'<li><a href="{html.escape(href, quote=True)}">{kinds[pending.kind]}: {summary}</a> '
            f'<small>from {esc(pending.server_id, 256)}, {when}</small></li>'
        )
    return _page("Pending requests", f'<h1>Pending requests</h1><ul class="mis-pending">{"".join(rows)}</ul>')


def _prompt_summary(pending: PendingInput) -> str:
    """A sampling request in a list: "Approve a prompt", and its summary (:attr:`PendingInput.message`), escaped."""
    summary = pending.message
    return f"Approve a prompt: {esc(summary)}" if summary else "Approve a prompt"


def render_call(state: CallState, items: Sequence[tuple[PendingInput, str]]) -> str:
    """A whole HTML page on a deferred call: its result, its error, or its inputs still to answer (``(pending, URL)``)."""
    if state.status == "complete":
        result = state.result or {}
        text = _block_text(result.get("content"))
        failed = ' <strong class="mis-error">(the tool reported an error)</strong>' if result.get("isError") is True else ""
        return _page("Done", f'<h1>Done</h1>{failed}<div class="mis-result">{text}</div>')
    if state.status == "error":
        return _page("The call failed", f'<h1>The call failed</h1><p class="mis-error">{esc(state.error or "")}</p>')
    rows = "".join(
        f'<li><a href="{html.escape(href, quote=True)}">{esc(p.message, 200) if p.kind != "sampling" else _prompt_summary(p)}</a></li>' for p, href in items
    )
    return _page("More information needed", f'<h1>More information needed</h1><ul class="mis-pending">{rows}</ul>')


def pending_json(items: Sequence[tuple[PendingInput, str]]) -> list[JsonDict]:
    """Pending inputs as JSON (``pending.json``): ``id``, ``kind``, ``message``, ``server_id``, ``created``, ``url``.

    A sampling request's ``message`` is its summary (:attr:`PendingInput.message`). The server's text is cleaned as on the pages (:func:`mcp_input_sync.reflect.text`; the message keeps its line feeds and tabs).
    """
    return [
        {
            "id": p.id,
            "kind": p.kind,
            "message": reflect.text(p.message, TEXT_LIMIT, lines=True),
            "server_id": reflect.text(p.server_id, 256),
            "created": p.created,
            "url": href,
        }
        for p, href in items
    ]


def call_json(state: CallState, items: Sequence[tuple[PendingInput, str]]) -> JsonDict:
    """A deferred call as JSON: ``id``, ``status``, ``result``, ``error``, ``rounds`` and ``inputs`` (id, kind, message, url).

    The server's text is cleaned as on the pages, line feeds and tabs kept:
    ``error`` and each ``message`` by :func:`mcp_input_sync.reflect.text`,
    and every string of ``result`` by :func:`mcp_input_sync.reflect.tree`
    (nothing cut).
    """
    return {
        "id": state.id,
        "status": state.status,
        "result": None if state.result is None else reflect.tree(state.result, lines=True),
        "error": None if state.error is None else reflect.text(state.error, TEXT_LIMIT, lines=True),
        "rounds": state.rounds,
        "inputs": [{"id": p.id, "kind": p.kind, "message": reflect.text(p.message, TEXT_LIMIT, lines=True), "url": href} for p, href in items],
    }


# ---------------------------------------------------------------------------- parsing


def _parse_number(text: str, integer: bool) -> Any:
    try:
        number = float(text)
    except ValueError:
        return None
    if not math.isfinite(number):
        return None
    if integer:
        return int(number) if number.is_integer() else None
    try:
        return int(text)
    except ValueError:
        return number


def _parse_datetime(text: str) -> str:
    """A ``datetime-local`` value (no zone) as RFC 3339 in UTC; other text is kept for the checks."""
    try:
        moment = datetime.datetime.fromisoformat(text)
    except ValueError:
        return text
    if moment.tzinfo is not None:
        return text
    return moment.strftime("%Y-%m-%dT%H:%M:%S") + "Z"


def parse_submission(pending: PendingInput, data: Any) -> tuple[JsonDict, dict[str, str]]:
    """Read a submitted form into the broker's answer.

    Args:
        data: the posted fields (``request.form``, ``request.POST``, or a
            dict of strings / lists of strings).

    Returns:
        ``(answer, errors)``: the answer for :meth:`PendingInputBroker.answer`
        and the errors per field found while reading (values that are not
        numbers, choices that do not exist). The broker checks the rest.
    """
    action = _first(data, "_action") or ""
    if pending.kind == "sampling":
        answer: JsonDict = {"action": action}
        if action == "approve":
            answer["text"] = (_first(data, "text") or "").replace("\r\n", "\n")
        return answer, {}
    if pending.kind == "url" or action != "accept":
        return {"action": action}, {}
    content: JsonDict = {}
    errors: dict[str, str] = {}
    for field in formview.fields(pending.schema):
        name, prop = field.name, field.prop
        key = FIELD_PREFIX + name
        kind = prop.get("type")
        if kind == "boolean":
            content[name] = _first(data, key) == "true"
            continue
        if kind == "array":
            chosen = _getlist(data, key)
            if chosen or field.required:
                content[name] = chosen
            continue
        text = _first(data, key)
        if text is None or text == "":
            continue  # left empty: absent (the checks say when it is required)
        if kind in ("number", "integer"):
            number = _parse_number(text.strip(), kind == "integer")
            if number is None:
                errors[name] = "must be an integer" if kind == "integer" else "must be a number"
            else:
                content[name] = number
        elif prop.get("format") == "date-time":
            content[name] = _parse_datetime(text)
        else:
            content[name] = text.replace("\r\n", "\n")
    return {"action": "accept", "content": content}, errors


def submitted_values(pending: PendingInput, data: Any) -> dict[str, Any]:
    """What the person typed, per field, to show again after an error (secrets left out)."""
    if pending.kind == "sampling":
        return {"text": _first(data, "text") or ""}
    values: dict[str, Any] = {}
    for field in formview.fields(pending.schema):
        name, kind = field.name, field.prop.get("type")
        if pending.sensitive(name):
            continue
        key = FIELD_PREFIX + name
        if kind == "array":
            values[name] = _getlist(data, key)
        elif kind == "boolean":
            values[name] = _first(data, key) == "true"
        else:
            values[name] = _first(data, key) or ""
    return values


def answer_submission(broker: Store, pending: PendingInput, user: Any, data: Any) -> dict[str, str]:
    """Read a submitted form and answer ``pending`` with it (what the bundled views do on POST).

    Returns:
        Errors per field, both from reading the form and from the library's
        checks of the rest; empty when the answer was taken.

    Raises:
        InputNotFound: the input is gone, or not ``user``'s.
    """
    answer, errors = parse_submission(pending, data)
    if errors:
        content = answer.get("content")
        if isinstance(content, dict):  # report every other field's problems as well
            rest = broker.check(pending.id, user, dict(answer, content={k: v for k, v in content.items() if k not in errors}))
            rest.pop(NON_FIELD, None)
            errors = {**{k: v for k, v in rest.items() if k not in errors}, **errors}
        return errors
    return broker.answer(pending.id, user, answer)
