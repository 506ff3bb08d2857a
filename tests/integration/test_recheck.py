"""``citecheck recheck``: recorded citations fetched live again, against the loopback doubles.

Six claims are recorded with ``citecheck batch --record once``; then the Crawling
API double serves each page as it is "today" -- unchanged, changed elsewhere, with
the evidence sentence removed, a 404, a redirect to the homepage, a bot challenge
-- and ``citecheck recheck`` must classify each, ask the judge again only where the
evidence is gone, and leave the original cassettes alone unless ``--update``.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_citecheck.frontends.cli import main
from pytest_citecheck.stages import retrieval
from tests.doubles.batch import FirstPassages
from tests.doubles.crawlbase import CrawlbaseDouble, Page
from tests.doubles.llm import JudgeCall, LLMDouble, Scripted, verdict

OPENAI_KEY = "sk-test-recheck-0123456789"
SITE = "https://news.example.org/2021/"
EVIDENCE = "The Harbour Bridge opened to traffic on 3 May 2021, two years late."
FILLER = [
    "The council debated the budget for months before the final vote was taken.",
    "Engineers tested the deck in every season to check how it moved in the wind.",
    "Local shops along the river said the works had kept customers away all year.",
]


def article(*, evidence: bool = True, extra: str | None = None) -> str:
    paragraphs = [f"# The bridge, {n}\n\n" + (FILLER[n % 3] + " ") * 4 for n in range(3)]
    paragraphs.insert(1, ("Opening day drew crowds from across the county. " * 2) + EVIDENCE)
    if not evidence:
        paragraphs[1] = "Opening day drew crowds from across the county. " * 3
    if extra:
        paragraphs.append(extra)
    return "\n\n".join(paragraphs) + "\n"


CHALLENGE = "# Just a moment...\n\nChecking if the site connection is secure.\n"
CASES = ("unchanged", "changed", "quote-removed", "gone", "moved", "challenge")
TODAY = {
    "unchanged": Page(markdown=article()),
    "changed": Page(markdown=article(extra="Update: a cycle lane was added in 2023.")),
    "quote-removed": Page(markdown=article(evidence=False)),
    "gone": Page(markdown="# Not Found", original_status=404),
    "moved": Page(
        markdown="# News\n\n" + " ".join(FILLER * 3), final_url="https://news.example.org/"
    ),
    "challenge": Page(markdown=CHALLENGE, original_status=403),
}
EXPECTED = {
    "unchanged": "same",
    "changed": "changed",
    "quote-removed": "evidence_gone",
    "gone": "page_gone",
    "moved": "moved",
    "challenge": "blocked",
}
CLAIM = "The Harbour Bridge opened to traffic on 3 May 2021."


def url(case: str) -> str:
    return f"{SITE}{case}-harbour-bridge"


def judge(call: JudgeCall) -> Scripted:
    """Supported, quoting the evidence sentence when it was shown; else not_found."""
    for passage in call.passages:
        if EVIDENCE in " ".join(passage.split()):
            return verdict("supported", EVIDENCE, 0.95)
    return verdict("not_found", None, 0.85)


CLAIMS_YAML = "judge: openai:gpt-4o-mini\nclaims:\n" + "".join(
    f"  - id: {case}\n    claim: {CLAIM}\n    citations:\n      - {url(case)}\n" for case in CASES
)


@pytest.fixture
def world(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[CrawlbaseDouble, LLMDouble]]:
    monkeypatch.setattr(
        retrieval, "make_ranker", lambda name, cache_dir=None: FirstPassages(), raising=False
    )
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    with CrawlbaseDouble() as api, LLMDouble(judge) as llm:
        for case in CASES:
            api.add(url(case), Page(markdown=article()))
        monkeypatch.setenv("CRAWLBASE_TOKEN", api.tokens["normal"])
        monkeypatch.setenv("CRAWLBASE_JS_TOKEN", api.tokens["javascript"])
        monkeypatch.setenv("CITECHECK_CRAWLBASE_URL", api.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
        monkeypatch.setenv("OPENAI_BASE_URL", llm.base_url("openai"))
        yield api, llm


@pytest.fixture
def recorded(
    world: tuple[CrawlbaseDouble, LLMDouble], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> Path:
    """The claim file, recorded against the pages as they were; then the pages change."""
    api, llm = world
    claims = tmp_path / "citecheck_rot.yaml"
    claims.write_text(CLAIMS_YAML, encoding="utf-8")
    code, out, err = run(capsys, "batch", str(claims), "--record", "once")
    assert code == 0, out + err
    assert "supported 6 |" in out
    for case, page in TODAY.items():
        api.add(url(case), page)
    api.reset()
    llm.calls.clear()
    return claims


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def cassettes(claims: Path) -> dict[str, bytes]:
    folder = claims.parent / "cassettes" / claims.stem
    return {case: (folder / f"{case}.yaml").read_bytes() for case in CASES}


def statuses(report: Path) -> dict[str, str]:
    data = json.loads(report.read_text(encoding="utf-8"))
    return {c["id"]: c["citations"][0]["status"] for c in data["claims"]}


@pytest.mark.allow_resend(
    "6 of its claims ask the judge the same question in one run (the same claim text on "
    "the same page): each claim records its own call"
)
def test_recheck_classifies_each_page_and_leaves_the_recordings_alone(
    world: tuple[CrawlbaseDouble, LLMDouble],
    recorded: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    api, llm = world
    before = cassettes(recorded)
    report = tmp_path / "recheck.json"

    code, out, _ = run(capsys, "recheck", str(recorded), "--json", str(report))

    assert statuses(report) == EXPECTED
    # Only where the evidence is gone is the judge asked again, once.
    assert len(llm.calls) == 1
    assert EVIDENCE not in " ".join(" ".join(p.split()) for p in llm.calls[0].passages)
    data = json.loads(report.read_text(encoding="utf-8"))
    by_id = {c["id"]: c["citations"][0] for c in data["claims"]}
    gone = by_id["quote-removed"]
    assert (gone["recorded"]["label"], gone["new"]["label"]) == ("supported", "not_found")
    assert by_id["unchanged"]["new"] is None and by_id["changed"]["new"] is None
    # The challenge page was tried once with the JavaScript token, then given up on.
    assert [c.kind for c in api.calls_for(url("challenge"))] == ["normal", "javascript"]
    # The originals are byte for byte what was recorded; the live fetches are elsewhere.
    assert cassettes(recorded) == before
    live = recorded.parent / "cassettes" / recorded.stem / "recheck"
    assert sorted(p.stem for p in live.glob("*.yaml")) == sorted(CASES)
    written = (live / "quote-removed.yaml").read_text(encoding="utf-8")
    assert api.tokens["normal"] not in written and OPENAI_KEY not in written
    assert "chat/completions" in written  # the judge's new answer is in it
    # The gate: evidence_gone and page_gone fail by default.
    assert code == 1
    assert (
        "citecheck recheck FAILED: 1 citation evidence_gone, 1 citation page_gone "
        "(--fail-on evidence_gone,page_gone,error)" in out
    )
    assert re.search(
        r"^same 1 \| changed 1 \| evidence_gone 1 \| page_gone 1 \| moved 1 "
        r"\| blocked 1 \| error 0$",
        out,
        re.M,
    )
    assert "supported -> not_found" in out
    # Costs: the live crawls (the 403 challenge is not billed) and the one judge answer.
    assert data["totals"]["credits"] == 4 * 1.5 + 1.5
    assert data["totals"]["judge_answers"] == 1
    assert data["totals"]["input_tokens"] > 0


@pytest.mark.allow_resend(
    "runs the same claims more than once on purpose (record, replay, recheck, compare)"
)
def test_a_second_recheck_fetches_live_again(
    world: tuple[CrawlbaseDouble, LLMDouble],
    recorded: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    api, _ = world
    run(capsys, "recheck", str(recorded), "--fail-on", "none")
    api.add(url("unchanged"), Page(markdown=article(evidence=False)))
    api.reset()

    code, out, _ = run(capsys, "recheck", str(recorded), "--fail-on", "none")

    assert code == 0
    assert len(api.calls_for(url("unchanged"))) == 1
    assert re.search(r"^\s+evidence_gone\s+citecheck_rot.yaml::unchanged\s", out, re.M)


@pytest.mark.allow_resend(
    "6 of its claims ask the judge the same question in one run (the same claim text on "
    "the same page): each claim records its own call"
)
def test_fail_on_chooses_what_fails(
    world: tuple[CrawlbaseDouble, LLMDouble], recorded: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "recheck", str(recorded), "--fail-on", "blocked,moved")
    assert code == 1
    assert "1 citation moved, 1 citation blocked (--fail-on blocked,moved)" in out

    code, out, _ = run(capsys, "recheck", str(recorded), "--fail-on", "none")
    assert code == 0
    assert out.splitlines()[-1] == "citecheck recheck passed"


def test_fail_on_rejects_an_unknown_status(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    claims = tmp_path / "citecheck_rot.yaml"
    claims.write_text(CLAIMS_YAML, encoding="utf-8")
    code, _, err = run(capsys, "recheck", str(claims), "--fail-on", "evidence_gone,rotten")
    assert code == 2
    assert "'evidence_gone,rotten' is not a list of recheck statuses" in err


@pytest.mark.allow_resend(
    "6 of its claims ask the judge the same question in one run (the same claim text on "
    "the same page): each claim records its own call"
)
def test_update_rewrites_the_changed_claims_and_a_replay_then_agrees(
    world: tuple[CrawlbaseDouble, LLMDouble],
    recorded: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from pytest_citecheck.core.files import STALE_TEMPORARY_SECONDS

    api, llm = world
    before = cassettes(recorded)
    report = tmp_path / "recheck.json"
    # What a recheck killed mid-replace left beside a cassette: the next replace sweeps it.
    folder = recorded.parent / "cassettes" / recorded.stem
    stray = folder / ".changed.yaml.abc123.tmp"
    stray.write_text("partial", encoding="utf-8")
    long_ago = time.time() - STALE_TEMPORARY_SECONDS - 60
    os.utime(stray, (long_ago, long_ago))

    code, out, _ = run(capsys, "recheck", str(recorded), "--update", "--json", str(report))
    assert not stray.exists()

    assert code == 1  # what changed is still reported, and still fails the gate
    after = cassettes(recorded)
    assert after["unchanged"] == before["unchanged"]
    assert {case for case in CASES if after[case] != before[case]} == set(CASES) - {"unchanged"}
    data = json.loads(report.read_text(encoding="utf-8"))
    assert {c["id"] for c in data["claims"] if c["updated"]} == set(CASES) - {"unchanged"}
    assert "updated 5 cassettes:" in out
    # The judge is never asked about a page that did not change, nor about one with no text.
    asked = {call.claim for call in llm.calls}
    assert asked <= {CLAIM}
    assert len(llm.calls) <= 2

    # The updated recordings replay with no network: the new labels, the old one kept.
    api.stop()
    llm.stop()
    code, out, err = run(
        capsys, "batch", str(recorded), "--record", "none", "--json", str(tmp_path / "r.json")
    )
    assert code == 0, out + err
    replay = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    labels = {
        c["id"]: (c["verdicts"][0]["label"], c["verdicts"][0]["reason"]) for c in replay["claims"]
    }
    assert labels == {
        "unchanged": ("supported", None),
        "changed": ("supported", None),
        "quote-removed": ("not_found", None),
        "gone": ("unreachable", "http_404"),
        "moved": ("not_found", "redirected_to_homepage"),
        "challenge": ("not_found", "blocked"),
    }
    # Only the claim whose cassette was kept keeps its live recording beside it.
    live = recorded.parent / "cassettes" / recorded.stem / "recheck"
    assert [p.stem for p in live.glob("*.yaml")] == ["unchanged"]


def test_a_claim_without_a_recording_is_an_error_and_fetches_nothing(
    world: tuple[CrawlbaseDouble, LLMDouble], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    api, _ = world
    claims = tmp_path / "citecheck_rot.yaml"
    claims.write_text(CLAIMS_YAML, encoding="utf-8")
    report = tmp_path / "recheck.json"

    code, out, _ = run(capsys, "recheck", str(claims), "--json", str(report))

    assert code == 1
    assert set(statuses(report).values()) == {"error"}
    assert "there is no recording to recheck (citecheck_rot/unchanged.yaml does not exist)" in out
    assert api.api_calls == []
    assert not (tmp_path / "cassettes").exists()


@pytest.mark.allow_resend(
    "6 of its claims ask the judge the same question in one run (the same claim text on "
    "the same page): each claim records its own call"
)
def test_recheck_needs_the_crawling_api_token(
    recorded: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("CRAWLBASE_TOKEN")
    code, _, err = run(capsys, "recheck", str(recorded))
    assert code == 2
    assert "CRAWLBASE_TOKEN is not set: a recheck fetches every cited page live again" in err


@pytest.mark.allow_resend(
    "6 of its claims ask the judge the same question in one run (the same claim text on "
    "the same page): each claim records its own call"
)
def test_markdown_and_step_summary_list_what_changed(
    world: tuple[CrawlbaseDouble, LLMDouble],
    recorded: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    step = tmp_path / "step.md"
    step.write_text("earlier step\n", encoding="utf-8")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
    md = tmp_path / "recheck.md"

    run(capsys, "recheck", str(recorded), "--md", str(md))

    text = md.read_text(encoding="utf-8")
    assert text.startswith("## citecheck recheck: FAILED ❌")
    assert "| evidence_gone | citecheck_rot.yaml::quote-removed |" in text
    assert "supported → not_found" in text
    assert "citecheck_rot.yaml::unchanged" not in text  # the same page is not listed
    assert "citecheck audit page " in text  # the recorded rid: the page as it was
    assert step.read_text(encoding="utf-8") == "earlier step\n" + text


@pytest.mark.allow_resend(
    "6 of its claims ask the judge the same question in one run (the same claim text on "
    "the same page): each claim records its own call"
)
def test_html_shows_the_recorded_and_the_live_passage_side_by_side(
    world: tuple[CrawlbaseDouble, LLMDouble],
    recorded: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    page = tmp_path / "recheck.html"

    run(capsys, "recheck", str(recorded), "--html", str(page))

    html = page.read_text(encoding="utf-8")
    assert "<script" not in html
    block = html.split('data-status="evidence_gone"', 1)[1].split("</details>", 1)[0]
    # The removed evidence is marked on the recorded side, what replaced it on the live side.
    assert "<del>" in block and EVIDENCE.split(",")[0] in block.split('class="now"')[0]
    assert "<ins>" in block.split('class="now"')[1]
    assert "citecheck audit page" in block
    assert OPENAI_KEY not in html


@pytest.mark.allow_resend(
    "6 of its claims ask the judge the same question in one run (the same claim text on "
    "the same page): each claim records its own call"
)
def test_the_recheck_page_shows_what_this_recheck_prints(
    world: tuple[CrawlbaseDouble, LLMDouble], recorded: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page = Path(__file__).resolve().parents[2] / "docs" / "recheck.md"
    section = page.read_text(encoding="utf-8").split("## Citation rot", 1)[1]
    blocks = re.findall(r"```text\n(.*?)\n```", section, re.S)
    excerpt = [line for line in blocks[0].splitlines() if line.strip() != "..."]

    _, out, _ = run(capsys, "recheck", str(recorded))

    printed = out.splitlines()
    missing = [line for line in excerpt if line not in printed]
    assert not missing
    # In the order printed.
    where = [printed.index(line) for line in excerpt]
    assert where == sorted(where)


@pytest.mark.allow_resend(
    "6 of its claims ask the judge the same question in one run (the same claim text on "
    "the same page): each claim records its own call"
)
def test_recheck_replays_under_the_quote_policy_it_is_given(
    world: tuple[CrawlbaseDouble, LLMDouble],
    recorded: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    api, _ = world
    report = tmp_path / "recheck.json"

    code, out, _ = run(
        capsys, "recheck", str(recorded), "--quote-match", "fuzzy", "--json", str(report)
    )

    # Recorded under exact matching: compared under fuzzy, nothing replays.
    assert code == 1
    assert set(statuses(report).values()) == {"error"}
    assert "was made with quote match exact, the current setting is quote match fuzzy" in out
    assert api.api_calls == []


@pytest.mark.allow_resend(
    "6 of its claims ask the judge the same question in one run (the same claim text on "
    "the same page): each claim records its own call"
)
def test_offline_the_recheck_names_the_host_and_a_synthesized_rid_gets_no_audit_line(
    recorded: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import socket

    import yaml

    resolve = socket.getaddrinfo

    def no_dns(host: object, *args: object, **kwargs: object) -> object:
        if host == "crawlbase.offline.test":
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return resolve(host, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(socket, "getaddrinfo", no_dns)
    monkeypatch.setenv("CITECHECK_CRAWLBASE_URL", "http://crawlbase.offline.test/")
    code, out, _ = run(capsys, "recheck", str(recorded))
    assert code == 1
    assert "cannot resolve crawlbase.offline.test (" in out
    assert "you look offline" in out
    # A recording of live services: its rid names the page as it was stored.
    assert out.count("then: citecheck audit page ") == len(CASES), out
    # The example suites' recordings are synthesized: their rids name no stored page.
    for path in (recorded.parent / "cassettes" / recorded.stem).glob("*.yaml"):
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        data["metadata"]["citecheck"]["synthesized"] = "against loopback doubles"
        path.write_text(yaml.safe_dump(data), encoding="utf-8")
    code, out, _ = run(capsys, "recheck", str(recorded))
    assert "you look offline" in out
    assert "citecheck audit page" not in out
