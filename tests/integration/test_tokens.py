"""Tokens in recordings: a placeholder-like token never rewrites a word of the prompt or
the page, and a recording made with the other Crawlbase token kind says so when replayed."""

from __future__ import annotations

from pathlib import Path

import yaml

from pytest_citecheck.claims.labels import Reason
from pytest_citecheck.recording.recorder import cassette_path
from tests.doubles.crawlbase import CrawlbaseDouble, Page
from tests.integration.test_engine import (
    CLAIM_FILE,
    KEY,
    TOKENS,
    StableLLM,
    add_pages,
    claim,
    env_for,
    make_engine,
)

BOILING = "https://example.com/science/boiling"


def test_a_token_that_is_an_ordinary_word_leaves_the_prompt_and_the_page_alone(
    tmp_path: Path,
) -> None:
    """``CRAWLBASE_TOKEN=anything`` (start-up refuses it; the engine used without start-up
    checks must still not corrupt the recording): the prompt's "Do not use anything you
    know" and the page's words are recorded as they were, the token in the URL is not."""
    tokens = {"normal": "anything", "javascript": TOKENS["javascript"]}
    page = "# Boiling\n\nAnything you boil at sea level boils at 100 degrees Celsius. " * 3
    where = cassette_path(tmp_path / CLAIM_FILE, "boiling")
    with CrawlbaseDouble(tokens=tokens) as api, StableLLM(api_key=KEY) as llm:
        api.add(BOILING, Page(markdown=page))
        env = env_for(api, llm) | {"CRAWLBASE_TOKEN": "anything"}
        with make_engine(env, "once") as engine:
            engine.verify(claim("boiling", "Water boils at 100 degrees Celsius.", BOILING), where)
    text = where.read_text()
    bodies = " ".join(
        str(i["request"]["body"]) + str(i["response"]["body"]["string"])
        for i in yaml.safe_load(text)["interactions"]
    )
    assert "Do not use anything you know from elsewhere" in bodies
    assert "Anything you boil at sea level" in bodies
    assert "REDACTED you" not in bodies
    assert "token=REDACTED-NORMAL" in text and "token=anything" not in text


def test_a_recording_made_with_the_other_token_kind_names_the_kind_not_the_host(
    tmp_path: Path,
) -> None:
    boiling = claim("boiling", "Water boils at 100 degrees Celsius.", BOILING)
    where = cassette_path(tmp_path / CLAIM_FILE, "boiling")
    with CrawlbaseDouble(tokens=TOKENS) as api, StableLLM(api_key=KEY) as llm:
        add_pages(api)
        with make_engine(env_for(api, llm), "once") as engine:
            engine.verify(boiling, where)
    # As if recorded with both variables holding one value, kept as the JavaScript token.
    where.write_text(where.read_text().replace("token=REDACTED-NORMAL", "token=REDACTED-JS"))
    with make_engine(
        env_for("http://127.0.0.1:9", "http://127.0.0.1:9/v1", keys=False), "none"
    ) as engine:
        verdict = engine.verify(boiling, where).verdicts[0]
    assert verdict.reason == Reason.STALE_RECORDING
    assert verdict.detail is not None
    assert "differs from the recorded request in: the Crawlbase token kind javascript " in (
        verdict.detail
    )
    assert "(now normal)" in verdict.detail
    assert "host" not in verdict.detail
