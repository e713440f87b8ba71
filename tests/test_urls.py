"""Table and property tests for the elicitation URL checks (_protocol/urls.py)."""

from __future__ import annotations

import ipaddress

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_input_sync._protocol.urls import (
    UrlFacts,
    UrlRefused,
    check_elicitation_url,
    parse_origin,
)

# (url, expected host, expected port, expected idn)
ACCEPTED = [
    ("https://example.com", "example.com", 443, False),
    ("https://example.com/", "example.com", 443, False),
    ("https://example.com/path?q=1#frag", "example.com", 443, False),
    ("HTTPS://Example.COM", "example.com", 443, False),
    ("hTtPs://EXAMPLE.com/Path", "example.com", 443, False),
    ("https://example.com:8443/x", "example.com", 8443, False),
    ("https://example.com:443/x", "example.com", 443, False),
    ("https://example.com:00443/x", "example.com", 443, False),
    ("https://example.com:1", "example.com", 1, False),
    ("https://example.com:65535", "example.com", 65535, False),
    ("https://a-b.c-d.example", "a-b.c-d.example", 443, False),
    ("https://1.example.com", "1.example.com", 443, False),
    ("https://localhost/x", "localhost", 443, False),
    ("https://example.com?x", "example.com", 443, False),
    ("https://example.com#x", "example.com", 443, False),
    ("https://example.com#@evil.com", "example.com", 443, False),
    ("https://example.com/a@b", "example.com", 443, False),
    ("https://example.com/caf%C3%A9", "example.com", 443, False),
    ("https://example.com/café", "example.com", 443, False),
    ("https://127.0.0.1/x", "127.0.0.1", 443, False),
    ("https://192.168.1.20:8443", "192.168.1.20", 8443, False),
    ("https://[::1]:8443/x", "::1", 8443, False),
    ("https://[2001:DB8:0:0::1]/x", "2001:db8::1", 443, False),
    ("https://[::ffff:1.2.3.4]/", "::ffff:102:304", 443, False),
    ("https://[::FFFF:102:304]/", "::ffff:102:304", 443, False),
    ("https://[0:0:0:0:0:ffff:0.0.0.1]/", "::ffff:0:1", 443, False),
    ("https://[::ffff:0.0.0.0]/", "::ffff:0:0", 443, False),
    ("https://[::ffff:255.255.255.255]/", "::ffff:ffff:ffff", 443, False),
    ("https://bücher.example/x", "xn--bcher-kva.example", 443, True),
    ("https://BÜCHER.example/x", "xn--bcher-kva.example", 443, True),
    ("https://xn--bcher-kva.example", "xn--bcher-kva.example", 443, True),
    ("https://XN--BCHER-KVA.EXAMPLE", "xn--bcher-kva.example", 443, True),
    ("https://www.xn--pss.example:444/", "www.xn--pss.example", 444, True),
    ("https://ｅｘａｍｐｌｅ.com/", "example.com", 443, True),
    ("https://straße.de", "xn--strae-oqa.de", 443, True),
]


@pytest.mark.parametrize(("url", "host", "port", "idn"), ACCEPTED)
def test_accepted(url: str, host: str, port: int, idn: bool) -> None:
    facts = check_elicitation_url(url, None)
    assert facts == UrlFacts(url=url, host=host, port=port, idn=idn, origin_mismatch=True)


