"""Which elicitation form fields are suspected of asking for a secret."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_input_sync._protocol.fields import _words, is_sensitive, sensitive_fields

S: dict[str, Any] = {"type": "string"}


def d(text: str) -> dict[str, Any]:
    """A string property with a description."""
    return {"type": "string", "description": text}


CASES: list[tuple[str, dict[str, Any], bool]] = [
    # ---- names: every listed term
    ("password", S, True),
    ("passwd", S, True),
    ("pwd", S, True),
    ("passphrase", S, True),
    ("passcode", S, True),
    ("pin", {"type": "integer"}, True),
    ("pincode", S, True),
    ("pin_code", S, True),
    ("secret", S, True),
    ("credential", S, True),
    ("credentials", S, True),
    ("otp", S, True),
    ("totp", S, True),
    ("mfaCode", S, True),
    ("2fa_code", S, True),
    ("cvv", S, True),
    ("cvc", S, True),
    ("CVV2", S, True),
    ("csc", S, True),
    ("ssn", S, True),
    ("social_security", S, True),
    ("socialSecurityNumber", S, True),
    ("securityCode", S, True),
    ("verification_code", S, True),
    ("oneTimeCode", S, True),
    ("one-time-passcode", S, True),
    ("privateKey", S, True),
    ("secret_key", S, True),
    ("apiKey", S, True),
    ("api_key", S, True),
    ("apikey", S, True),
    ("APIKEY", S, True),
    ("accessKey", S, True),
    ("access_token", S, True),
    ("authToken", S, True),
    ("bearer_token", S, True),
    ("refreshToken", S, True),
    ("session_token", S, True),
    ("api_token", S, True),
    ("token", S, True),
    ("client_secret", S, True),
    ("card_number", S, True),
    ("creditCard", S, True),
    ("cc_number", S, True),
    ("ccnum", S, True),
    ("card_no", S, True),
    ("IBAN", S, True),
    ("accountNumber", S, True),
    ("routing_number", S, True),
    ("tax_id", S, True),
    ("passportNumber", S, True),
    ("seed_phrase", S, True),
    ("mnemonic", S, True),
    ("security_answer", S, True),
    ("newPassword", S, True),
    ("NEW_PASSWORD", S, True),
    ("Confirm-Password", S, True),
    ("apiKeys", S, True),
    ("SSNs", S, True),
    # ---- near misses
    ("pinned", {"type": "boolean"}, False),
    ("spinner", S, False),
    ("pin_color", S, False),
    ("pinLocation", S, False),
    ("map_pin", S, False),
    ("pins", S, False),
    ("max_tokens", {"type": "integer"}, False),
    ("maxTokens", {"type": "integer"}, False),
    ("max_token", {"type": "integer"}, False),
    ("token_count", {"type": "integer"}, False),
    ("token_limit", {"type": "integer"}, False),
    ("tokens_used", {"type": "integer"}, False),
    ("TOKEN_LIMIT", {"type": "integer"}, False),
    ("access_token_count", {"type": "integer"}, False),
    ("token_type", S, False),
    ("tokenizer", S, False),
    ("sort_key", S, False),
    ("keyboard", S, False),
    ("monkey", S, False),
    ("key", S, False),
    ("key_name", S, False),
    ("secret_key_name", S, False),
    ("api_key_id", S, False),
    ("postal_code", S, False),
    ("zip_code", S, False),
    ("country_code", S, False),
    ("promo_code", S, False),
    ("code", S, False),
    ("passenger", S, False),
    ("bypass", S, False),
    ("compass", S, False),
    ("pass", S, False),
    ("cardholder_name", S, False),
    ("card_type", S, False),
    ("credit_card_type", S, False),
    ("secretary", S, False),
    ("password_hint", S, False),
    ("passwordHint", S, False),
    ("min_password_length", {"type": "integer"}, False),
    ("mfa_enabled", {"type": "boolean"}, False),
    ("security_question", S, False),
    ("description", d("A short description of the project"), False),
    ("NEWPASSWORD", S, False),  # one run without humps or separators is one unknown word
    # ---- titles, in other casings and scripts
    ("field1", {"type": "string", "title": "API Key"}, True),
    ("field2", {"type": "string", "title": "PASSWORD"}, True),
    ("field3", {"type": "string", "title": "card number"}, True),
    ("field4", {"type": "string", "title": "Card Type"}, False),
    ("field5", {"type": "string", "title": "Password hint"}, False),
    ("code", {"type": "string", "title": "Код PIN"}, True),
    ("clef", {"type": "string", "title": "ＡＰＩ　Ｋｅｙ"}, True),  # full-width, NFKC-normalised
    ("lock", {"type": "string", "title": "🔒 Passphrase"}, True),
    ("motdepasse", {"type": "string", "title": "Mot de passe"}, False),  # English vocabulary only
    ("contrasena", {"type": "string", "title": "Contraseña"}, False),
    ("straße", {"type": "string", "title": "Straße und Hausnummer"}, False),
    ("field6", {"type": "string", "title": 42}, False),  # a title that is not text is ignored
    # ---- format only
    ("field7", {"type": "string", "format": "password"}, True),
    ("field8", {"type": "string", "format": "credit-card"}, True),
    ("field9", {"type": "string", "format": "email"}, False),
    ("field10", {"type": "string", "format": "date"}, False),
    # ---- descriptions that ask for a secret
    ("value", d("Enter your PIN"), True),
    ("value", d("Your API key"), True),
    ("answer", d("Type the one-time code we sent you."), True),
    ("back", d("The CVV on the back of your card"), True),
    ("login", d("Never share it with anyone. Enter your password here."), True),
    ("acct", d("Your account number (no spaces)"), True),
    ("auth", d("Paste the access token from your dashboard"), True),
    ("sin", d("Social security number, digits only"), True),
    # ---- descriptions that warn against one (negated before the term)
    ("note", d("Do not give us your PIN"), False),
    ("note", d("We will never ask for your password."), False),
    ("comment", d("Don't include any API keys or secrets"), False),
    ("comment", d("Anything else? No passwords, please"), False),
    ("email", d("Your email address, without the password"), False),
    ("nickname", d("Do NOT enter your social security number"), False),
    ("extra", d("You don\u2019t need a token for this"), False),
    ("remark", d("This cannot be your passphrase; pick anything"), False),
    # ---- descriptions that mention no secret
    ("sticky", d("Whether to pin the message to the top"), False),  # prose needs "PIN" in capitals
    ("budget", d("Maximum token count for the reply"), False),
    ("hint", d("A reminder that helps you recall it, never the password hint itself"), False),
    # ---- a name wins over its description
    ("pin", d("Do not share your PIN with anyone"), True),
    ("password", d("Not stored."), True),
]


@pytest.mark.parametrize("name, prop, expected", CASES, ids=[f"{i}-{c[0]}" for i, c in enumerate(CASES)])
def test_the_heuristic_table(name: str, prop: dict[str, Any], expected: bool) -> None:
    assert is_sensitive(name, prop) is expected


def test_the_table_is_big_enough() -> None:
    assert len(CASES) >= 40
    descriptions = [c for c in CASES if "description" in c[1] and c[0] not in {"pin", "password"}]
    assert sum(c[2] for c in descriptions) >= 5
    assert sum(not c[2] for c in descriptions) >= 5


@pytest.mark.parametrize(
    "text, words",
    [
        ("apiKey", ["api", "key"]),
        ("CVV2", ["cvv", "2"]),
        ("card_number", ["card", "number"]),
        ("newPassword", ["new", "password"]),
        ("HTTPServer", ["http", "server"]),
        ("2fa-code", ["2", "fa", "code"]),
        ("SSNs", ["ssns"]),
        ("ÜberPasswort2", ["über", "passwort", "2"]),
        ("ＰＩＮ", ["pin"]),
        ("", []),
    ],
)
def test_words(text: str, words: list[str]) -> None:
    assert _words(text) == words


def test_sensitive_fields_marks_every_property_of_a_schema() -> None:
    schema = {
        "type": "object",
        "properties": {
            "username": {"type": "string", "title": "User name"},
            "newPassword": {"type": "string", "title": "New password"},
            "code": {"type": "string", "description": "Enter your PIN"},
            "notes": {"type": "string", "description": "Do not paste any password here."},
            "max_tokens": {"type": "integer"},
            "secret": "not a dict",
            "weird": None,
        },
        "required": ["username"],
    }
    assert sensitive_fields(schema) == {
        "username": {"sensitive_suspected": False},
        "newPassword": {"sensitive_suspected": True},
        "code": {"sensitive_suspected": True},
        "notes": {"sensitive_suspected": False},
        "max_tokens": {"sensitive_suspected": False},
        "secret": {"sensitive_suspected": False},
        "weird": {"sensitive_suspected": False},
    }
    assert list(sensitive_fields(schema)) == list(schema["properties"])


@pytest.mark.parametrize("schema", [{}, {"type": "object"}, {"properties": []}, {"properties": None}])
def test_a_schema_without_properties_has_no_fields(schema: dict[str, Any]) -> None:
    assert sensitive_fields(schema) == {}


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=10,
)
PROP = st.fixed_dictionaries(
    {},
    optional={"type": JSON, "title": st.text(), "description": st.text(), "format": st.text(), "enum": JSON},
)


@given(name=st.text(), title=st.text(), description=st.text(), fmt=st.text())
def test_any_text_never_crashes(name: str, title: str, description: str, fmt: str) -> None:
    result = is_sensitive(name, {"title": title, "description": description, "format": fmt})
    assert isinstance(result, bool)


@given(properties=st.dictionaries(st.text(), PROP | JSON, max_size=6))
def test_any_schema_gets_one_boolean_per_property(properties: dict[str, Any]) -> None:
    marks = sensitive_fields({"type": "object", "properties": properties})
    assert list(marks) == list(properties)
    for name, prop in properties.items():
        expected = isinstance(prop, dict) and is_sensitive(name, prop)
        assert marks[name] == {"sensitive_suspected": expected}


@given(name=st.text(), description=st.text())
def test_a_description_only_adds_suspicion(name: str, description: str) -> None:
    if is_sensitive(name, {}):
        assert is_sensitive(name, {"description": description})
