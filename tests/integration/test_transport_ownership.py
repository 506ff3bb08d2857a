"""A borrowed transport is never closed by its borrower.

``DeliveryTransport.awaited()`` crawled a claim's pages through a throwaway client
and closed it: closing the client closed the shared fallback transport every judge
request goes through, cutting another claim's judge call after the provider had
received it (``ReadError: Bad file descriptor``), and the retry sent the same paid
body again."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import httpx
import pytest

from pytest_citecheck.core.retry import RetryPolicy, send
from pytest_citecheck.engine.core import Engine
from pytest_citecheck.engine.settings import EngineSettings, StageHooks
from pytest_citecheck.large_audit.delivery_transport import DeliveryTransport
from pytest_citecheck.plugin.terms import PLUGIN_TERMS
from pytest_citecheck.recording.transport import Borrowed, StageTransport
from tests.doubles.llm import Fault, JudgeCall, LLMDouble, Scripted, verdict

API = "https://api.crawlbase.test/"


def slow_judge(call: JudgeCall) -> Scripted:
    """A judge that takes a moment to answer: long enough for another claim to run."""
    time.sleep(0.4)
    return verdict("not_found", None, 0.9)


def test_a_claim_waiting_for_pages_does_not_cut_another_claims_judge_call() -> None:
    with LLMDouble(slow_judge) as llm:
        transport = DeliveryTransport(API)  # its own fallback: the network
        client = httpx.Client(transport=transport)
        request = client.build_request(
            "POST", f"{llm.base_url('openai')}/chat/completions", json={"model": "m"}
        )
        answered: list[int] = []
        judge = threading.Thread(
            target=lambda: answered.append(
                send(client, request, RetryPolicy(sleep=lambda s: None)).response.status_code
            )
        )
        judge.start()
        time.sleep(0.15)  # the judge request is at the provider now
        transport.awaited({}, {}, [])  # another claim asks which pages it waits for
        judge.join(timeout=5)
        transport.close()
    assert answered == [200]
    # The provider received (and would bill) the request once, not twice.
    assert [call.body for call in llm.calls] == [request.content]


def test_closing_a_borrower_leaves_the_lent_transport_open() -> None:
    closed: list[bool] = []
    lent = httpx.MockTransport(lambda request: httpx.Response(200))
    lent.close = lambda: closed.append(True)  # type: ignore[method-assign]
    with httpx.Client(transport=StageTransport(live=Borrowed(lent))) as client:
        assert client.get("https://example.test/").status_code == 200
    assert closed == []
    with httpx.Client(transport=StageTransport(live=lent)):
        pass
    assert closed == [True]  # an owner's close still closes it


def test_an_engine_leaves_a_hooks_transport_to_its_owner() -> None:
    """A Crawler job's one DeliveryTransport serves the recheck's two engines (and a
    batch's): closing one engine must not cut a request the other has in flight."""
    with LLMDouble(slow_judge) as llm:
        transport = DeliveryTransport(API)
        hooks = StageHooks(make_transport=lambda: transport)
        first = Engine.from_settings(EngineSettings(), hooks)
        second = Engine.from_settings(EngineSettings(), hooks)
        first.http_client()
        client = second.http_client()
        request = client.build_request(
            "POST", f"{llm.base_url('openai')}/chat/completions", json={"model": "m"}
        )
        answered: list[int] = []
        judge = threading.Thread(
            target=lambda: answered.append(
                send(client, request, RetryPolicy(sleep=lambda s: None)).response.status_code
            )
        )
        judge.start()
        time.sleep(0.15)
        first.close()
        judge.join(timeout=5)
        second.close()
        transport.close()
    assert answered == [200]
    assert [call.body for call in llm.calls] == [request.content]


@pytest.mark.allow_resend("the judge's first try is cut after the server received it")
def test_a_judge_try_cut_after_it_was_sent_is_counted_as_billed(tmp_path: Path) -> None:
    """The server received the request, then the connection dropped before its answer:
    the retry sends it again and the provider bills both. The usage and the report's
    spend line count both ("billed, unanswered"), not the answered one alone."""
    from pytest_citecheck.claims.loader import parse_claim
    from pytest_citecheck.engine.aggregate import totals
    from pytest_citecheck.reports.report import Report
    from tests.doubles.batch import RECORDS, SITE, FirstPassages, add_pages
    from tests.doubles.crawlbase import CrawlbaseDouble

    claim = parse_claim(
        {"id": "c", "claim": RECORDS[0]["claim"], "citations": [f"{SITE}/articles/boiling"]}
    )
    with CrawlbaseDouble() as api, LLMDouble() as llm:
        add_pages(api)
        llm.script(Fault("drop"))
        settings = EngineSettings(
            record_mode="all",
            judge="openai:gpt-4o-mini",
            judge_base_url=None,
            terms=PLUGIN_TERMS,
        )
        environ = {
            "CRAWLBASE_TOKEN": api.tokens["normal"],
            "CITECHECK_CRAWLBASE_URL": api.base_url,
            "OPENAI_API_KEY": "sk-test",
            "OPENAI_BASE_URL": llm.base_url("openai"),
        }
        with Engine.from_settings(
            settings, hooks=StageHooks(make_ranker=FirstPassages), environ=environ
        ) as engine:
            [result] = engine.verify_claims_sync(
                [claim], cassette_for=lambda c: tmp_path / "c.yaml"
            )
        readings = [c.body for c in llm.calls]
    assert len(readings) == 2 and readings[0] == readings[1]  # the same request, twice
    [verdict] = result.verdicts
    assert verdict.usage is not None
    assert verdict.usage.unanswered == 1
    assert verdict.usage.input_tokens == 2 * 120  # both tries, as the provider bills them
    assert totals([result]).unanswered == 1
    spend = [
        line.text for line in Report(results={"c": result}).lines() if "judge tokens" in line.text
    ]
    assert any("1 billed, unanswered try" in text for text in spend), spend
