"""The HTML report in a real browser: Debian's chromium, driven by Playwright.

No browser is downloaded: ``.ci/run`` installs Debian's ``chromium`` with apt-get and
Playwright launches that executable (``CITECHECK_CHROMIUM`` overrides the path).
Playwright's sync API is used through the fixtures below rather than the
pytest-playwright plugin, whose per-test assertion scope breaks this suite's
in-process pytester runs. Without playwright or the browser every test here is
skipped with the reason; nothing is skipped silently.

A screenshot of the example suite's report is saved to ``test-results/report.png``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.plugin.hostile import SCRIPT, write_suite

sync_api = pytest.importorskip(
    "playwright.sync_api", reason="playwright is not installed: pip install -e '.[dev]'"
)

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = Path(os.environ.get("CITECHECK_CHROMIUM", "/usr/bin/chromium"))
ARTIFACTS = REPO / "test-results"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def _pytest(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--citecheck", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
    )


def _reports(out: Path, cwd: Path, *args: str, returncode: int = 0) -> tuple[Path, dict[str, Any]]:
    """A run with the HTML and JSON reports written into ``out``: the page and the JSON."""
    html, report = out / "report.html", out / "report.json"
    run = _pytest(cwd, *args, f"--citecheck-html={html}", f"--citecheck-report={report}")
    assert run.returncode == returncode, run.stdout + run.stderr
    return html, json.loads(report.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """README's command, plus the HTML and JSON reports."""
    return _reports(tmp_path_factory.mktemp("example"), REPO, "example_suite")


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A report whose page, claim and quote carry <script> and an onerror handler."""
    root = tmp_path_factory.mktemp("hostile")
    write_suite(root)
    run = _pytest(root, "--citecheck-record=all", "--citecheck-html=hostile.html")
    assert run.returncode == 1, run.stdout + run.stderr  # one claim is contradicted
    return root / "hostile.html"


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not CHROMIUM.exists():
        pytest.skip(
            f"no browser at {CHROMIUM}: apt-get install chromium (or set CITECHECK_CHROMIUM)"
        )
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield browser
        browser.close()


class Page:
    """A browser page that records console errors, page errors and every request."""

    def __init__(self, browser: Any) -> None:
        self.context = browser.new_context(viewport={"width": 1280, "height": 900})
        self.page = self.context.new_page()
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("request", lambda r: self.requests.append(r.url))

    def open(self, path: Path) -> Any:
        self.page.goto(path.as_uri())
        return self.page

    def visible_claims(self) -> int:
        count: int = self.page.locator("tbody.claim:visible").count()
        return count


@pytest.fixture
def tab(browser: Any) -> Iterator[Page]:
    page = Page(browser)
    yield page
    page.context.close()


def test_example_report_lists_all_26_claims_and_fetches_nothing(
    tab: Page, example: tuple[Path, dict[str, Any]]
) -> None:
    path, data = example
    page = tab.open(path)
    assert len(data["claims"]) == 26
    assert tab.visible_claims() == 26
    assert page.inner_text("#shown") == "26 of 26 claims"
    assert page.inner_text("#gate") == "gate passed"
    assert tab.errors == []
    assert tab.requests == [path.as_uri()]


def test_label_and_text_filters(tab: Page, example: tuple[Path, dict[str, Any]]) -> None:
    path, data = example
    page = tab.open(path)
    contradicted = [
        c["id"]
        for c in data["claims"]
        if "contradicted" in {c["label"], *(v["label"] for v in c["verdicts"])}
    ]
    assert contradicted  # the example suite has some
    page.select_option("#filter-label", "contradicted")
    shown = page.locator("tbody.claim:visible button.toggle").all_inner_texts()
    assert sorted(shown) == sorted(contradicted)
    assert page.inner_text("#shown") == f"{len(contradicted)} of 26 claims (label contradicted)"

    page.select_option("#filter-label", "")
    page.fill("#filter-text", "boiling-point-50")
    assert page.locator("tbody.claim:visible button.toggle").all_inner_texts() == [
        "boiling-point-50-degrees"
    ]
    page.fill("#filter-text", "")
    assert tab.visible_claims() == 26
    assert tab.errors == []


def test_expanded_citation_shows_the_quote_highlighted(
    tab: Page, example: tuple[Path, dict[str, Any]]
) -> None:
    path, data = example
    claim = next(c for c in data["claims"] if c["id"] == "boiling-point-50-degrees")
    quote = claim["verdicts"][0]["evidence_quote"]
    page = tab.open(path)
    row = page.locator("tbody.claim", has=page.locator("button.toggle", has_text=claim["id"]))
    detail = row.locator("tr.detail")
    assert not detail.is_visible()
    row.locator("button.toggle").click()  # one click: the deciding citation is open
    mark = detail.locator("mark").first
    assert mark.is_visible()
    assert mark.inner_text() == quote
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "report.png"
    # Tall enough to show the header, the files and the expanded claim (docs/report.png).
    page.set_viewport_size({"width": 1280, "height": 1400})
    page.screenshot(path=str(shot))
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert tab.errors == []


def test_on_a_noisy_page_the_highlighted_quote_is_in_view_when_the_citation_opens(
    tab: Page, example: tuple[Path, dict[str, Any]]
) -> None:
    """crater-lake-winter-closures cites a page whose passages start with navigation:
    the passage holding the quote is shown first, so no scrolling finds it."""
    path, data = example
    claim = next(c for c in data["claims"] if c["id"] == "crater-lake-winter-closures")
    quote = claim["verdicts"][0]["evidence_quote"]
    page = tab.open(path)
    row = page.locator("tbody.claim", has=page.locator("button.toggle", has_text=claim["id"]))
    row.locator("button.toggle").click()
    mark = row.locator("details.citation").first.locator("mark")
    assert mark.inner_text() == quote
    box, view = mark.bounding_box(), page.viewport_size
    assert box is not None and view is not None
    # In the window as it is (the row was scrolled to when clicked): nothing to scroll past.
    assert box["y"] >= 0 and box["y"] + box["height"] <= view["height"], (box, view)
    first = row.locator("details.citation").first.locator("div.passage").first
    assert quote in first.inner_text()
    assert tab.errors == []


def test_claim_table_shows_the_deciding_reason_fabricated_and_what_the_judge_said(
    tab: Page, example: tuple[Path, dict[str, Any]]
) -> None:
    path, _ = example
    page = tab.open(path)

    def cells(claim_id: str) -> list[str]:
        row = page.locator("tbody.claim", has=page.locator("button.toggle", has_text=claim_id))
        texts: list[str] = row.locator("tr.row td").all_inner_texts()
        return [t.strip() for t in texts]

    # supported by one citation; the PDF's pdf_no_text did not decide it.
    assert cells("crater-lake-winter-closures")[3:5] == ["supported", "–"]
    assert cells("jwt-exp-mandatory-invented-quote")[3:5] == [
        "fabricated",
        "quote_not_in_document",
    ]
    # The guard refused the judge's quote: the row says so, the citation what the judge said.
    assert cells("liz-patterson-death")[3:5] == ["not_found", "evidence_quote_not_in_source"]
    row = page.locator(
        "tbody.claim", has=page.locator("button.toggle", has_text="liz-patterson-death")
    )
    row.locator("button.toggle").click()
    summary = row.locator("details.citation summary").first
    assert "the judge said supported" in summary.inner_text()
    facts = row.locator("dl.facts").first.inner_text()
    assert "judge's label" in facts and "judge's confidence" in facts
    # The label filter still finds the fabricated claim by its label.
    page.select_option("#filter-label", "fabricated")
    assert tab.visible_claims() == 1
    assert tab.errors == []


def test_injected_script_does_not_run(tab: Page, hostile: Path) -> None:
    page = tab.open(hostile)
    assert page.evaluate("window.__citecheck_pwned") is None
    row = page.locator("tbody.claim", has=page.locator("button.toggle", has_text="markup"))
    row.locator("button.toggle").click()
    assert SCRIPT in row.locator("mark").first.inner_text()
    assert '<img src=x onerror="window.__citecheck_pwned = true">' in row.inner_text()
    assert page.evaluate("window.__citecheck_pwned") is None
    # No CSP refusal either: the markup was escaped, not merely blocked.
    assert tab.errors == []
    assert tab.requests == [hostile.as_uri()]


# -- leading to the failure: order, chips, one click, deep links -------------------------


@pytest.fixture(scope="module")
def failing(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """``pytest --citecheck example_suite_failing`` with the HTML and JSON reports: one
    contradicted claim (row 2 of 6 in its file), three under review."""
    out = tmp_path_factory.mktemp("failing")
    return _reports(out, REPO, "example_suite_failing", returncode=1)


FAILED = "charlie-russell-cause-of-death"
REVIEW = "charlie-russell-kamchatka"
# Under review, in file order: the number floor's (its evidence lacks "May 7, 2018"), the
# judge's low confidence and a page behind a paywall (HTTP 402, never judged).
REVIEWS = ["charlie-russell-death", REVIEW, "charlie-russell-paywalled-obituary"]


def _row(page: Any, claim_id: str) -> Any:
    return page.locator(f'tbody.claim[data-anchor="{claim_id}"]')


def _shown_ids(page: Any) -> list[str]:
    ids: list[str] = page.locator("tbody.claim:visible button.toggle").all_inner_texts()
    return ids


def _in_view(page: Any, locator: Any) -> bool:
    box, view = locator.bounding_box(), page.viewport_size
    assert box is not None and view is not None
    return bool(box["y"] > -1 and box["y"] < view["height"])  # scrolled to: sub-pixel


def test_the_failing_claim_comes_first_and_one_click_reaches_its_highlighted_quote(
    tab: Page, failing: tuple[Path, dict[str, Any]]
) -> None:
    path, data = failing
    in_file = [c["id"] for c in data["claims"]]
    assert in_file.index(FAILED) == 1  # row 2 of 6 in the file
    page = tab.open(path)
    shown = _shown_ids(page)
    assert shown[:4] == [FAILED, *REVIEWS]  # failed, then under review
    assert shown[4:] == [i for i in in_file if i not in (FAILED, *REVIEWS)]  # then file order
    # Each row shows its claim's text, not only its id.
    for claim in data["claims"]:
        assert _row(page, claim["id"]).locator("td.claim-text").inner_text() == claim["claim"]
    claim = next(c for c in data["claims"] if c["id"] == FAILED)
    quote = claim["verdicts"][0]["evidence_quote"]
    row = _row(page, FAILED)
    assert not row.locator("mark").first.is_visible()
    row.locator("button.toggle").click()  # the only click
    mark = row.locator("mark").first
    assert mark.is_visible() and mark.inner_text() == quote
    assert "contradicted" in row.locator("details.citation[open] summary").inner_text()
    assert tab.errors == []
    assert tab.requests == [path.as_uri()]


def test_a_claim_id_in_the_url_opens_that_claim(
    tab: Page, failing: tuple[Path, dict[str, Any]], example: tuple[Path, dict[str, Any]]
) -> None:
    path, data = failing
    page = tab.page
    page.goto(f"{path.as_uri()}#{FAILED}")
    row = _row(page, FAILED)
    assert row.locator("tr.detail").is_visible()
    quote = next(c for c in data["claims"] if c["id"] == FAILED)["verdicts"][0]["evidence_quote"]
    assert row.locator("mark").first.inner_text() == quote
    assert row.locator("mark").first.is_visible()
    # A claim a filter hides: following its link clears the filters and opens it.
    page.select_option("#filter-label", "contradicted")
    assert _shown_ids(page) == [FAILED]
    page.click(f'tbody.claim[data-anchor="{FAILED}"] a.permalink')  # a link to itself
    page.evaluate(f"window.location.hash = '#{REVIEW}'")
    review = _row(page, REVIEW)
    review.locator("tr.detail").wait_for(state="visible")
    assert len(_shown_ids(page)) == 6
    # A long report: the linked claim is scrolled into view, and opened.
    example_path, example_data = example
    last = example_data["claims"][-1]["id"]
    page.goto(f"{example_path.as_uri()}#{last}")
    target = _row(page, last)
    assert target.locator("tr.detail").is_visible()
    assert _in_view(page, target.locator("tr.row"))
    assert page.evaluate("window.scrollY") > 0
    # An anchor that is no claim, or not even valid percent-encoding, opens nothing.
    for anchor in ("%E0%A4%A", "no-such-claim"):
        page.goto("about:blank")
        page.goto(f"{example_path.as_uri()}#{anchor}")
        assert page.locator("tr.detail:visible").count() == 0
    assert tab.errors == []


def test_the_header_chips_filter_the_claims(
    tab: Page, failing: tuple[Path, dict[str, Any]]
) -> None:
    path, _ = failing
    page = tab.open(path)
    chip = page.locator('button.chip[data-filter="contradicted"]')
    assert chip.inner_text() == "contradicted 1"
    chip.click()
    assert _shown_ids(page) == [FAILED]
    assert chip.get_attribute("aria-pressed") == "true"  # the state is shown
    assert page.inner_text("#shown") == "1 of 6 claims (label contradicted)"
    assert page.eval_on_selector("#filter-label", "e => e.value") == "contradicted"
    review = page.locator('button.chip[data-filter="review"]')
    review.click()  # another chip replaces the first
    assert _shown_ids(page) == REVIEWS
    assert chip.get_attribute("aria-pressed") == "false"
    assert review.get_attribute("aria-pressed") == "true"
    review.click()  # clicked again: no filter
    assert len(_shown_ids(page)) == 6
    assert review.get_attribute("aria-pressed") == "false"
    assert page.inner_text("#shown") == "6 of 6 claims"
    # The label menu and the chips are one filter.
    page.select_option("#filter-label", "supported")
    assert (
        page.locator('button.chip[data-filter="supported"]').get_attribute("aria-pressed") == "true"
    )
    assert tab.errors == []


def test_the_order_toggle_restores_file_order(
    tab: Page, failing: tuple[Path, dict[str, Any]]
) -> None:
    path, data = failing
    in_file = [c["id"] for c in data["claims"]]
    page = tab.open(path)
    order = page.locator("#order")
    first = _shown_ids(page)
    assert first != in_file and first[0] == FAILED
    assert order.inner_text() == "order: failed and review first"
    order.click()
    assert _shown_ids(page) == in_file
    assert order.inner_text() == "order: file order"
    assert order.get_attribute("aria-pressed") == "true"
    order.click()
    assert _shown_ids(page) == first
    assert order.get_attribute("aria-pressed") == "false"
    assert tab.errors == []


@pytest.fixture(scope="module")
def answers_report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """The example answers (one saved response per format), replayed with the HTML report."""
    out = tmp_path_factory.mktemp("answers")
    answers = REPO / "example_suite" / "answers"
    return _reports(out, answers, "-o", "citecheck_patterns=answers.yaml", ".")


def test_the_answer_view_colours_each_sentence_by_its_claims_label(
    tab: Page, answers_report: tuple[Path, dict[str, Any]]
) -> None:
    path, data = answers_report
    page = tab.open(path)
    articles = page.locator("#answers article.answer")
    assert articles.count() == len(data["answers"]) == 11
    assert page.inner_text("#answer-totals").startswith("11 answers")
    for i, answer in enumerate(data["answers"]):
        spans = articles.nth(i).locator("span.sentence")
        assert spans.all_inner_texts() == [s["text"] for s in answer["text"]]
        for j, sentence in enumerate(answer["text"]):
            span = spans.nth(j)
            colour = span.evaluate("e => getComputedStyle(e).backgroundColor")
            assert span.get_attribute("data-label") == (sentence["label"] or "uncited")
            if sentence["label"] == "supported":
                assert colour == "rgb(218, 251, 225)"  # green: the claim is supported
            elif sentence["label"] in ("not_found", "unreachable"):
                assert colour == "rgb(255, 248, 197)"  # yellow: the source did not say
            else:
                assert sentence["label"] is None
                assert colour == "rgba(0, 0, 0, 0)"  # uncited: no colour
    assert tab.errors == []
    assert tab.requests == [path.as_uri()]


# -- the recheck page: then and now ---------------------------------------------------


@pytest.fixture(scope="module")
def recheck_page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A recheck report with one unchanged page and one whose evidence sentence is gone."""
    from pytest_citecheck.claims.labels import Label
    from pytest_citecheck.claims.results import Passage, Verdict
    from pytest_citecheck.core.defaults import RecheckStatus
    from pytest_citecheck.engine.recheck import CitationRecheck, ClaimRecheck
    from pytest_citecheck.reports.recheck import RecheckReport

    then = "Crowds came from across the county. The bridge opened on 3 May 2021, two years late."
    now = "Crowds came from across the county. The bridge opened in spring <script>x()</script>."
    recorded = Verdict(
        url="https://example.com/bridge",
        label=Label.SUPPORTED,
        evidence_quote="The bridge opened on 3 May 2021, two years late.",
        rid="rid-then-0123",
        passages=[Passage(index=0, text=then)],
    )
    claims = [
        ClaimRecheck(
            nodeid="citecheck_rot.yaml::unchanged",
            id="unchanged",
            claim="The bridge opened in 2021.",
            cassette="cassettes/citecheck_rot/unchanged.yaml",
            citations=[
                CitationRecheck(
                    url="https://example.com/a", status=RecheckStatus.SAME, recorded=recorded
                )
            ],
        ),
        ClaimRecheck(
            nodeid="citecheck_rot.yaml::quote-removed",
            id="quote-removed",
            claim="The bridge opened on 3 May 2021.",
            cassette="cassettes/citecheck_rot/quote-removed.yaml",
            citations=[
                CitationRecheck(
                    url="https://example.com/bridge",
                    status=RecheckStatus.EVIDENCE_GONE,
                    detail="the evidence quote is no longer on the page",
                    recorded=recorded,
                    new=Verdict(url="https://example.com/bridge", label=Label.NOT_FOUND),
                    recorded_passage=then,
                    live_passage=now,
                    credits=1.5,
                )
            ],
        ),
    ]
    report = RecheckReport(
        claims=claims,
        fail_on=[RecheckStatus.EVIDENCE_GONE],
        gate_failures=["1 citation evidence_gone (--fail-on evidence_gone)"],
    )
    path = tmp_path_factory.mktemp("recheck") / "recheck.html"
    report.write_html(path)
    return path


