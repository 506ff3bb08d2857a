"""A claim file and a conftest whose page, claim and judge quote carry HTML and secrets.

The in-process fetcher serves a page that holds a ``<script>`` and the values of
``CRAWLBASE_TOKEN`` and ``OPENAI_API_KEY``; the judge quotes both back, as a
careless or compromised judge would. Every report must show the markup as text
and none of the secrets.
"""

from __future__ import annotations

from pathlib import Path

from tests.plugin.fakes import stage_hooks

# Planted by the tests through the environment; the conftest reads them from there.
PLANTED = {
    "CRAWLBASE_TOKEN": "plantedCrawlbaseToken0123",
    "OPENAI_API_KEY": "plantedOpenAIKey4567",
}
SCRIPT = "<script>window.__citecheck_pwned = true</script>"

CONFTEST = (
    """
import os

import pytest
from pytest_citecheck.stages.fetch_rules import FetchResult
from pytest_citecheck.claims.results import JudgeReply
from pytest_citecheck.claims.results import Usage

SCRIPT = "__SCRIPT__"


def page():
    return (
        f"Boiling. {SCRIPT} Water boils at 100 degrees Celsius at sea level.\\n\\n"
        "The judge repeats a secret. "  # what the claim is about (the guard's relevance check)
        f"The crawl token is {os.environ.get('CRAWLBASE_TOKEN', 'unset')} and the key is "
        f"{os.environ.get('OPENAI_API_KEY', 'unset')} here."
    )


class Fetcher:
    def fetch(self, url):
        return FetchResult(url=url, text=page(), final_url=url, original_status=200)


class Judge:
    name = "fake:judge"
    prompt_version = "fake-1"

    def judge(self, claim, passages):
        usage = Usage(input_tokens=10, output_tokens=2)
        if "secret" in claim:
            quote = (
                f"The crawl token is {os.environ.get('CRAWLBASE_TOKEN', 'unset')} and the key is "
                f"{os.environ.get('OPENAI_API_KEY', 'unset')} here."
            )
            return JudgeReply(label="contradicted", quote=quote, confidence=0.9, usage=usage)
        quote = f"{SCRIPT} Water boils at 100 degrees Celsius"
        return JudgeReply(label="supported", quote=quote, confidence=0.95, usage=usage)


class FirstPassages:
    def rank(self, claim, passages, k):
        return [(i, 1.0) for i in range(min(k, len(passages)))]
""".replace("__SCRIPT__", SCRIPT)
    + stage_hooks("Fetcher", "Judge", "FirstPassages")
)

CLAIMS = """claims:
  - id: markup
    claim: '<img src=x onerror="window.__citecheck_pwned = true"> Water boils at 100 C.'
    citations:
      - https://example.com/boiling?q=<script>
  - id: echoes-secret
    claim: The judge repeats a secret.
    citations:
      - https://example.com/boiling
"""


def write_suite(root: Path) -> None:
    (root / "conftest.py").write_text(CONFTEST, encoding="utf-8")
    (root / "citecheck_hostile.yaml").write_text(CLAIMS, encoding="utf-8")
