"""The Inspect AI front end: a scorer that verifies the citations of a sample's output.

``citecheck_scorer(cassettes=...)`` (docs/inspect.md) imports the sample's final message as
``citecheck import`` reads an Inspect log (:mod:`~pytest_citecheck.claims.importers.inspect_log`),
verifies every cited sentence with the engine into one cassette per sample
(``<cassettes>/<sample id>.yaml``, replayed under ``record="none"``, the default, with no
network), and returns one Inspect ``Score``: its value the answer's figures (``passed``,
``support``, ``citation_precision``, ``citation_recall``: means over the samples), its
answer the claims' labels, its explanation each citation's label, reason and quote, its
metadata every verdict. ``passed`` is the claim gate's rule (engine/gate.claim_problems):
no citation contradicted, fabricated or in error (and what the gate settings add); an
answer that cites nothing does not pass.

Settings are keyword arguments with the option table's names (``judge``, ``ranker``,
``review_below``, ``fail_not_retrieved``...). The record mode comes from ``record``, else
from the ``CITECHECK_RECORD`` environment variable, so a task records with
``CITECHECK_RECORD=once inspect eval task.py`` and replays in CI unchanged.
"""

from __future__ import annotations

import atexit
import os
import shlex
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_citecheck.claims.importers.answer import ImportedAnswer, ResponseImportError
from pytest_citecheck.claims.importers.inspect_log import import_sample, sample_answer_id
from pytest_citecheck.claims.labels import Label
from pytest_citecheck.claims.results import ClaimResult
from pytest_citecheck.core.terms import JUDGE_FROM_FLAG, Terms
from pytest_citecheck.options.settings_map import engine_settings, gate_settings
from pytest_citecheck.options.table import OPTIONS
from pytest_citecheck.recording.recorder import sample_cassette_path

if TYPE_CHECKING:
    from pytest_citecheck.engine.core import Engine

__all__ = ["RECORD_VARIABLE", "CitecheckScoring", "inspect_terms"]

RECORD_VARIABLE = "CITECHECK_RECORD"
# The settings a task passes by name; the record mode is the scorer's own argument.
_SETTINGS = {
    o.name: o for o in OPTIONS if o.target in ("engine", "gate") and o.name != "record_mode"
}
_RECORD = next(o for o in OPTIONS if o.name == "record_mode")
FIGURES = ("passed", "support", "citation_precision", "citation_recall")


def inspect_terms() -> Terms:
    """How the scorer's messages name its settings and the command that records."""

    def record(nodeid: str, mode: str) -> str:
        return f"{RECORD_VARIABLE}={shlex.quote(mode)} inspect eval YOUR_TASK.py"

    return Terms(
        options={name: f"citecheck_scorer({name}=...)" for name in [*_SETTINGS, "record"]},
        assign="=",
        judge_origins={JUDGE_FROM_FLAG: "citecheck_scorer(judge=...)"},
        record=record,
        replay=f"{RECORD_VARIABLE} unset (record='none')",
    )


def _value(name: str, value: Any) -> Any:
    option = _SETTINGS[name]
    if isinstance(value, str) and option.parse is not None:
        value = option.parse(value)
    return option.convert(value) if option.convert is not None else value


