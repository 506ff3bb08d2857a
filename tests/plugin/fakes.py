"""A conftest for pytester runs: in-process fetcher, judge and ranker through citecheck's hooks.

It lets the plugin tests exercise collection, outcomes, the gate and the reports
without HTTP or the embedding model. Record/replay through real HTTP is tested
against the loopback doubles in test_plugin_recording.py.
"""


def stage_hooks(fetcher: str, judge: str, ranker: str) -> str:
    """Conftest source of the three citecheck stage hooks, each returning a new
    instance of the named class (defined earlier in the same conftest)."""
    return f"""

@pytest.hookimpl(optionalhook=True)
def pytest_citecheck_make_fetcher(config):
    return {fetcher}()


@pytest.hookimpl(optionalhook=True)
def pytest_citecheck_make_judge(config, spec):
    return {judge}()


@pytest.hookimpl(optionalhook=True)
def pytest_citecheck_make_ranker(config):
    return {ranker}()
"""


CONFTEST = """
import pytest
from pytest_citecheck.stages.fetch_rules import FetchResult
from pytest_citecheck.claims.results import JudgeReply
from pytest_citecheck.claims.labels import Label
from pytest_citecheck.claims.results import Usage

PAGES = {
    "https://example.com/boiling": (
        "Water boils at 100 degrees Celsius at sea level.\\n\\nIt freezes at 0."
    ),
    # The unsure claim's quote must be about it (the guard's relevance check).
    "https://example.com/other": "Cats are mammals. They purr. An unsure claim about cats.",
}
GONE = {"https://example.com/gone"}

# claim text -> (label, quote, confidence)
SCRIPT = {
    "Water boils at 100 C.": ("supported", "Water boils at 100 degrees Celsius", 0.95),
    "Water boils at 50 C.": ("contradicted", "Water boils at 100 degrees Celsius", 0.9),
    "Cats bark.": ("not_found", None, 0.9),
    "Unsure claim.": ("supported", "Cats are mammals.", 0.5),
    "Invented quote.": ("supported", "Cats are reptiles.", 0.99),
}


class FakeFetcher:
    calls = []

    def fetch(self, url):
        FakeFetcher.calls.append(url)
        if url in GONE:
            return FetchResult(
                url=url, label=Label.UNREACHABLE, reason="http_404", original_status=404
            )
        return FetchResult(url=url, text=PAGES[url], final_url=url, original_status=200)


class FakeJudge:
    name = "fake:judge"
    prompt_version = "fake-1"

    def judge(self, claim, passages):
        label, quote, confidence = SCRIPT[claim]
        return JudgeReply(label=label, quote=quote, confidence=confidence,
                          usage=Usage(input_tokens=10, output_tokens=2))


class FirstPassages:
    def rank(self, claim, passages, k):
        return [(i, 1.0 - i / 10) for i in range(min(k, len(passages)))]
""" + stage_hooks("FakeFetcher", "FakeJudge", "FirstPassages")


def claims_yaml(*claims: tuple[str, str, list[str], str | None]) -> str:
    """YAML for claims given as (id, claim text, urls, expect)."""
    lines = ["claims:"]
    for claim_id, text, urls, expect in claims:
        lines.append(f"  - id: {claim_id}")
        lines.append(f"    claim: {text}")
        lines.append("    citations:")
        lines.extend(f"      - {u}" for u in urls)
        if expect:
            lines.append(f"    expect: {expect}")
    return "\n".join(lines) + "\n"


SUPPORTED = ("boils-100", "Water boils at 100 C.", ["https://example.com/boiling"], None)
CONTRADICTED = ("boils-50", "Water boils at 50 C.", ["https://example.com/boiling"], None)
NOT_FOUND = ("cats-bark", "Cats bark.", ["https://example.com/other"], None)
UNREACHABLE = ("gone", "Water boils at 100 C.", ["https://example.com/gone"], None)
REVIEW = ("unsure", "Unsure claim.", ["https://example.com/other"], None)
