"""The dry run predicts what recording does, and a budget stops a recording before it
is exceeded, reporting every claim it did not record (loopback doubles only)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_citecheck.claims.labels import Label, Reason
from pytest_citecheck.claims.models import Citation, Claim
from pytest_citecheck.core.prices import Prices, TokenPrice
from pytest_citecheck.engine.core import Engine
from pytest_citecheck.engine.estimate import estimate_claim
from pytest_citecheck.engine.gate import budget_failures
from pytest_citecheck.engine.settings import EngineSettings, StageHooks
from pytest_citecheck.frontends.cli import main
from pytest_citecheck.plugin.terms import PLUGIN_TERMS
from pytest_citecheck.recording.recorder import cassette_path
from tests.doubles import recording_environ
from tests.doubles.crawlbase import CrawlbaseDouble, Page
from tests.doubles.llm import JudgeCall, LLMDouble, Scripted
from tests.doubles.pdfs import make_pdf
from tests.doubles.ranking import WordOverlap

TOKENS = {"normal": "planted-normal-token-dry-1", "javascript": "planted-js-token-dry-2"}
KEY = "sk-planted-dry-run-key-3"
CLAIM_FILE = Path("claims") / "citecheck_costs.yaml"


def article(topic: str) -> str:
    return f"# {topic}\n\n" + f"The {topic} article says a great deal about {topic}. " * 8


URLS = [f"https://example.com/articles/{n}" for n in ("alpha", "beta", "gamma", "delta")]
# A page for each claim of the budget tests, so each recorded claim is one crawl the
# double counts (claims of a run citing one page share its crawl: recording/shared_reads.py).
MANY = [f"https://example.com/articles/page{i:02d}" for i in range(12)]
PDF = "https://example.com/paper.pdf"
SPA = "https://example.com/app/spa"


class StableLLM(LLMDouble):
    def _next(self, call: JudgeCall) -> tuple[Scripted, int]:
        item, _ = super()._next(call)
        return item, int(hashlib.sha256(call.body).hexdigest()[:4], 16)


@pytest.fixture
def doubles() -> Iterator[tuple[CrawlbaseDouble, StableLLM]]:
    with CrawlbaseDouble(tokens=TOKENS) as api, StableLLM(api_key=KEY) as llm:
        for url in URLS + MANY:
            api.add(url, Page(markdown=article(url.rsplit("/", 1)[1])))
        # The normal crawl fails (520): the JavaScript token renders it, a worst-case path.
        api.add(SPA, Page(http_status=520, js=Page(markdown=article("spa"))))
        api.add(PDF, Page(pdf=make_pdf([article("pdf").splitlines()[-1:] * 3])))
        yield api, llm


def env_for(api: CrawlbaseDouble, llm: LLMDouble, keys: bool = True) -> dict[str, str]:
    return recording_environ(api.base_url, llm.base_url("openai"), TOKENS, KEY, keys=keys)


def claim(claim_id: str, *urls: str) -> Claim:
    return Claim(
        id=claim_id, claim=f"Claim {claim_id} is true.", citations=[Citation(url=u) for u in urls]
    )


# Ordinary pages: one URL, two URLs, the same URL twice (verified once), a PDF (one
# crawl of the file, billed like a page).
CLAIMS = [
    claim("one", URLS[0]),
    claim("two", URLS[1], URLS[2]),
    claim("twice", URLS[3], URLS[3]),
    claim("pdf-and-page", PDF, URLS[0]),
    claim("again", URLS[2]),
]


def engine_for(env: dict[str, str], mode: str, **settings: object) -> Engine:
    # Messages in the plugin's words (its flags and ini options).
    return Engine.from_settings(
        EngineSettings(record_mode=mode, terms=PLUGIN_TERMS, **settings),  # type: ignore[arg-type]
        StageHooks(make_ranker=WordOverlap),
        environ=env,
    )


def where(root: Path) -> object:
    return lambda c: cassette_path(root / CLAIM_FILE, c.id)


def test_the_dry_run_counts_what_the_recording_then_makes(
    tmp_path: Path, doubles: tuple[CrawlbaseDouble, StableLLM]
) -> None:
    api, llm = doubles
    cassette_for = where(tmp_path)
    # One claim is recorded already: mode once replays it and the dry run says so.
    with engine_for(env_for(api, llm), "once") as engine:
        engine.verify_claims_sync(CLAIMS[:1], cassette_for=cassette_for)  # type: ignore[arg-type]
    api.reset()
    llm.reset()
    # The dry run needs no token or key and sends nothing.
    with engine_for(env_for(api, llm, keys=False), "once") as engine:
        plan = engine.plan(CLAIMS, cassette_for=cassette_for)  # type: ignore[arg-type]
    assert api.api_calls == [] and llm.calls == []
    assert (plan.to_record, plan.recorded) == (4, 1)
    lines = plan.lines()
    assert lines[-1] == (
        f"dry run: claims=4 crawls={plan.worst_crawls} judge_calls=6 confirm_calls=6 "
        f"joint_calls=4 credits={plan.worst_credits:g}"
    )

    with engine_for(env_for(api, llm), "once") as engine:
        results = engine.verify_claims_sync(CLAIMS, cassette_for=cassette_for)  # type: ignore[arg-type]
    assert all(r.label is not Label.ERROR for r in results)
    # Plain articles: each claim's distinct pages are the most the run crawls; two of
    # the claims cite one page, and the run crawls it once (recording/shared_reads.py).
    assert plan.crawls == 6 and len(api.api_calls) == 5
    assert len({c.url for c in api.api_calls}) == 5
    assert plan.total_judge_calls == len(llm.calls) == 6
    # "two" and "pdf-and-page" cite two sources each: their joint judgments are the most
    # they could make (each source supports its claim alone here, so none is made).
    assert plan.joint_calls == 4 and llm.joint_calls == []
    # Each distinct citation of each recorded claim costs its recording (the replayed one
    # is free); the Crawling API bills the shared page once.
    billed = {(r.id, v.url): v.credits for r in results[1:] for v in r.verdicts}
    assert plan.credits == sum(billed.values()) == 9.0
    # Four crawls a page at worst, and a PDF's file before them (it might serve HTML).
    assert plan.worst_crawls == 4 * 5 + 5


def test_the_last_line_counts_the_confirmation_calls_the_recording_makes(tmp_path: Path) -> None:
    # Every reading is supported (the double quotes the first passage, which is about
    # the claim), so each is confirmed: the line's judge_calls alone said 3 where 6
    # requests reached the provider.
    topics = [u.rsplit("/", 1)[1] for u in URLS[:3]]
    claims = [
        Claim(
            id=t,
            claim=f"The {t} article says a great deal about {t}.",
            citations=[Citation(url=u)],
        )
        for t, u in zip(topics, URLS, strict=False)
    ]
    with CrawlbaseDouble(tokens=TOKENS) as api, LLMDouble(api_key=KEY) as llm:
        for url in URLS + MANY:
            api.add(url, Page(markdown=article(url.rsplit("/", 1)[1])))
        with engine_for(env_for(api, llm, keys=False), "once") as engine:
            last = engine.plan(claims, cassette_for=where(tmp_path)).lines()[-1]  # type: ignore[arg-type]
        with engine_for(env_for(api, llm), "once") as engine:
            results = engine.verify_claims_sync(claims, cassette_for=where(tmp_path))  # type: ignore[arg-type]
        assert [r.label for r in results] == [Label.SUPPORTED] * 3
        fields = dict(part.split("=") for part in last.removeprefix("dry run: ").split())
        assert (fields["judge_calls"], fields["confirm_calls"]) == ("3", "3")
        # What reached the provider: the readings and their confirmations, as predicted.
        assert (len(llm.calls), len(llm.confirmations)) == (3, 3)


def test_a_page_that_needs_javascript_stays_within_the_worst_case(
    tmp_path: Path, doubles: tuple[CrawlbaseDouble, StableLLM]
) -> None:
    api, llm = doubles
    claims = [claim("spa", SPA)]
    with engine_for(env_for(api, llm), "once") as engine:
        plan = engine.plan(claims, cassette_for=where(tmp_path))  # type: ignore[arg-type]
        results = engine.verify_claims_sync(claims, cassette_for=where(tmp_path))  # type: ignore[arg-type]
    spent = sum(v.credits for v in results[0].verdicts)
    assert plan.crawls < len(api.api_calls) <= plan.worst_crawls
    assert plan.credits < spent <= plan.worst_credits
    assert plan.total_judge_calls == len(llm.calls) == 1


def many(n: int) -> list[Claim]:
    return [claim(f"c{i:02d}", MANY[i]) for i in range(n)]


@pytest.mark.parametrize("concurrency", [1, 4])
def test_a_credit_budget_stops_the_recording_and_reports_every_unrecorded_claim(
    tmp_path: Path, doubles: tuple[CrawlbaseDouble, StableLLM], concurrency: int
) -> None:
    api, llm = doubles
    claims = many(12)
    budget = 20.0
    with engine_for(
        env_for(api, llm), "once", concurrency=concurrency, max_credits=budget
    ) as engine:
        results = engine.verify_claims_sync(claims, cassette_for=where(tmp_path))  # type: ignore[arg-type]
    recorded = [r for r in results if r.label is not Label.ERROR]
    stopped = [r for r in results if r.label is Label.ERROR]
    spent = sum(v.credits for r in results for v in r.verdicts)
    # Each claim reserves its worst case (8 credits) and spends 1.5: the ninth still
    # fits (8 x 1.5 + 8 = 20), the tenth could not.
    assert spent <= budget
    assert len(recorded) == 9 and len(stopped) == 3
    assert len(api.api_calls) == 9
    for result in stopped:
        (verdict,) = result.verdicts
        assert verdict.reason == Reason.BUDGET_EXHAUSTED
        assert "max credits 20" in (verdict.detail or "")
        assert f"--citecheck-record=once {result.id}" in (verdict.detail or "")
        assert not cassette_path(tmp_path / CLAIM_FILE, result.id).exists()
    (failure,) = budget_failures(results)
    assert failure.startswith("3 claims not recorded: the recording budget")
    # Recording again with room records exactly the rest.
    api.reset()
    with engine_for(env_for(api, llm), "once", max_credits=100.0) as engine:
        again = engine.verify_claims_sync(claims, cassette_for=where(tmp_path))  # type: ignore[arg-type]
    assert all(r.label is not Label.ERROR for r in again)
    assert len(api.api_calls) == 3


def test_a_cost_budget_counts_credits_and_tokens_at_the_users_prices(
    tmp_path: Path, doubles: tuple[CrawlbaseDouble, StableLLM]
) -> None:
    api, llm = doubles
    judge = "openai:gpt-4o-mini"
    prices = Prices(credit=0.01, judges={judge: TokenPrice(100.0, 400.0)})
    claims = many(12)
    worst = estimate_claim(claims[0], judge).cost(prices)
    assert worst is not None
    # What one claim really costs: 1.5 credits, and the double's 120 / 18 tokens.
    each = 1.5 * 0.01 + (120 * 100.0 + 18 * 400.0) / 1e6
    budget = worst + 5.5 * each
    with engine_for(env_for(api, llm), "once", prices=prices, max_cost=budget) as engine:
        engine.preflight(claims, cassette_for=where(tmp_path))  # type: ignore[arg-type]
        results = engine.verify_claims_sync(claims, cassette_for=where(tmp_path))  # type: ignore[arg-type]
        spent = engine.budget.spent_cost
    recorded = [r for r in results if r.label is not Label.ERROR]
    # A claim starts while what was spent plus its worst case fits: the sixth is the last.
    assert len(recorded) == 6 == len(llm.calls)
    assert spent == pytest.approx(6 * each) and spent <= budget
    stopped = [r.verdicts[0] for r in results if r.label is Label.ERROR]
    assert {v.reason for v in stopped} == {Reason.BUDGET_EXHAUSTED}
    assert f"max cost {budget:.4g}" in (stopped[0].detail or "")


def test_a_cost_budget_without_prices_is_refused_before_any_request(
    tmp_path: Path, doubles: tuple[CrawlbaseDouble, StableLLM]
) -> None:
    from pytest_citecheck.core.errors import ConfigurationError

    api, llm = doubles
    with (
        engine_for(env_for(api, llm), "once", max_cost=1.0) as engine,
        pytest.raises(ConfigurationError, match="citecheck_price_credit") as info,
    ):
        engine.preflight(many(2), cassette_for=where(tmp_path))  # type: ignore[arg-type]
    assert "openai:gpt-4o-mini (citecheck_prices)" in str(info.value)
    assert api.api_calls == []


def test_batch_dry_run_and_budget(
    tmp_path: Path,
    doubles: tuple[CrawlbaseDouble, StableLLM],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    api, llm = doubles
    for name, value in env_for(api, llm).items():
        monkeypatch.setenv(name, value)
    from pytest_citecheck.stages import retrieval

    monkeypatch.setattr(retrieval, "make_ranker", lambda name, cache_dir=None: WordOverlap())
    records = tmp_path / "claims.jsonl"
    records.write_text(
        "".join(
            f'{{"id": "r{i}", "claim": "Claim r{i} is true.", "urls": ["{MANY[i]}"]}}\n'
            for i in range(5)
        )
    )
    monkeypatch.chdir(tmp_path)
    prices = ["--price-credit", "0.001", "--prices", "openai:gpt-4o-mini=0.15/0.60"]
    code = main(["batch", str(records), "--record", "once", "--dry-run", *prices])
    out = capsys.readouterr().out
    assert code == 0 and api.api_calls == []
    assert out.splitlines()[-1] == (
        "dry run: claims=5 crawls=20 judge_calls=5 confirm_calls=5 joint_calls=0 credits=40"
    )
    assert "  cost: " in out and "set --price-credit" not in out

    # Replayed, the five have no recording yet: not "5 replayed".
    code = main(["batch", str(records), "--record", "none", "--dry-run"])
    out = capsys.readouterr().out
    assert code == 0 and api.api_calls == []
    assert out.splitlines()[1] == (
        "  claims: 0 to record, 0 replayed, 5 no recording (mode none records nothing: "
        "choose a record mode with --record)"
    )

    code = main(["batch", str(records), "--record", "once", "--max-credits", "12", *prices])
    out = capsys.readouterr().out
    assert code == 1
    assert len(api.api_calls) == 3  # 8, then 1.5 + 8, then 3 + 8 <= 12; the 4th could not
    assert "citecheck gate FAILED: 2 claims not recorded" in out
    assert "--max-credits" in out and "--citecheck-max-credits" not in out
    assert ", cost " in out
