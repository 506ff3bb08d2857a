"""The evaluation events read off verdicts (no SDK needed), and the collector URL rules."""

from __future__ import annotations

from pytest_citecheck.claims.labels import Label
from pytest_citecheck.claims.models import AnswerOutline
from pytest_citecheck.claims.results import ClaimResult, Verdict
from pytest_citecheck.reports.otel import evaluation_events, logs_url, shown_url


def test_each_verdict_is_an_event_with_the_conventions_attributes() -> None:
    answer = AnswerOutline(id="a", response_id="resp_1", trace_id="ab" * 16, span_id="cd" * 8)
    result = ClaimResult(
        id="c1",
        claim="Water boils at 100 C.",
        label=Label.ERROR,
        verdicts=[
            Verdict(url="https://example.com/a", label=Label.SUPPORTED),
            Verdict(url="https://example.com/b", label=Label.ERROR, reason="judge_failed"),
        ],
        answer=answer,
    )
    supported, failed = (e.attributes() for e in evaluation_events([result]))
    assert supported == {
        "gen_ai.evaluation.name": "citecheck.citation",
        "gen_ai.evaluation.score.label": "supported",
        "gen_ai.evaluation.score.value": 1.0,
        "gen_ai.response.id": "resp_1",
        "citecheck.claim.id": "c1",
        "citecheck.citation.url": "https://example.com/a",
    }
    # A failed run has no score: its label and error.type say so.
    assert "gen_ai.evaluation.score.value" not in failed
    assert failed["error.type"] == "_OTHER"
    assert failed["gen_ai.evaluation.explanation"] == "judge_failed"


def test_the_logs_path_is_added_once_and_credentials_are_never_shown() -> None:
    assert logs_url("http://localhost:4318") == "http://localhost:4318/v1/logs"
    assert logs_url("http://localhost:4318/") == "http://localhost:4318/v1/logs"
    assert logs_url("https://c.example/v1/logs") == "https://c.example/v1/logs"
    assert shown_url("https://user:s3cret@c.example/v1/logs") == "https://c.example/v1/logs"


def test_a_run_without_the_export_never_imports_opentelemetry() -> None:
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from pytest_citecheck.reports import finish, otel\n"
        "from pytest_citecheck.claims.importers import files, otlp\n"
        "from pytest_citecheck.frontends.cli import batch\n"
        "from pytest_citecheck.plugin import options\n"
        "otel.evaluation_events([])\n"
        "print(sorted(m for m in sys.modules if m.startswith(('opentelemetry', 'google'))))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