def test_recheck_page_shows_then_and_now_side_by_side_with_the_differences_marked(
    tab: Page, recheck_page: Path
) -> None:
    page = tab.open(recheck_page)

    assert page.inner_text("#gate") == "FAILED"
    gone = page.locator('details[data-status="evidence_gone"]')
    same = page.locator('details[data-status="same"]')
    # What changed is open; what did not is folded away.
    assert gone.get_attribute("open") is not None
    assert same.get_attribute("open") is None
    then, now = gone.locator(".then .passage"), gone.locator(".now .passage")
    assert then.locator("del").inner_text() == "on 3 May 2021, two years late."
    assert now.locator("ins").inner_text().startswith("in spring")
    # Side by side: the same row, the recorded passage on the left.
    left, right = then.bounding_box(), now.bounding_box()
    assert left is not None and right is not None
    assert left["x"] + left["width"] <= right["x"]
    assert abs(left["y"] - right["y"]) < 1
    # The page's own style ran under its CSP: removed words are struck and tinted.
    struck = then.locator("del").evaluate("e => getComputedStyle(e).backgroundColor")
    assert struck == "rgb(255, 215, 213)"
    assert "citecheck audit page rid-then-0123" in gone.inner_text()
    # The live page's markup is text, not code.
    assert "<script>x()</script>" in now.inner_text()
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "recheck.png"), full_page=True)
    assert tab.errors == []
    assert tab.requests == [recheck_page.as_uri()]


