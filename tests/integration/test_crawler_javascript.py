"""``citecheck batch --via-crawler NAME --js-crawler JSNAME``: a page that is thin
without JavaScript is pushed again to a JavaScript Crawler, its claim verified when
the rendered page is delivered, recorded as a synchronous escalation records it, and
replayed offline with the same labels; without ``--js-crawler`` such a page is never
answered with its normal delivery: the labels are a synchronous run's with no
JavaScript token, and the job says how many pages needed JavaScript.

Loopback as in test_crawler_job.py: the Crawling API double answers the pushes, and
:class:`Deliverer` plays both Crawlers -- a push with the JavaScript token (to the
JavaScript Crawler) is delivered rendered (its page's ``js``)."""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_citecheck.claims.labels import Reason
from pytest_citecheck.core.providers import TokenKind
from pytest_citecheck.frontends.cli import main
from pytest_citecheck.large_audit.job_store import (
    CITATION_HEADER,
    Delivery,
    DeliveryOutcome,
    JobState,
    JobStore,
    js_citation_id,
)
from pytest_citecheck.large_audit.pusher import CrawlerPusher
from pytest_citecheck.stages.fetch import CRAWLER_RID_HEADER
from tests.doubles.batch import BOILING, FILLER, PAGES, SITE, judge_by_page, use_doubles
from tests.doubles.crawlbase import CrawlbaseDouble, Page, Push
from tests.doubles.crawler import CrawlerDouble
from tests.doubles.llm import LLMDouble
from tests.integration.test_crawler_double import Webhook
from tests.integration.test_crawler_job import (
    CRAWLER,
    JOB,
    OPENAI_KEY,
    Killed,
    crawler_batch,
    labels,
    page_of,
)
from tests.integration.test_crawler_job import (
    Deliverer as JobDeliverer,
)

JS_CRAWLER = "citecheck-audit-js"
APP = f"{SITE}/app/boiling"  # a page that renders its text with JavaScript
APP_PAGE = Page(markdown="Loading...", js=Page(markdown=f"# Boiling\n\n{BOILING}{FILLER}\n"))
RECORDS = [
    {
        "id": "boiling",
        "claim": "Water boils at 100 degrees Celsius at sea level.",
        "urls": [f"{SITE}/articles/boiling", APP],
    },
    {
        "id": "eiffel",
        "claim": "The Eiffel Tower is in Paris.",
        "urls": [f"{SITE}/landmarks/eiffel"],
    },
]
NORMAL_URLS = sorted([f"{SITE}/articles/boiling", APP, f"{SITE}/landmarks/eiffel"])


@pytest.fixture
def world(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[CrawlbaseDouble, LLMDouble]]:
    with CrawlbaseDouble() as api, LLMDouble(judge_by_page) as llm:
        use_doubles(monkeypatch, api, llm, OPENAI_KEY)
        api.add(APP, APP_PAGE)
        yield api, llm


def write(path: Path) -> Path:
    path.write_text("\n".join(json.dumps(r) for r in RECORDS) + "\n", encoding="utf-8")
    return path


def is_js(push: Push, api: CrawlbaseDouble) -> bool:
    return push.params["token"] == api.tokens["javascript"]


class Deliverer(JobDeliverer):
    """Both Crawlers: a push with the JavaScript token (to the JavaScript Crawler) is
    delivered rendered."""

    def __init__(self, api: CrawlbaseDouble, jobs: Path, **more: Page) -> None:
        super().__init__(api, jobs, pages={**PAGES, APP: APP_PAGE, **more})

    def delivered(self, push: Push) -> Delivery:
        if is_js(push, self.api):
            return page_of(push, pages={u: p.js or p for u, p in self.pages.items()})
        return super().delivered(push)


def sync_labels(records: Path, tmp_path: Path, name: str) -> dict[tuple[str, str], str]:
    """The labels of a synchronous recording of ``records`` (its own cassettes)."""
    report = tmp_path / f"{name}.json"
    argv = ["batch", str(records), "--record", "once", "--cassettes", str(tmp_path / name)]
    main([*argv, "--allow-contradicted", "--json", str(report)])
    return labels(report)


