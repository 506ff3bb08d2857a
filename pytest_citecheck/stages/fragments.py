"""Text fragments: ``#:~:text=`` in a cited URL, never sent anywhere.

The fragment is a quote of the page (:func:`text_fragment_quote`, read in
:mod:`pytest_citecheck.claims.fragments`, where a citation's quote and who wrote it
are: the provider only where its API produced the URL).

The fragment directive (``:~:`` and what follows) is never sent anywhere:
:func:`without_fragment_directive` is the URL the Crawling API fetches, so the cited
URL with or without a fragment is one request and one recording.
"""

from __future__ import annotations

from pytest_citecheck.claims.fragments import DIRECTIVE as _DIRECTIVE
from pytest_citecheck.claims.fragments import text_fragment_quote

__all__ = ["text_fragment_quote", "without_fragment_directive"]


def without_fragment_directive(url: str) -> str:
    """``url`` without its fragment directive; a fragment left empty goes with it."""
    head, hash_, fragment = url.partition("#")
    if not hash_ or _DIRECTIVE not in fragment:
        return url
    kept = fragment.split(_DIRECTIVE, 1)[0]
    return f"{head}#{kept}" if kept else head
