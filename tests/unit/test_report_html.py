"""The HTML report's claim table and passages (rendered from a JSON report, no pytest run)."""

from __future__ import annotations

import re
from html.parser import HTMLParser

from pytest_citecheck.claims.labels import LABEL_ORDER, Label
from pytest_citecheck.claims.results import ClaimResult, JudgeReply, Passage, Verdict
from pytest_citecheck.engine.aggregate import claim_label
from pytest_citecheck.reports.html import render_html
from pytest_citecheck.reports.report import Report
from pytest_citecheck.stages.guard import guard

QUOTE = "Rim Drive closes to vehicles in winter"
NAVIGATION = [Passage(index=i, text=f"Menu item {i} | Home | About | Contact") for i in range(6)]
EVIDENCE = Passage(index=40, text=f"Park roads. {QUOTE} because of deep snow.", score=0.41)
BETTER_RANKED = Passage(index=12, text="Crater Lake is the deepest lake in the USA.", score=0.77)


class Table(HTMLParser):
    """The text of each cell of the claim table's rows, and the passages in order."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[str]] = []
        self.passages: list[str] = []
        self.summaries: list[str] = []
        self._cell: list[str] | None = None
        self._in: str | None = None
        self._depth = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        classes = (dict(attrs).get("class") or "").split()
        if tag == "tr" and "row" in classes:
            self.rows.append([])
        elif tag == "td" and self.rows and self._in is None and self._cell is None:
            self._cell = []
        elif tag == "div" and "passage" in classes:
            self._in, self._depth = "passage", 0
            self.passages.append("")
        elif tag == "summary":
            self._in = "summary"
            self.summaries.append("")
        if self._in == "passage" and tag == "div":
            self._depth += 1

    def handle_endtag(self, tag: str) -> None:
        if tag == "td" and self._cell is not None:
            self.rows[-1].append(" ".join("".join(self._cell).split()))
            self._cell = None
        elif tag == "tr":
            self._cell = None
        elif tag == "div" and self._in == "passage":
            self._depth -= 1
            if self._depth == 0:
                self._in = None
        elif tag == "summary":
            self._in = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None and self._in is None:
            self._cell.append(data)
        if self._in == "passage":
            self.passages[-1] += data
        elif self._in == "summary":
            self.summaries[-1] += data


def rendered(*results: ClaimResult) -> Table:
    data = Report(results={f"citecheck_a.yaml::{r.id}": r for r in results}).scrubbed_json()
    table = Table()
    table.feed(render_html(data))
    return table


def claim(cid: str, *verdicts: Verdict) -> ClaimResult:
    label = claim_label([v.label for v in verdicts])
    return ClaimResult(
        id=cid, claim="Rim Drive closes in winter.", label=label, verdicts=list(verdicts)
    )


def test_the_passage_with_the_quote_comes_first_then_by_rank_then_page_order() -> None:
    verdict = Verdict(
        url="https://example.com/crater",
        label=Label.SUPPORTED,
        evidence_quote=QUOTE,
        passages=[*NAVIGATION, BETTER_RANKED, EVIDENCE],
    )
    table = rendered(claim("crater", verdict))
    numbers = [int(re.match(r"passage (\d+)", p).group(1)) for p in table.passages]  # type: ignore[union-attr]
    assert numbers == [40, 12, 0, 1, 2, 3, 4, 5]
    assert QUOTE in table.passages[0]


def test_the_reason_column_shows_only_the_reasons_that_decided_the_label() -> None:
    supported = Verdict(url="https://example.com/a", label=Label.SUPPORTED, evidence_quote=QUOTE)
    pdf = Verdict(url="https://example.com/a.pdf", label=Label.NOT_FOUND, reason="pdf_unsupported")
    gone = Verdict(url="https://example.com/gone", label=Label.UNREACHABLE, reason="http_404")
    table = rendered(claim("mixed", supported, pdf), claim("lost", pdf, gone))
    by_id = {row[0]: row for row in table.rows}
    assert by_id["mixed"][3:5] == ["supported", "–"]
    assert by_id["lost"][3:5] == ["not_found", "pdf_unsupported"]  # http_404 did not decide it


def test_a_fabricated_claim_shows_fabricated_in_the_table() -> None:
    made_up = Verdict(
        url="https://example.com/a",
        label=Label.FABRICATED,
        reason="quote_not_in_page",
        evidence_quote="Rim Drive never closes.",
    )
    other = Verdict(url="https://example.com/b", label=Label.NOT_FOUND, reason="pdf_unsupported")
    contradicting = Verdict(
        url="https://example.com/c", label=Label.CONTRADICTED, evidence_quote=QUOTE
    )
    table = rendered(claim("made-up", made_up, other), claim("both", made_up, contradicting))
    by_id = {row[0]: row for row in table.rows}
    assert by_id["made-up"][3:5] == ["fabricated", "quote_not_in_page"]
    # A citation that contradicts the claim still names it contradicted.
    assert by_id["both"][3] == "contradicted"


def test_a_refused_quote_shows_what_the_judge_had_said() -> None:
    reply = JudgeReply(label="supported", quote="Rim Drive is open all year round", confidence=0.92)
    guarded = guard(reply, [EVIDENCE])
    assert (guarded.label, guarded.reason) == (Label.NOT_FOUND, "evidence_quote_not_in_source")
    assert (guarded.judge_label, guarded.judge_confidence) == (Label.SUPPORTED, 0.92)
    verdict = Verdict(
        url="https://example.com/crater",
        judge="openai:gpt-4o-mini",
        passages=[EVIDENCE],
        **guarded.verdict_fields(),
    )
    table = rendered(claim("refused", verdict))
    assert table.summaries == [
        "not_found https://example.com/crater · evidence_quote_not_in_source"
        " · the judge said supported (0.92)"
    ]
    data = Report(results={"citecheck_a.yaml::refused": claim("refused", verdict)}).scrubbed_json()
    page = render_html(data)
    assert "judge&#39;s label</dt><dd>supported" in page
    assert "judge&#39;s confidence</dt><dd>0.92" in page
    assert "evidence quote</dt><dd>Rim Drive is open all year round" in page


def test_a_not_found_reply_refused_for_its_short_quote_keeps_no_judge_label() -> None:
    reply = JudgeReply(label="not_found", quote="Rim", confidence=0.8)
    guarded = guard(reply, [EVIDENCE])
    assert guarded.reason == "evidence_quote_too_short"
    assert guarded.judge_label is None and guarded.judge_confidence is None


def test_a_stopped_run_with_an_unknown_count_is_not_decided_in_every_report() -> None:
    """Under xdist a Ctrl-C may leave the controller not knowing which claims ran."""
    from pytest_citecheck.reports.markdown import render_markdown

    supported = Verdict(url="https://example.com/crater", label=Label.SUPPORTED)
    report = Report(
        results={"citecheck_a.yaml::one": claim("one", supported)},
        not_started=None,
        stopped_by="interrupted",
    )
    data = report.scrubbed_json()
    assert data["gate"] == {
        "passed": False,
        "decided": False,
        "failures": [],
        "not_started": None,
        "stopped_by": "interrupted",
    }
    note = "The run stopped early (interrupted): claims that never ran are not counted."
    assert report.not_started_line() == (
        "citecheck: the run stopped early (interrupted); claims that never ran are not counted"
    )
    markdown = render_markdown(data)
    assert markdown.startswith("## citecheck: gate not decided ⚠️\n") and f"- {note}" in markdown
    assert f'<li id="stopped">{note}</li>' in render_html(data)
    # Every claim ran: decided, whatever stopped the session afterwards.
    done = Report(results=report.results, not_started=0, stopped_by="-x/--maxfail reached")
    assert done.scrubbed_json()["gate"]["passed"] is True


# -- leading to the failure ---------------------------------------------------------------


def _page(results: dict[str, ClaimResult], passed: dict[str, bool]) -> str:
    from pytest_citecheck.reports.figures import ItemInfo

    report = Report(
        results=results,
        items={
            n: ItemInfo("passed" if p else "failed", line=i)
            for i, (n, p) in enumerate(passed.items())
        },
    )
    return render_html(report.scrubbed_json())


class Rows(HTMLParser):
    """Each claim's tbody attributes, its claim-text cell and which citations are open."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[dict[str, str]] = []
        self.open: list[list[bool]] = []
        self.texts: list[str] = []
        self.chips: list[str] = []
        self._text = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "tbody" and "claim" in a.get("class", "").split():
            self.rows.append(a)
            self.open.append([])
        elif tag == "details" and "citation" in a.get("class", ""):
            self.open[-1].append("open" in a)
        elif tag == "td" and a.get("class") == "claim-text":
            self._text = True
            self.texts.append("")
        elif tag == "button" and "chip" in a.get("class", "").split():
            self.chips.append(a["data-filter"])

    def handle_endtag(self, tag: str) -> None:
        if tag == "td":
            self._text = False

    def handle_data(self, data: str) -> None:
        if self._text:
            self.texts[-1] += data


