"""What becomes of one recorded citation when its page is fetched again (pure, no I/O)."""

from __future__ import annotations

import pytest

from pytest_citecheck.claims.labels import Label, Reason
from pytest_citecheck.claims.results import Passage, Verdict
from pytest_citecheck.core.defaults import RecheckStatus
from pytest_citecheck.engine.recheck import classify, live_cassette_path
from pytest_citecheck.reports.html import word_diff
from pytest_citecheck.stages.fetch_rules import FetchResult
from pytest_citecheck.stages.quote_policy import QuotePolicy

URL = "https://example.com/news/bridge"
QUOTE = "The Harbour Bridge opened to traffic on 3 May 2021."
PAGE = (
    "# The bridge\n\nThe council voted for it in 2017 after a long debate about its cost.\n\n"
    f"Crowds came from across the county. {QUOTE} It was two years late.\n"
)
SUPPORTED = Verdict(
    url=URL,
    label=Label.SUPPORTED,
    evidence_quote=QUOTE,
    confidence=0.9,
    passages=[Passage(index=1, text=f"Crowds came from across the county. {QUOTE}")],
)


def live(text: str | None = None, **kw: object) -> FetchResult:
    return FetchResult(url=URL, text=text, **kw)  # type: ignore[arg-type]


def status(recorded: Verdict, then: str | None, now: FetchResult, **kw: object) -> RecheckStatus:
    return classify(recorded, then, now, **kw)[0]  # type: ignore[arg-type]


def test_the_same_text_is_same_whatever_the_layout():
    reflowed = PAGE.replace("\n\n", "\n\n\n").replace(" ", "  ").replace("'", "\u2019")
    assert status(SUPPORTED, PAGE, live(reflowed)) is RecheckStatus.SAME


def test_a_change_elsewhere_keeps_the_evidence():
    changed = PAGE + "\nUpdate: a cycle lane was added in 2023.\n"
    assert status(SUPPORTED, PAGE, live(changed)) is RecheckStatus.CHANGED


def test_a_removed_quote_is_evidence_gone():
    edited = PAGE.replace(QUOTE, "The bridge opened in spring.")
    recheck, detail = classify(SUPPORTED, PAGE, live(edited))
    assert recheck is RecheckStatus.EVIDENCE_GONE
    assert detail == "the evidence quote is no longer on the page"


def test_an_edited_quote_is_kept_under_the_fuzzy_policy_only():
    # One word changed ("traffic" -> "all traffic"): near, and no number, date or negation.
    edited = PAGE.replace("opened to traffic", "opened to all traffic")
    fuzzy = QuotePolicy(mode="fuzzy", similarity=0.85)

    assert status(SUPPORTED, PAGE, live(edited)) is RecheckStatus.EVIDENCE_GONE
    assert status(SUPPORTED, PAGE, live(edited), policy=fuzzy) is RecheckStatus.CHANGED


def test_a_changed_date_is_evidence_gone_even_under_the_fuzzy_policy():
    edited = PAGE.replace("3 May 2021", "3 May 2022")
    fuzzy = QuotePolicy(mode="fuzzy", similarity=0.85)
    assert status(SUPPORTED, PAGE, live(edited), policy=fuzzy) is RecheckStatus.EVIDENCE_GONE


def test_a_verdict_that_quoted_nothing_only_changes():
    not_found = Verdict(url=URL, label=Label.NOT_FOUND, confidence=0.8)
    refused = Verdict(
        url=URL,
        label=Label.NOT_FOUND,
        evidence_quote="a paraphrase the guard refused",
        reason=Reason.EVIDENCE_QUOTE_NOT_IN_SOURCE,
    )
    for recorded in (not_found, refused):
        assert status(recorded, PAGE, live(PAGE + "\nMore.\n")) is RecheckStatus.CHANGED


@pytest.mark.parametrize(
    ("reason", "label", "expected"),
    [
        (Reason.HTTP_404, Label.UNREACHABLE, RecheckStatus.PAGE_GONE),
        (Reason.HTTP_410, Label.UNREACHABLE, RecheckStatus.PAGE_GONE),
        (Reason.SOFT_404, Label.NOT_FOUND, RecheckStatus.PAGE_GONE),
        (Reason.EMPTY_PAGE, Label.NOT_FOUND, RecheckStatus.PAGE_GONE),
        (Reason.REDIRECTED_TO_HOMEPAGE, Label.NOT_FOUND, RecheckStatus.MOVED),
        (Reason.BLOCKED, Label.NOT_FOUND, RecheckStatus.BLOCKED),
        (Reason.PAYWALLED, Label.NOT_FOUND, RecheckStatus.BLOCKED),
        (Reason.CRAWL_FAILED, Label.ERROR, RecheckStatus.ERROR),
        (Reason.CONFIGURATION, Label.ERROR, RecheckStatus.ERROR),
    ],
)
def test_a_live_page_without_text_says_what_became_of_it(reason, label, expected):
    assert status(SUPPORTED, PAGE, live(label=label, reason=reason)) is expected


def test_a_page_that_was_already_gone_and_still_is_is_the_same():
    gone = Verdict(url=URL, label=Label.UNREACHABLE, reason=Reason.HTTP_404)
    now = live(label=Label.UNREACHABLE, reason=Reason.HTTP_404)
    assert status(gone, None, now) is RecheckStatus.SAME


def test_a_page_that_is_back_has_changed():
    gone = Verdict(url=URL, label=Label.UNREACHABLE, reason=Reason.HTTP_404)
    recheck, detail = classify(gone, None, live(PAGE))
    assert recheck is RecheckStatus.CHANGED
    assert detail == "the page has text again (recorded: http_404)"


def test_the_live_recording_sits_beside_the_original_never_on_it(tmp_path):
    original = tmp_path / "cassettes" / "citecheck_a" / "bridge.yaml"
    assert live_cassette_path(original) == tmp_path / "cassettes" / "citecheck_a" / "recheck" / (
        "bridge.yaml"
    )


def test_word_diff_marks_what_was_removed_and_what_came_instead():
    then, now = word_diff("The bridge opened on 3 May 2021.", "The bridge opened in spring.")
    assert [s["text"] for s in then if s["op"] == "delete"] == ["on 3 May 2021."]
    assert [s["text"] for s in now if s["op"] == "insert"] == ["in spring."]
    assert "".join(s["text"] for s in then) == "The bridge opened on 3 May 2021."
    assert "".join(s["text"] for s in now) == "The bridge opened in spring."
