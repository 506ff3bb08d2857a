"""The cited page as a picture (citecheck_screenshots), against loopback
doubles of the Crawling API (screenshot=true with the JavaScript token, a short-lived
screenshot_url) and the judge; recorded once, replayed with nothing listening, no token."""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path

import pytest

from pytest_citecheck.claims.labels import Label
from pytest_citecheck.claims.models import Citation, Claim
from pytest_citecheck.claims.results import ClaimResult
from pytest_citecheck.engine.core import Engine
from pytest_citecheck.engine.settings import EngineSettings, StageHooks
from pytest_citecheck.plugin.terms import PLUGIN_TERMS
from pytest_citecheck.recording.recorder import cassette_path
from pytest_citecheck.reports.html import render_html
from pytest_citecheck.reports.report import Report
from tests.doubles import recording_environ
from tests.doubles.crawlbase import CrawlbaseDouble, Page, png
from tests.doubles.llm import JudgeCall, LLMDouble, Scripted, quote_first_passage, verdict
from tests.doubles.ranking import WordOverlap

TOKENS = {"normal": "planted-normal-token-sh01", "javascript": "planted-js-token-sh02"}
KEY = "sk-planted-shots-key-7a1d"
WRONG = "https://example.com/physics/boiling"
RIGHT = "https://example.com/physics/melting"
CLAIM_FILE = Path("claims") / "citecheck_report.yaml"
BOILING = "Water boils at 100 degrees Celsius at sea level, as every kitchen shows."
MELTING = "Ice melts at 0 degrees Celsius under normal atmospheric pressure."
FILLER = "The physics of water has been studied for centuries by many laboratories. " * 8
PICTURE = png(6, 4, (220, 20, 60))


def claims() -> list[Claim]:
    return [
        Claim(
            id="wrong", claim="Water boils at 50 degrees Celsius.", citations=[Citation(url=WRONG)]
        ),
        Claim(id="right", claim="Ice melts at 0 degrees Celsius.", citations=[Citation(url=RIGHT)]),
    ]


def judge(call: JudgeCall) -> Scripted:
    """The boiling claim is contradicted by the page's sentence; the other supported."""
    if "boils" in call.claim:
        return verdict("contradicted", BOILING, 0.92)
    if any(MELTING in p for p in call.passages):
        return verdict("supported", MELTING, 0.93)
    return quote_first_passage(call)


def pages(api: CrawlbaseDouble) -> None:
    api.add(WRONG, Page(markdown=f"# Boiling\n\n{BOILING}\n\n{FILLER}", screenshot=PICTURE))
    api.add(RIGHT, Page(markdown=f"# Melting\n\n{MELTING}\n\n{FILLER}"))


def env(api: CrawlbaseDouble, llm: LLMDouble) -> dict[str, str]:
    return recording_environ(api.base_url, llm.base_url("openai"), TOKENS, KEY)


def run(root: Path, environ: dict[str, str], mode: str, shots: bool) -> list[ClaimResult]:
    settings = EngineSettings(record_mode=mode, terms=PLUGIN_TERMS, screenshots=shots)
    with Engine.from_settings(settings, StageHooks(make_ranker=WordOverlap), environ) as engine:
        return engine.verify_claims_sync(
            claims(), cassette_for=lambda c: cassette_path(root / CLAIM_FILE, c.id)
        )


def test_a_contradicted_verdict_gets_its_page_pictured_stored_by_hash_and_replayed(
    tmp_path: Path,
) -> None:
    with CrawlbaseDouble(tokens=TOKENS) as api, LLMDouble(judge, api_key=KEY) as llm:
        pages(api)
        address = env(api, llm)
        recorded = run(tmp_path, address, "once", shots=True)
        # One picture, for the verdict a person must look at, with the JavaScript token.
        assert [(c.url, c.kind) for c in api.screenshot_calls] == [(WRONG, "javascript")]
        assert len(api.downloads) == 1
    wrong, right = (r.verdicts[0] for r in recorded)
    assert (wrong.label, right.label) == (Label.CONTRADICTED, Label.SUPPORTED)
    assert right.screenshot is None
    shot = wrong.screenshot
    assert shot is not None and shot.status == "taken", shot
    digest = hashlib.sha256(PICTURE).hexdigest()
    folder = cassette_path(tmp_path / CLAIM_FILE, "wrong").parent / "shots"
    assert (shot.sha256, shot.media_type) == (digest, "image/png")
    assert Path(shot.file or "") == folder / f"{digest}.png"
    assert (folder / f"{digest}.png").read_bytes() == PICTURE
    # Its cost is counted: a JavaScript-token crawl, as the fetch's credits are.
    assert shot.credits == 2.0
    assert wrong.credits == sum(f.credits for f in wrong.fetches) + 2.0
    # The cassette records both exchanges, never the picture's bytes.
    text = cassette_path(tmp_path / CLAIM_FILE, "wrong").read_text(encoding="utf-8")
    assert "screenshot=true" in text and f"citecheck-image:\n      - {digest}.png" in text
    assert "IHDR" not in text and base64.b64encode(PICTURE).decode()[:24] not in text
    assert TOKENS["javascript"] not in text and "citecheck-image-file" not in text
    # Every double is gone and no token or key is set: the recording answers alone.
    offline = {k: v for k, v in address.items() if not k.endswith(("TOKEN", "KEY"))}
    replayed = run(tmp_path, offline, "none", shots=True)
    assert [r.model_dump() for r in replayed] == [r.model_dump() for r in recorded]
    # The HTML report shows the picture, inlined: the report stays one file.
    report = Report(results={f"citecheck_report.yaml::{r.id}": r for r in replayed})
    page = render_html(report.scrubbed_json())
    assert f'src="data:image/png;base64,{base64.b64encode(PICTURE).decode()}"' in page
    lines = [line.text for line in report.lines()]
    at = lines.index("pictured (the page as a picture, in the HTML report):")
    assert lines[at + 1 : at + 3] == [
        f"  TAKEN   citecheck_report.yaml::wrong  {WRONG}",
        f"      {folder / (digest + '.png')}",
    ]
    by_id = {c["id"]: c["verdicts"][0] for c in report.scrubbed_json()["claims"]}
    assert by_id["wrong"]["screenshot"]["sha256"] == digest
    assert by_id["right"]["screenshot"] is None


