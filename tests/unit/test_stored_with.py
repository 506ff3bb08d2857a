"""Which token stored a verdict's page (Storage may be kept per token), and the read-back
command the recheck prints for it."""

from __future__ import annotations

from pytest_citecheck.claims.labels import Label
from pytest_citecheck.claims.results import Fetch, Verdict
from pytest_citecheck.reports.audit import audit_page_command


def fetch(token: str, rid: str | None) -> Fetch:
    return Fetch(token=token, readability=True, status_code=200, rid=rid)


def test_the_fetch_answered_with_the_rid_names_the_token() -> None:
    # The Normal crawl was thin (its own rid), the JavaScript one gave the judged page.
    verdict = Verdict(
        url="https://example.com/app",
        label=Label.SUPPORTED,
        rid="rid-js",
        fetches=[fetch("normal", "rid-normal"), fetch("javascript", "rid-js")],
    )
    assert verdict.stored_with() == "javascript"
    assert verdict.model_copy(update={"rid": "rid-normal"}).stored_with() == "normal"
    assert verdict.model_copy(update={"rid": None}).stored_with() is None


def test_the_recheck_names_the_javascript_token_only_when_it_stored_the_page() -> None:
    assert audit_page_command("rid-js", "javascript") == (
        "citecheck audit page rid-js --crawled-with javascript"
    )
    assert audit_page_command("rid-n", "normal") == "citecheck audit page rid-n"
    assert audit_page_command("rid-x", None) == "citecheck audit page rid-x"
