"""The RFC 7519 cookbook case end to end through ``pipeline.Verifier``.

Local-document citations never fetch and never rank (when they carry a quote
or a section): the fetcher and ranker here fail the test if called. The judge
is scripted and counts its calls.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from pytest_citecheck.claims.labels import Label, Reason
from pytest_citecheck.claims.models import Citation, Claim
from pytest_citecheck.engine.judging import Judging
from pytest_citecheck.engine.pipeline import Verifier
from pytest_citecheck.stages.fetch import FetchResult
from pytest_citecheck.stages.judges.base import JudgeReply

RFC7519 = Path(__file__).parents[1] / "data" / "rfc7519.txt"
EXP_DEFINITION = 'The "exp" (expiration time) claim identifies the expiration time'


@dataclass
class ScriptedJudge:
    """Answers the scripted replies in order and records what it was asked."""

    replies: list[JudgeReply] = field(default_factory=list)
    calls: list[tuple[str, list[str]]] = field(default_factory=list)
    name: str = "scripted:test"
    # The confirmation calls (stages/confirm.py), answered as a consistent judge does:
    # the same label, when the one passage it reads holds the quote it gave.
    confirmations: list[tuple[str, list[str]]] = field(default_factory=list)
    _last: JudgeReply | None = None

    def judge(self, claim: str, passages: Sequence[str]) -> JudgeReply:
        last = self._last
        if (
            last is not None
            and last.quote is not None
            and len(passages) == 1
            and " ".join(last.quote.split()) in " ".join(passages[0].split())
        ):
            self.confirmations.append((claim, list(passages)))
            self._last = None
            return last
        self.calls.append((claim, list(passages)))
        assert self.replies, "the judge was asked more often than scripted"
        self._last = self.replies.pop(0)
        return self._last


class NoFetcher:
    def fetch(self, url: str) -> FetchResult:
        raise AssertionError(f"a document citation fetched {url}")


class NoRanker:
    def rank(self, claim: str, passages: Sequence[str], k: int) -> list[tuple[int, float]]:
        raise AssertionError("a document citation with a quote or section was ranked")


def reply(label: str, quote: str | None, confidence: float = 0.95) -> JudgeReply:
    return JudgeReply.model_validate({"label": label, "quote": quote, "confidence": confidence})


def cite(quote: str | None = None, section: str | None = None) -> Citation:
    return Citation(
        document="sources/rfc7519.txt", document_path=RFC7519, quote=quote, section=section
    )


def verifier(*replies: JudgeReply) -> tuple[Verifier, ScriptedJudge]:
    judge = ScriptedJudge(replies=list(replies))
    return Verifier(fetcher=NoFetcher(), ranker=NoRanker(), judging=Judging(judge=judge)), judge


def test_correct_quote_is_supported_in_its_section() -> None:
    claim = "A JWT must not be accepted for processing on or after its expiration time."
    v, judge = verifier(reply("supported", "the JWT MUST NOT be accepted for processing"))
    verdict = v.verify_citation(
        claim, cite(quote="identifies the expiration time on or after which the JWT MUST NOT")
    )
    assert verdict.label is Label.SUPPORTED
    assert verdict.section == "4.1.4"
    assert verdict.evidence_quote == "the JWT MUST NOT be accepted for processing"
    assert verdict.reason is None and not verdict.review
    assert verdict.url == "sources/rfc7519.txt"
    assert verdict.judge == "scripted:test"
    # The judge read exactly section 4.1.4, page furniture removed.
    [(asked_claim, passages)] = judge.calls
    assert asked_claim == claim
    [text] = passages
    assert text.startswith('4.1.4.  "exp" (Expiration Time) Claim')
    assert "clock skew" in text and "[Page 9]" not in text and '"nbf"' not in text
    # The confirmation read the quote's sentence alone, not the section around it.
    [(_, [evidence])] = judge.confirmations
    assert evidence == (
        'The "exp" (expiration time) claim identifies the expiration time on or after '
        "which the JWT MUST NOT be accepted for processing."
    )
    assert verdict.confirmation is not None and verdict.confirmation.status == "confirmed"


def test_quote_with_typographic_quotes_across_a_page_break_is_found() -> None:
    v, judge = verifier(reply("supported", "Implementers MAY provide for some small leeway"))
    verdict = v.verify_citation(
        "Implementations may allow a few minutes of clock skew for exp.",
        cite(quote="listed in the \u201cexp\u201d claim.\nImplementers MAY provide"),
    )
    assert (verdict.label, verdict.section, len(judge.calls)) == (Label.SUPPORTED, "4.1.4", 1)


def test_invented_quote_is_fabricated_without_asking_the_judge() -> None:
    v, judge = verifier()
    invented = 'The "exp" claim MUST be present in every JWT.'
    verdict = v.verify_citation("The exp claim is mandatory.", cite(quote=invented))
    assert verdict.label is Label.FABRICATED
    assert verdict.reason == Reason.QUOTE_NOT_IN_DOCUMENT
    assert verdict.evidence_quote == invented
    assert judge.calls == []


def test_section_saying_the_opposite_is_contradicted() -> None:
    v, judge = verifier(reply("contradicted", "Use of this claim is OPTIONAL."))
    verdict = v.verify_citation("Every JWT must carry an exp claim.", cite(quote=EXP_DEFINITION))
    assert verdict.label is Label.CONTRADICTED
    assert verdict.section == "4.1.4"
    assert verdict.evidence_quote == "Use of this claim is OPTIONAL."
    assert len(judge.calls) == 1


def test_section_saying_nothing_about_the_claim_is_not_found() -> None:
    v, judge = verifier(reply("not_found", None, 0.9))
    verdict = v.verify_citation(
        "The exp claim must be signed with RS256.", cite(quote=EXP_DEFINITION)
    )
    assert verdict.label is Label.NOT_FOUND
    assert verdict.reason is None and verdict.evidence_quote is None
    assert verdict.section == "4.1.4"
    assert len(judge.calls) == 1


def test_section_only_citation_is_judged_on_that_section() -> None:
    v, judge = verifier(reply("supported", "then the JWT MUST be\nrejected"))
    verdict = v.verify_citation(
        "A JWT whose aud claim does not name the recipient must be rejected.",
        cite(section="Section 4.1.3"),
    )
    assert verdict.label is Label.SUPPORTED
    assert verdict.section == "4.1.3"
    [(_, [text])] = judge.calls
    assert text.startswith('4.1.3.  "aud" (Audience) Claim')


def test_unknown_section_is_not_found_without_asking_the_judge() -> None:
    v, judge = verifier()
    verdict = v.verify_citation("Anything.", cite(section="4.1.9"))
    assert verdict.label is Label.NOT_FOUND
    assert verdict.reason == Reason.SECTION_NOT_IN_DOCUMENT
    assert judge.calls == []


@pytest.mark.parametrize(
    "quote",
    [
        # true of the RFC, but from 4.1.5, which the judge was not shown
        'the not-before date/time listed in the "nbf" claim',
        # not in the RFC at all
        "The exp claim is OPTIONAL and MUST be ignored.",
    ],
)
def test_judge_quote_outside_the_section_is_caught_by_the_guard(quote: str) -> None:
    v, _ = verifier(reply("supported", quote))
    verdict = v.verify_citation("exp is optional.", cite(quote=EXP_DEFINITION))
    assert verdict.label is Label.NOT_FOUND
    assert verdict.reason == Reason.EVIDENCE_QUOTE_NOT_IN_SOURCE
    assert verdict.confidence == 0.0
    assert verdict.evidence_quote == quote


def test_low_confidence_is_marked_for_review() -> None:
    v, _ = verifier(reply("supported", "Use of this claim is OPTIONAL.", 0.6))
    verdict = v.verify_citation("The exp claim is optional.", cite(section="4.1.4"))
    assert verdict.label is Label.SUPPORTED and verdict.review


def test_claim_level_labels() -> None:
    v, judge = verifier(
        reply("supported", "Use of this claim is OPTIONAL."),  # exp-optional, section 4.1.4
        reply("supported", "This claim can be used to determine the age of the JWT."),
        reply("not_found", None),
    )
    claims = [
        Claim(
            id="exp-optional",
            claim="The exp claim is optional.",
            citations=[cite(section="4.1.4")],
        ),
        Claim(
            id="iat-age-and-fabricated",
            claim="The iat claim tells how old a JWT is.",
            citations=[
                cite(quote="This claim can be used to determine the age of the JWT."),
                cite(quote="The iat claim MUST be rejected if older than one hour."),
            ],
        ),
        Claim(
            id="nothing-relevant",
            claim="JWTs must use RS256.",
            citations=[cite(quote=EXP_DEFINITION)],
        ),
        Claim(id="no-citations", claim="Unsupported.", citations=[]),
    ]
    results = {claim.id: v.verify_claim(claim) for claim in claims}
    assert results["exp-optional"].label is Label.SUPPORTED
    # A fabricated citation outweighs a supported one.
    assert results["iat-age-and-fabricated"].labels == [Label.SUPPORTED, Label.FABRICATED]
    assert results["iat-age-and-fabricated"].label is Label.CONTRADICTED
    assert results["nothing-relevant"].label is Label.NOT_FOUND
    assert results["no-citations"].label is Label.NOT_FOUND
    assert len(judge.calls) == 3  # the fabricated quote never reached the judge


def test_same_citation_twice_in_a_claim_is_judged_once() -> None:
    v, judge = verifier(reply("supported", "Use of this claim is OPTIONAL."))
    result = v.verify_claim(
        Claim(
            id="twice",
            claim="The exp claim is optional.",
            citations=[cite(section="4.1.4"), cite(section="4.1.4")],
        )
    )
    assert result.labels == [Label.SUPPORTED, Label.SUPPORTED]
    assert len(judge.calls) == 1


class FirstPassages:
    """A ranker that shows the first ``k`` passages."""

    def rank(self, claim: str, passages: Sequence[str], k: int) -> list[tuple[int, float]]:
        return [(i, 1.0) for i in range(min(k, len(passages)))]


def test_a_provider_quote_the_document_lacks_is_judged_on_retrieval_and_marked() -> None:
    judge = ScriptedJudge(replies=[reply("not_found", None)])
    v = Verifier(fetcher=NoFetcher(), ranker=FirstPassages(), judging=Judging(judge=judge))
    # What Anthropic's char_location cited_text says of another version of the document.
    other = 'The "exp" claim MUST be present in every JWT.'
    citation = cite(quote=other).model_copy(update={"quote_by": "provider"})
    verdict = v.verify_citation("The exp claim is mandatory.", citation)
    assert verdict.label is Label.NOT_FOUND
    assert verdict.provider_quote_not_on_page is True
    [(_, passages)] = judge.calls
    assert len(passages) == 3  # retrieval's passages of the whole document


def test_an_elided_quote_is_found_in_its_section() -> None:
    v, judge = verifier(reply("supported", "the JWT MUST NOT be accepted for processing"))
    verdict = v.verify_citation(
        "A JWT must not be accepted after its expiration time.",
        cite(quote='The "exp" (expiration time) claim identifies ... MUST NOT be accepted'),
    )
    assert (verdict.label, verdict.section) == (Label.SUPPORTED, "4.1.4")
    assert len(judge.calls) == 1