def test_without_the_setting_nothing_is_requested(tmp_path: Path) -> None:
    with CrawlbaseDouble(tokens=TOKENS) as api, LLMDouble(judge, api_key=KEY) as llm:
        pages(api)
        results = run(tmp_path, env(api, llm), "once", shots=False)
        assert api.screenshot_calls == [] and api.downloads == []
    assert results[0].verdicts[0].label is Label.CONTRADICTED
    assert [r.verdicts[0].screenshot for r in results] == [None, None]
    assert not list(tmp_path.rglob("shots"))


def test_an_expired_link_is_a_missing_picture_never_a_failure(tmp_path: Path) -> None:
    with CrawlbaseDouble(tokens=TOKENS) as api, LLMDouble(judge, api_key=KEY) as llm:
        pages(api)
        api.expire_screenshots()
        results = run(tmp_path, env(api, llm), "once", shots=True)
    wrong = results[0].verdicts[0]
    assert wrong.label is Label.CONTRADICTED
    assert wrong.screenshot is not None and wrong.screenshot.status == "missing"
    assert wrong.screenshot.detail == "the picture's link answered HTTP 404"
    # Billed all the same: the crawl that took it was made.
    assert wrong.screenshot.credits == 2.0
    report = Report(results={"f::wrong": results[0]})
    lines = [line.text for line in report.lines()]
    at = lines.index("pictured (the page as a picture, in the HTML report):")
    assert lines[at + 1 : at + 3] == [
        f"  MISSING f::wrong  {WRONG}",
        "      the picture's link answered HTTP 404",
    ]
    page = render_html(report.scrubbed_json())
    assert "no picture: the picture&#39;s link answered HTTP 404" in page


def test_a_picture_gone_from_disk_replays_as_missing(tmp_path: Path) -> None:
    with CrawlbaseDouble(tokens=TOKENS) as api, LLMDouble(judge, api_key=KEY) as llm:
        pages(api)
        address = env(api, llm)
        run(tmp_path, address, "once", shots=True)
    for path in tmp_path.rglob("shots/*.png"):
        path.unlink()
    offline = {k: v for k, v in address.items() if not k.endswith(("TOKEN", "KEY"))}
    replayed = run(tmp_path, offline, "none", shots=True)
    wrong = replayed[0].verdicts[0]
    assert wrong.label is Label.CONTRADICTED
    assert wrong.screenshot is not None and wrong.screenshot.status == "missing"
    assert "is gone" in (wrong.screenshot.detail or "")


def test_the_budget_and_the_dry_run_count_a_picture_per_page_at_most() -> None:
    from pytest_citecheck.engine.estimate import estimate_claim

    claim = claims()[0]
    without = estimate_claim(claim, "openai:gpt-4o-mini")
    with_shots = estimate_claim(claim, "openai:gpt-4o-mini", screenshots=True)
    # At most one JavaScript-token crawl more per page; the expected spend is unchanged,
    # since only a verdict a person must look at is pictured.
    assert with_shots.worst_credits == without.worst_credits + 2.0
    assert with_shots.credits == without.credits


def test_a_cassette_naming_another_file_shows_no_picture(tmp_path: Path) -> None:
    with CrawlbaseDouble(tokens=TOKENS) as api, LLMDouble(judge, api_key=KEY) as llm:
        pages(api)
        address = env(api, llm)
        run(tmp_path, address, "once", shots=True)
    outside = tmp_path / "outside.png"
    outside.write_bytes(PICTURE)
    cassette = cassette_path(tmp_path / CLAIM_FILE, "wrong")
    digest = hashlib.sha256(PICTURE).hexdigest()
    text = cassette.read_text(encoding="utf-8")
    cassette.write_text(text.replace(f"{digest}.png", "../../../outside.png"), encoding="utf-8")
    offline = {k: v for k, v in address.items() if not k.endswith(("TOKEN", "KEY"))}
    shot = run(tmp_path, offline, "none", shots=True)[0].verdicts[0].screenshot
    # The edited name is no picture's: nothing outside shots/ is read.
    assert shot is not None and shot.status == "missing" and shot.file is None
    assert shot.detail == "the recording names no stored picture (../../../outside.png)"


def test_a_picture_under_the_working_folder_is_named_from_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with CrawlbaseDouble(tokens=TOKENS) as api, LLMDouble(judge, api_key=KEY) as llm:
        pages(api)
        shot = run(Path("."), env(api, llm), "once", shots=True)[0].verdicts[0].screenshot
    digest = hashlib.sha256(PICTURE).hexdigest()
    assert shot is not None and shot.file == f"claims/cassettes/citecheck_report/shots/{digest}.png"
    # Replayed with nothing set (the services' default addresses, no token), in that folder.
    replayed = run(Path("."), {}, "none", shots=True)[0]
    assert replayed.verdicts[0].screenshot == shot
    page = render_html(Report(results={"f::wrong": replayed}).scrubbed_json())
    assert "data:image/png;base64," in page
