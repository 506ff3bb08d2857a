"""``citecheck serve --max-credits / --max-cost``: the service stops spending at its cap.

A request the cap cannot cover is answered 503 with the cap and what was spent,
before anything is fetched or judged; the doubles count what was sent.
"""

from __future__ import annotations

import httpx
import pytest

from pytest_citecheck.core.prices import Prices, TokenPrice
from pytest_citecheck.frontends.service import ServiceConfig
from tests.doubles.batch import SITE
from tests.doubles.crawlbase import CrawlbaseDouble
from tests.doubles.llm import LLMDouble
from tests.integration.test_service import doubles, serving

__all__ = ["doubles"]  # the fixture, imported to be used here

BOILING = {
    "claim": "Water boils at 100 degrees Celsius at sea level.",
    "urls": [f"{SITE}/articles/boiling"],
}
EIFFEL = {"claim": "The Eiffel Tower is in Paris.", "urls": [f"{SITE}/landmarks/eiffel"]}


def test_requests_past_the_credit_cap_are_503_and_send_nothing(
    doubles: tuple[CrawlbaseDouble, LLMDouble, dict[str, str]],
) -> None:
    api, llm, environ = doubles
    # One URL could need up to 8 credits; the first request spends 1.5 of them, so
    # a cap of 9 leaves no room for a second.
    with serving(ServiceConfig(max_credits=9), environ) as url:
        first = httpx.post(f"{url}/verify", json=BOILING, timeout=60)
        crawls, judged = len(api.api_calls), len(llm.calls)
        second = httpx.post(f"{url}/verify", json=EIFFEL, timeout=60)
        third = httpx.post(f"{url}/verify", json=BOILING, timeout=60)
    assert first.status_code == 200, first.text
    assert first.json()["label"] == "supported"
    for reply in (second, third):
        assert reply.status_code == 503
        assert "retry-after" not in reply.headers  # waiting does not help: the cap is spent
        assert reply.json()["detail"] == (
            "the service's spending cap (max credits 9) is reached (1.5 of 9 credits): nothing "
            "was fetched or judged for this request, and no request is verified until the "
            "operator restarts the service with a higher cap (the server's --max-credits)"
        )
    assert (len(api.api_calls), len(llm.calls)) == (crawls, judged) == (1, 1)


def test_a_money_cap_counts_at_the_operators_prices(
    doubles: tuple[CrawlbaseDouble, LLMDouble, dict[str, str]],
) -> None:
    api, _, environ = doubles
    prices = Prices(credit=0.01, judges={"openai:gpt-4o-mini": TokenPrice(1.0, 4.0)})
    with serving(ServiceConfig(prices=prices, max_cost=0.01), environ) as url:
        reply = httpx.post(f"{url}/verify", json=BOILING, timeout=60)
    assert reply.status_code == 503
    detail = reply.json()["detail"]
    assert detail.startswith("the service's spending cap (max cost 0.01) is reached (spent 0")
    assert "the server's --max-cost" in detail
    assert api.api_calls == []
    for name in ("CRAWLBASE_TOKEN", "OPENAI_API_KEY"):
        assert environ[name] not in reply.text


@pytest.mark.parametrize("cap", [None, 100.0])
def test_without_a_reached_cap_requests_are_verified(
    doubles: tuple[CrawlbaseDouble, LLMDouble, dict[str, str]], cap: float | None
) -> None:
    _, _, environ = doubles
    with serving(ServiceConfig(max_credits=cap), environ) as url:
        replies = [httpx.post(f"{url}/verify", json=b, timeout=60) for b in (BOILING, EIFFEL)]
    assert [r.status_code for r in replies] == [200, 200]


def test_serve_refuses_a_money_cap_without_the_prices(capsys: pytest.CaptureFixture[str]) -> None:
    from pytest_citecheck.frontends.cli import main

    code = main(["serve", "--max-cost", "5", "--price-credit", "0.001"])
    err = capsys.readouterr().err
    assert code == 2
    assert (
        "--max-cost needs the token prices of openai:gpt-4o-mini (--prices) to count the spend"
        in err
    )
