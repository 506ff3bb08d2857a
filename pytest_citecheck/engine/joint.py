"""The joint judgment of a claim's sources: the step after every citation was judged alone.

When a claim cites two or more sources and none supports it alone, one more judge call
reads the top passages of all of them (the passages each citation's own judge call read,
tagged with their source: :mod:`pytest_citecheck.stages.judges.joint`) and answers a
label with one quote per source it used. The guard checks every quote on its own
source (:mod:`pytest_citecheck.stages.joint`); a joint ``supported`` needs verified
quotes from two sources or more and, unless the confirmation is off, a confirming
second call that reads only the sentence(s) holding those quotes. Then:

- every citation that carried a verified quote becomes ``supported``, reason
  ``supported_jointly``, its quote the evidence, the label it had alone kept in its
  ``joint`` field; a citation the judgment did not use keeps its own verdict;
- the claim is ``supported``, reason ``supported_jointly``, and keeps the judgment
  (:class:`~pytest_citecheck.claims.results.JointJudgment`) with its calls' tokens,
  shown apart from the first readings' as the confirmation's are.

Anything less (the judge's ``not_found`` or ``contradicted``, quotes verified on one
source only, an unconfirmed support) keeps the single-source verdicts, the judgment
recorded beside them. Which sources take part (:func:`joint_candidates`): each distinct
cited source whose own verdict is a plain ``not_found`` the judge reached on passages;
a claim with a supported, contradicted, fabricated or failed citation makes no joint
call (it is decided already, or the run failed). A judge panel and a custom judge
without ``judge_jointly`` make none either (docs/verification.md).

The call is one more judge exchange in the claim's cassette, its body deterministic
(sources in citation order, passages in page order), and replays offline; a recording
made without it (``joint: true`` absent from its metadata) replays the single verdicts,
the judgment ``not_recorded``. A joint call that fails fails the claim's candidates
(``error``), as any judge call does: nothing is saved and recording it again asks again.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, cast

from pytest_citecheck.claims.labels import Label, Reason
from pytest_citecheck.claims.results import (
    JointJudgment,
    JointPart,
    JointReply,
    Passage,
    Verdict,
)
from pytest_citecheck.core.errors import (
    ConfigurationError,
    CrawlDeferred,
    JudgeDeferred,
    ResponseTooLarge,
    StageFailed,
)
from pytest_citecheck.core.text import truncate
from pytest_citecheck.stages.quote_policy import EXACT, QuotePolicy

# A single verdict the joint judgment may complete: a plain not_found, or one whose
# quote the guard refused (the judge leaned on a part of the claim). A page's
# instruction, an off-topic quote or a refused confirmation never take part.
JOINABLE_REASONS = frozenset(
    {None, Reason.EVIDENCE_QUOTE_NOT_IN_SOURCE, Reason.EVIDENCE_QUOTE_TOO_SHORT}
)
# Labels that decide a claim without the joint judgment (or say the run failed).
_DECIDED = frozenset({Label.SUPPORTED, Label.CONTRADICTED, Label.FABRICATED, Label.ERROR})
_QUOTE_CHARS = 2000
_SHOWN_CHARS = 160


class JointJudge(Protocol):
    """A judge that can judge a claim on several sources at once (every built-in one)."""

    @property
    def name(self) -> str: ...

    def judge_jointly(self, claim: str, sources: Sequence[Sequence[str]]) -> JointReply: ...


def joint_step(
    judge: object, panel: Sequence[object], *, enabled: bool = True, **settings: Any
) -> JointStep | None:
    """The joint step a claim's verifier takes with ``judge`` (``settings``: the
    :class:`JointStep` fields), None when it makes none: turned off, a judge panel (its
    members vote one citation at a time), or a judge without ``judge_jointly`` (a custom
    one; a recording's judge has it when the judge it wraps does)."""
    if not enabled or panel or not callable(getattr(judge, "judge_jointly", None)):
        return None
    return JointStep(judge=cast(JointJudge, judge), **settings)


def joint_candidates(verdicts: Sequence[Verdict]) -> list[int]:
    """The verdicts (indices, first of each distinct source) the joint judgment reads;
    empty when it is not made: fewer than two such sources, or a verdict that decides
    the claim (supported, contradicted, fabricated) or failed (error)."""
    if any(v.label in _DECIDED for v in verdicts):
        return []
    chosen: dict[str, int] = {}
    for index, verdict in enumerate(verdicts):
        if (
            verdict.label is Label.NOT_FOUND
            and verdict.judge is not None
            and verdict.panel is None
            and verdict.passages
            and verdict.reason in JOINABLE_REASONS
        ):
            chosen.setdefault(verdict.url, index)
    return list(chosen.values()) if len(chosen) >= 2 else []


ErrorClassifier = Callable[[BaseException], "tuple[str, str] | None"]


@dataclass
class JointStep:
    """Judges a claim's not-found sources together (module doc)."""

    judge: JointJudge
    quote_policy: QuotePolicy = EXACT
    review_below: float = 0.8
    confirm: bool = True
    # False: replaying a recording made without the confirmation / the joint judgment.
    confirm_recorded: bool = True
    recorded: bool = True
    classify_error: ErrorClassifier | None = None

    def apply(
        self, claim: str, verdicts: list[Verdict]
    ) -> tuple[list[Verdict], JointJudgment | None]:
        """``verdicts`` after the joint judgment, and the judgment (None: not made)."""
        chosen = joint_candidates(verdicts)
        if not chosen:
            return verdicts, None
        urls = [verdicts[i].url for i in chosen]
        shown = [verdicts[i].passages for i in chosen]
        if not self.recorded:
            return verdicts, JointJudgment(status="not_recorded", judge=self.judge.name)
        try:
            judgment, quotes = self._judge(claim, urls, shown)
        except (JudgeDeferred, CrawlDeferred):
            raise
        except Exception as exc:  # a failure must never count as success
            return self._failed(verdicts, urls, exc), None
        if judgment.status != "supported":
            return verdicts, judgment
        return self._supported(claim, verdicts, judgment, quotes, shown), judgment

    def _judge(
        self, claim: str, urls: list[str], shown: list[list[Passage]]
    ) -> tuple[JointJudgment, dict[str, str]]:
        """The joint call, its guard and its confirmation: the judgment, and the verified
        quote of each source it supported on (by URL; empty unless supported)."""
        from pytest_citecheck.stages.joint import confirm_joint, guard_joint

        reply = self._ask(claim, [[p.text for p in passages] for passages in shown])
        guarded = guard_joint(reply, urls, shown, claim, self.quote_policy)
        judgment = JointJudgment(
            status="supported" if guarded.supported else "not_supported",
            judge=self.judge.name,
            label=guarded.label,
            confidence=guarded.confidence,
            sources=[
                s.model_copy(update={"quote": _cap(s.quote, _QUOTE_CHARS)}) for s in guarded.sources
            ],
            reason=guarded.reason,
            usage=reply.usage,
        )
        if not guarded.supported:
            return judgment, {}
        if self.confirm:
            confirmation = confirm_joint(
                lambda sources: self._ask(claim, sources),
                guarded,
                shown,
                recorded=self.confirm_recorded,
                policy=self.quote_policy,
            )
            judgment = judgment.model_copy(update={"confirmation": confirmation})
            if confirmation.status == "unconfirmed":
                detail = (
                    "reading only the sentence(s) holding the quotes, the judge answered "
                    f"{confirmation.label}, its quotes verified on "
                    f"{confirmation.verified} source(s)"
                )
                return judgment.model_copy(
                    update={"status": "unconfirmed", "reason": Reason.UNCONFIRMED, "detail": detail}
                ), {}
            if confirmation.confidence is not None:
                judgment = judgment.model_copy(
                    update={"confidence": min(guarded.confidence, confirmation.confidence)}
                )
        return judgment, {urls[i]: q for i, q in guarded.quotes.items()}

    def _ask(self, claim: str, sources: list[list[str]]) -> JointReply:
        try:
            return self.judge.judge_jointly(claim, sources)
        except ResponseTooLarge as exc:
            raise StageFailed(
                Reason.JUDGE_REPLY_TOO_LARGE,
                f"the judge's reply is larger than {exc.limit} bytes",
            ) from None

    def _supported(
        self,
        claim: str,
        verdicts: list[Verdict],
        judgment: JointJudgment,
        quotes: dict[str, str],
        shown: list[list[Passage]],
    ) -> list[Verdict]:
        """Each citation that carried a verified quote, ``supported`` jointly."""
        from pytest_citecheck.stages.evidence import evidence_sentences
        from pytest_citecheck.stages.numbers import missing_numbers

        evidence = " ".join(
            evidence_sentences(quotes[v.url], v.passages) for v in _firsts(verdicts, quotes)
        )
        missing = missing_numbers(claim, evidence)
        confidence = judgment.confidence
        review = (confidence is not None and confidence < self.review_below) or bool(missing)
        out = []
        for verdict in verdicts:
            quote = quotes.get(verdict.url)
            if quote is None or verdict.label is not Label.NOT_FOUND:
                out.append(verdict)
                continue
            others = [url for url in quotes if url != verdict.url]
            detail = "supported together with " + "; ".join(
                f"{url} ({_shown(quotes[url])})" for url in others
            )
            if missing:
                detail += (
                    "; the evidence does not state "
                    f"{', '.join(repr(m) for m in missing)} of the claim"
                )
            out.append(
                verdict.model_copy(
                    update={
                        "label": Label.SUPPORTED,
                        "reason": Reason.SUPPORTED_JOINTLY,
                        "evidence_quote": _cap(quote, _QUOTE_CHARS),
                        "confidence": confidence,
                        "detail": detail,
                        "review": review or verdict.review,
                        "judge_label": None,
                        "judge_confidence": None,
                        "judge_quote": None,
                        "quote_similarity": None,
                        "joint": JointPart(
                            alone=verdict.label,
                            alone_reason=verdict.reason,
                            alone_quote=verdict.evidence_quote,
                            together_with=others,
                        ),
                    }
                )
            )
        return out

    def _failed(
        self, verdicts: list[Verdict], urls: list[str], exc: BaseException
    ) -> list[Verdict]:
        """The candidates ``error``: the joint call failed (nothing of the claim is saved)."""
        if isinstance(exc, ConfigurationError):
            reason, detail = Reason.CONFIGURATION, str(exc)
        elif isinstance(exc, StageFailed):
            reason, detail = exc.reason, exc.detail
        else:
            classified = self.classify_error(exc) if self.classify_error else None
            reason, detail = classified or (Reason.INTERNAL, f"{type(exc).__name__}: {exc}")
        detail = f"the joint judgment of the claim's sources failed: {detail}"
        return [
            v.model_copy(
                update={"label": Label.ERROR, "reason": reason, "detail": _cap(detail, 1000)}
            )
            if v.url in urls and v.label is Label.NOT_FOUND
            else v
            for v in verdicts
        ]


def _firsts(verdicts: Sequence[Verdict], quotes: dict[str, str]) -> list[Verdict]:
    """The first verdict of each source that has a verified quote, in citation order."""
    seen: dict[str, Verdict] = {}
    for verdict in verdicts:
        if verdict.url in quotes:
            seen.setdefault(verdict.url, verdict)
    return list(seen.values())


def _cap(text: str | None, limit: int) -> str | None:
    return None if text is None else truncate(text, limit)


def _shown(quote: str) -> str:
    return repr(truncate(quote, _SHOWN_CHARS, flatten=True))
