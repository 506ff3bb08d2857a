"""Text fragments: ``#:~:text=`` in a cited URL is a quote of the page.

Google AI Mode, Gemini and ChatGPT link a citation to the passage they read with a
text fragment (``https://example.com/page#:~:text=[prefix-,]start[,end][,-suffix]``,
each part percent-encoded). The browser scrolls to and highlights that text; for
citecheck it is a quote the provider extracted from the page, so
:func:`text_fragment_quote` reads it as one (``start ... end``; the prefix and suffix
only say where on the page the text sits, and are not part of it).

No fragment is ever sent anywhere: every fetch path fetches the cited URL's fetch key
(:func:`~pytest_citecheck.core.urls.fetch_url`), so the cited URL with or without a
fragment is one request and one recording.
"""

from __future__ import annotations

from urllib.parse import unquote

_DIRECTIVE = ":~:"


def text_fragment_quote(url: str) -> str | None:
    """The text the URL's first ``text=`` directive points at (``start ... end`` for a
    range), percent-decoded; None without one."""
    _, hash_, fragment = url.partition("#")
    if not hash_ or _DIRECTIVE not in fragment:
        return None
    for directive in fragment.split(_DIRECTIVE, 1)[1].split("&"):
        name, equals, value = directive.partition("=")
        if name != "text" or not equals:
            continue
        parts = value.split(",")
        if parts and parts[0].endswith("-"):
            parts = parts[1:]  # the prefix
        if parts and parts[-1].startswith("-"):
            parts = parts[:-1]  # the suffix
        texts = [unquote(part).strip() for part in parts[:2]]
        if texts and all(texts):
            return " ... ".join(texts)
    return None
