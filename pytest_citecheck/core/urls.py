"""The fetch key: the one URL a cited URL is fetched as, on every fetch path.

A URL's fragment (``#section``, a ``#:~:text=`` text fragment) is for a browser: it
never reaches the page's server, so it is not part of the page. :func:`fetch_url` is
what the synchronous fetch asks the Crawling API for, what a Crawler job pushes and
finds each delivery by, what a recheck compares and what a cassette matches on (a
recording made with a fragment in the ``url=`` parameter replays without it). The
same page cited with and without a fragment is one request, one recording and one
verdict, whichever path fetched it; reports keep the URL as it was cited.

A route fragment (``#/docs/intro``, ``#!/docs/intro``) is kept, its fragment
directive dropped: a page rendered in a browser reads it to choose what it shows.
"""

from __future__ import annotations

# A text fragment's directive (``:~:text=...``): never part of a route either.
_DIRECTIVE = ":~:"
# A fragment that starts with one of these is a route a page's script reads.
_ROUTE_STARTS = ("/", "!")


def fetch_url(url: str) -> str:
    """``url`` as every fetch path fetches, pushes, records and looks it up: without
    its fragment, a route fragment kept without its fragment directive (the module's
    docstring)."""
    head, hash_, fragment = url.partition("#")
    if not hash_:
        return url
    route = fragment.split(_DIRECTIVE, 1)[0]
    return f"{head}#{route}" if route.startswith(_ROUTE_STARTS) else head


def page_link(url: str, page: int | None) -> str:
    """``url`` opened at ``page`` of a PDF (``URL#page=12``, the fragment PDF viewers
    read); ``url`` itself when there is no page."""
    if page is None:
        return url
    return f"{url.split('#', 1)[0]}#page={page}"
