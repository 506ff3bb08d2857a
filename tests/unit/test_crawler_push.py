"""A push to the Crawler: what each answer means for a resume, and no token anywhere."""

from __future__ import annotations

import json
from collections.abc import Callable
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from pytest_citecheck.large_audit.pusher import CrawlerPusher, PushRate, callback_headers

TOKEN = "crawler-test-token-0123456789"
ECHO = {"Citecheck-Job": "nightly", "Citecheck-Citation": "o.c1#2"}


def pusher(answer: Callable[[httpx.Request], httpx.Response]) -> CrawlerPusher:
    client = httpx.Client(transport=httpx.MockTransport(answer))
    return CrawlerPusher(token=TOKEN, crawler="audit", base_url="https://api.test/", client=client)


def status(code: int, body: bytes = b"") -> Callable[[httpx.Request], httpx.Response]:
    return lambda request: httpx.Response(code, content=body)


def test_a_push_asks_for_the_fetchers_format_and_echoes_the_ids() -> None:
    sent: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(200, json={"rid": "1e92e8bff32c31c2728714d4"})

    result = pusher(answer).push("https://example.com/a?b=1&c=2", ECHO)
    assert (result.outcome, result.rid) == ("accepted", "1e92e8bff32c31c2728714d4")
    query = parse_qs(urlsplit(str(sent[0].url)).query)
    assert query == {
        "token": [TOKEN],
        "format": ["md"],
        "md_readability": ["true"],
        "callback": ["true"],
        "crawler": ["audit"],
        "callback_headers": ["Citecheck-Job:nightly|Citecheck-Citation:o.c1#2"],
        "url": ["https://example.com/a?b=1&c=2"],
    }
    # ``url`` last, every value encoded (the ``|`` and ``:`` of callback_headers too).
    raw = sent[0].url.query.decode()
    assert raw.endswith("url=https%3A%2F%2Fexample.com%2Fa%3Fb%3D1%26c%3D2")
    assert "callback_headers=Citecheck-Job%3Anightly%7CCitecheck-Citation%3Ao.c1%232" in raw


@pytest.mark.parametrize(
    ("answer", "outcome", "retry", "fatal"),
    [
        (status(429, b'{"error": "too many"}'), "refused", True, False),
        (status(503), "refused", True, False),
        (status(401), "refused", False, True),
        (status(402), "refused", False, True),
        (status(403), "refused", False, True),
        (status(422), "refused", False, False),
        (status(502), "ambiguous", False, False),
        (status(500), "ambiguous", False, False),
        (status(200, b"not json"), "ambiguous", False, False),
        (status(200, json.dumps({"rid": ""}).encode()), "ambiguous", False, False),
    ],
)
def test_each_answer_says_whether_the_push_may_be_sent_again(
    answer: Callable[[httpx.Request], httpx.Response], outcome: str, retry: bool, fatal: bool
) -> None:
    result = pusher(answer).push("https://example.com/a", ECHO)
    assert (result.outcome, result.retry, result.fatal) == (outcome, retry, fatal)
    assert result.rid is None
    assert TOKEN not in result.detail


def test_a_refused_token_names_the_variable_never_the_value() -> None:
    result = pusher(status(401)).push("https://example.com/a", ECHO)
    assert "CRAWLBASE_TOKEN" in result.detail and TOKEN not in result.detail


@pytest.mark.parametrize(
    ("error", "outcome", "retry"),
    [
        (httpx.ConnectError, "not_sent", True),
        (httpx.ConnectTimeout, "not_sent", True),
        (httpx.ReadTimeout, "ambiguous", False),
        (httpx.RemoteProtocolError, "ambiguous", False),
    ],
)
def test_a_push_with_no_answer_is_sent_again_only_when_it_never_left(
    error: type[httpx.TransportError], outcome: str, retry: bool
) -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        raise error(f"failed: {request.url}", request=request)  # the URL holds the token

    result = pusher(answer).push("https://example.com/a", ECHO)
    assert (result.outcome, result.retry) == (outcome, retry)
    assert TOKEN not in result.detail


def test_callback_headers_refuses_what_the_format_cannot_carry() -> None:
    assert callback_headers({"A": "1", "B": "x:y"}) == "A:1|B:x:y"
    with pytest.raises(ValueError):
        callback_headers({"A": "1|2"})
    with pytest.raises(ValueError):
        callback_headers({"A:B": "1"})


def test_the_push_rate_spaces_pushes_evenly() -> None:
    now = [100.0]
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        now[0] += seconds

    rate = PushRate(30.0, clock=lambda: now[0], sleep=sleep)
    for _ in range(31):
        rate.wait()
    assert now[0] == pytest.approx(101.0)  # 31 pushes: the first at once, 30 more in 1 s
    assert len(slept) == 30


def test_the_token_is_required_and_named() -> None:
    with pytest.raises(ValueError, match="CRAWLBASE_TOKEN is not set"):
        CrawlerPusher.from_env("audit", {})
    built = CrawlerPusher.from_env(
        "audit", {"CRAWLBASE_TOKEN": TOKEN, "CITECHECK_CRAWLBASE_URL": "http://127.0.0.1:9/"}
    )
    assert built.base_url == "http://127.0.0.1:9/"
    built.close()