def test_the_answer_view_shows_alces_figures_as_the_sentences_give_them(
    tab: Page, answers_report: tuple[Path, dict[str, Any]]
) -> None:
    path, data = answers_report
    page = tab.open(path)
    recalls, precisions = [], []
    for i, answer in enumerate(data["answers"]):
        # Recall from the sentences: an uncited one counts 0, a cited one when a citation
        # supports it; precision from the answer's citations.
        sentences = [s["supported_by_citations"] for s in answer["text"]]
        assert None not in sentences  # every claim of the example answers ran
        recall = sum(sentences) / len(sentences)
        precision = answer["citations_supporting"] / answer["citations"]
        assert answer["citation_recall"] == pytest.approx(recall)
        recalls.append(recall)
        precisions.append(precision)
        heading = page.locator("#answers article.answer").nth(i).locator("h3").inner_text()
        assert (
            f"citation recall {recall:.4f} ({answer['sentences_supported']}/{len(sentences)})"
            f" · citation precision {precision:.4f}" in heading
        )
    n = len(data["answers"])
    assert page.inner_text("#alce") == (
        f"ALCE citation recall {sum(recalls) / n:.4f}, citation precision "
        f"{sum(precisions) / n:.4f} (mean over {n} answers)"
    )
    assert tab.errors == []


