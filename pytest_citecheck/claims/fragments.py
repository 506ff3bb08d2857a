"""The text fragment of a cited URL (``#:~:text=``) read as the quote it points at.

Google AI Mode, Gemini and ChatGPT link a citation to the passage they read with a
text fragment (``https://example.com/page#:~:text=[prefix-,]start[,end][,-suffix]``,
each part percent-encoded). The browser scrolls to and highlights that text; for
citecheck it is a quote of the page: ``start``, or ``start ... end`` for a range (the
prefix and suffix only say where on the page the text sits, and are not part of it).

Who wrote that quote is who wrote the URL (:attr:`Citation.quote_by
<pytest_citecheck.claims.models.Citation.quote_by>`): the provider, only where its API
produced the URL (a native citation annotation); the model, for a link it printed in
its answer text; the person, for a URL typed into a claim file. Only the provider's
cannot be ``fabricated``. This module only reads the fragment; sending the URL without
it is :mod:`pytest_citecheck.stages.fragments`.
"""

from __future__ import annotations

from urllib.parse import unquote

__all__ = ["DIRECTIVE", "text_fragment_quote"]

DIRECTIVE = ":~:"


def text_fragment_quote(url: str) -> str | None:
    """The text the URL's first ``text=`` directive points at (``start ... end`` for a
    range), percent-decoded; None without one."""
    _, hash_, fragment = url.partition("#")
    if not hash_ or DIRECTIVE not in fragment:
        return None
    for directive in fragment.split(DIRECTIVE, 1)[1].split("&"):
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
