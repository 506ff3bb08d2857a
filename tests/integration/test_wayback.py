"""Invented or rotted: unreachable citations looked up in the Wayback Machine, against
loopback doubles of the Crawling API, the judge and the availability API; recorded once,
replayed with nothing listening and no token."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from pytest_citecheck.claims.labels import Label
from pytest_citecheck.claims.models import Citation, Claim
from pytest_citecheck.claims.results import Archive, ClaimResult
from pytest_citecheck.engine.aggregate import totals
from pytest_citecheck.engine.core import Engine
from pytest_citecheck.engine.rates import rates_line
from pytest_citecheck.engine.settings import EngineSettings, StageHooks
from pytest_citecheck.plugin.terms import PLUGIN_TERMS
from pytest_citecheck.recording.recorder import cassette_path
from pytest_citecheck.stages.wayback import read_availability, snapshot_time
from tests.doubles import recording_environ
from tests.doubles.crawlbase import CrawlbaseDouble, Page
from tests.doubles.llm import LLMDouble, verdict
from tests.doubles.ranking import WordOverlap
from tests.doubles.wayback import WaybackDouble

TOKENS = {"normal": "planted-normal-token-wb01", "javascript": "planted-js-token-wb02"}
KEY = "sk-planted-wayback-key-0c3e"
INVENTED = "https://example.com/reports/2024-boiling-survey"
ROTTED = "https://example.com/old/boiling-faq"
MOVED = "https://example.com/articles/boiling-deep-link"
CLAIM_FILE = Path("claims") / "citecheck_report.yaml"


def claims() -> list[Claim]:
    return [
        Claim(id="invented", claim="Water boils at 100 C.", citations=[Citation(url=INVENTED)]),
        Claim(id="rotted", claim="Water boils at 100 C.", citations=[Citation(url=ROTTED)]),
        Claim(id="moved", claim="Water boils at 100 C.", citations=[Citation(url=MOVED)]),
    ]


def pages(api: CrawlbaseDouble) -> None:
    api.add(INVENTED, Page(markdown="# Not Found", original_status=404))
    api.add(ROTTED, Page(markdown="# Gone", original_status=410))
    # A deep link the site sends to its homepage: the crawl lands on "/".
    home = "# Example\n\n" + "Welcome to our site, read our latest news. " * 20
    api.add(MOVED, Page(markdown=home, final_url="https://example.com/"))


@contextmanager
def services() -> Iterator[tuple[CrawlbaseDouble, LLMDouble, WaybackDouble]]:
    """The Crawling API (serving :func:`pages`), the judge and the Wayback Machine doubles."""
    with (
        CrawlbaseDouble(tokens=TOKENS) as api,
        LLMDouble(api_key=KEY) as llm,
        WaybackDouble() as archive,
    ):
        pages(api)
        yield api, llm, archive


def env(api: CrawlbaseDouble, llm: LLMDouble, archive: WaybackDouble) -> dict[str, str]:
    environ = recording_environ(api.base_url, llm.base_url("openai"), TOKENS, KEY)
    return {**environ, "CITECHECK_WAYBACK_URL": archive.url}


def run(
    root: Path, environ: dict[str, str], mode: str, wayback: bool, verify: bool = False
) -> list[ClaimResult]:
    settings = EngineSettings(
        record_mode=mode, terms=PLUGIN_TERMS, wayback=wayback, wayback_verify=verify
    )
    with Engine.from_settings(settings, StageHooks(make_ranker=WordOverlap), environ) as engine:
        return engine.verify_claims_sync(
            claims(), cassette_for=lambda c: cassette_path(root / CLAIM_FILE, c.id)
        )


def test_a_404_never_archived_is_invented_one_archived_is_rotted_and_both_replay(
    tmp_path: Path,
) -> None:
    with services() as (api, llm, archive):
        snapshot = archive.archive(ROTTED, "20230412083015")
        moved = archive.archive(MOVED, "20220101000000")
        address = env(api, llm, archive)
        recorded = run(tmp_path, address, "once", wayback=True)
        # One lookup per unreachable citation, none for anything else; the judge is
        # never asked about a page that is gone.
        assert sorted(archive.calls) == sorted([INVENTED, ROTTED, MOVED])
        assert llm.calls == []
    by_id = {r.id: r.verdicts[0] for r in recorded}
    assert (by_id["invented"].label, by_id["invented"].reason) == (Label.UNREACHABLE, "http_404")
    assert by_id["invented"].archive == Archive(status="never_archived")
    assert by_id["rotted"].archive == Archive(
        status="rotted", snapshot_url=snapshot, snapshot_time="2023-04-12T08:30:15Z"
    )
    assert by_id["moved"].reason == "redirected_to_homepage"
    assert by_id["moved"].archive == Archive(
        status="rotted", snapshot_url=moved, snapshot_time="2022-01-01T00:00:00Z"
    )
    # The listing docs/deep-research.md shows.
    from pytest_citecheck.reports.report import Report

    report = Report(results={f"citecheck_report.yaml::{r.id}": r for r in recorded})
    lines = [line.text for line in report.lines()]
    at = lines.index("unreachable, asked of the Wayback Machine:")
    assert lines[at + 1 : at + 7] == [
        f"  NEVER_ARCHIVED citecheck_report.yaml::invented  {INVENTED}",
        "      never archived: likely invented",
        f"  ROTTED         citecheck_report.yaml::moved  {MOVED}",
        f"      archived 2022-01-01T00:00:00Z: {moved}",
        f"  ROTTED         citecheck_report.yaml::rotted  {ROTTED}",
        f"      archived 2023-04-12T08:30:15Z: {snapshot}",
    ]
    assert rates_line(totals(recorded).rates).endswith(
        "; unreachable: 1 never archived (likely invented), 2 rotted (archived, now gone)"
    )
    # Every double is gone and no token or key is set: the cassettes answer alone.
    replayed = run(
        tmp_path,
        {k: v for k, v in address.items() if not k.endswith(("TOKEN", "KEY"))},
        "none",
        wayback=True,
    )
    assert [r.model_dump() for r in replayed] == [r.model_dump() for r in recorded]
    for path in (tmp_path / "claims").rglob("*.yaml"):
        text = path.read_text(encoding="utf-8")
        assert "/wayback/available" in text
        assert KEY not in text and TOKENS["normal"] not in text


def test_without_the_setting_nothing_is_asked_and_no_archive_is_shown(tmp_path: Path) -> None:
    with services() as (api, llm, archive):
        results = run(tmp_path, env(api, llm, archive), "once", wayback=False)
        assert archive.calls == []
    assert [r.verdicts[0].archive for r in results] == [None, None, None]
    assert "never archived" not in rates_line(totals(results).rates)


def test_a_recording_made_without_the_lookup_replays_it_as_unknown(tmp_path: Path) -> None:
    with services() as (api, llm, archive):
        address = env(api, llm, archive)
        run(tmp_path, address, "once", wayback=False)
    replayed = run(tmp_path, address, "none", wayback=True)
    invented = replayed[0].verdicts[0]
    # The citation keeps its verdict; only the lookup is unknown, and says how to record it.
    assert (invented.label, invented.reason) == (Label.UNREACHABLE, "http_404")
    assert invented.archive is not None and invented.archive.status == "unknown"
    assert "no reply for GET" in (invented.archive.detail or "")


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b'{"archived_snapshots":{}}', Archive(status="never_archived")),
        (
            b'{"url":"a.org/x","archived_snapshots":{"closest":{"available":true,'
            b'"url":"http://web.archive.org/web/20130919044612/http://a.org/x",'
            b'"timestamp":"20130919044612","status":"200"}}}',
            Archive(
                status="rotted",
                snapshot_url="http://web.archive.org/web/20130919044612/http://a.org/x",
                snapshot_time="2013-09-19T04:46:12Z",
            ),
        ),
        (
            b'{"archived_snapshots":{"closest":{"available":true,"url":"http://w/x",'
            b'"timestamp":"20130919044612","status":"404"}}}',
            Archive(status="never_archived", detail="the only capture is an HTTP 404 (http://w/x)"),
        ),
        (
            b"<html>busy</html>",
            Archive(status="unknown", detail="the availability API answered '<html>busy</html>'"),
        ),
    ],
)
def test_the_availability_answer_is_read_as_archive_org_documents_it(
    body: bytes, expected: Archive
) -> None:
    assert read_availability(body) == expected


def test_a_timestamp_that_is_not_one_gives_no_time() -> None:
    assert snapshot_time("2013") is None
    assert snapshot_time(None) is None


def test_the_reports_show_invented_and_rotted_citations(tmp_path: Path) -> None:
    from pytest_citecheck.reports.html import render_html
    from pytest_citecheck.reports.report import Report

    with services() as (api, llm, archive):
        snapshot = archive.archive(ROTTED, "20230412083015")
        results = run(tmp_path, env(api, llm, archive), "once", wayback=True)
    report = Report(results={f"citecheck_report.yaml::{r.id}": r for r in results})
    lines = [line.text for line in report.lines()]
    at = lines.index("unreachable, asked of the Wayback Machine:")
    assert lines[at + 1 : at + 7] == [
        f"  NEVER_ARCHIVED citecheck_report.yaml::invented  {INVENTED}",
        "      never archived: likely invented",
        f"  NEVER_ARCHIVED citecheck_report.yaml::moved  {MOVED}",
        "      never archived: likely invented",
        f"  ROTTED         citecheck_report.yaml::rotted  {ROTTED}",
        f"      archived 2023-04-12T08:30:15Z: {snapshot}",
    ]
    data = report.scrubbed_json()
    by_id = {c["id"]: c["verdicts"][0] for c in data["claims"]}
    assert by_id["rotted"]["archive"] == {
        "status": "rotted",
        "snapshot_url": snapshot,
        "snapshot_time": "2023-04-12T08:30:15Z",
        "detail": None,
        "verdict": None,
    }
    assert data["totals"]["rates"]["never_archived"] == 2  # the homepage redirect has none
    page = render_html(data)
    assert f'Snapshot: <a href="{snapshot}" rel="noreferrer">{snapshot}</a>' in page
    assert "Never archived by the Wayback Machine: likely invented." in page


ARTICLE = (
    "# Boiling point\n\n"
    + "Water boils at 100 degrees Celsius at sea level. " * 3
    + "\n\nAt higher altitudes the boiling point is lower because air pressure drops. " * 4
)
QUOTE = "Water boils at 100 degrees Celsius at sea level."


def test_a_rotted_citation_verified_on_its_snapshot_is_labelled_apart(tmp_path: Path) -> None:
    with services() as (api, llm, archive):
        snapshot = archive.archive(ROTTED, "20230412083015")
        api.add(snapshot, Page(markdown=ARTICLE))
        llm.script(verdict("supported", QUOTE, 0.95, input_tokens=90, output_tokens=12))
        address = env(api, llm, archive)
        recorded = run(tmp_path, address, "once", wayback=False, verify=True)
        # One judge call and its confirmation, both about the snapshot: nothing else
        # reached the judge.
        assert (len(llm.calls), len(llm.confirmations)) == (1, 1)
    by_id = {r.id: r for r in recorded}
    rotted = by_id["rotted"].verdicts[0]
    # The live verdict is what the page is today; the snapshot's is kept beside it.
    assert (rotted.label, rotted.reason) == (Label.UNREACHABLE, "http_410")
    assert by_id["rotted"].label is Label.UNREACHABLE
    assert rotted.archive is not None and rotted.archive.verdict is not None
    on_snapshot = rotted.archive.verdict
    assert (on_snapshot.url, on_snapshot.label, on_snapshot.evidence_quote) == (
        snapshot,
        Label.SUPPORTED,
        QUOTE,
    )
    # Never counted with the live verdicts: no supported citation, no fact checked...
    run_totals = totals(recorded)
    assert run_totals.supported == 0 and run_totals.rates.fact_check == 0
    # ...but its spend is the citation's: two crawls' credits, the judge's tokens.
    assert len(rotted.fetches) == 2 and rotted.credits == sum(f.credits for f in rotted.fetches)
    assert run_totals.input_tokens >= 90 and run_totals.output_tokens >= 12
    # Replayed with nothing listening and no token: the same, snapshot verdict included.
    offline = {k: v for k, v in address.items() if not k.endswith(("TOKEN", "KEY"))}
    replayed = run(tmp_path, offline, "none", wayback=False, verify=True)
    assert [r.model_dump() for r in replayed] == [r.model_dump() for r in recorded]
    # The reports label it as the snapshot's.
    from pytest_citecheck.reports.html import render_html
    from pytest_citecheck.reports.report import Report

    report = Report(results={f"citecheck_report.yaml::{r.id}": r for r in recorded})
    lines = [line.text for line in report.lines()]
    assert f'      on the snapshot (not live): supported 0.95 "{QUOTE}"' in lines
    page = render_html(report.scrubbed_json())
    import re

    shown = " ".join(re.sub(r"<[^>]+>", " ", page).split())
    assert f"On the snapshot (not a live verdict): supported 0.95 · “{QUOTE}”" in shown
