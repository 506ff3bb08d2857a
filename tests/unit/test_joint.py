"""The joint judgment's rules, on fake judges: every quote on its own source, two sources
at least, the confirmation on the quotes' sentences, and which claims make the call."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pytest

from pytest_citecheck.claims.labels import Label, Reason
from pytest_citecheck.claims.results import JointReply, Passage, Verdict
from pytest_citecheck.core.errors import StageFailed
from pytest_citecheck.engine.joint import JointStep, joint_candidates
from pytest_citecheck.stages.joint import guard_joint
from pytest_citecheck.stages.judges.http import joint_from_object
from pytest_citecheck.stages.judges.joint import joint_user_message

CLAIM = "Acme Robotics was founded in 1998 and was acquired by Globex in 2014."
FOUNDED = "Acme Robotics was founded in 1998 by two engineers in Leeds."
ACQUIRED = "Globex acquired Acme Robotics in 2014 for an undisclosed sum."
PAGE_A = f"# Acme Robotics\n\n{FOUNDED} It builds warehouse arms."
PAGE_B = f"# Globex news\n\n{ACQUIRED} The brand was kept."
URL_A, URL_B, URL_C = "https://a.example/acme", "https://b.example/globex", "https://c.example/x"


def reply(label: str, quotes: dict[int, str], confidence: float = 0.9) -> JointReply:
    return joint_from_object(
        {
            "label": label,
            "quotes": [{"source": k, "quote": v} for k, v in quotes.items()],
            "confidence": confidence,
        }
    )


def alone(url: str, text: str, label: Label = Label.NOT_FOUND, **extra: object) -> Verdict:
    """A citation judged alone: what the pipeline hands the joint step."""
    return Verdict(
        url=url,
        label=label,
        confidence=0.9,
        judge="openai:gpt-4o-mini",
        passages=[Passage(index=0, text=text)],
        **extra,  # type: ignore[arg-type]
    )


@dataclass
class Joint:
    """A joint judge answering from a list, the confirmation included; logs what it read."""

    answers: list[JointReply]
    name: str = "openai:gpt-4o-mini"
    asked: list[list[list[str]]] = field(default_factory=list)

    def judge_jointly(self, claim: str, sources: Sequence[Sequence[str]]) -> JointReply:
        self.asked.append([list(s) for s in sources])
        return self.answers.pop(0)


SHOWN = [[Passage(index=0, text=PAGE_A)], [Passage(index=0, text=PAGE_B)]]


def test_quotes_each_on_its_own_source_support_jointly() -> None:
    guarded = guard_joint(
        reply("supported", {1: FOUNDED, 2: ACQUIRED}), [URL_A, URL_B], SHOWN, CLAIM
    )
    assert guarded.supported
    assert [s.verified for s in guarded.sources] == [True, True]


def test_a_quote_given_for_the_wrong_source_is_refused_there() -> None:
    # Both quotes are real, but the judge swapped the sources: neither is on its own one.
    guarded = guard_joint(
        reply("supported", {1: ACQUIRED, 2: FOUNDED}), [URL_A, URL_B], SHOWN, CLAIM
    )
    assert not guarded.supported
    assert guarded.verified == 0
    assert {s.reason for s in guarded.sources} == {Reason.EVIDENCE_QUOTE_NOT_IN_SOURCE}
    assert guarded.reason == Reason.JOINT_TOO_FEW_SOURCES


def test_one_verified_source_is_not_joint_support() -> None:
    made_up = "Globex bought Acme Robotics in the year 2014."
    guarded = guard_joint(
        reply("supported", {1: FOUNDED, 2: made_up}), [URL_A, URL_B], SHOWN, CLAIM
    )
    assert guarded.verified == 1
    assert not guarded.supported
    assert guarded.sources[1].reason == Reason.EVIDENCE_QUOTE_NOT_IN_SOURCE


def test_two_quotes_from_one_source_count_once_and_an_unknown_source_is_refused() -> None:
    answer = reply("supported", {1: FOUNDED, 3: ACQUIRED})
    guarded = guard_joint(answer, [URL_A, URL_B], SHOWN, CLAIM)
    assert guarded.verified == 1 and not guarded.supported
    assert guarded.sources[1].quote is None  # source 3 is no source of this prompt


def test_the_prompt_tags_every_passage_with_its_source() -> None:
    text = joint_user_message(CLAIM, [[PAGE_A], ["one", "two"]])
    assert '<passage source="1" n="1">' in text
    assert '<passage source="2" n="2">\ntwo\n</passage>' in text
    # A page cannot close the data block: its layout tags are escaped.
    assert "&lt;/untrusted_passages>" in joint_user_message(CLAIM, [["</untrusted_passages>"]])


def test_a_joint_reply_off_the_schema_is_an_error() -> None:
    with pytest.raises(StageFailed) as caught:
        joint_from_object({"label": "supported", "quotes": [{"source": "1"}], "confidence": 1})
    assert caught.value.reason == Reason.JUDGE_SCHEMA_MISMATCH


def step(*answers: JointReply, **settings: object) -> tuple[JointStep, Joint]:
    judge = Joint(list(answers))
    return JointStep(judge=judge, **settings), judge  # type: ignore[arg-type]


def test_the_claim_is_supported_jointly_and_the_citations_that_quoted_are_marked() -> None:
    joint, judge = step(
        reply("supported", {1: FOUNDED, 2: ACQUIRED}, 0.9),
        reply("supported", {1: FOUNDED, 2: ACQUIRED}, 0.85),
    )
    other = alone(URL_C, "Unrelated text about warehouses and their robots.")
    verdicts, judgment = joint.apply(CLAIM, [alone(URL_A, PAGE_A), alone(URL_B, PAGE_B), other])
    assert judgment is not None and judgment.status == "supported"
    a, b, c = verdicts
    assert (a.label, a.reason, a.evidence_quote) == (
        Label.SUPPORTED,
        Reason.SUPPORTED_JOINTLY,
        FOUNDED,
    )
    assert a.joint is not None and a.joint.alone is Label.NOT_FOUND
    assert a.joint.together_with == [URL_B]
    assert b.label is Label.SUPPORTED and b.evidence_quote == ACQUIRED
    assert c == other  # the source it did not use keeps its own verdict
    # The confirmation read only the sentences holding the quotes, one passage a source.
    assert judge.asked[1] == [[FOUNDED], [ACQUIRED]]
    assert judgment.confirmation is not None and judgment.confirmation.status == "confirmed"
    assert a.confidence == 0.85  # the lower of the two readings


def test_an_unconfirmed_joint_support_keeps_the_single_verdicts() -> None:
    joint, _ = step(reply("supported", {1: FOUNDED, 2: ACQUIRED}), reply("not_found", {}, 0.7))
    verdicts = [alone(URL_A, PAGE_A), alone(URL_B, PAGE_B)]
    out, judgment = joint.apply(CLAIM, verdicts)
    assert out == verdicts
    assert judgment is not None and judgment.status == "unconfirmed"


def test_quotes_verified_on_one_source_keep_the_single_verdicts() -> None:
    joint, judge = step(reply("supported", {1: FOUNDED, 2: FOUNDED}))
    verdicts = [alone(URL_A, PAGE_A), alone(URL_B, PAGE_B)]
    out, judgment = joint.apply(CLAIM, verdicts)
    assert out == verdicts
    assert judgment is not None and judgment.status == "not_supported"
    assert judgment.reason == Reason.JOINT_TOO_FEW_SOURCES
    assert len(judge.asked) == 1  # nothing to confirm


def test_a_claim_one_source_supports_makes_no_joint_call() -> None:
    joint, judge = step()
    verdicts = [alone(URL_A, PAGE_A, Label.SUPPORTED), alone(URL_B, PAGE_B)]
    assert joint.apply(CLAIM, verdicts) == (verdicts, None)
    assert judge.asked == []


@pytest.mark.parametrize(
    ("verdicts", "chosen"),
    [
        ([alone(URL_A, PAGE_A)], []),  # one source
        ([alone(URL_A, PAGE_A), alone(URL_A, PAGE_A)], []),  # the same source twice
        ([alone(URL_A, PAGE_A), alone(URL_B, PAGE_B, Label.CONTRADICTED)], []),
        ([alone(URL_A, PAGE_A), alone(URL_B, PAGE_B, Label.ERROR)], []),
        # A page not judged (a soft 404: no passages) does not take part.
        ([alone(URL_A, PAGE_A), Verdict(url=URL_B, label=Label.NOT_FOUND, reason="soft_404")], []),
        # A page's instruction to the judge never takes part.
        (
            [
                alone(URL_A, PAGE_A),
                alone(URL_B, PAGE_B),
                alone(URL_C, PAGE_B, reason=Reason.SUSPECTED_INJECTION),
            ],
            [0, 1],
        ),
        (
            [
                alone(URL_A, PAGE_A),
                Verdict(url=URL_C, label=Label.UNREACHABLE),
                alone(URL_B, PAGE_B),
            ],
            [0, 2],
        ),
    ],
)
def test_which_citations_the_joint_judgment_reads(
    verdicts: list[Verdict], chosen: list[int]
) -> None:
    assert joint_candidates(verdicts) == chosen


def test_a_recording_made_without_it_replays_the_single_verdicts() -> None:
    joint, judge = step(recorded=False)
    verdicts = [alone(URL_A, PAGE_A), alone(URL_B, PAGE_B)]
    out, judgment = joint.apply(CLAIM, verdicts)
    assert out == verdicts and judge.asked == []
    assert judgment is not None and judgment.status == "not_recorded"


def test_a_failed_joint_call_fails_the_citations_it_read() -> None:
    @dataclass
    class Down:
        name: str = "openai:gpt-4o-mini"

        def judge_jointly(self, claim: str, sources: Sequence[Sequence[str]]) -> JointReply:
            raise StageFailed(Reason.JUDGE_UNAVAILABLE, "no connection")

    out, judgment = JointStep(judge=Down()).apply(
        CLAIM, [alone(URL_A, PAGE_A), alone(URL_B, PAGE_B)]
    )
    assert judgment is None
    assert [(v.label, v.reason) for v in out] == [(Label.ERROR, Reason.JUDGE_UNAVAILABLE)] * 2
