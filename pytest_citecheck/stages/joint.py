"""The joint judgment's guard: every quote checked on its own source, and two sources at least.

The joint judgment (:mod:`pytest_citecheck.stages.judges.joint`) answers a label and one
quote per source it used. The judge interprets; it is never the source of truth, so each
quote passes the guard one citation's quote passes (:func:`pytest_citecheck.stages.guard.guard`:
the quote policy, the evidence minimum, injection in its sentence, relevance to the
claim), **on the passages of the source it names and on no other**: a quote that is on
source 2 but given for source 1 is refused for source 1. A joint ``supported`` stands only
when quotes were verified on at least :data:`MIN_SOURCES` distinct sources; otherwise the
claim keeps its single-source verdicts.

The first quote given for a source is the one checked (the prompt asks for one per
source); another for the same source is ignored. A source number the prompt did not give
is refused.

The confirmation (:func:`confirm_joint`) reads what one citation's confirmation reads,
for each verified source: the sentence(s) holding its quote
(:func:`~pytest_citecheck.stages.evidence.evidence_sentences`), one passage per source and
nothing else of the pages; its answer is guarded the same way on those sentences.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pytest_citecheck.claims.labels import Label, Reason
from pytest_citecheck.claims.results import (
    JointConfirmation,
    JointReply,
    JointSource,
    JudgeReply,
    Passage,
)
from pytest_citecheck.stages.evidence import evidence_sentences
from pytest_citecheck.stages.guard import guard
from pytest_citecheck.stages.quote_policy import EXACT, QuotePolicy

# A joint support needs verified quotes from this many sources (one source alone was
# already asked, and said no).
MIN_SOURCES = 2


@dataclass(frozen=True)
class JointGuarded:
    """A joint reply after the guard: each source with its quote and whether it holds."""

    label: Label  # what the judge answered
    confidence: float
    sources: list[JointSource]
    # The accepted quote of each verified source, by source index (the page's span in
    # fuzzy mode).
    quotes: dict[int, str]

    @property
    def verified(self) -> int:
        return len(self.quotes)

    @property
    def supported(self) -> bool:
        """``supported`` with quotes verified on :data:`MIN_SOURCES` sources or more."""
        return self.label is Label.SUPPORTED and self.verified >= MIN_SOURCES

    @property
    def reason(self) -> str | None:
        """Why this is no joint support (None: it is one, or the judge said not_found)."""
        if self.supported or self.label is not Label.SUPPORTED:
            return None
        return Reason.JOINT_TOO_FEW_SOURCES


def guard_joint(
    reply: JointReply,
    urls: Sequence[str],
    shown: Sequence[Sequence[Passage]],
    claim: str | None,
    policy: QuotePolicy = EXACT,
) -> JointGuarded:
    """``reply`` with each quote checked on the passages of its own source (module doc).
    ``urls[i]`` names source ``i + 1`` of the prompt, ``shown[i]`` its passages. With
    ``claim``, the guard's claim checks too (injection, relevance): the first reading's;
    the confirmation's answer is guarded without them, as one citation's is."""
    label = Label(reply.label)
    given: dict[int, str] = {}
    unknown: list[str] = []
    for item in reply.quotes:
        index = item.source - 1
        if not 0 <= index < len(urls):
            unknown.append(item.quote)
        elif index not in given:
            given[index] = item.quote
    sources: list[JointSource] = []
    accepted: dict[int, str] = {}
    for index, url in enumerate(urls):
        quote = given.get(index)
        if quote is None:
            sources.append(JointSource(url=url))
            continue
        if label is Label.NOT_FOUND:
            # A quote given with not_found decides nothing: kept, never evidence.
            sources.append(JointSource(url=url, quote=quote))
            continue
        one = JudgeReply(label=reply.label, quote=quote, confidence=reply.confidence)
        guarded = guard(one, shown[index], policy, claim)
        if guarded.label is label and guarded.quote is not None:
            accepted[index] = guarded.quote
            sources.append(JointSource(url=url, quote=guarded.quote, verified=True))
        else:
            sources.append(JointSource(url=url, quote=quote, reason=guarded.reason))
    confidence = min(max(reply.confidence, 0.0), 1.0)
    return JointGuarded(label, confidence, sources, accepted)


def confirm_joint(
    ask: Callable[[list[list[str]]], JointReply],
    guarded: JointGuarded,
    shown: Sequence[Sequence[Passage]],
    *,
    recorded: bool = True,
    policy: QuotePolicy = EXACT,
) -> JointConfirmation:
    """The confirmation of a joint support (module doc): ``ask(sources)`` asks the same
    judge the joint question about the claim, one list of passages per source.
    ``recorded=False``: replaying a recording made without it (nothing is asked)."""
    order = sorted(guarded.quotes)
    evidence = [evidence_sentences(guarded.quotes[i], shown[i]) for i in order]
    if not recorded:
        return JointConfirmation(status="not_recorded", evidence=evidence)
    reply = ask([[text] for text in evidence])
    second = guard_joint(
        reply,
        [guarded.sources[i].url for i in order],
        [[Passage(index=0, text=text)] for text in evidence],
        None,
        policy,
    )
    return JointConfirmation(
        status="confirmed" if second.supported else "unconfirmed",
        evidence=evidence,
        label=Label(reply.label),
        confidence=second.confidence,
        verified=second.verified,
        usage=reply.usage,
    )
