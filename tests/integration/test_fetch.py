"""CrawlbaseFetcher against the loopback Crawling API double: crawling and the page rules.

Each test asserts what the user gets (label, reason, text, credits, rid) and
which API calls were paid for (token kind, readability flag), in order. What the
user gets is the fetcher's page read by the page rules, as the pipeline reads it
(``fetch_page``).
"""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from pytest_citecheck.claims.labels import Label, Reason
from pytest_citecheck.core.errors import ConfigurationError
from pytest_citecheck.core.retry import RetryPolicy
from pytest_citecheck.core.secrets import TOKEN_PLACEHOLDERS
from pytest_citecheck.stages.fetch import CrawlbaseFetcher, FetchResult
from pytest_citecheck.stages.fetch_rules import fetch_page
from tests.doubles.crawlbase import CrawlbaseDouble, Page
from tests.doubles.pdfs import decompression_bomb, deep_nesting, make_pdf, many_pages, truncated

PDF_LINE = "The bridge opened to traffic in 1932 after six years of work."

URL = "https://example.com/articles/water-boiling-point"
ARTICLE = "\n\n".join(
    f"Paragraph {i}: water boils at 100 degrees Celsius at sea level, and the boiling "
    "point drops as altitude rises because the air pressure is lower."
    for i in range(10)
)
RENDERED = "# Rendered\n\n" + ARTICLE.replace("Paragraph", "Rendered paragraph")
THIN = "# Water\n\nLoading..."
SOFT_404 = "# Oops!\n\nSorry, the page you are looking for does not exist.\n\n[Go home](/)"
ARTICLE_ABOUT_404 = (
    "# What a 404 error means\n\n" + ARTICLE + "\n\nA 404 Not Found status means the server "
    "could not find the requested page; a soft 404 answers 200 instead."
)

N, J = "normal", "javascript"


@pytest.fixture
def api() -> Iterator[CrawlbaseDouble]:
    with CrawlbaseDouble() as double:
        yield double


@pytest.fixture
def sleeps() -> list[float]:
    return []


def make_fetcher(api: CrawlbaseDouble, sleeps: list[float], **kw: object) -> CrawlbaseFetcher:
    options: dict[str, object] = {
        "token": api.tokens[N],
        "js_token": api.tokens[J],
        "base_url": api.base_url,
        "retry": RetryPolicy(sleep=sleeps.append),
    }
    options.update(kw)
    return CrawlbaseFetcher(**options)  # type: ignore[arg-type]


@pytest.fixture
def fetcher(api: CrawlbaseDouble, sleeps: list[float]) -> Iterator[CrawlbaseFetcher]:
    with make_fetcher(api, sleeps) as f:
        yield f


def plan(api: CrawlbaseDouble) -> list[tuple[str | None, bool]]:
    """The API calls made: (token kind, md_readability)."""
    return [(c.kind, c.readability) for c in api.api_calls]


def fetch(
    api: CrawlbaseDouble, fetcher: CrawlbaseFetcher, page: Page, url: str = URL
) -> FetchResult:
    api.add(url, page)
    return fetch_page(fetcher, url, None)


# -- step 1: the ordinary page ------------------------------------------------


def test_readable_page_is_one_stored_markdown_call(api, fetcher):
    result = fetch(api, fetcher, Page(markdown=ARTICLE, rid="rid-ok-1"))

    assert result.text == ARTICLE
    assert result.label is None
    assert result.final_url == URL
    assert result.original_status == 200
    assert result.rid == "rid-ok-1"
    assert plan(api) == [(N, True)]
    [call] = api.api_calls
    # The SDK's query: token first, the options, url last.
    assert list(call.params) == ["token", "format", "md_readability", "store", "url"]
    assert call.params == {
        "token": api.tokens[N],
        "format": "md",
        "md_readability": "true",
        "store": "true",
        "url": URL,
    }
    [entry] = result.fetches
    assert entry.token == N
    assert entry.readability is True
    assert (entry.status_code, entry.original_status, entry.cb_status) == (200, 200, 200)
    assert entry.rid == "rid-ok-1"
    assert entry.non_whitespace_chars == len("".join(ARTICLE.split()))
    assert result.credits == entry.credits == 1.5


