"""The paywall detector: structured signals only (HTTP 402, schema.org JSON-LD), never words."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pytest_citecheck.claims.labels import Label, Reason
from pytest_citecheck.stages.fetch_rules import FetchResult, apply_rules
from pytest_citecheck.stages.paywall import (
    MAX_JSON_LD_CHARS,
    known_paywall_verdict,
    not_free_json_ld,
    paywall_signal,
)

URL = "https://news.example.com/2024/05/the-bridge-vote"
ARTICLE = "\n\n".join(
    f"Paragraph {i}: the council approved the new bridge on Tuesday after a long debate "
    "about its cost, and construction is expected to start next spring."
    for i in range(8)
)
# Words a phrase list would take for a paywall; none of them is a signal.
ABOUT_SUBSCRIPTIONS = (
    "# Why newspapers want you to subscribe\n\n"
    "Subscribe to read: the phrase greets readers of most papers now. Subscribers only, "
    "paywall, premium content, sign in to continue reading, already a subscriber? Log in. "
    "This article is free to read.\n\n" + ARTICLE + "\n\nSubscribe to read more."
)


def page(*blocks: Any, body: str = ARTICLE, raw: str | None = None) -> str:
    """An HTML page with each of ``blocks`` as a JSON-LD script (``raw``: as written)."""
    scripts = [
        f'<script type="application/ld+json">{json.dumps(block)}</script>' for block in blocks
    ]
    if raw is not None:
        scripts.append(raw)
    return f"<html><head>{''.join(scripts)}</head><body><article>{body}</article></body></html>"


ARTICLE_LD = {"@context": "https://schema.org", "@type": "NewsArticle", "headline": "Bridge"}


# -- HTTP 402 --------------------------------------------------------------------


def test_an_origin_402_is_a_paywall_whatever_the_text():
    paywall = paywall_signal(ARTICLE, 402)

    assert paywall is not None
    assert "HTTP 402" in paywall.why


@pytest.mark.parametrize("status", [None, 200, 401, 403, 404, 429, 500])
def test_other_statuses_are_not_a_paywall(status):
    assert paywall_signal(ARTICLE, status) is None


# -- JSON-LD -----------------------------------------------------------------------


@pytest.mark.parametrize("flag", [False, "False", "false", " FALSE ", "https://schema.org/False"])
def test_is_accessible_for_free_false_in_any_spelling_is_a_paywall(flag):
    text = page({**ARTICLE_LD, "isAccessibleForFree": flag})

    paywall = paywall_signal(text, 200)

    assert paywall is not None
    assert "isAccessibleForFree" in paywall.why


def test_the_flag_written_with_json_escapes_is_still_read():
    # JSON may spell the key with \u escapes; the quick look for the key's plain
    # spelling must not skip such a page.
    escaped = '{"@type": "NewsArticle", "isAccessibleFor\\u0046ree": false}'
    text = page(raw=f'<script type="application/ld+json">{escaped}</script>')

    assert "isAccessibleForFree" not in text
    assert not_free_json_ld(text)


@pytest.mark.parametrize("flag", [True, "True", "true", None, 0, "no such value"])
def test_free_or_unmarked_json_ld_is_not_a_paywall(flag):
    block = dict(ARTICLE_LD) if flag is None else {**ARTICLE_LD, "isAccessibleForFree": flag}

    assert paywall_signal(page(block), 200) is None


def test_the_flag_is_read_in_graph_has_part_main_entity_and_lists():
    part = {"@type": "WebPageElement", "isAccessibleForFree": False, "cssSelector": ".paywall"}
    graph = {"@context": "https://schema.org", "@graph": [{"@type": "WebSite"}, part]}
    has_part = {**ARTICLE_LD, "isAccessibleForFree": True, "hasPart": part}
    has_parts = {**ARTICLE_LD, "hasPart": [{"@type": "WebPageElement"}, part]}
    main_entity = {"@type": "WebPage", "mainEntity": {**ARTICLE_LD, "isAccessibleForFree": "False"}}
    as_list = [{"@type": "BreadcrumbList"}, {**ARTICLE_LD, "isAccessibleForFree": False}]
    nested = {"@graph": [{"@type": "WebPage", "hasPart": [{"hasPart": part}]}]}

    for block in (graph, has_part, has_parts, main_entity, as_list, nested):
        assert not_free_json_ld(page(block)), block


def test_the_flag_on_something_the_page_only_mentions_is_not_a_paywall():
    # A free article in a paid periodical, or a paywalled article it links to.
    mentions = {
        **ARTICLE_LD,
        "isAccessibleForFree": True,
        "isPartOf": {"@type": "Periodical", "isAccessibleForFree": False},
        "relatedLink": [{"@type": "NewsArticle", "isAccessibleForFree": False}],
    }

    assert paywall_signal(page(mentions), 200) is None


def test_one_paywalled_block_among_several_is_enough():
    text = page(
        {"@type": "Organization", "name": "Example News"},
        {**ARTICLE_LD, "isAccessibleForFree": False},
    )

    assert not_free_json_ld(text)


@pytest.mark.parametrize(
    "script",
    [
        "<script type='application/ld+json'>{}</script>",
        '<SCRIPT TYPE="Application/LD+JSON" id="ld">{}</SCRIPT>',
        '<script data-x="1" type=application/ld+json>{}</script >',
        '<script type="application/ld+json"><!-- {} --></script>',
        '<script type="application/ld+json">//<![CDATA[\n{}\n//]]></script>',
    ],
)
def test_script_tags_as_sites_write_them(script):
    body = json.dumps({**ARTICLE_LD, "isAccessibleForFree": False})

    assert not_free_json_ld(page(raw=script.replace("{}", body)))


def test_a_script_that_is_not_json_ld_is_not_read():
    raw = '<script>var data = {"isAccessibleForFree": false};</script>'

    assert not not_free_json_ld(page(raw=raw))


@pytest.mark.parametrize(
    "raw",
    [
        '<script type="application/ld+json">{"isAccessibleForFree": false</script>',  # broken
        '<script type="application/ld+json">' + "[" * 100_000 + "]" * 100_000 + "</script>",
        '<script type="application/ld+json">'
        + json.dumps({"isAccessibleForFree": False, "pad": "x" * MAX_JSON_LD_CHARS})
        + "</script>",
        '<script type="application/ld+json">{"isAccessibleForFree": false}',  # never closed
    ],
)
def test_broken_hostile_or_oversized_json_ld_says_nothing_and_never_raises(raw):
    assert not not_free_json_ld(page(raw=raw))


def test_deep_nesting_is_bounded_not_a_crash():
    node: dict[str, Any] = {"isAccessibleForFree": False}
    for _ in range(400):
        node = {"hasPart": node}

    assert not not_free_json_ld(page(node))


# -- the words are never a signal --------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        ABOUT_SUBSCRIPTIONS,
        "# Subscribe to continue reading\n\nThis content is for subscribers only.",
        "isAccessibleForFree: false",  # the words, not the markup
        '{"isAccessibleForFree": false}',  # JSON in the text, not a JSON-LD script
    ],
)
def test_an_article_about_subscriptions_or_a_wall_in_words_is_not_a_paywall(text):
    assert paywall_signal(text, 200) is None


# -- the page rule and the provider's word ----------------------------------------


def test_the_page_rules_name_a_paywall_not_found_for_review():
    text = page({**ARTICLE_LD, "isAccessibleForFree": False})
    result = apply_rules(URL, FetchResult(url=URL, text=text, original_status=200), None)

    assert (result.label, result.reason, result.review) == (
        Label.NOT_FOUND,
        Reason.PAYWALLED,
        True,
    )
    assert result.text is None
    assert "isAccessibleForFree" in (result.detail or "")


def test_the_page_rules_leave_an_article_about_subscriptions_alone():
    result = apply_rules(URL, FetchResult(url=URL, text=ABOUT_SUBSCRIPTIONS), None)

    assert (result.label, result.reason, result.text) == (None, None, ABOUT_SUBSCRIPTIONS)


def test_a_gone_page_stays_gone_even_with_paywall_markup():
    text = page({**ARTICLE_LD, "isAccessibleForFree": False})
    result = apply_rules(URL, FetchResult(url=URL, text=text, original_status=404), None)

    assert result.reason == Reason.HTTP_404


def test_a_known_paywall_is_not_found_for_review_naming_who_said_so():
    verdict = known_paywall_verdict(URL, "Gemini url_context: URL_RETRIEVAL_STATUS_PAYWALL")

    assert (verdict.label, verdict.reason, verdict.review) == (
        Label.NOT_FOUND,
        Reason.PAYWALLED,
        True,
    )
    assert "URL_RETRIEVAL_STATUS_PAYWALL" in (verdict.detail or "")
    assert verdict.fetches == []


def test_the_dry_run_counts_no_crawl_and_no_judge_call_for_a_known_paywall():
    from pytest_citecheck.claims.models import Citation, Claim
    from pytest_citecheck.engine.estimate import estimate_claim

    known = Citation(url=URL, paywall="Gemini url_context: URL_RETRIEVAL_STATUS_PAYWALL")
    other = "https://news.example.com/2024/05/free-story"
    claim = Claim(id="c", claim="The bridge was approved.", citations=[known, Citation(url=other)])

    estimate = estimate_claim(claim, "openai:gpt-4o-mini")

    assert (estimate.crawls, estimate.judge_calls) == (1, 1)  # the free page only


def test_many_unclosed_json_ld_openings_say_nothing_and_never_raise():
    opening = '<script type="application/ld+json">{"isAccessibleForFree": false}'

    assert not not_free_json_ld(opening * 20_000)


def test_a_json_ld_block_after_an_ordinary_script_is_read():
    raw = (
        '<script>var x = 1;</script><script type="application/ld+json">'
        + json.dumps({"isAccessibleForFree": False})
        + "</script>"
    )

    assert not_free_json_ld(page(raw=raw))


def test_a_saved_gemini_answer_in_a_claim_file_keeps_its_known_paywall(tmp_path):
    import copy
    from pathlib import Path

    from pytest_citecheck.claims.loader import load_claim_file

    native = Path(__file__).parent.parent / "data" / "native"
    (source,) = native.glob("*/pydantic-ai__gemini-2_5-flash_url_context.json")
    data = copy.deepcopy(json.loads(source.read_text(encoding="utf-8")))
    (meta,) = data["candidates"][0]["urlContextMetadata"]["urlMetadata"]
    meta["urlRetrievalStatus"] = "URL_RETRIEVAL_STATUS_PAYWALL"
    (tmp_path / "gemini.json").write_text(json.dumps(data), encoding="utf-8")
    path = tmp_path / "citecheck_saved.yaml"
    path.write_text("answers:\n  - {id: g, response: gemini.json}\n", encoding="utf-8")

    claims = load_claim_file(path).claims

    assert claims
    assert {c.paywall for claim in claims for c in claim.citations} == {
        "Gemini url_context: URL_RETRIEVAL_STATUS_PAYWALL"
    }
