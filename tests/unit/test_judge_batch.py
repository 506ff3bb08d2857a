"""The judge batch's parts without a server: the batch price, the transport that answers
judge requests from a batch (or stops the claim), sending and waiting, and the dry run."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import httpx
import pytest

from pytest_citecheck.claims.labels import Reason
from pytest_citecheck.claims.models import Citation, Claim
from pytest_citecheck.core.errors import ConfigurationError, JudgeDeferred, StageFailed
from pytest_citecheck.core.prices import Prices, TokenPrice, spend_text
from pytest_citecheck.core.record_mode import RecordMode
from pytest_citecheck.engine.estimate import estimate_claim, plan
from pytest_citecheck.engine.judge_batch import JudgeBatch
from pytest_citecheck.stages.judges import make_judge
from pytest_citecheck.stages.judges.batch import (
    BATCH_HEADER,
    BatchAnswer,
    _anthropic_result,
    _openai_line,
    chunks,
    custom_id,
)

KEY = {"OPENAI_API_KEY": "sk-unit-judge-batch-0123456789"}


@dataclass
class FakeAPI:
    """A batch API that ends after ``polls`` looks (never, with None)."""

    polls: int | None = 1
    refuse: bool = False
    provider: str = "openai"
    sent: list[dict[str, bytes]] = field(default_factory=list)
    looks: int = 0
    cancelled: list[str] = field(default_factory=list)
    # Raised by the next looks, in order.
    poll_errors: list[Exception] = field(default_factory=list)

    def limit(self) -> tuple[int, int]:
        return (2, 10_000)

    def submit(self, requests: Mapping[str, bytes]) -> str:
        if self.refuse:
            raise RuntimeError(f"HTTP 401 for key {KEY['OPENAI_API_KEY']}")
        self.sent.append(dict(requests))
        return f"batch_{len(self.sent)}"

    def poll(self, batch_id: str) -> tuple[str, bool]:
        if self.poll_errors:
            raise self.poll_errors.pop(0)
        self.looks += 1
        ended = self.polls is not None and self.looks >= self.polls
        return ("completed" if ended else "in_progress"), ended

    def answers(self, batch_id: str) -> dict[str, BatchAnswer]:
        index = int(batch_id.split("_")[1]) - 1
        # Every request but the last one of the batch is answered.
        ids = list(self.sent[index])
        return {
            cid: BatchAnswer(200, b'{"ok":true}', None, f"openai {batch_id}") for cid in ids[:-1]
        }

    def cancel(self, batch_id: str) -> None:
        self.cancelled.append(batch_id)

    def transient(self, exc: Exception) -> bool:
        return isinstance(exc, ConnectionError)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def batch_with(api: FakeAPI, wait: float = 100.0) -> tuple[JudgeBatch, str]:
    clock = Clock()
    batch = JudgeBatch(poll=10.0, wait=wait, sleep=clock.sleep, clock=clock)
    judge = make_judge("openai:gpt-4o-mini", base_url="http://127.0.0.1:9/v1", environ=KEY)
    batch.register(judge)
    batch._apis[judge.url] = api  # the fake in place of the SDK-backed one
    return batch, judge.url


def request(url: str, text: str) -> httpx.Request:
    return httpx.Request("POST", url, content=text.encode())


# -- the price ---------------------------------------------------------------------------


def test_a_batch_call_costs_half_the_synchronous_price() -> None:
    price = TokenPrice(input=2.0, output=8.0)
    assert price.cost(1_000_000, 1_000_000) == 10.0
    assert price.cost(1_000_000, 1_000_000, batch=True) == 5.0
    prices = Prices(credit=0.01, judges={"openai:m": price})
    tokens = {"openai:m": (2_000_000, 0)}
    assert prices.cost(10, tokens) == pytest.approx(0.1 + 4.0)
    # Half of the tokens answered by a batch: that half at half the price.
    assert prices.cost(10, tokens, {"openai:m": (1_000_000, 0)}) == pytest.approx(0.1 + 3.0)


def test_the_cost_line_says_how_many_calls_were_billed_at_the_batch_price() -> None:
    spend = {"cost": 0.25, "missing": [], "batch_calls": 14}
    assert spend_text(spend) == (
        ", cost 0.25 (14 judge calls through the batch API, at its price: 0.5 of the "
        "synchronous one)"
    )
    assert spend_text({"cost": 0.25, "missing": []}) == ", cost 0.25"


def test_the_dry_run_and_the_budget_count_the_judge_at_the_batch_price() -> None:
    claim = Claim(id="c", claim="Water boils at 100 C.", citations=[Citation(url="https://e.x/a")])
    prices = Prices(credit=0.0, judges={"openai:m": TokenPrice(1.0, 1.0)})
    sync = estimate_claim(claim, "openai:m").cost(prices)
    batched = estimate_claim(claim, "openai:m", batch=True).cost(prices)
    assert sync is not None and batched == pytest.approx(sync / 2)
    lines = plan([claim], RecordMode.ONCE, lambda c: True, lambda c: "openai:m", batch=True).lines(
        prices
    )
    assert any("at the batch API's price" in line for line in lines)


# -- the transport's side: answer, or stop the claim ----------------------------------------


def test_an_unanswered_judge_request_stops_the_claim_and_waits_as_pending() -> None:
    batch, url = batch_with(FakeAPI())
    with pytest.raises(JudgeDeferred) as stopped:
        batch.answer(request(url, '{"q":1}'))
    assert stopped.value.custom_id == custom_id(b'{"q":1}')
    # Asked twice (two claims, the same question): one pending request.
    with pytest.raises(JudgeDeferred):
        batch.answer(request(url, '{"q":1}'))
    assert batch.pending == 1
    assert batch.is_judge(request(url, "{}"))
    assert not batch.is_judge(request("http://127.0.0.1:9/other", "{}"))


def test_answers_are_served_by_custom_id_and_a_missing_one_is_an_error_not_a_label() -> None:
    api = FakeAPI()
    batch, url = batch_with(api)
    for text in ('{"q":1}', '{"q":2}'):
        with pytest.raises(JudgeDeferred):
            batch.answer(request(url, text))
    (sent,) = batch.send_pending()
    assert sent.ended and api.sent == [
        {custom_id(b'{"q":1}'): b'{"q":1}', custom_id(b'{"q":2}'): b'{"q":2}'}
    ]
    reply = batch.answer(request(url, '{"q":1}'))
    assert (reply.status_code, reply.content) == (200, b'{"ok":true}')
    assert reply.headers[BATCH_HEADER] == "openai batch_1"
    with pytest.raises(StageFailed) as failed:
        batch.answer(request(url, '{"q":2}'))
    assert failed.value.reason == Reason.JUDGE_BATCH_FAILED
    assert "ended completed without an answer for this request (openai batch_1)" in str(
        failed.value
    )
    assert batch.summary() == (
        "judge batch: 0 rounds, 1 batch, 2 requests (1 without an answer: error "
        "judge_batch_failed); openai batch_1 completed"
    )


def test_a_refused_batch_fails_its_requests_without_the_key() -> None:
    batch, url = batch_with(FakeAPI(refuse=True))
    with pytest.raises(JudgeDeferred):
        batch.answer(request(url, '{"q":1}'))
    assert batch.send_pending() == []
    with pytest.raises(StageFailed) as failed:
        batch.answer(request(url, '{"q":1}'))
    assert "the openai batch API refused the batch" in failed.value.detail
    assert KEY["OPENAI_API_KEY"] not in failed.value.detail


def test_a_batch_that_never_ends_is_cancelled_when_the_wait_runs_out() -> None:
    api = FakeAPI(polls=None)
    batch, url = batch_with(api, wait=35.0)
    with pytest.raises(JudgeDeferred):
        batch.answer(request(url, '{"q":1}'))
    (sent,) = batch.send_pending()
    assert sent.ended and sent.status == "in_progress"
    assert api.cancelled == ["batch_1"]
    assert api.looks == 5  # at 0, 10, 20, 30 and 35 s
    with pytest.raises(StageFailed, match=r"did not end within 35 s .*in_progress"):
        batch.answer(request(url, '{"q":1}'))


def test_a_dropped_look_is_looked_past_and_a_refused_one_fails_the_batch() -> None:
    api = FakeAPI(polls=1, poll_errors=[ConnectionError("reset"), ConnectionError("reset")])
    batch, url = batch_with(api)
    for text in ('{"q":1}', '{"q":2}'):
        with pytest.raises(JudgeDeferred):
            batch.answer(request(url, text))
    batch.send_pending()
    assert batch.answer(request(url, '{"q":1}')).status_code == 200

    refused = FakeAPI(poll_errors=[PermissionError("HTTP 403: no access to batches")])
    batch, url = batch_with(refused)
    with pytest.raises(JudgeDeferred):
        batch.answer(request(url, '{"q":1}'))
    batch.send_pending()
    with pytest.raises(StageFailed, match="could not be read: PermissionError: HTTP 403"):
        batch.answer(request(url, '{"q":1}'))


def test_requests_are_split_at_the_providers_limits() -> None:
    api = FakeAPI()
    requests = {str(i): b"x" * 10 for i in range(5)}
    assert [list(c) for c in chunks(api, requests)] == [["0", "1"], ["2", "3"], ["4"]]


def test_a_judge_without_a_batch_api_is_a_configuration_error() -> None:
    batch = JudgeBatch(poll=1.0, wait=1.0)
    judge = make_judge("ollama:llama3.1", base_url="http://127.0.0.1:9")
    with pytest.raises(ConfigurationError, match=r"the ollama:llama3\.1 judge has no batch API"):
        batch.register(judge)


# -- the providers' result lines ----------------------------------------------------------------


def test_openai_result_lines() -> None:
    ok = {"custom_id": "a", "response": {"status_code": 200, "body": {"id": "x"}}, "error": None}
    assert _openai_line(ok, "s") == ("a", BatchAnswer(200, b'{"id":"x"}', None, "s"))
    # A 400 is what a synchronous call would get: the judge reads it (and may ask again).
    bad = {"custom_id": "b", "response": {"status_code": 400, "body": {"error": {}}}, "error": None}
    assert _openai_line(bad, "s")[1].status == 400
    # A 500 cannot be retried against a batch's answer: a failure with its reason.
    busy = {
        "custom_id": "c",
        "response": {"status_code": 500, "body": {"error": {"message": "boom"}}},
        "error": None,
    }
    assert "HTTP 500: boom" in str(_openai_line(busy, "s")[1].failure)
    expired = {
        "custom_id": "d",
        "response": None,
        "error": {"code": "batch_expired", "message": "not in time"},
    }
    assert "batch_expired: not in time" in str(_openai_line(expired, "s")[1].failure)


def test_anthropic_results() -> None:
    assert _anthropic_result({"type": "succeeded", "message": {"id": "m"}}, "s").status == 200
    refused = {"type": "error", "error": {"type": "invalid_request_error", "message": "strict"}}
    assert _anthropic_result({"type": "errored", "error": refused}, "s").status == 400
    broken = {"type": "error", "error": {"type": "api_error", "message": "Internal"}}
    assert "api_error: Internal" in str(
        _anthropic_result({"type": "errored", "error": broken}, "s").failure
    )
    assert "expired" in str(_anthropic_result({"type": "expired"}, "s").failure)
    assert "cancelled" in str(_anthropic_result({"type": "canceled"}, "s").failure)


def test_a_claims_page_is_fetched_once_across_rounds_and_dropped_when_it_ends() -> None:
    fetched: list[str] = []

    def page(req: httpx.Request) -> httpx.Response:
        fetched.append(str(req.url))
        return httpx.Response(200, content=f"page {len(fetched)}".encode())

    inner = httpx.MockTransport(page)
    batch, _ = batch_with(FakeAPI())
    get = httpx.Request("GET", "http://127.0.0.1:9/crawl?url=a")
    for _ in range(2):  # two rounds of the same claim
        batch.start_round()
        with batch.claim("file::a"):
            assert batch.kept(get, inner).read() == b"page 1"
    assert len(fetched) == 1
    # Another claim citing the same page fetches it itself (its recording holds its own).
    with batch.claim("file::b"):
        assert batch.kept(get, inner).read() == b"page 2"
    spool = batch._spool
    assert spool is not None and len(list(spool.iterdir())) == 2
    batch.forget("file::a")
    assert len(list(spool.iterdir())) == 1
    batch.close()
    assert not spool.exists()