class CitecheckScoring:
    """The scorer's work, free of Inspect's types: one sample's JSON in, its score's parts
    out (the Inspect ``Score`` is made in ``pytest_citecheck.inspect``)."""

    def __init__(
        self,
        cassettes: str | Path,
        record: str | None,
        settings: Mapping[str, Any],
    ) -> None:
        unknown = sorted(set(settings) - set(_SETTINGS))
        if unknown:
            raise TypeError(
                f"citecheck_scorer() got unknown setting(s) {', '.join(unknown)}; "
                f"known: {', '.join(sorted(_SETTINGS))}"
            )
        values = {name: _value(name, v) for name, v in settings.items()}
        mode = record or os.environ.get(RECORD_VARIABLE) or "none"
        values["record_mode"] = _RECORD.convert(mode) if _RECORD.convert is not None else mode
        terms = inspect_terms()
        fixed: dict[str, Any] = {"terms": terms}
        if "judge" in values:
            fixed["judge_origin"] = JUDGE_FROM_FLAG
        self.cassettes = Path(cassettes)
        self.engine_settings = engine_settings(values, **fixed)
        self.gate = gate_settings(values, terms=terms)
        self._engine: Engine | None = None
        self._lock = threading.Lock()

    def engine(self) -> Engine:
        """The one engine of this scorer, built on the first sample: every sample's claims
        share its limits (the Crawling API's concurrency) and its budget (``max_cost``).
        Closed when the process ends (an Inspect scorer is never told the eval is over)."""
        from pytest_citecheck.engine.core import Engine

        with self._lock:
            if self._engine is None:
                self._engine = Engine.from_settings(self.engine_settings)
                atexit.register(self._engine.close)
            return self._engine

    def answer(self, sample: Mapping[str, Any]) -> ImportedAnswer:
        sid = sample_answer_id(sample.get("id", "sample"), sample.get("epoch", 1))
        return import_sample(dict(sample), answer_id=sid, name=f"sample {sid}")

    def verify(self, answer: ImportedAnswer) -> list[ClaimResult]:
        """Every claim of the answer, verified into the sample's one cassette."""
        claims = [c.claim.model_copy(update={"answer": answer.outline()}) for c in answer.claims]
        if not claims:
            return []
        cassette = sample_cassette_path(self.cassettes, answer.id)
        engine = self.engine()
        engine.preflight(claims, cassette_for=lambda claim: cassette)
        with engine.recording(cassette, answer.id) as recording:
            return [engine.verify_in(recording, claim) for claim in claims]

    def score(self, sample: Mapping[str, Any]) -> dict[str, Any]:
        """The score's fields (``value``, ``answer``, ``explanation``, ``metadata``)."""
        from pytest_citecheck.engine.aggregate import figures
        from pytest_citecheck.engine.gate import claim_problems

        try:
            answer = self.answer(sample)
        except ResponseImportError as exc:
            return {
                "value": dict.fromkeys(FIGURES, 0.0),
                "answer": "error",
                "explanation": f"the output cannot be imported: {exc}",
                "metadata": {"error": str(exc)},
            }
        results = self.verify(answer)
        found = figures(answer.outline(), {r.id: r for r in results})
        problems = {r.id: claim_problems(r, self.gate) for r in results}
        passed = bool(results) and not any(problems.values())
        value = {
            "passed": 1.0 if passed else 0.0,
            "support": found.support or 0.0,
            "citation_precision": found.citation_precision or 0.0,
            "citation_recall": found.citation_recall or 0.0,
        }
        return {
            "value": value,
            "answer": ", ".join(f"{r.id}: {r.label.value}" for r in results) or "no citation",
            "explanation": _explanation(answer, results, problems),
            "metadata": {
                "claims": [_claim_metadata(r, problems[r.id]) for r in results],
                "uncited": [s.text for s in answer.uncited],
                "notes": answer.notes,
                "cassette": sample_cassette_path(self.cassettes, answer.id).as_posix(),
            },
        }


def _explanation(
    answer: ImportedAnswer, results: list[ClaimResult], problems: Mapping[str, list[str]]
) -> str:
    if not results:
        return "no sentence of the answer cites a source" + (
            f" ({'; '.join(answer.notes)})" if answer.notes else ""
        )
    lines = []
    for result in results:
        lines.append(f"{result.label.value}: {result.claim}")
        for verdict in result.verdicts:
            where = verdict.url
            reason = f" ({verdict.reason})" if verdict.reason else ""
            quote = f' "{verdict.evidence_quote}"' if verdict.evidence_quote else ""
            lines.append(f"  {where}: {verdict.label.value}{reason}{quote}")
            if verdict.detail and verdict.label is Label.ERROR:
                lines.append(f"    {verdict.detail}")
        lines += [f"  fails: {p}" for p in problems[result.id]]
    return "\n".join(lines)


def _claim_metadata(result: ClaimResult, problems: list[str]) -> dict[str, Any]:
    return {
        "id": result.id,
        "label": result.label.value,
        "problems": problems,
        "citations": [
            {
                "url": v.url,
                "label": v.label.value,
                "reason": v.reason,
                "detail": v.detail,
                "evidence_quote": v.evidence_quote,
                "confidence": v.confidence,
                "review": v.review,
            }
            for v in result.verdicts
        ],
    }
