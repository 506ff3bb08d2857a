"""Whether a judge's quote is about the claim: read in its passage, not on its own.

The guard proves a quote came from the page; this checks that it came from a
part of the page that speaks of the claim. A quote copied from an unrelated
paragraph (a page's instruction to the judge, a menu, another story) must not
decide a citation.

The quote alone is a poor test: a correct contradiction can share no content
word with the claim ("Use of this claim is OPTIONAL." decides "The exp claim is
required"; "The cause was complications after surgery" decides "killed by a
bear"). So the quote is read **in its passage** -- the passage (or run of
adjacent passages) of the page that holds it, or a document's section:

- the quote is about the claim when it shares at least one content term with
  the claim, or when its passage shares at least :data:`MIN_SHARED_TERMS`
  (fewer if the claim has fewer);
- a content term is a word that is not a stop word, of at least three
  characters (or any number), cut to its first :data:`STEM_CHARS` characters
  so "contracts"/"contract" and "expiration"/"expires" compare equal.

The rate at which this refuses true evidence is measured on WiCE dev's gold
evidence sentences by ``bench/relevance.py`` (docs/verification.md states it).
"""

from __future__ import annotations

from pytest_citecheck.stages.text import STOP_WORDS, WORD, remembered

MIN_SHARED_TERMS = 2
STEM_CHARS = 5


@remembered(maxsize=2048)
def terms(text: str) -> frozenset[str]:
    """The content terms of ``text`` (casefolded, stop words dropped, stemmed by prefix)."""
    found: set[str] = set()
    for word in WORD.findall(text.casefold()):
        if word.endswith("'s"):
            word = word[:-2]
        if word in STOP_WORDS:
            continue
        if word.isdigit():
            found.add(word.lstrip("0") or "0")
        elif len(word) >= 3:
            found.add(word[:STEM_CHARS])
    return frozenset(found)


def about_claim(claim: str, quote: str, passage: str) -> bool:
    """Whether ``quote``, read in ``passage`` (the text that holds it), is about ``claim``."""
    wanted = terms(claim)
    if not wanted:
        return True  # a claim with no content word cannot be tested this way
    if wanted & terms(quote):
        return True
    return len(wanted & terms(passage)) >= min(MIN_SHARED_TERMS, len(wanted))
