"""The secret variables are the ones the fetcher and the judges really read."""

from __future__ import annotations

import pytest

from pytest_citecheck.core.providers import PROVIDERS, TOKEN_ENV
from pytest_citecheck.core.secrets import SECRET_ENV_VARS, scrub, secret_values
from pytest_citecheck.stages.fetch import CrawlbaseFetcher
from pytest_citecheck.stages.judges import make_judge


@pytest.mark.parametrize("provider", PROVIDERS)
def test_every_judges_key_is_a_secret(provider: str) -> None:
    judge = make_judge(
        f"{provider}:m", environ={}, base_url="http://127.0.0.1:9/v1", require_key=False
    )
    assert judge.key_env in SECRET_ENV_VARS


def test_every_crawlbase_token_is_a_secret() -> None:
    env = {name: f"value-of-{kind}" for kind, name in TOKEN_ENV.items()}
    with CrawlbaseFetcher.from_env(env) as fetcher:
        read = set(fetcher._tokens.values())
    assert read == set(env.values())
    assert set(TOKEN_ENV.values()) <= set(SECRET_ENV_VARS)


@pytest.mark.parametrize("name", SECRET_ENV_VARS)
def test_a_secret_variables_value_is_scrubbed(name: str) -> None:
    env = {name: "s3cret-value-123"}
    assert secret_values(env) == ["s3cret-value-123"]
    assert "s3cret-value-123" not in scrub("failed with s3cret-value-123", secret_values(env))
