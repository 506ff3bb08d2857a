"""A verdict on a PDF names its evidence's page, and every report links ``URL#page=N``."""

from __future__ import annotations

from pytest_citecheck.claims.labels import Label
from pytest_citecheck.claims.results import ClaimResult, Passage, Verdict
from pytest_citecheck.reports.html import render_html
from pytest_citecheck.reports.markdown import render_markdown
from pytest_citecheck.reports.per_claim import citation_table, explain_label
from pytest_citecheck.reports.report import Report

URL = "https://example.com/annual-report.pdf"
QUOTE = "Revenue fell by 12 percent in the fourth quarter."


def _result(page: int | None) -> ClaimResult:
    verdict = Verdict(
        url=URL,
        label=Label.CONTRADICTED,
        evidence_quote=QUOTE,
        confidence=0.9,
        page=page,
        passages=[Passage(index=4, text=QUOTE, page=page)],
    )
    return ClaimResult(
        id="revenue",
        claim="Revenue rose in the fourth quarter.",
        label=Label.CONTRADICTED,
        verdicts=[verdict],
    )


def test_the_reports_link_the_page_of_the_evidence() -> None:
    result = _result(12)
    data = Report(results={"citecheck_a.yaml::revenue": result}).scrubbed_json()
    [claim] = data["claims"]
    assert claim["verdicts"][0]["page"] == 12
    assert claim["verdicts"][0]["passages"][0]["page"] == 12
    assert f"{URL}#page=12" in render_markdown(data)
    assert f"{URL}#page=12" in render_html(data)
    assert any(f"{URL}#page=12" in line for line in citation_table(result))
    explained = explain_label([result], "contradicted", "==", "supported", None)
    assert any(f"{URL}#page=12" in line for line in explained)


def test_a_web_page_verdict_is_as_it_was() -> None:
    result = _result(None)
    data = Report(results={"citecheck_a.yaml::revenue": result}).scrubbed_json()
    verdict = data["claims"][0]["verdicts"][0]
    assert "page" not in verdict and "page" not in verdict["passages"][0]
    assert "#page=" not in render_markdown(data) + render_html(data)


def test_the_service_reply_names_the_page_only_for_a_pdf() -> None:
    from pytest_citecheck.frontends.service.wire import to_response

    assert to_response("1", _result(12)).model_dump(mode="json")["verdicts"][0]["page"] == 12
    assert "page" not in to_response("1", _result(None)).model_dump(mode="json")["verdicts"][0]
