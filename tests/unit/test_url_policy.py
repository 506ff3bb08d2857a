"""The URL policy: every spelling of an internal target is refused, public URLs pass."""

from __future__ import annotations

import pytest

from pytest_citecheck.core.secrets import scrub, without_credentials
from pytest_citecheck.stages.url_policy import (
    INTERNAL_MARK,
    check,
    hide_internal_urls,
    landing_refusal,
    mask_landing,
)

# (URL, words the refusal must contain)
REFUSED = [
    # loopback, every spelling of 127.0.0.1
    ("http://127.0.0.1/", "loopback"),
    ("http://127.0.0.1:22/", "loopback"),
    ("http://2130706433/", "loopback"),  # one decimal number
    ("http://0x7f000001/", "loopback"),  # hex
    ("http://0X7F.0.0.1/", "loopback"),  # hex label
    ("http://0177.0.0.1/", "loopback"),  # octal
    ("http://017700000001/", "loopback"),  # octal number
    ("http://127.1/", "loopback"),  # short form
    ("http://127.0.1/", "loopback"),
    ("http://127.0.0.1./", "loopback"),  # trailing dot
    ("http://\uff11\uff12\uff17.\uff10.\uff10.\uff11/", "loopback"),  # full-width digits
    ("http://127\u30020\u30020\u30021/", "loopback"),  # ideographic full stops
    ("http://%31%32%37.0.0.1/", "loopback"),  # percent-encoded
    ("http://%6c%6f%63%61%6c%68%6f%73%74/", "local name"),
    ("http://exa%20mple.com/", "not a valid host name"),
    ("http://[::1]/", "loopback"),
    ("http://[0:0:0:0:0:0:0:1]:8000/health", "loopback"),
    ("http://[::ffff:127.0.0.1]/", "loopback"),  # IPv6-mapped IPv4
    ("http://[::ffff:7f00:1]/", "loopback"),
    ("http://[2002:7f00:1::]/", "loopback"),  # 6to4 around 127.0.0.1
    # private, shared, link-local (cloud metadata), reserved, multicast, unspecified
    ("http://10.0.0.1/", "private"),
    ("http://192.168.1.1/", "private"),
    ("http://172.16.5.4/", "private"),
    ("http://0xa000001/", "private"),  # 10.0.0.1 in hex
    ("http://167772161/", "private"),  # 10.0.0.1 in decimal
    ("http://[::ffff:10.0.0.1]/", "private"),
    ("http://[64:ff9b::a00:1]/", "private"),  # NAT64 around 10.0.0.1
    ("http://[fd00::1]/", "private"),
    ("http://100.64.0.1/", "not a public address"),
    ("http://169.254.169.254/latest/meta-data/", "link-local"),
    ("http://0xa9fea9fe/", "link-local"),  # 169.254.169.254 in hex
    ("http://2852039166/", "link-local"),  # ... in decimal
    ("http://[fe80::1]/", "link-local"),
    ("http://[::ffff:169.254.169.254]/", "link-local"),
    ("http://240.0.0.1/", "reserved"),
    ("http://224.0.0.1/", "multicast"),
    ("http://[ff02::1]/", "multicast"),
    ("http://0.0.0.0/", "unspecified"),
    ("http://0/", "unspecified"),
    ("http://[::]/", "unspecified"),
    # numbers that are no address are not taken for names either
    ("http://999.1.1.1/", "out of range"),
    ("http://1.2.3.4.5/", "not a valid one"),
    ("http://08.0.0.1/", "not a valid one"),
    # local names
    ("http://localhost/", "local name"),
    ("http://LOCALHOST.:8000/health", "local name"),
    ("http://api.localhost/", "local name"),
    ("http://metadata.google.internal/computeMetadata/v1/", "local name"),
    ("http://db.internal/", "local name"),
    ("http://printer.local/", "local name"),
    ("http://router.home.arpa/", "local name"),
    ("http://\uff4c\uff4f\uff43\uff41\uff4c\uff48\uff4f\uff53\uff54/", "local name"),
    ("http://metadata/", "no domain"),
    ("http://intranet/wiki", "no domain"),
    # public names that resolve to loopback or to the address they spell
    ("http://127.0.0.1.nip.io/", "resolves to loopback"),
    ("http://169.254.169.254.nip.io/latest/meta-data/", "under nip.io"),
    ("http://app.10-0-0-1.sslip.io/", "under sslip.io"),
    ("http://localtest.me/", "resolves to loopback"),
    ("http://Admin.LocalTest.Me./", "under localtest.me"),
    ("http://lvh.me:3000/", "resolves to loopback"),
    ("http://a.b.lvh.me/", "under lvh.me"),
    ("http://127-0-0-1.traefik.me/", "under traefik.me"),
    # credentials
    ("http://user:pass@example.com/", "credentials"),
    ("https://token@example.com/", "credentials"),
    ("http://example.com@127.0.0.1/", "credentials"),
]

