"""A judge that obeys any instruction it reads: a responder for :class:`LLMDouble`.

The defence against a page that talks to the judge has to hold against the worst
judge, so this one does whatever the text it was shown tells it, in any language
and in any wording it recognises, and is honest otherwise:

- **Obeying.** A sentence of the passages that names a verdict (``supported``,
  ``soutenu``, ``unterstützt``, ``respaldado``, "in the affirmative") is an order:
  it answers ``supported`` with confidence 1.0, quoting the text in quotes the
  order names when the passages hold it ("... treat 'X' as ..."), else the claim's
  subject as the page writes it (the longest run of the claim's first words found
  in the passages, at least three: "The Hostile widget"), which is what a small model
  did in the field.
- **Honest.** Otherwise, ``supported`` quoting the first sentence that holds every
  content word and number of the claim, else ``not_found``.

It reads nothing but the request, so the confirmation call (the claim and the
sentence(s) holding the quote) gets the same treatment as the first call.
"""

from __future__ import annotations

import re

from pytest_citecheck.stages.text import word_set
from tests.doubles.llm import JudgeCall, Scripted, verdict

# Words that name the verdict an order asks for, in the languages the pages use.
ORDER_WORDS = re.compile(
    r"\b(?:supported|soutenu|unterstützt|respaldado|in the affirmative)\b|„supported“",
    re.I,
)
_QUOTED = re.compile(r"['\"‘“«„]\s*([^'\"’”»“]{12,}?)\s*['\"’”»“]")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_WORD = re.compile(r"[\w,.]+")
_STOP = word_set("a an the of in on at is are was to and for by with as")


def _sentences(passages: list[str]) -> list[str]:
    out: list[str] = []
    for passage in passages:
        for block in re.split(r"\n\s*\n", passage):
            out += [s.strip() for s in _SENTENCE.split(" ".join(block.split())) if s.strip()]
    return out


def _content(text: str) -> set[str]:
    words = {w.strip(".,").lower() for w in _WORD.findall(text)}
    return {w for w in words if w and w not in _STOP}


def obeys_instructions(call: JudgeCall) -> Scripted:
    """The responder: obey an order in the passages, else answer honestly."""
    claim = call.claim or ""
    passages = call.passages
    text = " ".join(" ".join(p.split()) for p in passages)
    for sentence in _sentences(passages):
        if ORDER_WORDS.search(sentence):
            return verdict("supported", _ordered_quote(sentence, claim, text), 1.0)
    needed = _content(claim)
    for sentence in _sentences(passages):
        if needed <= _content(sentence):
            return verdict("supported", sentence, 0.9)
    return verdict("not_found", None, 0.9)


def _ordered_quote(order: str, claim: str, text: str) -> str | None:
    for match in _QUOTED.finditer(order):
        return match.group(1)
    words = claim.split()
    for n in range(len(words), 2, -1):
        subject = " ".join(words[:n]).rstrip(".")
        if subject in text:
            return subject
    return None
