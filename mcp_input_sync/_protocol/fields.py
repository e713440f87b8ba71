"""Which fields of an elicitation form probably ask for a secret.

A server's ``elicitation/create`` request carries a flat object schema
(``{"type": "object", "properties": {name: {...}}}``). Before a form is shown
or logged, the client marks each property ``{"sensitive_suspected": bool}`` so
that a handler can mask the input and keep the answer out of logs. This is a
heuristic for masking, not a security boundary: it errs towards masking and
only knows English vocabulary.

Words
    Every text is NFKC-normalised (so full-width ``ＰＩＮ`` reads as ``PIN``) and
    cut into words: at every character that is not a letter or a digit
    (``_``, ``-``, ``.``, spaces, emoji...), at camelCase humps
    (``newPassword`` -> ``new password``, ``HTTPServer`` -> ``http server``),
    and between letters and digits (``CVV2`` -> ``cvv 2``, ``2fa`` -> ``2 fa``).
    An upper-case run ending in a lone ``s`` stays one word (``SSNs``).
    Words are then case-folded. A word written without separators is one word:
    ``NEWPASSWORD`` is the single word ``newpassword``, which matches nothing.

Terms
    A field is suspected when the words of its **name**, its ``title`` or its
    ``format`` contain one of these terms as consecutive whole words:

    * ``password``, ``passwd``, ``pwd``, ``passphrase``, ``passcode``,
      ``pin``, ``pin code``, ``pin number``;
    * ``secret``, ``secret key``, ``client secret``, ``credential``;
    * ``otp``, ``totp``, ``hotp``, ``one time code``, ``one time passcode``,
      ``one time password``, ``one time pin``, ``mfa code``, ``2 fa code``,
      ``two factor code``, ``security code``, ``verification code``;
    * ``cvv``, ``cvc``, ``csc`` (``cvv2`` is ``cvv 2``),
      ``card verification value``;
    * ``ssn``, ``social security``, ``social security number``;
    * ``private key``, ``api key``, ``access key``;
    * ``token``, ``access token``, ``auth token``, ``bearer token``,
      ``refresh token``, ``session token``, ``api token``;
    * ``card number``, ``credit card``, ``credit card number``, ``cc number``,
      ``ccnum``, ``iban``, ``account number``, ``routing number``, ``tax id``,
      ``passport number``;
    * ``seed phrase``, ``recovery phrase``, ``mnemonic``, ``security answer``.

    Derived forms match too: every term ending in ``number`` also ends in
    ``no``, ``num`` or ``nr`` (``card no``); every term has a plural made by
    adding ``s`` to its last word (``passwords``, ``api keys``), except the
    bare words ``token`` and ``pin`` (``tokens`` is usually a count, ``pins``
    map markers); every multi-word term without digits also matches written
    as one word (``apikey``, ``pincode``, ``cardnumber``, ``onetimecode``).
    So ``format: "password"`` is suspected, as is ``format: "credit-card"``.

    Plain ``key``, ``code``, ``pass``, ``number``, ``security``, ``card`` and
    ``mfa`` are not terms: ``sort_key``, ``key_name``, ``postal_code``,
    ``zip_code``, ``country_code``, ``promo_code``, ``card_type``,
    ``cardholder_name``, ``security_question`` and ``mfa_enabled`` are not
    suspected. Whole words only: ``pinned``, ``spinner``, ``keyboard``,
    ``monkey``, ``passenger``, ``bypass``, ``compass``, ``secretary`` and
    ``tokenizer`` contain no term.

Near misses (a match that does not count)
    Where several terms start at the same word the longest one is taken, and
    when it does not count the words it covers are skipped, so ``secret key
    name`` does not fall back to ``secret``.

    * **Describing words after the term.** A term followed by one of ``hint``,
      ``hints``, ``policy``, ``length``, ``len``, ``strength``, ``rule``,
      ``rules``, ``requirement``, ``requirements``, ``expiry``, ``expires``,
      ``expiration``, ``enabled``, ``required``, ``type``, ``name``, ``id``,
      ``count``, ``limit``, ``limits``, ``used``, ``usage``, ``budget``,
      ``total``, ``size`` or ``remaining`` names something *about* the secret,
      not the secret: ``password_hint``, ``pin_length``, ``token_type``,
      ``api_key_id``, ``token_count``, ``token_limit``, ``credit_card_type``.
    * **Quantity words before the term.** A term preceded by ``max``, ``min``,
      ``maximum``, ``minimum``, ``num`` or ``total`` is a count:
      ``max_token``. (``max_tokens`` and ``tokens_used`` hold no term at all.)
    * **Map pins.** The word ``pin`` alone (not ``pin code``) does not count
      next to -- before or after -- ``color``, ``colour``, ``location``,
      ``map``, ``board``, ``icon``, ``style``, ``position``, ``marker``,
      ``drop`` or ``point``: ``pin_color``, ``map_pin``, ``pinLocation``.

Descriptions (positive evidence only)
    The ``description`` is read with the same terms and near misses, one
    sentence at a time; sentences end at ``. ! ? ;``, line breaks and their
    full-width forms. A term found there suspects the field unless a negation
    word comes before it in the same sentence: ``not``, ``no``, ``never``,
    ``without``, ``cannot``, ``neither``, ``nor``, or a contraction ending in
    ``n't`` / ``n’t`` (``don't``, ``won't``) or written without apostrophe
    (``dont``, ``doesnt``, ``didnt``, ``isnt``, ``cant``, ``wont``,
    ``shouldnt``, ``mustnt``). So "Enter your PIN" and "Your API key. Never
    share it." are suspected; "Do not give us your PIN" and "We never ask for
    passwords" are not. In prose the bare word ``pin`` counts only written
    ``PIN`` ("Whether to pin the message" is not suspected). A description
    can only add suspicion: a field named ``pin`` is suspected whatever its
    description says.

Anything that is not text (a numeric ``title``, a missing ``format``) is
ignored; ``type``, ``enum`` and defaults are never read. Each text is scanned
once, in time linear in its length.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any, Mapping

__all__ = ["is_sensitive", "sensitive_fields"]

# ---------------------------------------------------------------------------- vocabulary

_BASE_TERMS = (
    "password", "passwd", "pwd", "passphrase", "passcode",
    "pin", "pin code", "pin number",
    "secret", "secret key", "client secret", "credential",
    "otp", "totp", "hotp", "one time code", "one time passcode", "one time password", "one time pin",
    "mfa code", "2 fa code", "two factor code", "security code", "verification code",
    "cvv", "cvc", "csc", "card verification value",
    "ssn", "social security", "social security number",
    "private key", "api key", "access key",
    "token", "access token", "auth token", "bearer token", "refresh token", "session token", "api token",
    "card number", "credit card", "credit card number", "cc number", "ccnum",
    "iban", "account number", "routing number", "tax id", "passport number",
    "seed phrase", "recovery phrase", "mnemonic", "security answer",
)  # fmt: skip

_NUMBER_ABBREVIATIONS = ("no", "num", "nr")
_NO_PLURAL = frozenset({("token",), ("pin",)})

_AFTER_NOT_SECRET = frozenset({
    "hint", "hints", "policy", "length", "len", "strength", "rule", "rules",
    "requirement", "requirements", "expiry", "expires", "expiration", "enabled",
    "required", "type", "name", "id", "count", "limit", "limits", "used", "usage",
    "budget", "total", "size", "remaining",
})  # fmt: skip
_BEFORE_NOT_SECRET = frozenset({"max", "min", "maximum", "minimum", "num", "total"})
_PIN_NOUNS = frozenset({
    "color", "colour", "location", "map", "board", "icon", "style", "position", "marker", "drop", "point",
})  # fmt: skip
_NEGATIONS = frozenset({
    "not", "no", "never", "without", "cannot", "neither", "nor",
    "dont", "doesnt", "didnt", "isnt", "cant", "wont", "shouldnt", "mustnt",
})  # fmt: skip


def _build_terms() -> dict[str, tuple[tuple[str, ...], ...]]:
    """Expand the base terms (number abbreviations, plurals, joined forms), indexed by first word.

    Returns:
        For each first word, the terms starting with it, longest first.
    """
    terms: set[tuple[str, ...]] = set()
    for text in _BASE_TERMS:
        words = tuple(text.split())
        variants = [words]
        if words[-1] == "number":
            variants += [words[:-1] + (abbreviation,) for abbreviation in _NUMBER_ABBREVIATIONS]
        if words not in _NO_PLURAL and words[-1].isalpha() and not words[-1].endswith("s"):
            variants.append(words[:-1] + (words[-1] + "s",))
        for variant in variants:
            terms.add(variant)
            if len(variant) > 1 and all(word.isalpha() for word in variant):
                terms.add(("".join(variant),))
    index: dict[str, list[tuple[str, ...]]] = {}
    for term in terms:
        index.setdefault(term[0], []).append(term)
    return {first: tuple(sorted(group, key=len, reverse=True)) for first, group in index.items()}


_TERMS = _build_terms()

# ---------------------------------------------------------------------------- words

_RUN = re.compile(r"[^\W_]+")
# ASCII camelCase: "SSNs" kept whole, "HTTPServer" -> HTTP Server, "apiKey" -> api Key, "CVV2" -> CVV 2.
_ASCII_WORD = re.compile(r"[A-Z]{2,}s(?![a-z])|[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
_SENTENCE_END = re.compile(r"[.!?;\n\r\u2028\u2029\u3002\uff01\uff1f\uff1b]+")
_CONTRACTION = re.compile(r"n['\u2019]t\b", re.IGNORECASE)


def _split_run(run: str) -> list[str]:
    """Cut one run of letters and digits at camelCase humps and letter/digit edges.

    Args:
        run: letters and digits only, already NFKC-normalised.

    Returns:
        The words, in their original case.
    """
    if run.isascii():
        return _ASCII_WORD.findall(run)
    words: list[str] = []
    start = 0
    size = len(run)
    for k in range(1, size):
        before, here = run[k - 1], run[k]
        if before.isdigit() != here.isdigit():
            cut = True
        elif here.isupper() and not before.isupper():
            cut = True
        elif before.isupper() and here.isupper() and k + 1 < size and run[k + 1].islower():
            # "HTTPServer" cuts before the S, but "SSNs" stays whole.
            cut = not (run[k + 1] == "s" and (k + 2 == size or not run[k + 2].islower()))
        else:
            cut = False
        if cut:
            words.append(run[start:k])
            start = k
    words.append(run[start:])
    return words


def _raw_words(text: str) -> list[str]:
    """The words of an NFKC-normalised text, in their original case."""
    words: list[str] = []
    for run in _RUN.findall(text):
        words.extend(_split_run(run))
    return words


def _words(text: str) -> list[str]:
    """The case-folded words of a text (see the module docstring).

    Args:
        text: any text.

    Returns:
        Its words, e.g. ``"apiKey"`` -> ``["api", "key"]``.
    """
    return [word.casefold() for word in _raw_words(unicodedata.normalize("NFKC", text))]


# ---------------------------------------------------------------------------- matching


def _first_term(words: list[str], raw: list[str] | None = None) -> int:
    """Where the first counting term starts in a list of words.

    Args:
        words: case-folded words.
        raw: the same words in their original case, for prose; then a bare
            ``pin`` only counts written ``PIN``.

    Returns:
        The index of the first word of the first term that counts, or -1.
    """
    size = len(words)
    i = 0
    while i < size:
        candidates = _TERMS.get(words[i])
        if candidates is None:
            i += 1
            continue
        for term in candidates:
            end = i + len(term)
            if tuple(words[i:end]) == term:
                break
        else:
            i += 1
            continue
        after = words[end] if end < size else ""
        before = words[i - 1] if i > 0 else ""
        counts = after not in _AFTER_NOT_SECRET and before not in _BEFORE_NOT_SECRET
        if counts and term == ("pin",):
            counts = after not in _PIN_NOUNS and before not in _PIN_NOUNS
            if counts and raw is not None:
                counts = raw[i] == "PIN"
        if counts:
            return i
        i = end
    return -1


def _names_a_secret(text: str) -> bool:
    """Whether a name, title or format contains a term that counts."""
    return _first_term(_words(text)) >= 0


def _asks_for_a_secret(description: str) -> bool:
    """Whether a sentence of a description holds a term with no negation before it."""
    text = _CONTRACTION.sub(" not", unicodedata.normalize("NFKC", description))
    for sentence in _SENTENCE_END.split(text):
        raw = _raw_words(sentence)
        if not raw:
            continue
        words = [word.casefold() for word in raw]
        found = _first_term(words, raw)
        if found < 0:
            continue
        if not any(word in _NEGATIONS for word in words[:found]):
            return True
        # A negation before the first term also precedes every later one.
    return False


# ---------------------------------------------------------------------------- public


def is_sensitive(name: str, prop: Mapping[str, Any]) -> bool:
    """Whether one form field probably asks for a secret.

    Args:
        name: the property's name in the schema.
        prop: the property's schema (``type``, ``title``, ``description``,
            ``format``...). A value that is not a mapping counts as empty,
            so only the name is read.

    Returns:
        True when the name, the ``title`` or the ``format`` contains a term,
        or a sentence of the ``description`` asks for one without a negation
        before it; see the module docstring for the exact rules.
    """
    if not isinstance(name, str):
        name = str(name)
    if _names_a_secret(name):
        return True
    if not isinstance(prop, Mapping):
        return False
    for key in ("title", "format"):
        value = prop.get(key)
        if isinstance(value, str) and _names_a_secret(value):
            return True
    description = prop.get("description")
    return isinstance(description, str) and _asks_for_a_secret(description)


def sensitive_fields(schema: Mapping[str, Any]) -> dict[str, dict[str, bool]]:
    """Mark every property of an elicitation form schema.

    Args:
        schema: ``{"type": "object", "properties": {name: {...}}}``.

    Returns:
        ``{name: {"sensitive_suspected": bool}}`` for every property, in the
        schema's order. A property whose schema is not a mapping gets False.
        A schema without a ``properties`` mapping gives ``{}``; a name that is
        not a string is keyed by ``str(name)``.
    """
    if not isinstance(schema, Mapping):
        return {}
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return {}
    marks: dict[str, dict[str, bool]] = {}
    for name, prop in properties.items():
        key = name if isinstance(name, str) else str(name)
        suspected = isinstance(prop, Mapping) and is_sensitive(key, prop)
        marks[key] = {"sensitive_suspected": suspected}
    return marks
