"""Real PDFs as URL citations, end to end: through the loopback Crawling API double
(which serves the sample files as it is assumed to: docs/verification.md, "PDF sources"),
recorded, then replayed offline with nothing listening; and downloaded directly
(``pdf_fetch = direct``) from a loopback origin."""

from __future__ import annotations

from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import httpx
import pytest

from pytest_citecheck.claims.labels import Label, Reason
from pytest_citecheck.claims.models import Citation, Claim
from pytest_citecheck.claims.results import ClaimResult
from pytest_citecheck.core.retry import RetryPolicy
from pytest_citecheck.engine.core import Engine
from pytest_citecheck.engine.settings import EngineSettings, StageHooks
from pytest_citecheck.plugin.terms import PLUGIN_TERMS
from pytest_citecheck.recording.recorder import cassette_path
from pytest_citecheck.stages.pdf_fetch import DirectPdfFetcher
from tests.doubles import LoopbackServer, QuietHandler, pdfs, recording_environ
from tests.doubles.crawlbase import CrawlbaseDouble, Page
from tests.doubles.llm import LLMDouble
from tests.doubles.ranking import WordOverlap

pytestmark = pytest.mark.skipif(not pdfs.SAMPLES.is_dir(), reason="shared/data/pdf is absent")

TOKENS = {"normal": "planted-normal-token-pdf-71c9", "javascript": "planted-js-token-pdf-2b8d"}
KEY = "sk-planted-pdf-key-5e2a9c4b"
CRAZY = "https://example.com/papers/crazy-ones.pdf"
# The same file at another address (each claim records its own crawl: one URL each).
CRAZY_COPY = "https://example.com/mirror/crazy-ones.pdf"
FOUR = "https://example.com/papers/four-pages.pdf"
# An extensionless URL whose reply is a PDF: detected from the reply, not the path.
SERVED = "https://example.com/download?id=4"
LOCKED = "https://example.com/papers/locked.pdf"
SCANNED = "https://example.com/papers/scanned.pdf"
CLAIM_FILE = Path("claims") / "citecheck_pdf.yaml"


def _claims() -> list[Claim]:
    return [
        Claim(
            id="crazy",
            claim="The text says the crazy ones are not fond of rules.",
            # As a reader types it; the text layer lost the apostrophe ("Theyre").
            citations=[Citation(url=CRAZY, quote="They're not fond of rules.")],
        ),
        Claim(
            id="page-three",
            claim="The blind text says there is no need for special content.",
            # The sentence is on every page; the citation names page 3.
            citations=[Citation(url=FOUR, quote="There is no need for special content", page=3)],
        ),
        Claim(
            id="served",
            claim="The blind text says the length of words should match the language.",
            citations=[Citation(url=SERVED)],
        ),
        Claim(id="locked", claim="Anything at all.", citations=[Citation(url=LOCKED)]),
        Claim(id="scanned", claim="Anything at all.", citations=[Citation(url=SCANNED)]),
        Claim(
            id="made-up",
            claim="The crazy ones love rules.",
            citations=[Citation(url=CRAZY_COPY, quote="They love rules more than anyone.")],
        ),
    ]


@pytest.fixture
def api() -> Iterator[CrawlbaseDouble]:
    with CrawlbaseDouble(tokens=TOKENS) as double:
        double.add(CRAZY, Page(pdf=pdfs.sample("crazyones-pdfa.pdf")))
        double.add(CRAZY_COPY, Page(pdf=pdfs.sample("crazyones-pdfa.pdf")))
        double.add(FOUR, Page(pdf=pdfs.sample("pdflatex-4-pages.pdf")))
        double.add(SERVED, Page(pdf=pdfs.sample("pdflatex-4-pages.pdf")))
        double.add(LOCKED, Page(pdf=pdfs.sample("libreoffice-writer-password.pdf")))
        double.add(SCANNED, Page(pdf=pdfs.sample("imagemagick-images.pdf")))
        yield double


def _engine(env: dict[str, str], mode: str, **settings: object) -> Engine:
    return Engine.from_settings(
        EngineSettings(record_mode=mode, terms=PLUGIN_TERMS, **settings),  # type: ignore[arg-type]
        StageHooks(make_ranker=WordOverlap),
        environ=env,
    )


def _run(root: Path, env: dict[str, str], mode: str, **settings: object) -> list[ClaimResult]:
    with _engine(env, mode, **settings) as engine:
        return engine.verify_claims_sync(
            _claims(), cassette_for=lambda c: cassette_path(root / CLAIM_FILE, c.id)
        )


def _env(api: str, llm: str, keys: bool = True) -> dict[str, str]:
    return recording_environ(api, llm, TOKENS, KEY, keys=keys)


