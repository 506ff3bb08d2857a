"""The end of a run (``reports.finish.finish_run``), as every front end gets it."""

from __future__ import annotations

import json
from pathlib import Path

from pytest_citecheck.claims.labels import Label
from pytest_citecheck.claims.results import ClaimResult, Verdict
from pytest_citecheck.core.terms import Terms
from pytest_citecheck.engine.gate import Baseline, BaselineError, GateSettings
from pytest_citecheck.reports.audit import AuditIndex
from pytest_citecheck.reports.finish import AuditRun, finish_run
from pytest_citecheck.reports.outputs import Outputs

TERMS = Terms(options={"min_precision": "--floor", "audit": "--rows"})


def claim(cid: str, *labels: Label) -> ClaimResult:
    verdicts = [
        Verdict(url=f"https://example.com/{cid}/{i}", label=label) for i, label in enumerate(labels)
    ]
    worst = Label.SUPPORTED if all(x == Label.SUPPORTED for x in labels) else labels[-1]
    return ClaimResult(id=cid, claim=f"claim {cid}", label=worst, verdicts=verdicts)


RESULTS = {
    "citecheck_a.yaml::one": claim("one", Label.SUPPORTED, Label.SUPPORTED),
    "citecheck_a.yaml::two": claim("two", Label.SUPPORTED, Label.NOT_FOUND),
}


def test_a_baseline_that_cannot_be_read_fails_the_gate_first_and_shows_no_label_diff() -> None:
    gate = GateSettings(min_precision=0.9, terms=TERMS)
    report = finish_run(
        RESULTS, gate, Outputs(), baseline=BaselineError("baseline b.json does not exist")
    )
    assert report.gate_failures[0] == "baseline b.json does not exist"
    assert any("--floor" in f for f in report.gate_failures[1:])
    assert report.baseline_precision is None
    assert report.baseline_labels == {}
    assert report.gate_verdict == "FAILED"


def test_a_partial_run_is_compared_with_the_baseline_over_the_same_claims() -> None:
    baseline = Baseline(
        precision=0.5,
        labels={"citecheck_a.yaml::one": "not_found"},
        verdicts={"citecheck_a.yaml::one": ["supported", "not_found"]},
    )
    results = {"citecheck_a.yaml::one": RESULTS["citecheck_a.yaml::one"]}
    whole = finish_run(results, GateSettings(), Outputs(), baseline=baseline)
    partial = finish_run(results, GateSettings(), Outputs(), baseline=baseline, deselected=1)
    assert (whole.baseline_precision, whole.baseline_over_same_claims) == (0.5, False)
    assert (partial.baseline_precision, partial.baseline_over_same_claims) == (0.5, True)
    assert [(c.before, c.after) for c in whole.label_changes()] == [("not_found", "supported")]


def test_every_file_is_written_once_in_order_and_one_that_cannot_be_is_kept_as_an_error(
    tmp_path: Path,
) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("", encoding="utf-8")
    outputs = Outputs(
        json=tmp_path / "r.json",
        csv=blocker / "r.csv",
        markdown=tmp_path / "r.md",
        sarif=tmp_path / "out" / "r.sarif",
    )
    report = finish_run(RESULTS, GateSettings(), outputs, root=tmp_path, invoked_in=tmp_path)
    assert [what for what, _ in report.written] == ["JSON report", "markdown summary", "SARIF log"]
    assert len(report.output_errors) == 1 and str(blocker / "r.csv") in report.output_errors[0]
    saved = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert saved["totals"]["citation_precision"] == 0.75
    sarif = json.loads((tmp_path / "out" / "r.sarif").read_text(encoding="utf-8"))
    assert sarif["version"] == "2.1.0"


def test_the_audit_rows_are_appended_once_and_a_failed_write_fails_the_gate_in_its_words(
    tmp_path: Path,
) -> None:
    index = AuditIndex(tmp_path / "audit.sqlite")
    run = AuditRun(index, "pytest")
    report = finish_run(RESULTS, GateSettings(terms=TERMS), Outputs(), audit=run)
    assert report.gate_failures == []
    rows = index.rows()
    assert len(rows) == 4 and {r.run_id for r in rows} == {run.run_id}

    folder = tmp_path / "a-folder"
    folder.mkdir()
    broken = AuditRun(AuditIndex(folder), "pytest")
    failed = finish_run(RESULTS, GateSettings(terms=TERMS), Outputs(), audit=broken)
    assert len(failed.gate_failures) == 1
    assert failed.gate_failures[0].startswith("--rows: ")
