"""A Crawler job's judge batch (:class:`JobBatches`) without a server: when the waiting
requests go out, which claims wait and which run again, what a job saves of the
batches it sent and how its next run waits for them instead of asking twice."""

from __future__ import annotations

import json
import time
from collections.abc import Callable

import pytest

from pytest_citecheck.claims.labels import Reason
from pytest_citecheck.core.errors import JudgeDeferred, StageFailed
from pytest_citecheck.engine.judge_batch import MAX_ROUNDS, JudgeBatch
from pytest_citecheck.large_audit.job_batches import JobBatches
from pytest_citecheck.stages.judges.batch import custom_id
from tests.unit.test_judge_batch import FakeAPI, batch_with, request


def ask(batch: JudgeBatch, url: str, text: str, claim: str = "c") -> str:
    """``claim`` asks ``text``; the id of the request it waits for."""
    with batch.claim(claim), pytest.raises(JudgeDeferred) as stopped:
        batch.answer(request(url, text))
    return stopped.value.custom_id


def eventually(check: Callable[[], object], timeout: float = 5.0) -> object:
    """``check()`` once it is truthy (the batches go out on threads of their own)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.005)
    raise AssertionError("never happened")


def held(api: FakeAPI) -> tuple[JudgeBatch, str]:
    """A JudgeBatch that polls ``api`` every 5 ms of real time (its wait never runs
    out): a batch stays out until the test lets it end (``api.polls``)."""
    batch, url = batch_with(api)
    batch.poll, batch.sleep = 0.005, time.sleep
    return batch, url


class Meta:
    """The job's meta entry the batches are saved in."""

    def __init__(self, text: str | None = None) -> None:
        self.text = text

    def save(self, text: str) -> None:
        self.text = text


def test_requests_wait_until_enough_gathered_or_nothing_else_runs() -> None:
    api = FakeAPI(polls=1)
    batch, url = batch_with(api)
    jobs: JobBatches[str] = JobBatches(batch, None, Meta().save, size=3, quiet=1e9, age=1e9)
    ask(batch, url, '{"q":1}')
    ask(batch, url, '{"q":2}')
    jobs.send_if_due(nothing_else=False)
    assert api.sent == [] and batch.pending == 2
    ask(batch, url, '{"q":3}')
    jobs.send_if_due(nothing_else=False)  # three gathered
    eventually(lambda: len(api.sent) == 2)  # the fake's limit: two a batch
    assert batch.pending == 0
    ask(batch, url, '{"q":4}')
    jobs.send_if_due(nothing_else=True)  # alone, but nothing else will ask
    eventually(lambda: len(api.sent) == 3)
    assert [len(sent) for sent in api.sent] == [2, 1, 1]


def test_requests_go_out_when_none_joined_for_a_while_or_the_oldest_waited_long() -> None:
    api = FakeAPI(polls=1)
    batch, url = batch_with(api)
    clock = batch.clock
    jobs: JobBatches[str] = JobBatches(batch, None, Meta().save, size=100, quiet=300, age=3600)
    ask(batch, url, '{"q":1}')
    clock.now += 299  # type: ignore[attr-defined]
    jobs.send_if_due(nothing_else=False)
    assert api.sent == []
    clock.now += 1  # type: ignore[attr-defined]
    jobs.send_if_due(nothing_else=False)  # quiet for 300 s
    eventually(lambda: len(api.sent) == 1)
    # A trickle never quiet for 300 s still goes out once its oldest waited an hour.
    for n in range(2, 15):
        ask(batch, url, f'{{"q":{n}}}')
        clock.now += 280  # type: ignore[attr-defined]
        jobs.send_if_due(nothing_else=False)
        if n < 14:
            assert len(api.sent) == 1
    eventually(lambda: len(api.sent) > 1)


