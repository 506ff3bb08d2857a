"""Text fragments: ``#:~:text=`` in a cited URL, never sent anywhere.

The fragment is a quote of the page (:func:`text_fragment_quote`, read in
:mod:`pytest_citecheck.claims.fragments`, where a citation's quote and who wrote it
are: the provider only where its API produced the URL).

No fragment is ever sent anywhere: every fetch path fetches the cited URL's fetch key
(:func:`~pytest_citecheck.core.urls.fetch_url`), so the cited URL with or without a
fragment is one request and one recording.
"""

from __future__ import annotations

from pytest_citecheck.claims.fragments import text_fragment_quote

__all__ = ["text_fragment_quote"]
