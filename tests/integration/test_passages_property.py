"""Cutting any page into passages keeps the guard's guarantee (hypothesis, over pages
of generated sentences); the worked examples are in tests/unit/test_passages.py."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_citecheck.claims.results import Passage
from pytest_citecheck.stages.guard import quote_in_passages
from pytest_citecheck.stages.passages import MAX_WORDS, split_passages
from tests.unit.test_passages import sentence

page_sentences = st.lists(
    st.tuples(st.integers(1, 140), st.sampled_from([".", "?", "!", "", ".)"])),
    min_size=1,
    max_size=30,
)


@settings(max_examples=150, deadline=None)
@given(
    page_sentences,
    st.lists(st.sampled_from([" ", "\n", " \n", "\n\n"]), min_size=30, max_size=30),
)
def test_the_guards_guarantee_holds_for_any_page(
    shape: list[tuple[int, str]], gaps: list[str]
) -> None:
    """Every word kept in order, no passage over budget, a short sentence inside one
    passage, and any quote of the page is accepted by the guard when the judge was
    shown just the passages it touches."""
    texts = [sentence(n, f"s{k}_", end) for k, (n, end) in enumerate(shape)]
    page = "".join(t + gap for t, gap in zip(texts, gaps, strict=False))
    passages = split_passages(page)
    assert " ".join(passages).split() == page.split()
    assert all(1 <= len(p.split()) <= MAX_WORDS for p in passages)
    spans = []  # where each passage lies in the page
    at = 0
    for passage in passages:
        at = page.index(passage, at)
        spans.append((at, at + len(passage)))
        at += len(passage)
    for k, text in enumerate(texts):
        start = page.index(text)
        touched = [i for i, (a, b) in enumerate(spans) if a < start + len(text) and start < b]
        assert touched == list(range(touched[0], touched[-1] + 1))
        after_an_end = k == 0 or texts[k - 1][-1] in ".?!)" or "\n" in gaps[k - 1]
        ends = text[-1] in ".?!)" or k == len(texts) - 1 or "\n" in gaps[k]
        if len(text.split()) <= MAX_WORDS // 2 and after_an_end and ends:
            assert len(touched) == 1, text
        shown = [Passage(index=i, text=passages[i]) for i in touched]
        assert quote_in_passages(text, shown)
