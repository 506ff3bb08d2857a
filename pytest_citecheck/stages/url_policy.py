"""Which cited URLs may be handed to the Crawling API: the URL policy.

A cited URL is sent to the Crawling API, which fetches it and bills the
operator. Under the ``public`` policy a URL is refused, before any request,
when its host is not a public internet address:

- a literal address that is private, loopback, link-local, shared (100.64/10),
  reserved, multicast, unspecified or otherwise not globally reachable, in
  every spelling a URL parser accepts: dotted decimal, one number
  (``2130706433``), hex (``0x7f000001``), octal (``0177.0.0.1``), short forms
  (``127.1``), IPv6 (``[::1]``), IPv4 inside IPv6 (``[::ffff:127.0.0.1]``,
  6to4, NAT64);
- a name that is local by convention: ``localhost``, ``*.localhost``,
  ``*.local``, ``*.internal`` (``metadata.google.internal``),
  ``*.localdomain``, ``*.home.arpa``, and single-label names (``intranet``,
  ``metadata``) that only a local resolver can answer;
- a name under a public wildcard-DNS domain that resolves to whatever address
  it spells or always to loopback (``127.0.0.1.nip.io``, ``10-0-0-1.sslip.io``,
  ``localtest.me``, ``lvh.me``: :data:`LOOPBACK_DOMAINS`);
- credentials in the URL (``https://user:pass@host/``).

Names are not resolved: the Crawling API resolves them on its side, from its
own network, and a lookup here could answer differently (DNS rebinding, split
horizon) while costing a network round trip per URL. A public name pointing at
a private address is therefore not caught before the fetch; where the fetch
*landed* is checked after it (:func:`landing_refusal`): the Crawling API reports
the final URL of the redirects it followed, and a landing the policy refuses is
``url_refused`` too, its address never shown. The ``off`` policy (the plugin's
and the batch's default) refuses nothing.

Pure stdlib, no network; used by the pipeline (a refused URL becomes a
``url_refused`` verdict) and by the service (a refused URL is a 422).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from urllib.parse import unquote, urlsplit

from pytest_citecheck.core.defaults import URL_POLICIES

PUBLIC = "public"
OFF = "off"
assert set(URL_POLICIES) == {OFF, PUBLIC}

# Names that only a local resolver answers (RFC 6761, RFC 6762, RFC 8375, cloud metadata).
LOCAL_NAMES = frozenset({"localhost", "localhost.localdomain"})
LOCAL_SUFFIXES = (".localhost", ".local", ".internal", ".localdomain", ".home.arpa")
# Public domains whose names resolve to the address they spell (nip.io, sslip.io,
# xip.io, traefik.me: ``127.0.0.1.nip.io``) or to loopback whatever the name
# (localtest.me, lvh.me, vcap.me, lacolhost.com, localhost.direct): a way to
# reach an internal address with a name that looks public.
LOOPBACK_DOMAINS = frozenset(
    {
        "nip.io",
        "sslip.io",
        "xip.io",
        "traefik.me",
        "localtest.me",
        "lvh.me",
        "vcap.me",
        "lacolhost.com",
        "localhost.direct",
    }
)

# IPv6 prefixes that carry an IPv4 address in their last 32 bits (NAT64, RFC 6052/8215).
_NAT64 = (ipaddress.ip_network("64:ff9b::/96"), ipaddress.ip_network("64:ff9b:1::/48"))
# One label of a numeric IPv4 host: decimal, 0x-hex or 0-octal (inet_aton's forms).
_NUMBER = re.compile(r"(0[xX][0-9a-fA-F]*|[0-9]+)")
_HOST_LABEL = re.compile(r"[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?")


def check(policy: str, url: str, extra_hosts: Iterable[str] = ()) -> str | None:
    """Why ``policy`` refuses ``url``, or None when it may be fetched.

    ``extra_hosts`` are further names refused (the service adds its own)."""
    if policy == OFF:
        return None
    if policy != PUBLIC:
        raise ValueError(f"unknown URL policy {policy!r}: one of {', '.join(URL_POLICIES)}")
    return public_refusal(url, extra_hosts)


def public_refusal(url: str, extra_hosts: Iterable[str] = ()) -> str | None:
    """Why ``url`` is not a public internet URL, or None."""
    try:
        parts = urlsplit(url.strip())
        host = parts.hostname
        parts.port  # noqa: B018 -- raises ValueError on a malformed port
    except ValueError as exc:
        return f"it cannot be parsed ({exc})"
    if "@" in parts.netloc:
        return "it carries credentials (user:password@); cite the page without them"
    if not host:
        return "it has no host"
    # URL parsers percent-decode a host: %31%32%37.0.0.1 is 127.0.0.1.
    host = unquote(host)
    if not host.isascii():
        # As a URL parser would: full-width digits and ideographic dots are ASCII after
        # IDNA mapping, so "１２７。０。０。１" is 127.0.0.1, not a name.
        try:
            host = host.encode("idna").decode("ascii").lower()
        except UnicodeError:
            return f"its host {host!r} is not a valid host name"
    address = literal_address(host)
    if isinstance(address, str):
        return address
    if address is not None:
        why = address_refusal(address)
        return None if why is None else f"its host {host} is {why}"
    name = host.rstrip(".")
    why = name_refusal(name)
    if why is None and name in {h.lower().rstrip(".") for h in extra_hosts}:
        return f"its host {name} is this service itself"
    return why


def literal_address(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | str | None:
    """The address a URL host spells, None for a name, or why it is neither.

    IPv6 as :mod:`ipaddress` reads it (brackets already removed by urlsplit);
    IPv4 in every form ``inet_aton`` accepts and URL parsers follow: one to
    four numbers, each decimal, ``0x`` hex or ``0``-led octal, the last filling
    the remaining bytes (``127.1`` is 127.0.0.1). A host whose last label is a
    number but is no valid address (``999.1.1.1``) is refused, not taken as a name.
    """
    if ":" in host:
        try:
            return ipaddress.IPv6Address(host)
        except ValueError:
            return "an IPv6 address that cannot be parsed"
    labels = host.rstrip(".").split(".") if host.rstrip(".") else [host]
    if not _NUMBER.fullmatch(labels[-1]):
        return None
    if len(labels) > 4 or not all(_NUMBER.fullmatch(label) for label in labels):
        return f"its host {host} looks like an IPv4 address but is not a valid one"
    try:
        numbers = [_number(label) for label in labels]
    except ValueError:
        return f"its host {host} looks like an IPv4 address but is not a valid one"
    *head, last = numbers
    if any(n > 255 for n in head) or last >= 256 ** (4 - len(head)):
        return f"its host {host} looks like an IPv4 address but is out of range"
    value = last
    for i, n in enumerate(head):
        value += n << (8 * (3 - i))
    return ipaddress.IPv4Address(value)


def _number(label: str) -> int:
    if label[:2].lower() == "0x":
        return int(label[2:] or "0", 16)
    if len(label) > 1 and label.startswith("0"):
        return int(label, 8)  # ValueError for 08, 09
    return int(label)


def address_refusal(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str | None:
    """What kind of non-public address ``address`` is, or None for a public one."""
    if isinstance(address, ipaddress.IPv6Address):
        embedded = address.ipv4_mapped or address.sixtofour
        if embedded is None and any(address in net for net in _NAT64):
            embedded = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
        if embedded is None and address.teredo is not None:
            embedded = address.teredo[1]
        if embedded is not None:
            why = address_refusal(embedded)
            if why is not None:
                return f"{why} (as {embedded} inside IPv6)"
            # 6to4/NAT64 prefixes are themselves global: the embedded address decides.
            return None
    for kind, test in (
        ("the unspecified address", address.is_unspecified),
        ("a loopback address", address.is_loopback),
        ("a link-local address (cloud metadata lives at 169.254.169.254)", address.is_link_local),
        ("a multicast address", address.is_multicast),
        ("a reserved address", address.is_reserved),
        ("a private address", address.is_private),
    ):
        if test:
            return kind
    if not address.is_global:
        return "not a public address"
    return None


def name_refusal(name: str) -> str | None:
    """Why the host name ``name`` (ASCII, lower case, no trailing dot) is not public, or None."""
    if not name:
        return "it has no host"
    if name in LOCAL_NAMES or name.endswith(LOCAL_SUFFIXES):
        return f"its host {name} is a local name"
    labels = name.split(".")
    if not all(_HOST_LABEL.fullmatch(label) for label in labels):
        return f"its host {name!r} is not a valid host name"
    if len(labels) == 1:
        return f"its host {name} has no domain, so only a local resolver knows it"
    for i in range(len(labels) - 1):
        domain = ".".join(labels[i:])
        if domain in LOOPBACK_DOMAINS:
            where = "" if domain == name else f"under {domain}, "
            return (
                f"its host {name} is {where}a public name that resolves to loopback or "
                "to the address it spells"
            )
    return None


def landing_refusal(policy: str, landed: Iterable[str | None]) -> str | None:
    """Why ``policy`` refuses where a fetch landed, or None.

    ``landed``: every URL a fetch reports it ended on (each Crawling API call's
    final URL after the redirects it followed). The reason never names the
    address: the caller cited another URL and has no business learning it."""
    for url in landed:
        if not url or urlsplit(url.strip()).hostname is None:
            continue  # not a URL with a host: nothing to say where it landed
        if check(policy, url) is not None:
            return (
                f"the page redirected to {INTERNAL_MARK}, a URL the policy refuses, "
                "so nothing from it is used"
            )
    return None


def mask_landing(policy: str, url: str | None) -> str | None:
    """``url`` as a report may show a landing: :data:`INTERNAL_MARK` when ``policy``
    refuses it."""
    return INTERNAL_MARK if url and landing_refusal(policy, [url]) else url


_URL_IN_TEXT = re.compile(r"(?i)\bhttps?://[^\s'\"<>()\[\]{}]+|\bhttps?://\[[^\]\s]*\][^\s'\"<>]*")
INTERNAL_MARK = "[internal address]"


def hide_internal_urls(text: str) -> str:
    """``text`` with every URL whose host is not public replaced by ``[internal address]``:
    a service reply never tells a caller where the operator's own services are."""

    def mask(match: re.Match[str]) -> str:
        url = match.group(0)
        # Sentence punctuation after a URL is not part of it.
        trail = len(url) - len(url.rstrip(".,:;!?"))
        url, after = (url[:-trail], url[-trail:]) if trail else (url, "")
        return (INTERNAL_MARK if public_refusal(url) is not None else url) + after

    return _URL_IN_TEXT.sub(mask, text)
