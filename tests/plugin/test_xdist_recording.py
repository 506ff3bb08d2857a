"""Recording under pytest-xdist: a claim is recorded at most once per run.

Each recording bills Crawling API credits and judge tokens. Under ``--dist
worksteal`` a worker records the claims queued for it ahead of running them; an
idle worker may then steal some of those queued items and run them itself. The
thief must replay what the first worker recorded, not record it again.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.doubles.crawlbase import CrawlbaseDouble, Page
from tests.doubles.llm import JudgeCall, LLMDouble, Responder, Scripted, quote_first_passage
from tests.plugin.test_recording import RANKER_CONFTEST

TOKEN = "double-normal-token-0123"
KEY = "sk-double-openai-key-0123"
CLAIMS = 8
PAGE = "# Facts\n\n" + "Fact number {n} is true and well documented here. " * 8
# Worksteal hands each of the 2 workers 4 claims. The one holding fact-0..3 records
# them ahead and runs fact-0, whose judge reply is held back until the stolen items
# ran: it keeps fact-1 as its next item, so the other worker, once idle after fact-6,
# steals fact-2 and fact-3 and, running fact-7, starts on them. fact-2's own judge
# reply is held back until then, so the thief reaches fact-2 while its recording is
# still under way (fact-3's is already saved).
STOLEN = ("fact-2", "fact-3")
HELD = {"fact-0": STOLEN, "fact-2": ("fact-7",)}
# Each worker notes the items it ran here (the inner conftest).
RAN_CONFTEST = (
    RANKER_CONFTEST
    + """
import os, pathlib

def pytest_runtest_logfinish(nodeid, location):
    pathlib.Path(os.environ["RAN_DIR"], nodeid.rsplit("::", 1)[-1]).touch()
"""
)


def claim_text(n: int) -> str:
    return f"Fact number {n} is true."


def held_back(ran: Path) -> Responder:
    """The judge double answers a HELD claim once the items it waits for ran."""
    texts = {claim_text(int(claim.removeprefix("fact-"))): after for claim, after in HELD.items()}

    def respond(call: JudgeCall) -> Scripted:
        after = texts.get(str(call.claim), ())
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not all((ran / i).exists() for i in after):
            time.sleep(0.05)
        return quote_first_passage(call)

    return respond


@pytest.fixture
def doubles(pytester: pytest.Pytester) -> Iterator[tuple[CrawlbaseDouble, LLMDouble]]:
    ran = pytester.path / "ran"
    ran.mkdir()
    tokens = {"normal": TOKEN, "javascript": TOKEN + "-js"}
    with (
        CrawlbaseDouble(tokens=tokens) as api,
        LLMDouble(held_back(ran), api_key=KEY) as llm,
    ):
        for n in range(CLAIMS):
            api.add(f"https://example.com/fact/{n}", Page(markdown=PAGE.format(n=n)))
        yield api, llm


def suite_yaml() -> str:
    lines = ["claims:"]
    for n in range(CLAIMS):
        lines += [
            f"  - id: fact-{n}",
            f"    claim: {claim_text(n)}",
            "    citations:",
            f"      - https://example.com/fact/{n}",
        ]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("mode", ["once", "rewrite"])
def test_a_stolen_claim_is_replayed_not_recorded_again(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    doubles: tuple[CrawlbaseDouble, LLMDouble],
    mode: str,
) -> None:
    api, llm = doubles
    pytester.makeconftest(RAN_CONFTEST)
    pytester.makefile(".yaml", citecheck_facts=suite_yaml())
    monkeypatch.setenv("RAN_DIR", str(pytester.path / "ran"))
    monkeypatch.setenv("CRAWLBASE_TOKEN", TOKEN)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("CITECHECK_CRAWLBASE_URL", api.base_url)
    monkeypatch.setenv("OPENAI_BASE_URL", llm.base_url("openai"))
    for name in ("CRAWLBASE_JS_TOKEN", "PYTEST_XDIST_AUTO_NUM_WORKERS"):
        monkeypatch.delenv(name, raising=False)
    result = pytester.runpytest_subprocess(
        "--citecheck",
        f"--citecheck-record={mode}",
        "--citecheck-report=report.json",
        "-n",
        "2",
        "--dist",
        "worksteal",
        "-v",
    )
    result.assert_outcomes(passed=CLAIMS)
    ran_on = {
        claim: worker
        for worker, claim in re.findall(
            r"\[(gw\d)\] .*PASSED \[supported\] \S+::(fact-\d)", result.stdout.str()
        )
    }
    assert len(ran_on) == CLAIMS
    assert all(ran_on[i] != ran_on["fact-0"] for i in STOLEN), ran_on  # they were stolen
    # One crawl and one judge call per claim: the thief replayed what the owner recorded.
    crawled = sorted(str(c.url) for c in api.api_calls)
    assert crawled == sorted(f"https://example.com/fact/{n}" for n in range(CLAIMS))
    judged = sorted(str(c.claim) for c in llm.calls)
    assert judged == sorted(claim_text(n) for n in range(CLAIMS))
    claims = json.loads((pytester.path / "report.json").read_text())["claims"]
    assert {c["id"]: c["label"] for c in claims} == {
        f"fact-{n}": "supported" for n in range(CLAIMS)
    }
