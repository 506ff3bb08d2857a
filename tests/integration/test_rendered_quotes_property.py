"""Properties of quotes against a page as a reader sees it, over real pages: a span
of the rendered text copied, cut with ellipses, taken from one passage, or invented.

The pages are the example suite's (recorded WiCE pages, the bundled RFC, its sources
table) and this repository's own documentation, which has the links, tables,
emphasis, lists and code the recorded pages lack. Hundreds of examples each: the
worked examples are in tests/unit/test_rendered_quotes.py.
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from pytest_citecheck.claims.labels import Label
from pytest_citecheck.claims.results import JudgeReply, Passage
from pytest_citecheck.stages.guard import QuoteIndex, guard, quote_in_passages
from pytest_citecheck.stages.passages import split_passages
from pytest_citecheck.stages.quote_policy import thin_piece
from pytest_citecheck.stages.rendered import ELLIPSIS, locate, quote_pieces, render
from tests.unit.test_rendered_quotes import PAGES, WORD, page


@st.composite
def rendered_span(draw: st.DrawFn, min_chars: int = 20, max_chars: int = 240) -> tuple[str, str]:
    """A page and a span of its rendered text, cut anywhere (mid-word included)."""
    path = draw(st.sampled_from(PAGES))
    text = render(page(path)).text
    start = draw(st.integers(0, max(0, len(text) - min_chars)))
    end = draw(st.integers(min(len(text), start + min_chars), min(len(text), start + max_chars)))
    span = text[start:end].strip()
    assume(len(WORD.findall(span)) >= 3)
    return page(path), span


PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(rendered_span())
def test_a_quote_copied_from_any_rendered_span_is_found_and_mapped_back(
    found: tuple[str, str],
) -> None:
    markdown, quote = found
    span = locate(markdown, quote)
    assert span is not None
    start, end = span
    # The markdown span holds the quote's words, in order: the highlight marks the
    # page's own text (cut words at the ends are parts of the words there).
    source = markdown[start:end]
    at = 0
    for word in WORD.findall(quote):
        at = source.find(word, at)
        assert at != -1, (word, source)
        at += len(word)


@PROPERTY
@given(rendered_span(), st.data())
def test_a_quote_cut_with_ellipses_at_word_boundaries_or_mid_word_at_the_ends_is_found(
    found: tuple[str, str], data: st.DataObject
) -> None:
    markdown, span = found
    words = span.split(" ")
    assume(len(words) >= 5)
    # The page's own dots next to the quote's ellipsis cannot be told apart ("Options"
    # + "..." + "...)" is "Options......)"): the quote reader takes every "..." as a cut.
    assume(not ELLIPSIS.search(span))
    # Elide a run of whole words somewhere inside, as a model or provider does.
    cut = data.draw(st.integers(1, len(words) - 3))
    length = data.draw(st.integers(1, len(words) - cut - 2))
    assume(not words[cut + length].startswith("."))  # "is" + "..." + ".pdf": as above
    ellipsis = data.draw(st.sampled_from(["...", "…", "[...]", " ... "]))
    # "." + "..." + "arriving" is "....arriving": as above
    assume(not (ellipsis == "..." and words[cut - 1].endswith(".")))
    quote = " ".join(words[:cut]) + ellipsis + " ".join(words[cut + length :])
    # Anthropic marks a cut at either end with dots too.
    lead = data.draw(st.sampled_from(["", "...", "… "]))
    assume(not (lead == "..." and words[0].startswith(".")))  # "...": as above
    quote = lead + quote
    quote += data.draw(st.sampled_from(["", "...", " …"]))
    assert locate(markdown, quote) is not None
    index = QuoteIndex(split_passages(markdown))
    # A provider's cut keeps its own rule: its pieces in order, none refused.
    assert index.find(quote, provider=True) or _across_passages(markdown, span)
    # A model's or a person's elided quote is held to more: each piece a real span.
    if index.find(quote):
        assert thin_piece(quote_pieces(quote)) is None


def _across_passages(markdown: str, span: str) -> bool:
    """Whether ``span`` of the whole page's rendering runs over a passage boundary that
    renders differently on its own (a paragraph cut inside its emphasis or link)."""
    return not any(span in render(p).text for p in split_passages(markdown))


@PROPERTY
@given(st.sampled_from(PAGES), st.data())
def test_a_quote_from_one_passage_is_in_the_passages_the_judge_was_shown(
    path: Path, data: st.DataObject
) -> None:
    passages = split_passages(page(path))
    i = data.draw(st.integers(0, len(passages) - 1))
    text = render(passages[i]).text
    assume(len(text) >= 20)
    start = data.draw(st.integers(0, len(text) - 20))
    quote = text[start : data.draw(st.integers(start + 20, min(len(text), start + 300)))]
    assume(len(WORD.findall(quote)) >= 3)
    # A quote a page repeats (docs show the same figures twice) is found where it first is.
    assume(not any(quote in render(p).text for j, p in enumerate(passages) if j != i))
    assert quote_in_passages(quote, [Passage(index=i, text=passages[i])])
    assert (i, i) in QuoteIndex(passages).find(quote) or any(
        first <= i <= last for first, last in QuoteIndex(passages).find(quote)
    )


@PROPERTY
@given(
    st.sampled_from(PAGES),
    st.lists(st.text("bcdfghjklmnpqrstvwxz", min_size=5, max_size=9), min_size=3, max_size=8),
    st.sampled_from(["", " ... ", " … "]),
)
def test_an_invented_quote_is_never_found(path: Path, words: list[str], ellipsis: str) -> None:
    markdown = page(path)
    lowered = markdown.lower()
    assume(all(word not in lowered for word in words))
    half = len(words) // 2
    quote = " ".join(words[:half]) + (ellipsis or " ") + " ".join(words[half:])
    assert locate(markdown, quote) is None
    passages = split_passages(markdown)
    assert QuoteIndex(passages).find(quote) == []
    shown = [Passage(index=i, text=t) for i, t in enumerate(passages)]
    reply = JudgeReply(label="supported", quote=quote, confidence=0.9)
    assert guard(reply, shown).label is Label.NOT_FOUND
