"""--citecheck-html: one self-contained, escaped page (the browser checks it too:
tests/e2e/test_html_browser.py)."""

from __future__ import annotations

import subprocess
import sys
from html.parser import HTMLParser

import pytest

from tests.plugin.hostile import SCRIPT, write_suite


class Elements(HTMLParser):
    """Every start tag with its attributes, and the page's text."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


@pytest.fixture
def page(pytester: pytest.Pytester) -> Elements:
    write_suite(pytester.path)
    pytester.runpytest("--citecheck", "--citecheck-record=all", "--citecheck-html=out/r.html")
    parsed = Elements()
    parsed.feed((pytester.path / "out" / "r.html").read_text(encoding="utf-8"))
    return parsed


def test_markup_from_pages_claims_and_quotes_is_text(page: Elements) -> None:
    scripts = [attrs for tag, attrs in page.tags if tag == "script"]
    assert len(scripts) == 1  # the report's own, inline
    assert not any(tag == "img" for tag, _ in page.tags)
    handlers = [(tag, name) for tag, attrs in page.tags for name in attrs if name.startswith("on")]
    assert handlers == []
    text = "".join(page.text)
    assert SCRIPT in text  # shown, as text, in the passage and the quote
    assert '<img src=x onerror="window.__citecheck_pwned = true">' in text


def test_page_loads_nothing_from_anywhere(page: Elements) -> None:
    fetching = [
        (tag, name)
        for tag, attrs in page.tags
        for name in attrs
        if name in ("src", "href", "action", "srcset", "poster", "data")
        # A claim's link to itself on this page (#<claim id>) fetches nothing.
        and not (tag == "a" and name == "href" and (attrs[name] or "").startswith("#"))
    ]
    assert fetching == []
    assert not any(tag in ("link", "iframe", "object", "embed", "base") for tag, _ in page.tags)
    csp = next(
        attrs["content"]
        for tag, attrs in page.tags
        if tag == "meta" and attrs.get("http-equiv") == "Content-Security-Policy"
    )
    assert csp is not None and "default-src 'none'" in csp and "script-src 'sha256-" in csp


def test_quote_is_highlighted_in_its_passage(page: Elements) -> None:
    marks = [i for i, (tag, _) in enumerate(page.tags) if tag == "mark"]
    assert len(marks) == 2  # one per citation: each quote sits in the passage shown
    text = "".join(page.text)
    assert f"{SCRIPT} Water boils at 100 degrees Celsius" in text


def test_report_module_does_not_import_jinja2() -> None:
    code = (
        "import sys, pytest_citecheck.reports.report, pytest_citecheck.plugin; "
        "print(sorted(m for m in ('jinja2', 'markupsafe') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"


def test_fuzzy_guard_fields_are_shown_when_present() -> None:
    """The guard's fuzzy matching adds judge_quote and quote_similarity to a verdict."""
    from pytest_citecheck.claims.labels import Label
    from pytest_citecheck.claims.results import ClaimResult, Passage, Verdict
    from pytest_citecheck.reports.html import render_html
    from pytest_citecheck.reports.report import Report

    verdict = Verdict(
        url="https://example.com/a",
        label=Label.SUPPORTED,
        evidence_quote="Water boils at 100 °C.",
        passages=[Passage(index=0, text="Intro. Water boils at 100 °C. More.")],
    )
    result = ClaimResult(id="c", claim="Water boils.", label=Label.SUPPORTED, verdicts=[verdict])
    data = Report(results={"citecheck_a.yaml::c": result}).scrubbed_json()
    data["claims"][0]["verdicts"][0].update(
        judge_quote="Water boils at 100 C", quote_similarity=0.93
    )
    parsed = Elements()
    parsed.feed(render_html(data))
    text = "".join(parsed.text)
    assert "judge's quote" in text and "Water boils at 100 C" in text
    assert "quote similarity" in text and "0.93" in text


NO_CASSETTES = """\
judge: anthropic:claude-x
claims:
  - id: a
    claim: Water boils.
    citations:
      - https://example.com/a
  - id: b
    claim: Ice melts.
    citations:
      - https://example.com/b
"""


def test_the_html_header_and_the_step_summary_say_no_recording_and_how_to_record(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first CI run after claim files are committed without cassettes: the page
    and the job's summary give the one line that fixes it, as the terminal does."""
    summary = pytester.path / "step.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    pytester.makefile(".yaml", citecheck_new=NO_CASSETTES)
    result = pytester.runpytest(
        "--citecheck", "--citecheck-html=r.html", "--citecheck-report=r.json"
    )
    result.assert_outcomes(failed=2)
    line = (
        "2 citations in 2 claims have no recording; record them with: pytest --citecheck "
        "--citecheck-record=once citecheck_new.yaml (recording needs CRAWLBASE_TOKEN, "
        "ANTHROPIC_API_KEY for the judge anthropic:claude-x and the embed or bm25 extra)"
    )
    result.stdout.fnmatch_lines([f"citecheck: {line}; -v lists each"])
    parsed = Elements()
    parsed.feed((pytester.path / "r.html").read_text(encoding="utf-8"))
    assert ("li", {"id": "no-recording"}) in parsed.tags
    assert line in parsed.text
    assert f"- {line}" in summary.read_text(encoding="utf-8").splitlines()
    import json

    report = json.loads((pytester.path / "r.json").read_text(encoding="utf-8"))
    assert report["gate"]["no_recording"] == line
    # Nothing judged the run: the judge that would record is not reported as its judge.
    assert report["run"]["judges"] == []
