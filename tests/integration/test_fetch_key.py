"""One fetch key for a cited URL on every fetch path: its fragment is never sent.

A cited URL's fragment (``#section``, a ``#:~:text=`` text fragment) is for a
browser: it is not part of the page. The synchronous fetch, the Crawler's pushes
and the lookup of their deliveries, the recheck and the service all fetch
:func:`~pytest_citecheck.stages.fetch_rules.fetch_url` of it, so the same page cited
with and without a fragment is one request, and a claim gets the same verdict
through the synchronous and the Crawler paths (through the Crawler a text fragment
was pushed, and the claim ended ``error internal_error: NoDelivery`` where the
synchronous run said ``supported``; a recheck called every page cited with a fragment
``changed``, its recorded page not found).
"""

from __future__ import annotations

import os
from pathlib import Path

import httpx
import pytest

from pytest_citecheck.frontends.cli import main
from pytest_citecheck.large_audit.job_store import JobState, JobStore
from tests.doubles.batch import PAGES, SITE, write_records
from tests.doubles.crawlbase import CrawlbaseDouble, Page
from tests.doubles.llm import LLMDouble
from tests.integration.test_crawler_job import (
    CRAWLER,
    JOB,
    OPENAI_KEY,
    Deliverer,
    crawler_batch,
    labels,
    rechecked,
    world,
)

__all__ = ["world"]  # the fixture, shared with the Crawler job's tests

EIFFEL = f"{SITE}/landmarks/eiffel"
BOILING = f"{SITE}/articles/boiling"
# A text fragment whose text is on the page (so whoever wrote it, it is no fabrication),
# and a plain fragment naming a section.
EIFFEL_FRAGMENT = EIFFEL + "#:~:text=The%20Eiffel%20Tower%20stands%20on%20the%20Champ%20de%20Mars"
BOILING_FRAGMENT = BOILING + "#history"
BOILING_CLAIM = "Water boils at 100 degrees Celsius at sea level."
RECORDS: list[dict[str, object]] = [
    {"id": "eiffel", "claim": "The Eiffel Tower is in Paris.", "urls": [EIFFEL_FRAGMENT]},
    {"id": "boiling", "claim": BOILING_CLAIM, "urls": [BOILING_FRAGMENT]},
]
# What the Crawler delivers for each URL pushed: a crawl of a URL with a fragment
# fetches the page (a fragment never reaches the origin).
DELIVERED: dict[str, Page] = {
    **PAGES,
    EIFFEL_FRAGMENT: PAGES[EIFFEL],
    BOILING_FRAGMENT: PAGES[BOILING],
}
# A job that stalls ends well inside the test's time.
WAIT = ("--crawler-wait", "20")
EXPECTED = {("eiffel", EIFFEL_FRAGMENT): "supported", ("boiling", BOILING_FRAGMENT): "supported"}


def test_a_cited_url_with_a_fragment_gets_the_same_verdict_through_the_crawler(
    world: tuple[CrawlbaseDouble, LLMDouble],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    api, _ = world
    # Through the Crawler.
    via = tmp_path / "via"
    via.mkdir()
    records = write_records(via / "fragments.jsonl", RECORDS)
    jobs = tmp_path / "jobs"
    report = via / "report.json"
    with Deliverer(api, jobs, pages=DELIVERED):
        code = main(crawler_batch(records, jobs, "--json", str(report), *WAIT))
    out = capsys.readouterr().out
    assert code == 0, out
    assert labels(report) == EXPECTED, out
    # The page was pushed without its fragment, and found by that key when it came.
    assert sorted(p.url for p in api.pushes) == [BOILING, EIFFEL]
    store = JobStore.open(jobs, JOB)
    assert store is not None
    assert store.counts()[JobState.JUDGED] == 2
    assert sorted(row.url for row in store.rows()) == [BOILING, EIFFEL]

    # Synchronously: the same labels, the same URLs asked for.
    api.reset()
    sync = tmp_path / "sync"
    sync.mkdir()
    records = write_records(sync / "fragments.jsonl", RECORDS)
    report = sync / "report.json"
    code = main(["batch", str(records), "--record", "once", "--json", str(report)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert labels(report) == EXPECTED, out
    assert sorted(c.url for c in api.api_calls) == [BOILING, EIFFEL]


def test_a_recheck_of_a_cited_url_with_a_fragment_compares_its_recorded_page(
    world: tuple[CrawlbaseDouble, LLMDouble],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    api, _ = world
    records = write_records(tmp_path / "fragments.jsonl", RECORDS)
    assert main(["batch", str(records), "--record", "once"]) == 0
    api.reset()
    capsys.readouterr()
    synchronous = tmp_path / "sync.json"
    assert main(["recheck", str(records), "--json", str(synchronous)]) == 0
    # Nothing changed on the pages: the recorded page is found and compared.
    assert set(rechecked(synchronous).values()) == {"same"}, capsys.readouterr().out
    assert sorted(c.url for c in api.api_calls) == [BOILING, EIFFEL]

    api.reset()
    via = tmp_path / "via.json"
    argv = ["recheck", str(records), "--via-crawler", CRAWLER, "--job", "again"]
    with Deliverer(api, tmp_path / "jobs", job="again", pages=DELIVERED):
        code = main([*argv, "--jobs-dir", str(tmp_path / "jobs"), "--json", str(via), *WAIT])
    assert code == 0, capsys.readouterr().out
    assert rechecked(via) == rechecked(synchronous)
    assert sorted(p.url for p in api.pushes) == [BOILING, EIFFEL]


@pytest.mark.allow_resend(
    "a live service (no cassettes): claims r000001, r000002, r000003 and r000004 each "
    "fetch the page they cite (2 between them) and ask the judge the same question (the "
    "same claim text on the same page); only a recording run shares a crawl"
)
def test_the_service_fetches_a_cited_url_with_a_fragment_as_without_it(
    world: tuple[CrawlbaseDouble, LLMDouble],
) -> None:
    from pytest_citecheck.frontends.service import ServiceConfig
    from tests.integration.test_service import serving

    api, _ = world
    environ = {
        "CRAWLBASE_TOKEN": api.tokens["normal"],
        "CITECHECK_CRAWLBASE_URL": api.base_url,
        "OPENAI_API_KEY": OPENAI_KEY,
        "OPENAI_BASE_URL": os.environ["OPENAI_BASE_URL"],
    }
    answers = {}
    with serving(ServiceConfig(), environ) as service:
        for url in (EIFFEL_FRAGMENT, EIFFEL, BOILING_FRAGMENT, BOILING):
            claim = "The Eiffel Tower is in Paris." if "eiffel" in url else BOILING_CLAIM
            reply = httpx.post(
                f"{service}/verify", json={"claim": claim, "urls": [url]}, timeout=60
            )
            assert reply.status_code == 200, reply.text
            (verdict,) = reply.json()["verdicts"]
            answers[url] = (verdict["url"], verdict["label"])
    assert answers == {
        EIFFEL_FRAGMENT: (EIFFEL_FRAGMENT, "supported"),
        EIFFEL: (EIFFEL, "supported"),
        BOILING_FRAGMENT: (BOILING_FRAGMENT, "supported"),
        BOILING: (BOILING, "supported"),
    }
    assert [c.url for c in api.api_calls] == [EIFFEL, EIFFEL, BOILING, BOILING]