REFUSED = [
    # not a string
    (None, "string"),
    (42, "string"),
    (b"https://example.com", "string"),
    (["https://example.com"], "string"),
    ({"url": "https://example.com"}, "string"),
    # not absolute https
    ("", "absolute"),
    ("example.com", "absolute"),
    ("/relative/path", "absolute"),
    ("//example.com/x", "absolute"),
    ("https:example.com", "absolute"),
    ("https:/example.com", "absolute"),
    ("http://example.com", "https scheme"),
    ("HTTP://example.com", "https scheme"),
    ("javascript:alert(1)", "https scheme"),
    ("JavaScript://example.com/%0aalert(1)", "https scheme"),
    ("file:///etc/passwd", "https scheme"),
    ("data:text/html,<script>alert(1)</script>", "https scheme"),
    ("ftp://example.com", "https scheme"),
    ("httpss://example.com", "https scheme"),
    # no host
    ("https://", "no host"),
    ("https:///path", "no host"),
    ("https://:443/x", "no host"),
    ("https://?x", "no host"),
    # userinfo
    ("https://user:pw@x.com", "userinfo"),
    ("https://user@x.com/", "userinfo"),
    ("https://@x.com", "userinfo"),
    ("https://x.com@y.com", "userinfo"),
    # backslash
    ("https://x.com\\@y.com", "backslash"),
    ("https:\\\\x.com", "backslash"),
    ("https://x.com/a\\b", "backslash"),
    # whitespace and controls
    ("https://exa mple.com", "control or whitespace"),
    ("https://x.com/a\tb", "control or whitespace"),
    ("https://x.com/a\nb", "control or whitespace"),
    (" https://x.com", "control or whitespace"),
    ("https://x.com ", "control or whitespace"),
    ("https://x.com/\x00", "control or whitespace"),
    ("https://x.com/\x7f", "control or whitespace"),
    ("https://x.com/\x85", "control or whitespace"),
    ("https://x.com/a\u00a0b", "control or whitespace"),
    ("https://x.com/a\u3000b", "control or whitespace"),
    ("https://x.com/a\u2028b", "control or whitespace"),
    ("https://x.com/\u202epath", "control or whitespace"),
    ("https://x.com/\u2066path", "control or whitespace"),
    ("https://ex\u200bample.com", "control or whitespace"),
    ("https://ex\u00adample.com", "control or whitespace"),
    ("\ufeffhttps://x.com", "control or whitespace"),
    ("https://x.com/\ud800", "control or whitespace"),
    # port
    ("https://x.com:0", "port"),
    ("https://x.com:99999", "port"),
    ("https://x.com:65536", "port"),
    ("https://x.com:abc", "port"),
    ("https://x.com:", "port"),
    ("https://x.com:-1", "port"),
    ("https://x.com:+443", "port"),
    ("https://x.com:443:443", "port"),
    ("https://x.com:４４３", "port"),
    ("https://x.com:1234567", "port"),
    ("https://[::1]:", "port"),
    # host
    ("https://%65xample.com", "host"),
    ("https://example%2ecom", "host"),
    ("https://exa_mple.com", "host"),
    ("https://example.com.", "host"),
    ("https://.example.com", "host"),
    ("https://a..b", "host"),
    ("https://-a.example", "host"),
    ("https://a-.example", "host"),
    ("https://exa!mple.com", "host"),
    ("https://" + "a" * 64 + ".com", "host"),
    ("https://" + "a." * 127 + "com", "host"),
    ("https://xn--zz.example", "host"),
    ("https://xn--.example", "host"),
    ("https://xn--abc-.example", "host"),
    ("https://xn--a.example", "host"),
    ("https://bücher.xn--zz", "host"),
    ("https://bücher.example.", "host"),
    ("https://a_b.bücher.example", "host"),
    ("https://１２７.０.０.１/", "host"),
    ("https://127.1/", "host"),
    ("https://0x7f.0.0.1/", "host"),
    ("https://2130706433/", "host"),
    ("https://010.0.0.1/", "host"),
    ("https://256.0.0.1/", "host"),
    ("https://example.123/", "host"),
    ("https://[::1", "host"),
    ("https://[::1]x", "host"),
    ("https://[]/", "host"),
    ("https://[fe80::1%25eth0]/", "host"),
    ("https://[v1.x]/", "host"),
    ("https://[127.0.0.1]/", "host"),
    ("https://::1/", "port"),
]


@pytest.mark.parametrize(("url", "reason"), REFUSED)
def test_refused(url: object, reason: str) -> None:
    with pytest.raises(UrlRefused) as excinfo:
        check_elicitation_url(url, "https://x.com")
    message = str(excinfo.value)
    assert reason in message
    assert excinfo.value.reason == message
    assert len(message) < 100
    # never echo request text (the URL or its host)
    if isinstance(url, str) and url:
        assert url not in message
        assert "x.com" not in message and "example" not in message