def test_rid_falls_back_to_storage_url_and_storage_url_is_not_kept(api, fetcher):
    result = fetch(api, fetcher, Page(markdown=ARTICLE, rid="r-123abc", send_rid_header=False))

    assert result.rid == "r-123abc"
    assert result.fetches[0].rid == "r-123abc"
    kept = repr(result) + "".join(f.model_dump_json() for f in result.fetches)
    assert "/storage" not in kept
    assert api.tokens[N] not in kept


def test_rid_header_alone_is_read(api, fetcher):
    result = fetch(api, fetcher, Page(markdown=ARTICLE, rid="r-456def", send_storage_url=False))

    assert result.rid == "r-456def"


def test_legacy_pc_status_alone_is_read(api, fetcher):
    result = fetch(api, fetcher, Page(markdown=ARTICLE, legacy_status_only=True))

    assert result.text == ARTICLE
    assert result.fetches[0].cb_status == 200
    assert result.credits == 1.5


# -- step 2: thin pages are fetched again without readability ----------------


def test_thin_page_is_fetched_again_without_readability(api, fetcher):
    result = fetch(api, fetcher, Page(markdown=THIN, full_markdown=ARTICLE, rid="rid-full"))

    assert result.text == ARTICLE
    assert plan(api) == [(N, True), (N, False)]
    assert "md_readability" not in api.api_calls[1].params
    assert api.api_calls[1].store
    assert result.credits == 3.0  # both calls billed
    assert result.rid == "rid-full"