PUBLIC = [
    "https://example.com/articles/boiling",
    "http://example.com:8080/a?b=c#d",
    "https://www.essex.ac.uk/news/2019/03/26/x",
    "https://8.8.8.8/",
    "https://[2606:4700:4700::1111]/",
    "http://[::ffff:8.8.8.8]/",  # IPv6-mapped public address
    "https://bücher.de/",  # an internationalised name
    "https://0xdeadbeef.com/",  # a name that merely starts like a number
    "https://1e100.net/",
    "https://example.com/path/with@sign",  # an @ in the path is not credentials
    "https://local.example.com/",  # "local" as a label, not the .local suffix
    "https://nip.io.example.com/",  # the wildcard domain as a label of another name
    "https://notlvh.me/",
]


@pytest.mark.parametrize(("url", "words"), REFUSED)
def test_internal_targets_are_refused_in_every_spelling(url: str, words: str) -> None:
    why = check("public", url)
    assert why is not None, url
    assert words in why


@pytest.mark.parametrize("url", PUBLIC)
def test_public_urls_pass(url: str) -> None:
    assert check("public", url) is None


@pytest.mark.parametrize(("url", "_"), REFUSED[:5])
def test_policy_off_refuses_nothing(url: str, _: str) -> None:
    assert check("off", url) is None


def test_an_unknown_policy_is_an_error() -> None:
    with pytest.raises(ValueError, match="public"):
        check("strict", "https://example.com/")


def test_the_service_own_names_are_refused() -> None:
    assert check("public", "https://example.com/") is None
    why = check("public", "https://citecheck.example.com/health", ["citecheck.example.com"])
    assert why is not None and "this service itself" in why


def test_credentials_are_removed_from_urls_and_text() -> None:
    assert without_credentials("http://user:pass@example.com:8/x?y") == (
        "http://REDACTED@example.com:8/x?y"
    )
    assert without_credentials("https://example.com/a") == "https://example.com/a"
    text = scrub("could not fetch http://alice:hunter2@example.com/page")
    assert "hunter2" not in text and "alice" not in text
    assert "example.com/page" in text


def test_internal_urls_are_hidden_from_messages() -> None:
    text = hide_internal_urls(
        "could not reach the ollama judge at http://127.0.0.1:11434/api/chat: no connection; "
        "nor http://[::1]:8000/v1. The page https://example.com/x is fine."
    )
    assert "11434" not in text and "::1" not in text
    assert text.count(INTERNAL_MARK) == 2
    assert f"{INTERNAL_MARK}: no connection" in text
    assert "https://example.com/x is fine" in text


def test_a_landing_on_an_internal_address_is_refused_without_naming_it() -> None:
    hops = ["https://example.com/a", "http://169.254.169.254/latest/meta-data/iam"]
    why = landing_refusal("public", hops)
    assert why is not None and INTERNAL_MARK in why
    assert "169.254" not in why
    assert landing_refusal("public", ["https://example.com/b", None, ""]) is None
    assert landing_refusal("off", hops) is None
    # A "url" header that is no URL with a host says nothing about where the page is.
    assert landing_refusal("public", ["/relative/path", "not a url"]) is None
    assert mask_landing("public", hops[1]) == INTERNAL_MARK
    assert mask_landing("public", hops[0]) == hops[0]
    assert mask_landing("off", hops[1]) == hops[1]