def test_refusal_is_a_value_error() -> None:
    with pytest.raises(ValueError):
        check_elicitation_url("http://x.com", None)


@pytest.mark.parametrize(
    "url",
    [
        "https://x.com/" + "a" * 100_000,
        "https://x.com/" + "é" * 100_000,
        "https://x.com/" + "é" * 100_000 + "\u202e",
        "https://" + "a" * 100_000 + ".com/",
        "https://" + "ü" * 100_000 + ".com/",
        "https://x.com:" + "1" * 100_000,
        "https://[" + ":" * 100_000 + "]/",
        "https://" + "a." * 50_000,
        "https://" + "ü." * 50_000 + "com",
    ],
)
def test_a_very_long_url_is_checked_without_error(url: str) -> None:
    try:
        check_elicitation_url(url, "https://x.com")
    except UrlRefused:
        pass


def test_very_long_path_is_accepted() -> None:
    url = "https://x.com/" + "a" * 100_000
    assert check_elicitation_url(url, "https://x.com").origin_mismatch is False


# (url, server origin, expected origin_mismatch)
ORIGINS = [
    ("https://x.com/a", "https://x.com", False),
    ("https://x.com/a", "https://x.com/", False),
    ("https://x.com/a", "https://x.com/mcp?session=1", False),
    ("https://X.COM/a", "HTTPS://x.Com", False),
    ("https://x.com:443/a", "https://x.com", False),
    ("https://x.com/a", "https://x.com:443", False),
    ("https://x.com:8443/a", "https://x.com:8443", False),
    ("https://x.com:8443/a", "https://x.com", True),
    ("https://x.com/a", "https://x.com:8443", True),
    ("https://y.com/a", "https://x.com", True),
    ("https://sub.x.com/a", "https://x.com", True),
    ("https://x.com/a", "http://x.com", True),
    ("https://x.com:80/a", "http://x.com", True),
    ("https://x.com:80/a", "http://x.com:80", True),
    ("https://x.com/a", "http://x.com:443", True),
    ("https://x.com/a", None, True),
    ("https://x.com/a", "", True),
    ("https://x.com/a", "x.com", True),
    ("https://x.com/a", "//x.com", True),
    ("https://x.com/a", "wss://x.com", True),
    ("https://x.com/a", "https://user@x.com", True),
    ("https://x.com/a", "https://x.com:0", True),
    ("https://x.com/a", "https://x.com.", True),
    ("https://x.com/a", "https://x.com\u202e", True),
    ("https://xn--bcher-kva.example/a", "https://bücher.example", False),
    ("https://bücher.example/a", "https://xn--bcher-kva.example", False),
    ("https://bücher.example/a", "https://bucher.example", True),
    ("https://127.0.0.1/a", "https://127.0.0.1:443", False),
    ("https://[::1]:8443/a", "https://[0:0::1]:8443", False),
    ("https://[::1]/a", "https://::1", True),
]


@pytest.mark.parametrize(("url", "origin", "mismatch"), ORIGINS)
def test_origin_mismatch(url: str, origin: str | None, mismatch: bool) -> None:
    assert check_elicitation_url(url, origin).origin_mismatch is mismatch


@pytest.mark.parametrize(
    ("origin", "expected"),
    [
        ("https://example.com", ("https", "example.com", 443)),
        ("HTTP://Example.com", ("http", "example.com", 80)),
        ("http://example.com:8080/x", ("http", "example.com", 8080)),
        ("https://bücher.example", ("https", "xn--bcher-kva.example", 443)),
        ("https://[::1]", ("https", "::1", 443)),
        ("https://10.0.0.1:1", ("https", "10.0.0.1", 1)),
        ("ftp://example.com", None),
        ("https://", None),
        ("https://a@b", None),
        ("https://example.com:99999", None),
        ("not a url", None),
        ("", None),
    ],
)
def test_parse_origin(origin: str, expected: tuple[str, str, int] | None) -> None:
    assert parse_origin(origin) == expected


