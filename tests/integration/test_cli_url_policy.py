"""``citecheck batch --url-policy public``: an internal or credentialed URL is a
``url_refused`` citation and no request; credentials never reach the outputs.

Against the loopback doubles (tests/doubles), like tests/integration/test_cli.py.
"""

from __future__ import annotations

import csv
import json
from dataclasses import replace
from pathlib import Path

import pytest

from pytest_citecheck.frontends.cli import main
from pytest_citecheck.reports.audit import AuditIndex
from tests.doubles.batch import PAGES, SITE, write_records
from tests.doubles.crawlbase import CrawlbaseDouble
from tests.doubles.llm import LLMDouble
from tests.integration.test_cli import batch, world  # noqa: F401 -- the fixture

BOILING = f"{SITE}/articles/boiling"
SECRET_URL = "https://alice:hunter2@example.com/articles/boiling"
INTERNAL = [
    "http://169.254.169.254/latest/meta-data/",
    "http://metadata.google.internal/computeMetadata/v1/",
    "http://0x7f000001:22/",
    "http://2130706433/",
    "http://[::ffff:10.0.0.1]/",
    "http://localhost:8000/health",
    SECRET_URL,
]
RECORDS: list[dict[str, object]] = [
    {
        "id": "boiling",
        "claim": "Water boils at 100 degrees Celsius at sea level.",
        "urls": [BOILING],
    },
    {"id": "internal", "claim": "Water boils at 100 degrees Celsius.", "urls": INTERNAL},
]


def test_public_policy_refuses_internal_urls_without_a_request(
    world: tuple[CrawlbaseDouble, LLMDouble],  # noqa: F811
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    api, llm = world
    api.add("https://alice:hunter2@example.com/articles/boiling", PAGES[BOILING])
    records = write_records(tmp_path / "o.jsonl", RECORDS)
    out_csv, audit = tmp_path / "r.csv", tmp_path / "audit.db"
    code, out, err = batch(
        capsys,
        str(records),
        "--url-policy",
        "public",
        "--out",
        str(out_csv),
        "--audit",
        str(audit),
    )
    rows = list(csv.DictReader(out_csv.open(encoding="utf-8")))
    refused = [r for r in rows if r["claim_id"] == "internal"]
    assert [r["reason"] for r in refused] == ["url_refused"] * len(INTERNAL)
    assert {r["label"] for r in refused} == {"not_found"}
    # Only the public page was crawled and judged.
    assert [c.url for c in api.api_calls] == [BOILING]
    assert len(llm.calls) == 1
    assert "citation_precision=0.1250 (1/8)" in out
    assert code == 0
    everything = out + err + out_csv.read_text(encoding="utf-8")
    everything += "".join(str(r) for r in AuditIndex(audit).rows())
    assert "hunter2" not in everything and "alice" not in everything


def test_policy_off_is_the_default_and_credentials_are_still_scrubbed(
    world: tuple[CrawlbaseDouble, LLMDouble],  # noqa: F811
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    api, _ = world
    api.add(SECRET_URL, PAGES[BOILING])
    claim = {"id": "secret", "claim": "Water boils at 100 degrees Celsius.", "urls": [SECRET_URL]}
    records = write_records(tmp_path / "o.jsonl", [claim])
    out_csv, audit = tmp_path / "r.csv", tmp_path / "audit.db"
    code, out, err = batch(capsys, str(records), "--out", str(out_csv), "--audit", str(audit))
    assert [c.url for c in api.api_calls] == [SECRET_URL]  # today's behaviour: fetched
    (row,) = AuditIndex(audit).rows()
    assert row.url == "https://REDACTED@example.com/articles/boiling"
    everything = out + err + out_csv.read_text(encoding="utf-8") + str(row)
    assert "hunter2" not in everything
    assert code == 0


def test_credentials_in_a_cited_url_never_reach_a_cassette_and_it_still_replays(
    world: tuple[CrawlbaseDouble, LLMDouble],  # noqa: F811
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    api, llm = world
    api.add(SECRET_URL, PAGES[BOILING])
    claim = {"id": "secret", "claim": "Water boils at 100 degrees Celsius.", "urls": [SECRET_URL]}
    records = write_records(tmp_path / "o.jsonl", [claim])
    cassettes = tmp_path / "cassettes"
    first, second = tmp_path / "recorded.json", tmp_path / "replayed.json"
    code, _, _ = batch(
        capsys, str(records), "--record", "all", "--cassettes", str(cassettes), "--json", str(first)
    )
    assert code == 0 and [c.url for c in api.api_calls] == [SECRET_URL]
    recorded = "".join(p.read_text(encoding="utf-8") for p in cassettes.rglob("*.yaml"))
    assert recorded and "hunter2" not in recorded and "alice" not in recorded
    # Replay matches the live request's URL with its credentials taken out the same way.
    api.reset()
    llm.reset()
    code, _, _ = batch(
        capsys,
        str(records),
        "--record",
        "none",
        "--cassettes",
        str(cassettes),
        "--json",
        str(second),
    )
    assert code == 0 and api.api_calls == [] and llm.calls == []

    def labels(path: Path) -> list[tuple[str, str]]:
        claims = json.loads(path.read_text(encoding="utf-8"))["claims"]
        return [(v["label"], v["url"]) for c in claims for v in c["verdicts"]]

    redacted = "https://REDACTED@example.com/articles/boiling"
    assert labels(second) == labels(first) == [("supported", redacted)]


def test_a_page_that_redirects_to_an_internal_address_is_refused_after_the_crawl(
    world: tuple[CrawlbaseDouble, LLMDouble],  # noqa: F811
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    api, llm = world
    cited = f"{SITE}/moved"
    # The Crawling API followed the redirects and reports where it landed (its url header).
    api.add(cited, replace(PAGES[BOILING], final_url="http://127.0.0.1.nip.io:8080/admin"))
    claim = {"id": "moved", "claim": "Water boils at 100 degrees Celsius.", "urls": [cited]}
    records = write_records(tmp_path / "o.jsonl", [claim])
    out_csv, report, audit = tmp_path / "r.csv", tmp_path / "r.json", tmp_path / "audit.db"
    outputs = {"--out": out_csv, "--json": report, "--audit": audit}
    options = [str(records), "--url-policy=public"]
    code, out, err = batch(capsys, *options, *(f"{k}={v}" for k, v in outputs.items()))
    (row,) = list(csv.DictReader(out_csv.open(encoding="utf-8")))
    assert (row["label"], row["reason"]) == ("not_found", "url_refused")
    assert api.calls_for(cited) and llm.calls == []  # crawled (and paid), never judged
    (verdict,) = json.loads(report.read_text(encoding="utf-8"))["claims"][0]["verdicts"]
    assert verdict["final_url"] == "[internal address]"
    assert {f["final_url"] for f in verdict["fetches"]} == {"[internal address]"}
    everything = out + err + out_csv.read_text(encoding="utf-8") + report.read_text("utf-8")
    everything += "".join(str(r) for r in AuditIndex(audit).rows())
    assert "nip.io" not in everything and "127.0.0.1" not in everything
    assert code == 0


def test_serve_help_says_names_are_not_resolved_and_why(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "Names are not resolved: the Crawling API resolves them from its own network" in text
    assert "nip.io" in text and "lands on such an address" in text