@pytest.mark.allow_resend(
    "claim boiling's two pages hold the same text in the doubles: its two citations ask "
    "the judge the same question (both recorded)"
)
def test_a_page_that_needs_javascript_is_pushed_to_the_js_crawler_and_replays_offline(
    world: tuple[CrawlbaseDouble, LLMDouble],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    api, llm = world
    records = write(tmp_path / "o.jsonl")
    jobs = tmp_path / "jobs"
    recorded = tmp_path / "recorded.json"
    with Deliverer(api, jobs) as deliverer:
        code = main(
            crawler_batch(records, jobs, "--js-crawler", JS_CRAWLER, "--json", str(recorded))
        )
    captured = capsys.readouterr()
    assert code == 0, captured.out + captured.err
    found = labels(recorded)
    assert found[("boiling", APP)] == "supported"  # read from the rendered page
    # Three normal pushes, then one JavaScript push of the thin page, to its Crawler.
    normal = [p for p in api.pushes if not is_js(p, api)]
    rendered = [p for p in api.pushes if is_js(p, api)]
    assert sorted(p.url for p in normal) == NORMAL_URLS
    assert {p.crawler for p in normal} == {CRAWLER}
    assert [(p.url, p.crawler) for p in rendered] == [(APP, JS_CRAWLER)]
    assert rendered[0].echoed[CITATION_HEADER] == js_citation_id("o.boiling#2")
    assert DeliveryOutcome.UNKNOWN not in deliverer.outcomes
    # No synchronous crawl: every page came through a Crawler.
    assert [c for c in api.api_calls if c.params.get("callback") != "true"] == []
    # 3 normal crawls at 1 credit, the JavaScript one at 2 (a push stores nothing).
    assert "crawling API credits 5," in captured.out
    store = JobStore.open(jobs, JOB)
    assert store is not None
    assert store.counts()[JobState.JUDGED] == len(NORMAL_URLS) + 1
    assert store.state(js_citation_id("o.boiling#2")) is JobState.JUDGED
    assert f"1 page rendered with JavaScript by the JavaScript Crawler {JS_CRAWLER}" in (
        captured.err
    )

    # The cassette records both crawls as a synchronous escalation does: the normal
    # reply, then the JavaScript one, each with its Crawler rid and its token's placeholder.
    tape = (tmp_path / "cassettes" / "o" / "boiling.yaml").read_text(encoding="utf-8")
    app_normal = next(p.rid for p in normal if p.url == APP)
    assert tape.index(app_normal) < tape.index(rendered[0].rid)
    assert "token=REDACTED-JS" in tape and tape.count(CRAWLER_RID_HEADER) >= 3
    assert api.tokens["javascript"] not in tape

    # The same labels as a synchronous recording with both tokens.
    assert sync_labels(records, tmp_path, "sync") == found
    capsys.readouterr()

    # Offline: no token, no key, nothing sent; the same labels.
    for name in ("CRAWLBASE_TOKEN", "CRAWLBASE_JS_TOKEN", "OPENAI_API_KEY"):
        monkeypatch.delenv(name)
    calls = (len(api.calls), len(llm.calls))
    replayed = tmp_path / "replayed.json"
    argv = ["batch", str(records), "--record", "none", "--allow-contradicted"]
    code = main([*argv, "--json", str(replayed)])
    assert code == 0, capsys.readouterr().out
    assert (len(api.calls), len(llm.calls)) == calls
    assert labels(replayed) == found


@pytest.mark.allow_resend(
    "claim boiling's two pages hold the same text in the doubles: its two citations ask "
    "the judge the same question (both recorded)"
)
def test_without_a_js_crawler_the_labels_are_a_run_without_the_javascript_token(
    world: tuple[CrawlbaseDouble, LLMDouble],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    api, _ = world
    records = write(tmp_path / "o.jsonl")
    jobs = tmp_path / "jobs"
    report = tmp_path / "crawler.json"
    with Deliverer(api, jobs):
        code = main(crawler_batch(records, jobs, "--json", str(report)))
    captured = capsys.readouterr()
    assert code == 1  # the page that needs JavaScript is an error: the gate fails
    assert "1 page needs JavaScript and the job has no JavaScript Crawler" in captured.err
    assert "--js-crawler NAME" in captured.err
    # The thin page was never answered with its normal delivery, nor pushed again.
    assert sorted(p.url for p in api.pushes) == NORMAL_URLS
    data = json.loads(report.read_text(encoding="utf-8"))
    verdict = next(v for c in data["claims"] for v in c["verdicts"] if v["url"] == APP)
    assert (verdict["label"], verdict["reason"]) == ("error", Reason.CONFIGURATION)
    assert "--js-crawler NAME" in verdict["detail"]
    code = main(["jobs", "status", JOB, "--jobs-dir", str(jobs)])
    assert "1 page needs JavaScript" in capsys.readouterr().out

    # A synchronous run with only the normal token decides the same labels.
    monkeypatch.delenv("CRAWLBASE_JS_TOKEN")
    assert sync_labels(records, tmp_path, "sync") == labels(report)
    monkeypatch.setenv("CRAWLBASE_JS_TOKEN", api.tokens["javascript"])
    capsys.readouterr()

    # The same command with --js-crawler resumes the job: only the JavaScript page is
    # pushed, and its claim is verified.
    again = tmp_path / "again.json"
    with Deliverer(api, jobs) as deliverer:
        deliverer._seen = len(api.pushes)
        code = main(crawler_batch(records, jobs, "--js-crawler", JS_CRAWLER, "--json", str(again)))
    assert code == 0, capsys.readouterr().out
    assert [p.url for p in api.pushes if is_js(p, api)] == [APP]
    assert Counter(p.url for p in api.pushes if not is_js(p, api)) == Counter(NORMAL_URLS)
    assert labels(again)[("boiling", APP)] == "supported"
    store = JobStore.open(jobs, JOB)
    assert store is not None
    assert store.needs_javascript() == 0
    assert {r.state for r in store.rows()} == {JobState.JUDGED}


@pytest.mark.parametrize(
    ("method", "where"),
    [
        ("mark_sending", "killed after the JavaScript push was queued and taken, before it left"),
        ("mark_pushed", "killed after the JavaScript push was answered, before its rid was kept"),
    ],
)
@pytest.mark.allow_resend(
    "claim boiling's two pages hold the same text in the doubles: its two citations ask "
    "the judge the same question (both recorded)"
)
def test_a_job_killed_after_queueing_a_javascript_push_resumes_without_pushing_it_twice(
    world: tuple[CrawlbaseDouble, LLMDouble],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    method: str,
    where: str,
) -> None:
    api, llm = world
    records = write(tmp_path / "o.jsonl")
    jobs = tmp_path / "jobs"
    js = js_citation_id("o.boiling#2")
    argv = crawler_batch(records, jobs, "--js-crawler", JS_CRAWLER)
    original = getattr(JobStore, method)

    def dying(self: JobStore, citation: str, *args: object) -> object:
        if citation == js:
            # The eiffel claim's page came with the first pushes, but under load its
            # claim may not have started yet: killed then, it never ran (not judged).
            judged_by = time.monotonic() + 10
            while self.state("o.eiffel#1") is not JobState.JUDGED:
                assert time.monotonic() < judged_by, "the eiffel claim never finished"
                time.sleep(0.01)
            raise Killed(method)
        return original(self, citation, *args)

    with Deliverer(api, jobs) as deliverer:
        with monkeypatch.context() as patch:
            patch.setattr(JobStore, method, dying)
            with pytest.raises(Killed):
                main(argv)
        killed = JobStore.open(jobs, JOB)
        assert killed is not None
        sent = [p for p in api.pushes if is_js(p, api)]
        if method == "mark_sending":  # died before it left: back to the queue on resume
            assert (killed.state(js), sent) == (JobState.PUSHING, []), where
        else:  # it left: never pushed again, its page binds by the echoed id
            assert len(sent) == 1, where
        assert killed.state("o.eiffel#1") is JobState.JUDGED
        code = main([*argv, "--json", str(tmp_path / "r.json")])
    out = capsys.readouterr().out
    assert code == 0, out
    pushed = Counter((p.url, is_js(p, api)) for p in api.pushes)
    assert [key for key, n in pushed.items() if n > 1] == [], where  # none pushed twice
    assert pushed[(APP, True)] == 1, where  # the JavaScript push went out, once
    assert DeliveryOutcome.UNKNOWN not in deliverer.outcomes
    store = JobStore.open(jobs, JOB)
    assert store is not None
    assert {r.state for r in store.rows()} == {JobState.JUDGED}, where
    assert set(labels(tmp_path / "r.json").values()) == {"supported"}
    # Each readable page was judged once: the eiffel claim was replayed on resume,
    # the boiling one never judged before its JavaScript page came.
    assert len(llm.calls) == 3


def test_js_crawler_needs_via_crawler_and_the_javascript_token(
    world: tuple[CrawlbaseDouble, LLMDouble],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    api, _ = world
    records = write(tmp_path / "o.jsonl")
    for command in (["batch", "--record", "once"], ["recheck"]):
        code = main([*command, str(records), "--js-crawler", JS_CRAWLER])
        assert code == 2
        assert "--js-crawler pushes a Crawler job's pages" in capsys.readouterr().err
    monkeypatch.delenv("CRAWLBASE_JS_TOKEN")
    code = main(crawler_batch(records, tmp_path / "jobs", "--js-crawler", JS_CRAWLER))
    assert code == 2
    err = capsys.readouterr().err
    assert "--js-crawler: CRAWLBASE_JS_TOKEN is not set" in err
    assert api.calls == []


@pytest.mark.allow_resend(
    "claim boiling's two pages hold the same text in the doubles: its two citations ask "
    "the judge the same question (both recorded)"
)
def test_a_recheck_through_both_crawlers_finds_what_a_synchronous_recheck_finds(
    world: tuple[CrawlbaseDouble, LLMDouble],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    api, _ = world
    records = write(tmp_path / "o.jsonl")
    assert main(["batch", str(records), "--record", "once", "--allow-contradicted"]) == 0
    api.reset()
    jobs = tmp_path / "jobs"
    via = tmp_path / "via.json"
    argv = ["recheck", str(records), "--via-crawler", CRAWLER, "--js-crawler", JS_CRAWLER]
    with Deliverer(api, jobs):
        code = main([*argv, "--job", JOB, "--jobs-dir", str(jobs), "--json", str(via)])
    assert code == 0, capsys.readouterr().out
    assert [(p.url, p.crawler) for p in api.pushes if is_js(p, api)] == [(APP, JS_CRAWLER)]
    assert [c for c in api.api_calls if c.params.get("callback") != "true"] == []
    synchronous = tmp_path / "sync.json"
    assert main(["recheck", str(records), "--json", str(synchronous)]) == 0

    def statuses(report: Path) -> dict[tuple[str, str], str]:
        data = json.loads(report.read_text(encoding="utf-8"))
        return {(c["id"], k["url"]): k["status"] for c in data["claims"] for k in c["citations"]}

    assert statuses(via) == statuses(synchronous)
    assert statuses(via)[("boiling", APP)] == "same"


def test_the_crawler_double_renders_on_a_javascript_crawler_for_its_token_only() -> None:
    """A JavaScript Crawler takes pushes with the JavaScript token and delivers the page
    rendered; a TCP Crawler delivers it as the normal crawl sees it; a push with the
    other kind's token finds no Crawler."""
    with Webhook() as hook:
        crawlers = {CRAWLER: hook.url, JS_CRAWLER: hook.url}
        with CrawlerDouble(crawlers, js_crawlers=[JS_CRAWLER]) as double:
            double.add(APP, APP_PAGE)

            def pusher(crawler: str, kind: TokenKind) -> CrawlerPusher:
                token = double.tokens[kind]
                return CrawlerPusher(
                    token=token, crawler=crawler, base_url=double.base_url, kind=kind
                )

            rendered = pusher(JS_CRAWLER, "javascript").push(APP, {CITATION_HEADER: "c#1.js"})
            normal = pusher(CRAWLER, "normal").push(APP, {CITATION_HEADER: "c#1"})
            wrong = [
                pusher(JS_CRAWLER, "normal").push(APP, {CITATION_HEADER: "x"}),
                pusher(CRAWLER, "javascript").push(APP, {CITATION_HEADER: "y"}),
            ]
            assert double.wait_idle(timeout=10)
    assert (rendered.outcome, normal.outcome) == ("accepted", "accepted")
    assert [(r.outcome, r.status) for r in wrong] == [("refused", 404), ("refused", 404)]
    bodies = {headers[CITATION_HEADER]: body.decode() for headers, body in hook.received}
    assert bodies == {"c#1.js": APP_PAGE.js.markdown if APP_PAGE.js else "", "c#1": "Loading..."}


@pytest.mark.allow_resend(
    "its two pages hold the same text: the two citations' judge questions are identical"
)
def test_a_claim_with_two_javascript_pages_waits_for_both_and_is_judged_once(
    world: tuple[CrawlbaseDouble, LLMDouble],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Both pages are pushed to the JavaScript Crawler together (the fetcher is asked
    which pages it will render before the claim runs), and the judge sees each page once."""
    api, llm = world
    other = f"{SITE}/app/boiling-2"
    api.add(other, APP_PAGE)
    records = tmp_path / "o.jsonl"
    claim = {"id": "boiling", "claim": RECORDS[0]["claim"], "urls": [APP, other]}
    records.write_text(json.dumps(claim) + "\n", encoding="utf-8")
    jobs = tmp_path / "jobs"
    report = tmp_path / "r.json"
    with Deliverer(api, jobs, **{other: APP_PAGE}):
        argv = crawler_batch(records, jobs, "--js-crawler", JS_CRAWLER, "--json", str(report))
        code = main(argv)
    assert code == 0, capsys.readouterr().out
    assert sorted(p.url for p in api.pushes if is_js(p, api)) == [APP, other]
    assert labels(report) == {("boiling", APP): "supported", ("boiling", other): "supported"}
    # One judge call per page: nothing was judged before both had come (a claim run
    # as each page came would have judged the first page twice).
    assert len(llm.calls) == 2


@pytest.mark.allow_resend(
    "claim boiling's two pages hold the same text in the doubles: its two citations ask "
    "the judge the same question (both recorded)"
)
def test_a_javascript_crawler_and_a_judge_batch_together_give_the_synchronous_labels(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The nightly-audit shape: pages from both Crawlers, every judge question through
    the batch API; the labels are a synchronous run's (which renders the page itself)."""
    from tests.doubles.llm_batch import LLMBatchDouble

    records = write(tmp_path / "o.jsonl")
    jobs, report = tmp_path / "jobs", tmp_path / "job.json"
    with CrawlbaseDouble() as api, LLMBatchDouble(judge_by_page) as llm:
        use_doubles(monkeypatch, api, llm, OPENAI_KEY)
        api.add(APP, APP_PAGE)
        expected = sync_labels(records, tmp_path, "sync")
        assert expected[("boiling", APP)] == "supported"  # rendered by the JavaScript token
        llm.sync_requests = 0
        api_calls = len(api.api_calls)
        with Deliverer(api, jobs):
            argv = crawler_batch(records, jobs, "--js-crawler", JS_CRAWLER, "--judge-batch")
            code = main([*argv, "--judge-batch-poll", "0.01", "--json", str(report)])
        captured = capsys.readouterr()
        assert code == 0, captured.out + captured.err
        assert labels(report) == expected
        assert llm.sync_requests == 0 and llm.batches  # every question went in a batch
        # Every page came through a Crawler (no synchronous crawl), the thin one twice.
        crawls = api.api_calls[api_calls:]
        assert all(c.params.get("callback") == "true" for c in crawls)
        assert [p.url for p in api.pushes if is_js(p, api)] == [APP]

        # Offline, with no token and no key: the same labels from the job's cassettes.
        for name in ("CRAWLBASE_TOKEN", "CRAWLBASE_JS_TOKEN", "OPENAI_API_KEY"):
            monkeypatch.delenv(name)
        made = (len(api.api_calls), len(llm.calls), len(llm.batches))
        replay = tmp_path / "replay.json"
        argv = ["batch", str(records), "--record", "none", "--allow-contradicted"]
        assert main([*argv, "--json", str(replay)]) == 0, capsys.readouterr().err
        assert labels(replay) == expected
        assert (len(api.api_calls), len(llm.calls), len(llm.batches)) == made