def test_parse_origin_tolerates_non_strings() -> None:
    assert parse_origin(None) is None  # type: ignore[arg-type]
    assert parse_origin(443) is None  # type: ignore[arg-type]


def _check_host(host: str) -> None:
    assert host
    assert host.isascii()
    assert host == host.lower()
    if ":" in host:  # only IPv6, given without brackets and without a port
        ipaddress.IPv6Address(host)
        assert "[" not in host and "]" not in host


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 2**128 - 1) | st.integers(0, 2**32 - 1).map(lambda low: 0xFFFF_0000_0000 | low))
def test_an_ipv6_host_is_the_same_address_in_hex_groups(number: int) -> None:
    # Every Python version writes the host alike (3.13's ipaddress alone writes IPv4-mapped ones dotted).
    address = ipaddress.IPv6Address(number)
    for spelling in (address.exploded, str(address)):
        host = check_elicitation_url(f"https://[{spelling}]/", None).host
        assert ipaddress.IPv6Address(host) == address
        assert "." not in host
        assert len(host) <= len(address.exploded)


@settings(max_examples=400, deadline=None)
@given(st.text())
def test_any_text_gives_facts_or_refusal(text: str) -> None:
    try:
        facts = check_elicitation_url(text, "https://example.com")
    except UrlRefused:
        return
    _check_host(facts.host)
    assert 1 <= facts.port <= 65535
    assert facts.url == text


_HOSTY = st.text(
    alphabet=st.sampled_from(list("abcxyzAZ09-._:[]@%/\\?#é ü\u202e１。xn")),
    max_size=30,
)


_GOOD_LABEL = st.sampled_from(["a", "Z9", "example", "xn--bcher-kva", "b\u00fccher", "\u00df", "\uff41", "a-b"])
_BAD_LABEL = st.sampled_from(["xn--zz", "0x1", "127", "", "-a", "a_b", "%41"])
_LABEL = _GOOD_LABEL | _GOOD_LABEL | _GOOD_LABEL | _BAD_LABEL
_DNSISH = st.lists(_LABEL, min_size=1, max_size=5).map(".".join)
_PORTISH = st.sampled_from(["", "", "", ":443", ":8443"]) | st.sampled_from([":0", ":", ":65536", ":x"])


@settings(max_examples=600, deadline=None)
@given(
    st.sampled_from(["https://", "https://", "HTTPS://", "https:", "http://", "//", ""]),
    st.builds(str.__add__, _DNSISH, _PORTISH) | _HOSTY,
    st.sampled_from(["", "/", "/p?q=1#f", "#@x"]) | st.text(max_size=10),
    st.one_of(st.none(), st.text(max_size=20), st.just("https://example.com")),
)
def test_url_like_text_gives_facts_or_refusal(
    prefix: str, middle: str, tail: str, origin: str | None
) -> None:
    url = prefix + middle + tail
    try:
        facts = check_elicitation_url(url, origin)
    except UrlRefused:
        return
    _check_host(facts.host)
    assert url.lower().startswith("https://")
    assert 1 <= facts.port <= 65535
    if origin is None:
        assert facts.origin_mismatch


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40))
def test_parse_origin_never_raises(text: str) -> None:
    parsed = parse_origin(text)
    if parsed is not None:
        scheme, host, port = parsed
        assert scheme in ("http", "https")
        _check_host(host)
        assert 1 <= port <= 65535


@settings(max_examples=400, deadline=None)
@given(st.text(st.characters(blacklist_characters="/?#@:\\"), min_size=1, max_size=20))
def test_unicode_host_gives_facts_or_refusal(host: str) -> None:
    try:
        facts = check_elicitation_url("https://" + host + "/x", None)
    except UrlRefused:
        return
    _check_host(facts.host)
    if not host.isascii():
        assert facts.idn
