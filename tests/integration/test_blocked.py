"""A blocked page is its own reason: challenge pages, captcha walls, origin 401/403/429.

Against the loopback Crawling API double: what the user gets (``not_found``,
``blocked``, the review flag, no judge) and which calls were paid for; a
challenge that a browser passes is fetched once with the JavaScript token.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pytest_citecheck.claims.labels import Label, Reason
from pytest_citecheck.claims.models import Citation
from pytest_citecheck.core.retry import RetryPolicy
from pytest_citecheck.engine.judging import Judging
from pytest_citecheck.engine.pipeline import Verifier
from pytest_citecheck.stages.fetch import CrawlbaseFetcher
from pytest_citecheck.stages.fetch_rules import (
    BLOCKED_MAX_CHARS,
    FetchResult,
    apply_rules,
    blocked_page,
    fetch_page,
    non_whitespace_chars,
)
from tests.doubles.crawlbase import CrawlbaseDouble, Page

URL = "https://example.com/news/2024/a-story"
ARTICLE = "\n\n".join(
    f"Paragraph {i}: the council approved the new bridge on Tuesday after a long debate "
    "about its cost, and construction is expected to start next spring."
    for i in range(10)
)
N, J = "normal", "javascript"

# Each marker on a page the way such a page reads once converted to markdown.
BROWSER_CHALLENGES = {
    "just a moment": "www.example.com\n\n# Just a moment...\n\nThis may take a few seconds.",
    "checking your browser": "Checking your browser before accessing example.com.\n\n"
    "This process is automatic. Your browser will redirect to your requested content shortly.",
    "connection is secure": "# www.example.com\n\n## Checking if the site connection is secure"
    "\n\nexample.com needs to review the security of your connection before proceeding.",
    "verifying you are human": "# example.com\n\nVerifying you are human. This may take a "
    "few seconds.",
    "cf-chl": "# example.com\n\n[Continue](https://example.com/news?__cf_chl_tk=Zx81abc)",
    "javascript and cookies": "Enable JavaScript and cookies to continue",
}
WALLS = {
    "attention required": "# Attention Required! | Cloudflare\n\nYou are unable to access "
    "example.com.\n\nCloudflare Ray ID: 7d1f0c2b3a4e5f60",
    "you have been blocked": "## Sorry, you have been blocked\n\nThis website is using a "
    "security service to protect itself from online attacks.",
    "verify you are a human": "# example.com\n\nPlease verify you are a human to continue.",
    "are you a robot": "# Are you a robot?\n\nWe have detected unusual activity from your network.",
    "complete the captcha": "Please complete the CAPTCHA below to continue to example.com.",
    "press and hold": "Press & Hold to confirm you are\n\nnot a bot.",
    "access denied": "# Access Denied\n\nReference #18.4f2e1cb8.1700000000.2b1c3d4e",
    "no permission": 'You don\'t have permission to access "http://example.com/news/" on '
    "this server.",
    "incapsula": "Request unsuccessful. Incapsula incident ID: 1234000560789-12345678901234",
}
ARTICLE_ABOUT_CAPTCHAS = (
    "# Why every website asks whether you are a robot\n\n"
    "Sites ask you to verify you are a human, to complete the CAPTCHA or to press & hold a "
    "button; Cloudflare shows 'Just a moment...' while it is checking your browser, and "
    "an 'Access denied' page when it is not convinced.\n\n" + ARTICLE
)


@pytest.fixture
def api() -> Iterator[CrawlbaseDouble]:
    with CrawlbaseDouble() as double:
        yield double


@pytest.fixture
def fetcher(api: CrawlbaseDouble) -> Iterator[CrawlbaseFetcher]:
    with CrawlbaseFetcher(
        token=api.tokens[N],
        js_token=api.tokens[J],
        base_url=api.base_url,
        retry=RetryPolicy(sleep=lambda s: None),
    ) as f:
        yield f


def plan(api: CrawlbaseDouble) -> list[tuple[str | None, bool]]:
    return [(c.kind, c.readability) for c in api.api_calls]


def fetch(api: CrawlbaseDouble, fetcher: CrawlbaseFetcher, page: Page) -> FetchResult:
    api.add(URL, page)
    return fetch_page(fetcher, URL, None)


def assert_blocked(result: FetchResult) -> None:
    assert (result.label, result.reason) == (Label.NOT_FOUND, Reason.BLOCKED)
    assert result.text is None
    assert result.review is True
    assert "blocked" in (result.detail or "")


# -- the markers ---------------------------------------------------------------


@pytest.mark.parametrize("name", list(BROWSER_CHALLENGES))
def test_each_browser_challenge_marker_is_blocked_and_a_browser_may_pass_it(name):
    blocked = blocked_page(BROWSER_CHALLENGES[name], 200)

    assert blocked is not None
    assert blocked.browser_passes


@pytest.mark.parametrize("name", list(WALLS))
def test_each_wall_marker_is_blocked_and_no_browser_passes_it(name):
    blocked = blocked_page(WALLS[name], 200)

    assert blocked is not None
    assert not blocked.browser_passes


def test_a_long_article_about_captchas_is_not_blocked():
    assert non_whitespace_chars(ARTICLE_ABOUT_CAPTCHAS) > BLOCKED_MAX_CHARS
    assert blocked_page(ARTICLE_ABOUT_CAPTCHAS, 200) is None


@pytest.mark.parametrize(
    "text",
    [
        "# CAPTCHA turns 25\n\nThe test that tells computers and humans apart is 25 this year.",
        "# Court ruling\n\nThe judge said access denied to the press was unlawful.",
    ],
)
def test_a_short_page_that_only_mentions_a_marker_word_is_not_blocked(text):
    assert blocked_page(text, 200) is None


@pytest.mark.parametrize("status", [401, 403, 429])
def test_origin_refusals_are_blocked_whatever_the_text(status):
    blocked = blocked_page(ARTICLE, status)

    assert blocked is not None
    assert f"HTTP {status}" in blocked.why


@pytest.mark.parametrize("status", [200, 404, 500])
def test_other_origin_statuses_are_not_blocked(status):
    assert blocked_page(ARTICLE, status) is None


# -- the fetcher -----------------------------------------------------------------


def test_a_challenge_a_browser_passes_is_fetched_once_with_javascript(api, fetcher):
    challenge = BROWSER_CHALLENGES["just a moment"]
    page = Page(markdown=challenge, original_status=403, js=Page(markdown=ARTICLE))

    result = fetch(api, fetcher, page)

    assert result.text == ARTICLE
    assert result.label is None
    assert result.review is False
    assert plan(api) == [(N, True), (J, True)]


def test_a_challenge_javascript_does_not_pass_either_is_blocked(api, fetcher):
    result = fetch(api, fetcher, Page(markdown=BROWSER_CHALLENGES["cf-chl"], original_status=403))

    assert_blocked(result)
    # Escalated once, and the thin challenge is not fetched again without readability.
    assert plan(api) == [(N, True), (J, True)]
    assert "cf-chl" in (result.detail or "")


def test_a_challenge_is_blocked_without_javascript_when_there_is_no_js_token(api):
    api.add(URL, Page(markdown=BROWSER_CHALLENGES["just a moment"], original_status=403))
    with CrawlbaseFetcher(token=api.tokens[N], js_token=None, base_url=api.base_url) as fetcher:
        result = fetch_page(fetcher, URL, None)

    assert_blocked(result)
    assert plan(api) == [(N, True)]


def test_a_wall_is_blocked_without_escalating(api, fetcher):
    result = fetch(api, fetcher, Page(markdown=WALLS["attention required"], original_status=403))

    assert_blocked(result)
    assert plan(api) == [(N, True)]
    assert result.original_status == 403
    assert result.credits == 0.0  # an origin 403 is not billed


@pytest.mark.parametrize("status", [401, 403, 429])
def test_an_origin_refusal_is_blocked_without_escalating(api, fetcher, status):
    result = fetch(api, fetcher, Page(markdown=ARTICLE, original_status=status, pc_status=status))

    assert_blocked(result)
    assert f"HTTP {status}" in (result.detail or "")
    assert plan(api) == [(N, True)]


def test_a_long_article_about_captchas_is_read_as_a_page(api, fetcher):
    result = fetch(api, fetcher, Page(markdown=ARTICLE_ABOUT_CAPTCHAS))

    assert result.text == ARTICLE_ABOUT_CAPTCHAS
    assert result.reason is None


# -- any fetcher's result, and the verdict ----------------------------------------


def test_the_rules_block_a_custom_fetchers_challenge_page():
    fetched = FetchResult(url=URL, text=WALLS["verify you are a human"], original_status=200)

    assert_blocked(apply_rules(URL, fetched, max_page_bytes=None))


class _Fetcher:
    def __init__(self, result: FetchResult) -> None:
        self.result = result

    def fetch(self, url: str) -> FetchResult:
        return self.result


class _Judge:
    name = "test:judge"

    def __init__(self) -> None:
        self.calls = 0

    def judge(self, claim, passages):  # type: ignore[no-untyped-def]
        self.calls += 1
        raise AssertionError("a blocked page must not be judged")


class _Ranker:
    def rank(self, claim, passages, k):  # type: ignore[no-untyped-def]
        return [(i, 1.0) for i in range(min(k, len(passages)))]


def test_a_blocked_page_is_not_found_for_review_and_the_judge_is_not_asked():
    judge = _Judge()
    fetched = FetchResult(url=URL, text=ARTICLE, original_status=403)
    verifier = Verifier(fetcher=_Fetcher(fetched), ranker=_Ranker(), judging=Judging(judge=judge))

    verdict = verifier.verify_citation("The bridge was approved.", Citation(url=URL))

    assert (verdict.label, verdict.reason) == (Label.NOT_FOUND, Reason.BLOCKED)
    assert verdict.review is True
    assert judge.calls == 0
