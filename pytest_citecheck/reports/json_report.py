"""The JSON report (``--citecheck-report``, also the baseline format), and the files
made from it (markdown, HTML).

Every string of it is scrubbed of secrets (:meth:`ReportJson.scrubbed_json`): what
every file is made from.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pytest_citecheck.claims.results import ClaimResult
from pytest_citecheck.core.secrets import scrub
from pytest_citecheck.engine.aggregate import AnswerFigures, AnswerTotals, Totals, answer_totals
from pytest_citecheck.reports.listings import ReportListings
from pytest_citecheck.reports.outputs import write_report

# Additive changes keep the format number: a report of any 0.x version loads as
# a baseline (only ``totals.citation_precision`` and ``claims[].nodeid/label``
# are read back).
REPORT_FORMAT = 1


class ReportJson(ReportListings):
    """The run as the JSON report's dict, and the files written from it."""

    def to_json(self) -> dict[str, Any]:
        t = self.totals
        data = self._to_json(t)
        answers = self.answers()
        if answers:
            totals_ = answer_totals(a for _, a in answers)
            data["answer_totals"] = {
                "answers": totals_.answers,
                "sentences": totals_.sentences,
                "uncited": totals_.uncited,
                "claims": totals_.claims,
                "supported": totals_.supported,
                "answer_support": totals_.support,
                **_alce_json(totals_),
            }
            data["answers"] = [_answer_json(file, a) for file, a in answers]
        conversations = self.conversations()
        if conversations:
            # Only when a conversation was imported: its turns' figures pooled.
            data["conversations"] = [_conversation_json(file, c) for file, c in conversations]
        return data

    def _to_json(self, t: Totals) -> dict[str, Any]:
        panel = self.panel_json()
        claims = [
            {
                "nodeid": nodeid,
                "passed": self.passed(nodeid),
                **_claim_json(result),
                **({"answer": result.answer.id} if result.answer is not None else {}),
                **_turn_json(result),
            }
            for nodeid, result in self.ordered()
        ]
        return {
            "citecheck_report": REPORT_FORMAT,
            "run": self.run,
            "totals": _totals_json(t),
            "files": {
                name: {**_totals_json(ft), "failed": self.failed_in(name)}
                for name, ft in self.files().items()
            },
            **({"spend": spent} if (spent := self.spend()) is not None else {}),
            **(
                {"confirmation": confirmed}
                if (confirmed := self.confirmation_json()) is not None
                else {}
            ),
            **({"joint": joint} if (joint := self.joint_json()) is not None else {}),
            "gate": self._gate_json(),
            "selection": {
                "claims": t.claims,
                "deselected": self.deselected,
                "subset": self.subset,
                "floors_not_applied": self.floors_not_applied,
                "baseline_over_same_claims": self.baseline_over_same_claims,
            },
            "baseline_precision": self.baseline_precision,
            "label_changes": [
                {"nodeid": c.nodeid, "before": c.before, "after": c.after}
                for c in self.label_changes()
            ],
            **({"panel": panel} if panel is not None else {}),
            "claims": claims,
        }

    def _gate_json(self) -> dict[str, Any]:
        from pytest_citecheck.engine.gate import GATE_NOT_DECIDED, GATE_PASSED

        verdict = self.gate_verdict
        return {
            "passed": verdict == GATE_PASSED,
            "decided": verdict != GATE_NOT_DECIDED,
            "failures": self.gate_failures,
            # Claims never started (no request, no cassette, no verdict), and why.
            "not_started": self.not_started,
            "stopped_by": (
                (self.stopped_by or "the run stopped") if self.not_started != 0 else None
            ),
            # Citations with no recording: how many, the command that records them and
            # what it needs (the HTML header and the markdown summary show it).
            **({"no_recording": missing} if (missing := self.missing_text()) else {}),
        }

    def scrubbed_json(self) -> dict[str, Any]:
        """:meth:`to_json` with every string scrubbed: what every file is made from."""
        data: dict[str, Any] = json.loads(scrub(json.dumps(self.to_json(), ensure_ascii=False)))
        return data

    def write_json(self, path: Path) -> None:
        write_report(path, json.dumps(self.scrubbed_json(), indent=2, ensure_ascii=False) + "\n")

    def write_markdown(self, path: Path, *, append: bool = False) -> None:
        from pytest_citecheck.reports.markdown import render_markdown

        write_report(path, render_markdown(self.scrubbed_json(), self.report_url), append=append)

    def write_html(self, path: Path) -> None:
        from pytest_citecheck.reports.html import render_html

        write_report(path, render_html(self.scrubbed_json()))