def test_a_parked_claim_runs_again_once_its_answer_is_in_and_no_question_goes_twice() -> None:
    api = FakeAPI(polls=None)
    batch, url = held(api)
    jobs: JobBatches[str] = JobBatches(batch, None, Meta().save, size=100, quiet=1e9)
    cid = ask(batch, url, '{"q":1}', claim="a")
    other = ask(batch, url, '{"q":2}', claim="a")
    jobs.park("claim a", "a", cid)
    jobs.send_if_due(nothing_else=True)
    # Asked again while its batch is out (another claim, the same question): it waits
    # for that batch, nothing new is pending.
    assert ask(batch, url, '{"q":1}', claim="b") == cid
    jobs.park("claim b", "b", cid)
    assert batch.pending == 0 and jobs.ready() == []
    api.polls = 1  # the batch ends
    assert sorted(eventually(jobs.ready)) == ["claim a", "claim b"]  # type: ignore[arg-type]
    assert len(api.sent) == 1
    # The fake answers all but the last request of a batch: that one is an error.
    with batch.claim("a"):
        assert batch.answer(request(url, '{"q":1}')).status_code == 200
        with pytest.raises(StageFailed) as failed:
            batch.answer(request(url, '{"q":2}'))
    assert failed.value.reason == Reason.JUDGE_BATCH_FAILED and other != cid
    assert not jobs.busy


def test_a_claim_still_asking_after_the_last_round_fails_instead_of_waiting() -> None:
    batch, url = batch_with(FakeAPI())
    jobs: JobBatches[str] = JobBatches(batch, None, Meta().save)
    for n in range(1, MAX_ROUNDS):
        jobs.park("claim", "c", ask(batch, url, f'{{"q":{n}}}'))
        assert jobs.ready() == []
    jobs.park("claim", "c", ask(batch, url, '{"q":"last"}'))
    assert jobs.ready() == ["claim"]  # once more, now on its last round
    with batch.claim("c"), pytest.raises(StageFailed) as failed:
        batch.answer(request(url, '{"q":"new"}'))
    assert failed.value.reason == Reason.JUDGE_BATCH_FAILED
    assert f"after {MAX_ROUNDS} batch rounds" in failed.value.detail


def test_the_batches_sent_are_saved_and_a_new_run_waits_for_them_again() -> None:
    api = FakeAPI(polls=None)  # still running when the runner stops
    batch, url = held(api)
    meta = Meta()
    jobs: JobBatches[str] = JobBatches(batch, None, meta.save)
    first = ask(batch, url, '{"q":1}')
    second = ask(batch, url, '{"q":2}')
    jobs.send_if_due(nothing_else=True)
    eventually(lambda: meta.text is not None)
    assert json.loads(meta.text or "") == [
        {"endpoint": url, "batch_id": "batch_1", "ids": [first, second]}
    ]

    # The next run (a new JudgeBatch, the same provider): the saved batch is polled
    # again, its questions wait for it, and what it answered is served.
    looks = api.looks
    again, _ = held(api)
    resumed: JobBatches[str] = JobBatches(again, meta.text, meta.save)
    assert ask(again, url, '{"q":1}', claim="x") == first
    resumed.park("x", "x", first)
    assert again.pending == 0 and resumed.ready() == []
    eventually(lambda: api.looks > looks)  # the new run looks at the saved batch
    api.polls = 1  # and it ends
    assert eventually(resumed.ready) == ["x"]
    assert len(api.sent) == 1  # nothing sent twice
    assert again.answer(request(url, '{"q":1}')).status_code == 200
    # The one it did not answer is asked again in a new batch, not an error.
    assert ask(again, url, '{"q":2}', claim="y") == second
    assert again.pending == 1
    resumed.finished()
    assert json.loads(meta.text or "") == []


def test_an_unreadable_saved_entry_is_dropped_and_its_questions_asked_again() -> None:
    api = FakeAPI()
    batch, url = batch_with(api)
    saved = json.dumps([{"endpoint": url, "batch_id": 7}, {"nope": 1}])
    jobs: JobBatches[str] = JobBatches(batch, saved, Meta().save)
    assert ask(batch, url, '{"q":1}') == custom_id(b'{"q":1}')
    assert batch.pending == 1 and api.looks == 0
    assert not jobs.ready()
    jobs.park("c", "c", custom_id(b'{"q":1}'))
    assert jobs.busy
