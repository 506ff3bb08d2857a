"""The suite-wide resend check counts paid bodies per phase (tests/doubles PAID): the same
body twice in one phase is a resend and fails the test; a new phase (an engine built, or
``resend_phase()``) lets a test run the same claims again on purpose."""

from __future__ import annotations

import pytest

from tests.doubles import PaidRequests

BODY = b'{"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Is it?"}]}'


def test_one_body_twice_in_one_phase_is_a_resend() -> None:
    paid = PaidRequests()
    paid.received("LLMDouble:1", "POST /v1/chat/completions", BODY)
    paid.received("LLMDouble:1", "POST /v1/chat/completions", BODY)
    assert paid.resent() == [("LLMDouble:1", "POST /v1/chat/completions", BODY, 2)]


def test_the_same_body_in_two_phases_is_no_resend_but_twice_in_the_second_is() -> None:
    paid = PaidRequests()
    paid.received("LLMDouble:1", "POST /v1/chat/completions", BODY)
    paid.new_phase()
    paid.received("LLMDouble:1", "POST /v1/chat/completions", BODY)
    assert paid.resent() == []
    paid.received("LLMDouble:1", "POST /v1/chat/completions", BODY)
    assert paid.resent() == [("LLMDouble:1", "POST /v1/chat/completions", BODY, 2)]


def test_forgetting_a_double_forgets_it_in_every_phase() -> None:
    paid = PaidRequests()
    paid.received("CrawlbaseDouble:2", "GET /", b"url=a")
    paid.new_phase()
    paid.received("CrawlbaseDouble:2", "GET /", b"url=a")
    paid.received("CrawlbaseDouble:2", "GET /", b"url=a")
    paid.forget("CrawlbaseDouble:2")
    assert paid.resent() == []


PLANTED = """
from tests.doubles import PAID, resend_phase

BODY = b"token=t&url=https%3A%2F%2Fexample.com%2Fa"


def test_sends_one_crawl_twice():
    PAID.received("CrawlbaseDouble:9", "GET /", BODY)
    PAID.received("CrawlbaseDouble:9", "GET /", BODY)


def test_records_then_records_again_in_a_new_phase():
    PAID.received("CrawlbaseDouble:9", "GET /", BODY)
    resend_phase()
    PAID.received("CrawlbaseDouble:9", "GET /", BODY)


def test_records_then_a_new_engine_records_again():
    from pytest_citecheck.engine.core import Engine
    from pytest_citecheck.engine.settings import EngineSettings

    PAID.received("CrawlbaseDouble:9", "GET /", BODY)
    Engine(EngineSettings(), environ={}).close()
    PAID.received("CrawlbaseDouble:9", "GET /", BODY)
"""


def test_the_suite_wide_check_fails_a_resend_within_a_phase_only(pytester: pytest.Pytester) -> None:
    pytester.makeconftest("from tests.conftest import _each_paid_request_once  # noqa: F401\n")
    pytester.makepyfile(test_planted=PLANTED)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-q")
    result.assert_outcomes(passed=3, errors=1)
    result.stdout.fnmatch_lines(
        ["*ERROR at teardown of test_sends_one_crawl_twice*", "*received GET / 2 times*"]
    )