@pytest.mark.parametrize(("chars", "calls"), [(199, 2), (200, 1)])
def test_thin_threshold_is_200_non_whitespace_chars(api, fetcher, chars, calls):
    # Whitespace does not count: 200 visible characters spread over lines.
    text = "\n".join("x" * 10 + "  " for _ in range(chars // 10)) + "y" * (chars % 10)
    result = fetch(api, fetcher, Page(markdown=text, full_markdown=ARTICLE))

    assert len(api.api_calls) == calls
    assert result.text == (ARTICLE if calls == 2 else text)


# -- step 3: the JavaScript token, only on real signals ------------------------


def test_http_520_escalates_to_the_javascript_token(api, fetcher, sleeps):
    page = Page(http_status=520, js=Page(markdown=RENDERED, final_url=URL + "?r=1", rid="rid-js"))
    result = fetch(api, fetcher, page)

    assert result.text == RENDERED
    assert plan(api) == [(N, True), (J, True)]  # 520 is not retried on the normal token
    assert sleeps == []
    assert api.api_calls[1].token == api.tokens[J]
    first, js = result.fetches
    assert (first.token, first.status_code, first.credits) == (N, 520, 0.0)
    assert (js.token, js.readability, js.status_code, js.credits) == (J, True, 200, 2.5)
    # The reply that decided the outcome is the rendered one.
    assert (result.final_url, result.rid) == (URL + "?r=1", "rid-js")
    assert result.credits == 2.5


@pytest.mark.parametrize("legacy", [False, True], ids=["cb_status", "pc_status"])
def test_status_207_escalates_to_the_javascript_token(api, fetcher, legacy):
    page = Page(pc_status=207, legacy_status_only=legacy, js=Page(markdown=RENDERED))
    result = fetch(api, fetcher, page)

    assert result.text == RENDERED
    assert plan(api) == [(N, True), (J, True)]  # an empty page gains nothing from step 2
    assert result.fetches[0].cb_status == 207
    assert result.fetches[0].credits == 0.0


@pytest.mark.parametrize("status", [520, 525])
def test_failed_crawl_inside_a_200_escalates_to_the_javascript_token(api, fetcher, sleeps, status):
    # Crawlbase's status-codes page says the API answers 200 and reports the
    # crawl's own result in pc_status/cb_status; 525 is an unsolved challenge.
    page = Page(pc_status=status, markdown=ARTICLE, js=Page(markdown=RENDERED, rid="rid-js"))
    result = fetch(api, fetcher, page)

    assert api.api_calls[0].status == 200
    assert result.text == RENDERED
    assert plan(api) == [(N, True), (J, True)]  # a failed crawl gains nothing from step 2
    assert sleeps == []
    first = result.fetches[0]
    assert (first.status_code, first.cb_status, first.credits) == (200, status, 0.0)
    assert result.rid == "rid-js"


@pytest.mark.parametrize("legacy", [False, True], ids=["cb_status", "pc_status"])
def test_failed_crawl_status_is_read_from_either_header(api, fetcher, legacy):
    # The legacy header alone, or cb_status (which the SDK prefers) over a clean pc_status.
    page = (
        Page(pc_status=525, legacy_status_only=True, js=Page(markdown=RENDERED))
        if legacy
        else Page(pc_status=200, cb_status=525, js=Page(markdown=RENDERED))
    )
    result = fetch(api, fetcher, page)

    assert result.text == RENDERED
    assert plan(api) == [(N, True), (J, True)]


def test_http_525_escalates_like_520(api, fetcher, sleeps):
    result = fetch(api, fetcher, Page(http_status=525, js=Page(markdown=RENDERED)))

    assert result.text == RENDERED
    assert plan(api) == [(N, True), (J, True)]
    assert sleeps == []


@pytest.mark.parametrize("shape", ["http", "header"])
def test_failed_crawl_with_both_tokens_is_crawl_failed(api, fetcher, shape):
    page = Page(http_status=520) if shape == "http" else Page(pc_status=520)
    result = fetch(api, fetcher, page)

    assert plan(api) == [(N, True), (J, True)]
    assert (result.label, result.reason) == (Label.ERROR, Reason.CRAWL_FAILED)
    assert "520" in (result.detail or "") and "JavaScript" in (result.detail or "")
    assert result.credits == 0.0


def test_empty_body_escalates_to_the_javascript_token(api, fetcher):
    # The docs: an empty body on the normal token -> retry with the JavaScript token
    # (after step 2: readability may be what emptied it).
    result = fetch(api, fetcher, Page(markdown="", js=Page(markdown=RENDERED)))

    assert result.text == RENDERED
    assert plan(api) == [(N, True), (N, False), (J, True)]


def test_still_thin_without_readability_escalates_to_javascript(api, fetcher):
    page = Page(markdown=THIN, full_markdown=THIN + " More.", js=Page(markdown=RENDERED))
    result = fetch(api, fetcher, page)

    assert result.text == RENDERED
    assert plan(api) == [(N, True), (N, False), (J, True)]
    assert result.credits == 1.5 + 1.5 + 2.5


def test_rendered_page_gets_the_readability_retry_too(api, fetcher):
    page = Page(http_status=520, js=Page(markdown=THIN, full_markdown=RENDERED))
    result = fetch(api, fetcher, page)

    assert result.text == RENDERED
    assert plan(api) == [(N, True), (J, True), (J, False)]


def test_thin_everywhere_goes_to_the_judge_with_the_richest_text(api, fetcher):
    richest = THIN + "\n\nBoils at 100 C."
    page = Page(markdown=THIN, js=Page(markdown="Loading", full_markdown=richest, rid="rid-best"))
    result = fetch(api, fetcher, page)

    assert plan(api) == [(N, True), (N, False), (J, True), (J, False)]
    assert result.label is None
    assert result.text == richest
    assert result.rid == "rid-best"


def test_rendering_that_loses_text_does_not_replace_richer_text(api, fetcher):
    richest = THIN + "\n\nWater boils at 100 C at sea level."
    page = Page(markdown=THIN, full_markdown=richest, rid="rid-n", js=Page(markdown="Loading"))
    result = fetch(api, fetcher, page)

    assert plan(api) == [(N, True), (N, False), (J, True), (J, False)]
    assert result.text == richest
    assert result.rid == "rid-n"


def test_empty_everywhere_is_not_found_empty_page(api, fetcher):
    result = fetch(api, fetcher, Page(markdown="  \n"))

    assert plan(api) == [(N, True), (N, False), (J, True), (J, False)]
    assert (result.label, result.reason) == (Label.NOT_FOUND, Reason.EMPTY_PAGE)
    assert result.text is None


def test_empty_page_207_on_both_tokens_is_empty_page(api, fetcher):
    result = fetch(api, fetcher, Page(pc_status=207))

    assert plan(api) == [(N, True), (J, True)]
    assert (result.label, result.reason) == (Label.NOT_FOUND, Reason.EMPTY_PAGE)
    assert result.credits == 0.0


def test_520_on_both_tokens_is_a_crawl_error(api, fetcher):
    result = fetch(api, fetcher, Page(http_status=520))

    assert plan(api) == [(N, True), (J, True)]
    assert (result.label, result.reason) == (Label.ERROR, Reason.CRAWL_FAILED)
    assert result.text is None
    assert "520" in (result.detail or "")
    assert "JavaScript" in (result.detail or "")


def test_captcha_with_cb_status_503_is_blocked_without_escalating(api, fetcher):
    # A CAPTCHA: the origin said 200, Crawlbase says 503. A captcha is not
    # something a browser passes on its own: no JavaScript fetch.
    result = fetch(api, fetcher, Page(markdown="Verify you are human", pc_status=503))

    assert plan(api) == [(N, True)]
    assert (result.label, result.reason) == (Label.NOT_FOUND, Reason.BLOCKED)
    assert result.review is True
    assert result.credits == 0.0


def test_other_cb_status_without_a_marker_is_a_crawl_error(api, fetcher):
    result = fetch(api, fetcher, Page(markdown=ARTICLE, pc_status=503))

    assert plan(api) == [(N, True)]
    assert (result.label, result.reason) == (Label.ERROR, Reason.CRAWL_FAILED)
    assert "cb_status 503" in (result.detail or "")
    assert result.credits == 0.0


# -- step 4: gone pages --------------------------------------------------------


@pytest.mark.parametrize(("status", "reason"), [(404, Reason.HTTP_404), (410, Reason.HTTP_410)])
def test_gone_page_is_unreachable_and_billed(api, fetcher, status, reason):
    # A short body: still no readability retry, no JavaScript.
    result = fetch(api, fetcher, Page(markdown="# Not Found", original_status=status, rid="rid-g"))

    assert (result.label, result.reason) == (Label.UNREACHABLE, reason)
    assert result.original_status == status
    assert result.rid == "rid-g"
    assert plan(api) == [(N, True)]
    assert result.credits == 1.5  # 404/410 crawls are billed


def test_gone_page_is_detected_on_the_rendered_reply_too(api, fetcher):
    result = fetch(api, fetcher, Page(http_status=520, js=Page(original_status=410)))

    assert (result.label, result.reason) == (Label.UNREACHABLE, Reason.HTTP_410)
    assert plan(api) == [(N, True), (J, True)]
    assert result.credits == 2.5


# -- step 5: deep links redirected to the homepage ----------------------------


@pytest.mark.parametrize("home", ["https://example.com/", "https://example.com"])
def test_deep_link_redirected_to_homepage_is_not_found(api, fetcher, home):
    result = fetch(api, fetcher, Page(markdown="# Welcome", final_url=home))

    assert (result.label, result.reason) == (Label.NOT_FOUND, Reason.REDIRECTED_TO_HOMEPAGE)
    assert result.final_url == home
    assert plan(api) == [(N, True)]  # thin, but nothing more is fetched


def test_homepage_citation_is_not_a_redirect(api, fetcher):
    result = fetch(api, fetcher, Page(markdown=ARTICLE), url="https://example.com/")

    assert result.text == ARTICLE


def test_redirect_to_another_deep_page_is_followed(api, fetcher):
    moved = "https://example.com/new/water-boiling-point"
    result = fetch(api, fetcher, Page(markdown=ARTICLE, final_url=moved))

    assert result.text == ARTICLE
    assert result.final_url == moved


# -- step 6: soft 404 ----------------------------------------------------------


def test_thin_soft_404_template_is_fetched_again_before_it_is_judged(api, fetcher):
    # Re-crawling (thin -> without readability -> JavaScript) comes before the soft-404 rule.
    result = fetch(api, fetcher, Page(markdown=SOFT_404))

    assert (result.label, result.reason) == (Label.NOT_FOUND, Reason.SOFT_404)
    assert result.text is None
    assert plan(api) == [(N, True), (N, False), (J, True), (J, False)]


def test_thin_readability_text_that_reads_404_loses_to_the_full_page(api, fetcher):
    result = fetch(api, fetcher, Page(markdown=SOFT_404, full_markdown=ARTICLE))

    assert result.text == ARTICLE
    assert plan(api) == [(N, True), (N, False)]


def test_soft_404_template_with_site_chrome_is_not_found(api, fetcher):
    chrome = "\n".join(f"- [Section {i}](/section-{i})" for i in range(20))
    text = chrome + "\n\n# 404\n\nThis page is no longer available.\n"
    assert 200 <= len("".join(text.split())) < 800

    result = fetch(api, fetcher, Page(markdown=text))

    assert (result.label, result.reason) == (Label.NOT_FOUND, Reason.SOFT_404)


def test_long_article_that_mentions_404_is_judged(api, fetcher):
    result = fetch(api, fetcher, Page(markdown=ARTICLE_ABOUT_404))

    assert result.label is None
    assert result.text == ARTICLE_ABOUT_404


def test_thin_page_that_is_not_a_template_is_judged(api, fetcher):
    text = "# Boiling\n\nWater boils at 100 C at sea level."
    result = fetch(api, fetcher, Page(markdown=text))

    assert result.text == text
    assert result.label is None


# -- step 7: PDFs --------------------------------------------------------------


@pytest.mark.parametrize(
    "url", ["https://example.com/report.pdf", "https://example.com/a/B.PDF?x=1"]
)
def test_a_pdf_url_is_asked_for_as_the_file_and_its_text_extracted(api, fetcher, url):
    api.add(url, Page(pdf=make_pdf([[PDF_LINE] * 12, [PDF_LINE] * 12])))
    result = fetch_page(fetcher, url, None)

    assert result.label is None and result.pdf_text is not None
    assert len(result.pdf_text.pages) == 2 and PDF_LINE in result.text
    # One call: the file itself (no format=md, which converts HTML), the origin's headers.
    [call] = api.calls
    assert (call.format, call.params.get("get_headers"), call.store) == (None, "true", True)
    assert result.credits == 1.5


def test_a_pdf_url_that_serves_html_is_crawled_as_a_page(api, fetcher):
    url = "https://example.com/landing.pdf"
    result = fetch(api, fetcher, Page(markdown=ARTICLE), url=url)

    assert result.text == ARTICLE and result.pdf_text is None
    # The file was asked for first, then the page as markdown: both billed.
    assert [c.format for c in api.calls] == [None, "md"]
    assert result.credits == 3.0


def test_a_reply_that_is_a_pdf_is_read_as_one_whatever_its_url(api, fetcher):
    url = "https://example.com/download?id=7"
    api.add(url, Page(pdf=make_pdf([[PDF_LINE] * 12])))
    result = fetch_page(fetcher, url, None)

    assert result.pdf_text is not None and PDF_LINE in result.text
    assert [c.format for c in api.calls] == ["md"]  # one call: no readability retry


def test_an_unreadable_pdf_gets_its_reason(api, fetcher):
    url = "https://example.com/scan.pdf"
    api.add(url, Page(pdf=make_pdf([[], []])))
    result = fetch_page(fetcher, url, None)

    assert (result.label, result.reason) == (Label.NOT_FOUND, Reason.PDF_NO_TEXT)
    assert result.text is None and result.pdf is None


@pytest.mark.parametrize(
    ("make", "reason"),
    [
        (many_pages, Reason.PDF_TOO_LARGE),
        (decompression_bomb, Reason.PDF_TOO_LARGE),
        (deep_nesting, Reason.PDF_MALFORMED),
        (truncated, Reason.PDF_MALFORMED),
    ],
    ids=["50000-pages", "decompression-bomb", "deep-nesting", "truncated"],
)
def test_a_hostile_pdf_from_the_api_gets_its_reason(api, fetcher, make, reason):
    url = "https://example.com/hostile.pdf"
    api.add(url, Page(pdf=make()))
    result = fetch_page(fetcher, url, 2_000_000)

    assert (result.label, result.reason) == (Label.NOT_FOUND, reason)
    assert result.text is None and result.detail


def test_a_pdf_over_the_size_cap_is_pdf_too_large(api, fetcher):
    url = "https://example.com/big.pdf"
    api.add(url, Page(pdf=make_pdf([[PDF_LINE] * 12])))
    result = fetch_page(fetcher, url, 200)

    assert (result.label, result.reason) == (Label.NOT_FOUND, Reason.PDF_TOO_LARGE)


def test_pdf_named_in_the_query_only_is_fetched(api, fetcher):
    url = "https://example.com/viewer?file=report.pdf"
    result = fetch(api, fetcher, Page(markdown=ARTICLE), url=url)

    assert result.text == ARTICLE
    assert api.calls_for(url) != []


# -- transient replies -----------------------------------------------------------


@pytest.mark.allow_resend(
    "retries a fault on purpose: the double fails a request and it is sent again"
)
def test_429_is_retried_after_the_delay_the_api_asks_for(api, fetcher, sleeps):
    result = fetch(api, fetcher, Page(markdown=ARTICLE, transient=(429,), retry_after="3"))

    assert result.text == ARTICLE
    assert [c.status for c in api.api_calls] == [429, 200]
    assert sleeps == [3.0]
    assert result.credits == 1.5


@pytest.mark.allow_resend(
    "retries a fault on purpose: the double fails a request and it is sent again"
)
def test_5xx_is_retried_with_backoff(api, fetcher, sleeps):
    result = fetch(api, fetcher, Page(markdown=ARTICLE, transient=(500, 503, 522)))

    assert result.text == ARTICLE
    assert [c.status for c in api.api_calls] == [500, 503, 522, 200]
    assert sleeps == [0.5, 1.0, 2.0]


@pytest.mark.allow_resend(
    "retries a fault on purpose: the double fails a request and it is sent again"
)
def test_persistent_5xx_is_a_crawl_error(api, fetcher, sleeps):
    result = fetch(api, fetcher, Page(markdown=ARTICLE, transient=(503,) * 10))

    assert (result.label, result.reason) == (Label.ERROR, Reason.CRAWL_FAILED)
    assert "503" in (result.detail or "")
    assert len(api.api_calls) == 4  # RetryPolicy.attempts
    assert plan(api) == [(N, True)] * 4  # never escalated to JavaScript


def test_unreachable_api_is_a_crawl_error(sleeps):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    fetcher = CrawlbaseFetcher(
        token="secret-normal-token",
        js_token="secret-js-token",
        base_url=f"http://127.0.0.1:{port}/",
        retry=RetryPolicy(sleep=sleeps.append),
    )
    with fetcher:
        result = fetch_page(fetcher, URL, None)

    assert (result.label, result.reason) == (Label.ERROR, Reason.CRAWL_FAILED)
    assert "no reply" in (result.detail or "")
    assert "secret-normal-token" not in (result.detail or "")
    assert len(sleeps) == 3
    assert [f.status_code for f in result.fetches] == [0]


# -- configuration errors --------------------------------------------------------


def test_rejected_token_names_the_variable_never_the_value(api, sleeps):
    fetcher = make_fetcher(api, sleeps, token="wrong-secret-token-123")
    with fetcher, pytest.raises(ConfigurationError) as raised:
        fetch(api, fetcher, Page(markdown=ARTICLE))

    message = str(raised.value)
    assert "CRAWLBASE_TOKEN" in message
    assert "401" in message
    assert "wrong-secret-token-123" not in message
    assert [c.status for c in api.api_calls] == [401]  # not retried


def test_rejected_js_token_names_the_js_variable(api, sleeps):
    fetcher = make_fetcher(api, sleeps, js_token="wrong-js-secret-456")
    with fetcher, pytest.raises(ConfigurationError) as raised:
        fetch(api, fetcher, Page(http_status=520))

    assert "CRAWLBASE_JS_TOKEN" in str(raised.value)
    assert "wrong-js-secret-456" not in str(raised.value)


@pytest.mark.parametrize(
    ("status", "says"), [(402, "out of credits"), (403, "CRAWLBASE_JS_TOKEN"), (422, URL)]
)
def test_configuration_statuses_say_what_to_fix(api, fetcher, status, says):
    with pytest.raises(ConfigurationError) as raised:
        fetch(api, fetcher, Page(http_status=status))

    message = str(raised.value)
    assert says in message
    assert "CRAWLBASE_TOKEN" in message
    assert api.tokens[N] not in message
    assert len(api.api_calls) == 1


def test_missing_token_is_a_configuration_error_before_any_call(api, sleeps):
    fetcher = make_fetcher(api, sleeps, token=None)
    with fetcher, pytest.raises(ConfigurationError, match="CRAWLBASE_TOKEN"):
        fetch(api, fetcher, Page(markdown=ARTICLE))
    assert api.calls == []


def test_missing_js_token_matters_only_when_javascript_is_needed(api, sleeps):
    with make_fetcher(api, sleeps, js_token=None) as fetcher:
        assert fetch(api, fetcher, Page(markdown=ARTICLE)).text == ARTICLE
        with pytest.raises(ConfigurationError, match=r"CRAWLBASE_JS_TOKEN.*JavaScript token"):
            fetch(api, fetcher, Page(http_status=520), url=URL + "-spa")


def test_placeholders_are_sent_when_tokens_are_not_required(sleeps):
    with CrawlbaseDouble(tokens=TOKEN_PLACEHOLDERS) as api:
        fetcher = make_fetcher(api, sleeps, token=None, js_token=None, require_tokens=False)
        with fetcher:
            result = fetch(api, fetcher, Page(http_status=520, js=Page(markdown=RENDERED)))

        assert result.text == RENDERED
        assert [c.token for c in api.api_calls] == ["REDACTED-NORMAL", "REDACTED-JS"]


def test_401_with_a_placeholder_says_the_variable_is_not_set(api, sleeps):
    fetcher = make_fetcher(api, sleeps, token=None, require_tokens=False)
    with fetcher, pytest.raises(ConfigurationError, match="CRAWLBASE_TOKEN is not set"):
        fetch(api, fetcher, Page(markdown=ARTICLE))


# -- configuration from the environment -----------------------------------------


def test_from_env_reads_tokens_and_base_url(api, sleeps):
    env = {
        "CRAWLBASE_TOKEN": api.tokens[N],
        "CRAWLBASE_JS_TOKEN": api.tokens[J],
        "CITECHECK_CRAWLBASE_URL": api.base_url,
    }
    with CrawlbaseFetcher.from_env(env, retry=RetryPolicy(sleep=sleeps.append)) as fetcher:
        result = fetch(api, fetcher, Page(http_status=520, js=Page(markdown=RENDERED)))

    assert result.text == RENDERED
    assert [c.kind for c in api.api_calls] == [N, J]


def test_from_env_treats_empty_tokens_as_missing(api):
    env = {"CRAWLBASE_TOKEN": "", "CITECHECK_CRAWLBASE_URL": api.base_url}
    with (
        CrawlbaseFetcher.from_env(env) as fetcher,
        pytest.raises(ConfigurationError, match="CRAWLBASE_TOKEN"),
    ):
        fetch(api, fetcher, Page(markdown=ARTICLE))
    assert api.calls == []


def test_from_env_defaults_to_the_real_api():
    with CrawlbaseFetcher.from_env({}) as fetcher:  # nothing is fetched
        assert fetcher.base_url == "https://api.crawlbase.com/"


# -- the crawler hands the raw page to the page rules ---------------------------------

_RULED = {
    "gone": (URL, Page(markdown=ARTICLE, original_status=410), Reason.HTTP_410),
    "homepage": (
        URL,
        Page(markdown=ARTICLE, final_url="https://example.com/"),
        Reason.REDIRECTED_TO_HOMEPAGE,
    ),
    "pdf": ("https://example.com/paper.pdf", Page(pdf=make_pdf([[], []])), Reason.PDF_NO_TEXT),
    "blocked": (URL, Page(markdown="Verify you are human", pc_status=503), Reason.BLOCKED),
    "soft_404": (URL, Page(markdown=SOFT_404 + "\n\n" + "Menu Home About " * 20), Reason.SOFT_404),
}


@pytest.mark.allow_resend(
    "runs the same claims more than once on purpose (record, replay, recheck, compare)"
)
@pytest.mark.parametrize("case", list(_RULED))
def test_the_crawler_words_no_page_verdict_the_rules_decide(api, fetcher, case):
    """The same page, fetched by the crawler alone, carries no label: only the page
    rules (stages/fetch_rules.py) say what it is, as for any other fetcher."""
    url, page, reason = _RULED[case]
    api.add(url, page)
    raw = fetcher.fetch(url)
    calls = plan(api)
    ruled = fetch_page(fetcher, url, None)

    assert (raw.label, raw.reason, raw.detail) == (None, None, None)
    assert (ruled.reason, ruled.text) == (reason, None)
    assert ruled.detail
    # Fetched again through the rules: the same calls, nothing re-crawled for a verdict.
    assert plan(api)[len(calls) :] == calls
