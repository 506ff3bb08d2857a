"""Paywalls, named from structured signals only.

A page behind a subscription wall is not the article: what the crawler got is the
teaser and the wall, so "the page does not say it" would be the wrong answer. Like a
blocked page it is ``not_found`` with its own reason, ``paywalled``, marked for review.
It is named only when something structured says so -- never from the words on the
page, because an article that mentions subscriptions, or that ends "subscribe to read
more" under the full text, is still the article:

1. the origin answered **HTTP 402** Payment Required (``original_status``: what the
   site told the crawler, not the Crawling API's own 402, which means the account is
   out of credits and stops the run as a configuration error);
2. the page's schema.org **JSON-LD** says ``"isAccessibleForFree": false`` (a boolean
   or the strings ``"false"``/``"False"``/``https://schema.org/False``), on a top-level
   object, an item of ``@graph``, a ``hasPart`` part or the ``mainEntity`` (the markup
   Google asks paywalled publishers to add). The JSON-LD is read only where the reply
   carries it: a ``<script type="application/ld+json">`` block in the page text.
   The Crawling API's ``format=md`` leaves ``<script>`` out, so a markdown page never
   has one; HTML from a custom fetcher, a local HTML document or a recording does
   (docs/verification.md, "Paywalls");
3. the provider said so when it answered: Gemini's ``urlContextMetadata`` status
   ``URL_RETRIEVAL_STATUS_PAYWALL`` becomes the citation's ``paywall:`` on import
   (:attr:`~pytest_citecheck.claims.models.Citation.paywall`), and the page is not
   crawled at all (:func:`known_paywall_verdict`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pytest_citecheck.claims.labels import Label, Reason
from pytest_citecheck.claims.results import Verdict

# The origin's "Payment Required".
PAYWALL_STATUS = 402
# A JSON-LD block larger than this is not read (a page's metadata is a few KB).
MAX_JSON_LD_CHARS = 200_000
# How deep in hasPart/@graph/mainEntity the flag is looked for, and how many objects.
_MAX_DEPTH = 12
_MAX_OBJECTS = 2_000
# Where in a JSON-LD object the page's own parts are (not what it mentions or is part of).
_PAGE_PARTS = ("@graph", "hasPart", "mainEntity")
_NOT_FREE = frozenset({"false", "http://schema.org/false", "https://schema.org/false"})
_FLAG = "isAccessibleForFree"

# A JSON-LD script's opening tag, and any script's end. Found one after the other (not
# one lazy pattern), so a page of unclosed openings is read once, not once per opening.
_JSON_LD_OPEN = re.compile(
    r"<script\b[^>]*\btype\s*=\s*[\"']?\s*application/ld\+json\b[^>]*>", re.IGNORECASE
)
_SCRIPT_END = re.compile(r"</script\s*>", re.IGNORECASE)
# How many JSON-LD blocks of one page are read (pages have one to a few).
MAX_JSON_LD_BLOCKS = 32
_LD_JSON = re.compile(r"ld\+json", re.IGNORECASE)
# A script's content wrapped for old parsers: <!-- ... -->, //<![CDATA[ ... //]]>.
_WRAPPERS = re.compile(r"^\s*(?:<!--|(?://\s*)?<!\[CDATA\[)|(?:-->|(?://\s*)?\]\]>)\s*$")


@dataclass(frozen=True)
class Paywall:
    """Why the page is behind a paywall (shown in the verdict's detail)."""

    why: str


def paywall_signal(text: str | None, original_status: int | None) -> Paywall | None:
    """The structured signal that the reply is a paywall, or None: the origin's HTTP
    402, or schema.org JSON-LD in ``text`` saying ``isAccessibleForFree: false``.
    The words on the page are never read."""
    if original_status == PAYWALL_STATUS:
        return Paywall(f"the site answered HTTP {PAYWALL_STATUS} Payment Required")
    if text and not_free_json_ld(text):
        return Paywall("the page's schema.org JSON-LD says isAccessibleForFree: false")
    return None


def not_free_json_ld(text: str) -> bool:
    """Whether a JSON-LD block of ``text`` marks the page (or one of its parts) as not
    free to read. A block that is not valid JSON says nothing."""
    if _FLAG not in text and "\\u" not in text:
        return False  # cheap: no key of that name, written plainly or with JSON escapes
    if _LD_JSON.search(text) is None:
        return False  # most pages (every markdown page) have no JSON-LD at all
    for block in _json_ld_blocks(text):
        data = _parse(block)
        if data is not None and any(_says_not_free(obj) for obj in _objects(data)):
            return True
    return False


def _json_ld_blocks(text: str) -> Iterator[str]:
    """The content of each ``<script type="application/ld+json">`` of ``text``, in order
    (at most :data:`MAX_JSON_LD_BLOCKS`; an unclosed one ends the search)."""
    pos = 0
    for _ in range(MAX_JSON_LD_BLOCKS):
        opening = _JSON_LD_OPEN.search(text, pos)
        if opening is None:
            return
        end = _SCRIPT_END.search(text, opening.end())
        if end is None:
            return
        yield text[opening.end() : end.start()]
        pos = end.end()


def _parse(raw: str) -> Any:
    if len(raw) > MAX_JSON_LD_CHARS:
        return None
    body = _WRAPPERS.sub("", raw.strip()).strip()
    try:
        return json.loads(body)
    except (ValueError, RecursionError):
        return None


def _objects(data: Any) -> Iterator[dict[str, Any]]:
    """The page's JSON-LD objects: the top level (one object or a list of them) and,
    below each, its ``@graph`` items, ``hasPart`` parts and ``mainEntity``; bounded in
    depth and count, so hostile markup cannot make it slow."""
    stack: list[tuple[Any, int]] = [(data, 0)]
    seen = 0
    while stack and seen < _MAX_OBJECTS:
        node, depth = stack.pop()
        if isinstance(node, list):
            if depth < _MAX_DEPTH:
                stack.extend((item, depth + 1) for item in node)
            continue
        if not isinstance(node, dict):
            continue
        seen += 1
        yield node
        if depth < _MAX_DEPTH:
            stack.extend((node[key], depth + 1) for key in _PAGE_PARTS if key in node)


def _says_not_free(obj: dict[str, Any]) -> bool:
    value = obj.get(_FLAG)
    if value is False:
        return True
    return isinstance(value, str) and value.strip().lower() in _NOT_FREE


def paywalled_detail(paywall: Paywall) -> str:
    return (
        f"The page is behind a paywall ({paywall.why}): what the crawler got is not the "
        "article, so it was not judged; a person with access should check it."
    )


def known_paywall_verdict(url: str, said_by: str) -> Verdict:
    """A citation whose provider already said the page is paywalled (``paywall:``):
    ``not_found``, ``paywalled``, review, and no crawl is paid for."""
    return Verdict(
        url=url,
        label=Label.NOT_FOUND,
        reason=Reason.PAYWALLED,
        review=True,
        detail=(
            f"Not fetched: the provider reported a paywall ({said_by}). A person with "
            "access should check the page; remove `paywall:` from the citation to crawl "
            "it anyway."
        ),
    )