def _check(results: list[ClaimResult]) -> None:
    by_id = {r.id: r.verdicts[0] for r in results}
    crazy = by_id["crazy"]
    assert crazy.label == Label.SUPPORTED, crazy
    assert crazy.page == 1 and all(p.page == 1 for p in crazy.passages)
    page_three = by_id["page-three"]
    assert page_three.label == Label.SUPPORTED, page_three
    assert page_three.page == 3
    assert {p.page for p in page_three.passages} == {3}
    served = by_id["served"]
    assert served.label == Label.SUPPORTED, served
    assert served.page is not None and served.passages[0].page is not None
    assert (by_id["locked"].label, by_id["locked"].reason) == (
        Label.NOT_FOUND,
        Reason.PDF_ENCRYPTED,
    )
    assert (by_id["scanned"].label, by_id["scanned"].reason) == (
        Label.NOT_FOUND,
        Reason.PDF_NO_TEXT,
    )
    made_up = by_id["made-up"]
    assert (made_up.label, made_up.reason) == (Label.FABRICATED, Reason.QUOTE_NOT_IN_PAGE)


def test_pdfs_through_the_crawling_api_record_and_replay_offline(
    tmp_path: Path, api: CrawlbaseDouble
) -> None:
    with LLMDouble(api_key=KEY) as llm:
        recorded = _run(tmp_path, _env(api.base_url, llm.base_url("openai")), "once")
    _check(recorded)
    pdf_calls = [c for c in api.calls if c.url in (CRAZY, CRAZY_COPY, FOUR, LOCKED, SCANNED)]
    # A .pdf URL: one call for the file, no markdown conversion, the origin's headers.
    assert all(c.format is None and c.params.get("get_headers") == "true" for c in pdf_calls)
    assert len(pdf_calls) == 5
    served = [c for c in api.calls if c.url == SERVED]
    assert [c.format for c in served] == ["md"]  # asked as a page; the reply said PDF
    # Billed as the API bills a crawl: 1 credit + 0.5 for store=true.
    crazy = next(r for r in recorded if r.id == "crazy").verdicts[0]
    assert crazy.credits == 1.5

    # Offline: nothing listens where the doubles were, no keys.
    replayed = _run(tmp_path, _env("http://127.0.0.1:9/", "http://127.0.0.1:9/v1", False), "none")
    _check(replayed)
    assert [r.model_dump(mode="json") for r in replayed] == [
        r.model_dump(mode="json") for r in recorded
    ]


class _Origin(LoopbackServer):
    """A web server with one PDF at ``/files/crazy.pdf`` and a redirect to it."""

    name = "pdf-origin"

    def __init__(self) -> None:
        super().__init__()
        self.paths: list[str] = []

    def handler(self) -> type[BaseHTTPRequestHandler]:
        origin = self

        class Handler(QuietHandler):
            def do_GET(self) -> None:
                origin.paths.append(self.path)
                if self.path == "/old/crazy.pdf":
                    self.send_response(301)
                    self.send_header("Location", "/files/crazy.pdf")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                body = pdfs.sample("crazyones-pdfa.pdf")
                self.send_response(200)
                self.send_header("Content-Type", "application/pdf")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        return Handler


def test_a_direct_download_records_and_replays(tmp_path: Path) -> None:
    with _Origin() as origin, LLMDouble(api_key=KEY) as llm:
        url = f"http://127.0.0.1:{origin.port}/old/crazy.pdf"
        claim = Claim(
            id="direct",
            claim="The text says the crazy ones are not fond of rules.",
            citations=[Citation(url=url, quote="They're not fond of rules.")],
        )

        def run(env: dict[str, str], mode: str) -> ClaimResult:
            with _engine(env, mode, pdf_fetch="direct") as engine:
                return engine.verify_claims_sync(
                    [claim], cassette_for=lambda c: cassette_path(tmp_path / CLAIM_FILE, c.id)
                )[0]

        with CrawlbaseDouble(tokens=TOKENS) as api:
            recorded = run(_env(api.base_url, llm.base_url("openai")), "once")
            assert api.calls == []  # no credits spent
        assert origin.paths == ["/old/crazy.pdf", "/files/crazy.pdf"]
    verdict = recorded.verdicts[0]
    assert (verdict.label, verdict.page, verdict.credits) == (Label.SUPPORTED, 1, 0.0)
    assert [f.token for f in verdict.fetches] == ["direct", "direct"]
    replayed = run(_env("http://127.0.0.1:9/", "http://127.0.0.1:9/v1", False), "none")
    assert replayed.model_dump(mode="json") == recorded.model_dump(mode="json")


def test_a_direct_download_checks_each_redirect_against_the_url_policy() -> None:
    """A public URL that redirects to a loopback address: the redirect is not followed
    (no network here: an in-memory transport answers)."""
    seen: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(str(request.url))
        return httpx.Response(301, headers={"location": "http://127.0.0.1:8080/admin.pdf"})

    with httpx.Client(transport=httpx.MockTransport(answer)) as client:
        fetcher = DirectPdfFetcher(client, url_policy="public", retry=RetryPolicy(), timeout=5)
        result = fetcher.fetch("https://example.com/r.pdf")
    assert result is not None
    assert (result.label, result.reason) == (Label.NOT_FOUND, Reason.URL_REFUSED)
    assert seen == ["https://example.com/r.pdf"]