def _parsed(html: str) -> Rows:
    rows = Rows()
    rows.feed(html)
    return rows


SUPPORTED = Verdict(url="https://example.com/ok", label=Label.SUPPORTED, evidence_quote=QUOTE)
CONTRADICTS = Verdict(url="https://example.com/no", label=Label.CONTRADICTED, evidence_quote=QUOTE)
UNSURE = Verdict(
    url="https://example.com/maybe", label=Label.SUPPORTED, confidence=0.5, review=True
)


def test_failed_claims_come_first_then_review_then_file_order_which_the_rows_keep() -> None:
    results = {
        "citecheck_a.yaml::first": claim("first", SUPPORTED),
        "citecheck_a.yaml::unsure": claim("unsure", UNSURE),
        "citecheck_a.yaml::wrong": claim("wrong", SUPPORTED, CONTRADICTS),
        "citecheck_a.yaml::last": claim("last", SUPPORTED),
    }
    passed = {n: "wrong" not in n for n in results}  # in file order: lines 0 to 3
    rows = _parsed(_page(results, passed))
    assert [r["data-anchor"] for r in rows.rows] == ["wrong", "unsure", "first", "last"]
    # The file order stays on each row for the page's toggle.
    assert [int(r["data-order"]) for r in rows.rows] == [2, 1, 0, 3]
    assert [r["data-rank"] for r in rows.rows] == ["0", "1", "2", "2"]
    assert "review" in rows.rows[1]["data-labels"].split()
    # The failing claim opens on its contradicting citation, not on the supporting one.
    assert rows.open[0] == [False, True]
    assert rows.texts == ["Rim Drive closes in winter."] * 4
    assert rows.chips == [*(label.value for label in LABEL_ORDER), "review"]


