"""Who wrote a citation's quote, as the claim schema reads it, the import writes it and
every report shows a provider quote the page did not have; text fragments as quotes."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest

from pytest_citecheck.claims.importers import import_response
from pytest_citecheck.claims.importers.files import claim_file_text
from pytest_citecheck.claims.labels import Label
from pytest_citecheck.claims.models import Citation
from pytest_citecheck.claims.results import ClaimResult, Passage, Verdict
from pytest_citecheck.claims.schema import ClaimValidationError, parse_claim
from pytest_citecheck.core.text import terminal_safe
from pytest_citecheck.core.urls import fetch_url
from pytest_citecheck.reports.html import render_html
from pytest_citecheck.reports.markdown import render_markdown
from pytest_citecheck.reports.per_claim import citation_table
from pytest_citecheck.reports.report import Report
from pytest_citecheck.stages.fragments import text_fragment_quote

URL = "https://example.com/weather"


def test_a_claim_files_quote_is_the_users_unless_it_says_otherwise() -> None:
    claim = parse_claim(
        {
            "id": "c",
            "claim": "It is cold.",
            "citations": [
                {"url": URL, "quote": "Clear skies and cold temperatures"},
                {"url": URL + "/2", "quote": "cold tonight", "quote_by": "provider"},
                {"url": URL + "/3", "quote": "cold", "quote_by": " Model "},
            ],
        }
    )
    assert [c.quote_by for c in claim.citations] == ["user", "provider", "model"]


def test_a_wrong_quote_by_names_the_values_and_the_fix() -> None:
    with pytest.raises(ClaimValidationError) as caught:
        parse_claim(
            {
                "id": "c",
                "claim": "It is cold.",
                "citations": [{"url": URL, "quote": "cold skies", "quote_by": "anthropic"}],
            }
        )
    [problem] = caught.value.problems
    assert problem.field == "citations[0].quote_by"
    assert "provider, model, user" in problem.problem
    assert "quote_by: provider" in problem.fix


def test_quote_by_without_a_quote_says_nothing_and_is_dropped() -> None:
    assert Citation.model_validate({"url": URL, "quote_by": "provider"}) == Citation(url=URL)


def test_anthropic_cited_text_is_a_provider_quote_in_the_claim_file_import_writes() -> None:
    body = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "content": [
            {
                "type": "text",
                "text": "Tonight is cold.",
                "citations": [
                    {
                        "type": "web_search_result_location",
                        "url": URL,
                        "title": "Weather",
                        "cited_text": "... Clear skies and cold temperatures ...",
                        "encrypted_index": "x",
                    }
                ],
            }
        ],
    }
    answer = import_response(body, answer_id="weather", format="anthropic")
    [claim] = answer.claim_list
    [citation] = claim.citations
    assert (citation.quote_by, citation.quote) == (
        "provider",
        "... Clear skies and cold temperatures ...",
    )
    written = claim_file_text([(answer, "weather.json")], "citecheck import weather.json")
    assert '        quote: "... Clear skies and cold temperatures ..."\n' in written
    assert "        quote_by: provider\n" in written


@pytest.mark.parametrize(
    ("url", "quote", "fetched"),
    [
        (URL + "#:~:text=Clear%20skies", "Clear skies", URL),
        (URL + "#:~:text=Clear%20skies,upper%2040s", "Clear skies ... upper 40s", URL),
        (URL + "#:~:text=Tonight-,Clear%20skies,-and", "Clear skies", URL),
        (URL + "#:~:text=Tonight-,Clear,upper,-40s", "Clear ... upper", URL),
        (URL + "#today:~:text=cold&text=warm", "cold", URL),
        (URL + "#:~:text=caf%C3%A9%20au%20lait%2C%20hot", "café au lait, hot", URL),
        (URL + "#today", None, URL),
        (URL + "#:~:other=1", None, URL),
        (URL, None, URL),
    ],
)
def test_a_text_fragment_is_read_as_the_browser_reads_it(
    url: str, quote: str | None, fetched: str
) -> None:
    assert text_fragment_quote(url) == quote
    assert fetch_url(url) == fetched


def result(marked: bool) -> ClaimResult:
    verdict = Verdict(
        url=URL,
        label=Label.SUPPORTED,
        evidence_quote="Clear skies and cold temperatures tonight",
        confidence=0.9,
        judge="openai:gpt-4o-mini",
        passages=[Passage(index=0, text="Clear skies and cold temperatures tonight.")],
        provider_quote_not_on_page=marked,
    )
    return ClaimResult(
        id="cold" if marked else "plain",
        claim="It is cold.",
        label=Label.SUPPORTED,
        verdicts=[verdict],
    )


def test_every_report_shows_and_counts_a_provider_quote_not_on_the_page() -> None:
    report = Report(
        results={"citecheck_a.yaml::cold": result(True), "citecheck_a.yaml::plain": result(False)}
    )
    terminal = "\n".join(terminal_safe(line.text) for line in report.lines())
    assert "provider_quote_not_on_page 1: the provider's quote is not on the page" in terminal
    assert "citecheck_a.yaml::cold  https://example.com/weather" in terminal
    data = report.scrubbed_json()
    assert data["totals"]["provider_quote_not_on_page"] == 1
    assert data["totals"]["by_label"]["fabricated"] == 0
    verdicts = {c["id"]: c["verdicts"][0] for c in data["claims"]}
    assert verdicts["cold"]["provider_quote_not_on_page"] is True
    assert "provider_quote_not_on_page" not in verdicts["plain"]  # as before when unset
    assert "provider_quote_not_on_page 1" in render_markdown(data)
    page = render_html(data)
    text = _Text()
    text.feed(page)
    assert "provider_quote_not_on_page 1" in text.content
    assert "not on the page fetched: the judge read retrieval's passages" in text.content
    assert report.gate_failures == []
    # A failing claim's table says it too, where the reason goes.
    table = "\n".join(citation_table(result(True)))
    assert "provider_quote_not_on_page" in table


def test_a_run_without_the_marker_reports_as_before() -> None:
    report = Report(results={"citecheck_a.yaml::plain": result(False)})
    assert "provider_quote" not in "\n".join(line.text for line in report.lines())
    assert "provider_quote" not in render_markdown(report.scrubbed_json())


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.content = ""

    def handle_data(self, data: str) -> None:
        self.content += " ".join(data.split()) + " "
