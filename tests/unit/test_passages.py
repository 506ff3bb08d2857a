"""Cutting page text into passages."""

from __future__ import annotations

import json
from itertools import pairwise
from pathlib import Path

import pytest

from pytest_citecheck.stages.passages import MAX_WORDS, split_passages
from pytest_citecheck.stages.text import normalise

DATA = Path(__file__).parents[1] / "data"


def words(n: int, prefix: str = "w") -> str:
    return " ".join(f"{prefix}{i}" for i in range(n))


def test_paragraphs_are_packed_up_to_the_limit() -> None:
    text = "\n\n".join(words(60, p) for p in "abcdefg")  # 7 x 60 words
    passages = split_passages(text)
    assert [len(p.split()) for p in passages] == [180, 180, 60]
    assert passages[0] == "\n\n".join(words(60, p) for p in "abc")


def test_exactly_the_limit_fits_one_passage() -> None:
    text = f"{words(100, 'a')}\n\n{words(100, 'b')}\n\n{words(1, 'c')}"
    assert [len(p.split()) for p in split_passages(text)] == [MAX_WORDS, 1]


def test_long_paragraph_is_cut_on_word_boundaries() -> None:
    paragraph = words(450)
    passages = split_passages(paragraph)
    assert [len(p.split()) for p in passages] == [200, 200, 50]
    assert " ".join(passages) == paragraph  # no word split, none lost
    assert passages[1].split()[0] == "w200"


def test_long_paragraph_starts_a_passage_and_its_tail_packs_with_what_follows() -> None:
    text = f"{words(30, 'a')}\n\n{words(250, 'b')}\n\n{words(40, 'c')}"
    passages = split_passages(text)
    assert [len(p.split()) for p in passages] == [30, 200, 90]
    assert passages[2] == f"{words(250, 'b').split(' ', 200)[200]}\n\n{words(40, 'c')}"


def test_line_breaks_inside_a_cut_paragraph_are_kept() -> None:
    paragraph = "\n".join(words(10, f"l{n}_") for n in range(25))  # 250 words, 25 lines
    first, second = split_passages(paragraph)
    assert first.count("\n") == 19 and len(first.split()) == 200
    assert second.startswith("l20_0 ")


@pytest.mark.parametrize(
    "text",
    ["", "   ", "\n\n\n", " \t\n \u00a0\n\r\n\f\n"],
)
def test_blank_text_gives_no_passages(text: str) -> None:
    assert split_passages(text) == []


def test_blank_blocks_are_dropped_and_paragraphs_stripped() -> None:
    text = "\n\n  first para  \n \n\t\n\n\u00a0\n\nsecond\r\n\r\nthird  \n\n\n"
    assert split_passages(text) == ["first para\n\nsecond\n\nthird"]


def test_smaller_limit() -> None:
    assert split_passages("a b c\n\nd e\n\nf", max_words=3) == ["a b c", "d e\n\nf"]
    with pytest.raises(ValueError, match="at least 1"):
        split_passages("a", max_words=0)


def test_deterministic() -> None:
    text = (DATA / "rfc7519.txt").read_text()
    assert split_passages(text) == split_passages(text)


def test_real_page_text() -> None:
    """WiCE page text: every word kept, in order, no passage over the limit, and
    every evidence sentence is in one passage or two adjacent ones."""
    records = [
        json.loads(line)
        for line in (DATA / "wice_supported_single_gold.jsonl").read_text().splitlines()
    ]
    for record in records:
        text = record["source_text"]
        passages = split_passages(text)
        assert passages, record["id"]
        assert all(1 <= len(p.split()) <= MAX_WORDS for p in passages), record["id"]
        assert " ".join(passages).split() == text.split(), record["id"]
        joined = [normalise(p) for p in passages]
        pairs = [f"{a} {b}" for a, b in pairwise(joined)]
        for evidence_set in record["evidence_sets"]:
            for sentence in evidence_set:
                needle = normalise(sentence)
                assert any(needle in t for t in joined + pairs), (record["id"], sentence)


def test_markdown_page_keeps_structure_within_passages() -> None:
    page = "# Title\n\nIntro line one\nline two\n\n- item 1\n- item 2\n\n| a | b |\n|---|---|\n"
    assert split_passages(page) == [
        "# Title\n\nIntro line one\nline two\n\n- item 1\n- item 2\n\n| a | b |\n|---|---|"
    ]


# -- sentences kept whole ---------------------------------------------


def sentence(n: int, tag: str, end: str = ".") -> str:
    return " ".join(f"{tag}{i}" for i in range(n)) + end


def test_one_sentence_a_line_is_cut_at_a_line_end() -> None:
    # WiCE's layout: one paragraph, one sentence a line. 8 x 30 words = 240 words;
    # the seed cut at word 200, inside the seventh sentence.
    lines = [sentence(30, f"s{n}_", end="") for n in range(8)]
    first, second = split_passages("\n".join(lines))
    assert first == "\n".join(lines[:6])  # 180 words: the last line end within budget
    assert second == "\n".join(lines[6:])
    assert [len(p.split()) for p in split_passages("\n".join(lines), keep_sentences=False)] == [
        200,
        40,
    ]


def test_prose_is_cut_after_a_full_stop() -> None:
    a, b, c, d = sentence(90, "a"), sentence(70, "b", "?"), sentence(60, "c", '!"'), "d."
    assert split_passages(f"{a} {b} {c} {d}") == [f"{a} {b}", f"{c} {d}"]


def test_no_sentence_end_in_the_second_half_falls_back_to_words() -> None:
    # The only sentence end is at word 40, too early: a 40-word passage would
    # waste most of the budget, so the cut falls on the 200th word.
    text = f"{sentence(40, 'a')} {sentence(300, 'b', '')}"
    passages = split_passages(text)
    assert [len(p.split()) for p in passages] == [200, 140]
    assert " ".join(passages) == text


def test_a_cut_tail_still_packs_with_the_next_paragraph() -> None:
    lines = [sentence(50, f"s{n}_") for n in range(5)]  # 250 words
    passages = split_passages("\n".join(lines) + "\n\n" + words(20, "p"))
    assert passages == ["\n".join(lines[:4]), f"{lines[4]}\n\n{words(20, 'p')}"]