def test_a_claim_id_two_files_share_links_by_node_id_and_links_are_encoded() -> None:
    from pytest_citecheck.reports.html import anchors, claim_url

    found = anchors([("citecheck_a.yaml::x", "x"), ("citecheck_b.yaml::x", "x"), ("b::y", "y")])
    assert found == {
        "citecheck_a.yaml::x": "citecheck_a.yaml::x",
        "citecheck_b.yaml::x": "citecheck_b.yaml::x",
        "b::y": "y",
    }
    assert claim_url("https://ci.example/run 1/(r).html#old", "dir/citecheck_a.yaml::x") == (
        "https://ci.example/run%201/%28r%29.html#dir%2Fcitecheck_a.yaml%3A%3Ax"
    )
    results = {
        "citecheck_a.yaml::x": claim("x", SUPPORTED),
        "sub/citecheck_b.yaml::x": claim("x", SUPPORTED),
    }
    html = _page(results, dict.fromkeys(results, True))
    assert [r["data-anchor"] for r in _parsed(html).rows] == list(results)
    assert 'href="#sub/citecheck_b.yaml%3A%3Ax"' in html


def test_the_step_summary_and_annotations_link_claims_only_when_the_url_is_known() -> None:
    from pathlib import Path

    from pytest_citecheck.reports import github
    from pytest_citecheck.reports.markdown import render_markdown

    results = {"citecheck_a.yaml::wrong": claim("wrong", CONTRADICTS)}
    report = Report(results=results, report_url="https://ci.example/report.html")
    data = report.scrubbed_json()
    assert "report_url" not in data  # not part of the JSON report
    linked = render_markdown(data, report.report_url)
    assert "[HTML report](https://ci.example/report.html)" in linked
    assert (
        "| contradicted | [citecheck_a.yaml::wrong](https://ci.example/report.html#wrong): "
        in linked
    )
    plain = render_markdown(data)
    assert "https://ci.example" not in plain and "| citecheck_a.yaml::wrong: " in plain
    here = Path.cwd()
    messages = [a.message for a in github.annotate(report, here, here) if a.file]
    assert messages and all(
        "\nHTML report: https://ci.example/report.html#wrong\n" in m for m in messages
    )
    report.report_url = None
    assert all("HTML report" not in a.message for a in github.annotate(report, here, here))


def test_the_report_url_comes_from_the_environment_when_no_option_names_it() -> None:
    from types import SimpleNamespace
    from typing import Any, cast

    from pytest_citecheck.plugin import adapters

    def outputs(values: dict[str, Any], env: dict[str, str]) -> str | None:
        settings = cast(Any, SimpleNamespace(values=values))
        return adapters.outputs(settings, environ=env).report_url

    env = {"CITECHECK_REPORT_URL": "https://env.example/r.html"}
    assert outputs({}, env) == "https://env.example/r.html"
    assert outputs({"report_url": "https://flag.example/r.html"}, env) == (
        "https://flag.example/r.html"
    )
    assert outputs({}, {}) is None