# -- an imported answer's long ids ---------------------------------------------------------


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """The example suite's saved responses imported into a fresh folder (ids of 60-80
    characters, no cassettes yet) and run: the first report a new user sees."""
    root = tmp_path_factory.mktemp("imported")
    for answer in (REPO / "example_suite" / "answers").glob("*.*"):
        if answer.suffix in (".json", ".md"):
            (root / answer.name).write_bytes(answer.read_bytes())
    command = ["import", "--from", "auto", ".", "-o", "citecheck_answers.yaml"]
    subprocess.run(
        [sys.executable, "-m", "pytest_citecheck.frontends.cli", *command],
        cwd=root,
        check=True,
        capture_output=True,
        timeout=120,
    )
    (root / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    return _reports(root, root, returncode=1)


def test_long_imported_ids_leave_the_claim_readable_and_the_page_in_the_window(
    tab: Page, imported: tuple[Path, dict[str, Any]]
) -> None:
    path, data = imported
    ids = [c["id"] for c in data["claims"]]
    assert sum(60 <= len(i) <= 80 for i in ids) >= len(ids) // 2, ids
    page = tab.open(path)  # 1280 px wide
    widths = dict(
        zip(
            page.locator("#claims thead th").all_inner_texts(),
            page.eval_on_selector_all(
                "#claims thead th", "els => els.map(e => e.getBoundingClientRect().width)"
            ),
            strict=True,
        )
    )
    assert widths["claim"] >= 400, widths
    assert widths["id"] <= 250, widths
    # No column pushed off-screen: the page is no wider than the window.
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280
    table = page.locator("#claims").bounding_box()
    assert table is not None and table["x"] + table["width"] <= 1280, table
    # Each id is on hover in full; a row stays a few lines tall.
    titles = page.eval_on_selector_all("#claims button.toggle", "els => els.map(e => e.title)")
    assert sorted(titles) == sorted(ids)
    heights = page.eval_on_selector_all(
        "#claims tr.row", "els => els.map(e => e.getBoundingClientRect().height)"
    )
    assert max(heights) <= 110, heights  # at most about four lines of 14 px text
    # The header says what to do about the missing recordings.
    assert "have no recording; record them with: pytest --citecheck" in page.inner_text(
        "#no-recording"
    )
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "imported-report.png"))
    assert tab.errors == []
