"""A recheck's run ends in one place (:func:`~pytest_citecheck.reports.finish.finish_recheck`),
as every other run ends in ``finish_run``: both front ends (``citecheck recheck`` and
``pytest --citecheck-recheck``) hand it their checks and print what it returns."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from pytest_citecheck.core.defaults import RecheckStatus
from pytest_citecheck.engine.recheck import ClaimRecheck, error_check
from pytest_citecheck.reports.finish import finish_recheck
from pytest_citecheck.reports.outputs import Outputs

PACKAGE = Path(__file__).resolve().parents[2] / "pytest_citecheck"
FRONT_ENDS = ("frontends/cli/recheck.py", "plugin/recheck.py")


def checks() -> list[ClaimRecheck]:
    claim = ClaimRecheck(nodeid="a.jsonl::c1", id="c1", claim="The sky is blue.", cassette="c1")
    claim.citations = [error_check("https://example.org/sky", "ConnectError: refused")]
    return [claim]


def test_the_gate_and_every_file_come_from_one_finish(tmp_path: Path) -> None:
    outputs = Outputs(
        json=tmp_path / "r.json",
        markdown=tmp_path / "r.md",
        step_summary=tmp_path / "summary.md",
        html=tmp_path / "r.html",
    )
    outputs.step_summary.write_text("earlier job output\n", encoding="utf-8")  # type: ignore[union-attr]
    report = finish_recheck(
        checks(),
        [RecheckStatus.ERROR],
        lambda failing: ", ".join(f"{n} {s.value}" for s, n in failing.items()) + " (fail-on)",
        outputs,
        problems=["1 record(s) could not be read"],
    )
    assert report.gate_failures == ["1 error (fail-on)", "1 record(s) could not be read"]
    written = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert written["claims"][0]["citations"][0]["status"] == "error"
    summary = (tmp_path / "summary.md").read_text(encoding="utf-8")
    assert summary.startswith("earlier job output\n")  # appended, not replaced
    assert summary.removeprefix("earlier job output\n") == (tmp_path / "r.md").read_text("utf-8")
    assert (tmp_path / "r.html").read_text(encoding="utf-8").startswith("<!")


def test_a_status_not_failing_passes_and_writes_only_what_is_asked(tmp_path: Path) -> None:
    outputs = Outputs(json=tmp_path / "r.json")
    report = finish_recheck(checks(), [RecheckStatus.PAGE_GONE], lambda failing: "never", outputs)
    assert report.gate_failures == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]


def test_a_file_a_recheck_does_not_write_is_refused(tmp_path: Path) -> None:
    for outputs in (
        Outputs(csv=tmp_path / "r.csv"),
        Outputs(sarif=tmp_path / "r.sarif"),
        Outputs(report_url="https://ci.example/report.html"),
    ):
        with pytest.raises(ValueError, match="a recheck writes no CSV or SARIF"):
            finish_recheck(checks(), [RecheckStatus.ERROR], lambda failing: "never", outputs)
    for outputs in (
        Outputs(otel_file=tmp_path / "events.json"),
        Outputs(otel_endpoint="http://127.0.0.1:4318"),
    ):
        with pytest.raises(ValueError, match="no OpenTelemetry events"):
            finish_recheck(checks(), [RecheckStatus.ERROR], lambda failing: "never", outputs)
    assert list(tmp_path.iterdir()) == []


def test_no_front_end_ends_a_recheck_by_hand() -> None:
    """Neither front end builds the recheck's report or writes its files itself."""
    for rel in FRONT_ENDS:
        tree = ast.parse((PACKAGE / rel).read_text(encoding="utf-8"))
        by_hand = [
            f"{rel}:{node.lineno}"
            for node in ast.walk(tree)
            if isinstance(node, ast.Call)
            and (
                getattr(node.func, "id", None) == "RecheckReport"
                or getattr(node.func, "attr", None)
                in {"write_json", "write_markdown", "write_html"}
            )
        ]
        assert not by_hand, f"end the recheck through finish_recheck: {by_hand}"
        names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
        assert "finish_recheck" in names, rel