def _turn_json(result: ClaimResult) -> dict[str, Any]:
    """A claim's conversation and turn, when its answer is a turn of one."""
    outline = result.answer
    if outline is None or outline.turn is None:
        return {}
    return {"conversation": outline.conversation, "turn": outline.turn}


def _conversation_json(file: str, c: AnswerFigures) -> dict[str, Any]:
    return {
        "id": c.id,
        "file": file,
        "format": c.format,
        "sentences": len(c.sentences),
        "cited": c.cited,
        "uncited": c.uncited,
        "claims": c.claims,
        "supported": c.supported,
        "answer_support": c.support,
        **_alce_json(c),
    }


def _answer_json(file: str, a: AnswerFigures) -> dict[str, Any]:
    turn = {"conversation": a.conversation, "turn": a.turn} if a.turn is not None else {}
    return {
        "id": a.id,
        "file": file,
        "format": a.format,
        **turn,
        "sentences": len(a.sentences),
        "cited": a.cited,
        "uncited": a.uncited,
        "claims": a.claims,
        "supported": a.supported,
        "answer_support": a.support,
        **_alce_json(a),
        "rates": a.rates.to_json(),
        "text": [
            {
                "text": s.text,
                "claim_id": s.claim_id,
                "label": s.label.value if s.label else None,
                # ALCE: whether its citations support it (None: its claim did not run).
                "supported_by_citations": s.supported_by_citations if s.counted else None,
            }
            for s in a.sentences
        ],
    }


def _alce_json(figures: AnswerFigures | AnswerTotals) -> dict[str, Any]:
    """ALCE's citation recall and precision (a run's: the means over its answers) and
    the counts they come from."""
    return {
        "citation_recall": figures.citation_recall,
        "citation_precision": figures.citation_precision,
        "sentences_counted": figures.counted_sentences,
        "sentences_supported": figures.sentences_supported,
        "citations": figures.citations,
        "citations_supporting": figures.citations_supporting,
    }


# Verdict fields that are null unless a panel or an overruling guard set them: left out
# of the JSON report then, so a run without either writes what it always did.
_UNLESS_SET = (
    "judge_label",
    "judge_confidence",
    "panel",
    "confidence_raw",
    "judge_fallback",
    "confirmation",
    "joint",
    "archive",
)
# ... and the marker of a provider quote the page did not have, unless it is set.
_UNLESS_TRUE = ("provider_quote_not_on_page", "url_not_retrieved")


def _claim_json(result: ClaimResult) -> dict[str, Any]:
    data = result.model_dump(mode="json")
    for name in ("reason", "joint"):  # a claim's own, only when its sources decided together
        if data.get(name) is None:
            data.pop(name, None)
    for verdict in data["verdicts"]:
        for name in _UNLESS_SET:
            if verdict.get(name) is None:
                verdict.pop(name, None)
        for name in _UNLESS_TRUE:
            if not verdict.get(name):
                verdict.pop(name, None)
        for member in verdict.get("panel") or ():
            for name in ("confidence_raw", "judge_fallback"):
                if member.get(name) is None:
                    member.pop(name, None)
    return data


def _totals_json(t: Totals) -> dict[str, Any]:
    data: dict[str, Any] = {
        "claims": t.claims,
        "citations": t.citations,
        "citation_precision": t.citation_precision,
        "reachable_precision": t.reachable_precision,
        "by_label": t.by_label,
        "review": t.review,
        "credits": t.credits,
        "input_tokens": t.input_tokens,
        "output_tokens": t.output_tokens,
        # The deep-research audit's three rates (engine/rates.py).
        "rates": t.rates.to_json(),
    }
    if t.unanswered:
        # Only when there is one: judge tries billed, unanswered (in the tokens above).
        data["billed_unanswered"] = t.unanswered
    if t.provider_quote_not_on_page:
        # Only when there is one: a run without writes the totals it always did.
        data["provider_quote_not_on_page"] = t.provider_quote_not_on_page
    if t.url_not_retrieved:
        data["url_not_retrieved"] = t.url_not_retrieved
    return data
