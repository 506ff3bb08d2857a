"""The shipped example suites, replayed as a new user runs them (README's first command).

Each test copies ``example_suite/`` (and ``example_suite_failing/``) to a temporary
directory and runs pytest on the copy in a subprocess, with no token, key or base-URL
variable set: the committed recordings must be enough, and nothing is written into the
repository. Re-record them with ``python scripts/record_examples.py``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SUITE = REPO / "example_suite"
FAILING = REPO / "example_suite_failing"
# The pages whose section of this heading has, as its first fenced block, a copy of the
# suite's terminal summary: README's quick start and the reports page.
SUMMARY_PAGES = (REPO / "README.md", REPO / "docs" / "reports.md")
SUMMARY_HEADING = "## What a run prints"

LABELS = {"supported", "contradicted", "not_found", "unreachable", "fabricated"}
# The reasons the label table of docs/verification.md names.
REASONS = {
    "http_404",
    "http_410",
    "redirected_to_homepage",
    "soft_404",
    "pdf_no_text",
    "evidence_quote_not_in_source",
    "quote_not_in_document",
    "blocked",
}
# Anything that would point a replay at a service or hand it a credential.
UNSET = (
    "CRAWLBASE_TOKEN",
    "CRAWLBASE_JS_TOKEN",
    "CITECHECK_CRAWLBASE_URL",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "OLLAMA_HOST",
    "OLLAMA_API_KEY",
    "CITECHECK_JUDGE_BASE_URL",
    "CITECHECK_JUDGE_API_KEY",
    "PYTEST_ADDOPTS",
    "GITHUB_ACTIONS",
    "GITHUB_WORKSPACE",
    # pytest prints whole failure messages in its short summary on CI: tests that
    # want that set it themselves.
    "CI",
    "BUILD_NUMBER",
)
# Runs pytest in a fresh interpreter and reports whether the embedding stack was imported.
RUN_AND_REPORT_IMPORTS = (
    "import sys, pytest\n"
    "code = pytest.main(sys.argv[1:])\n"
    "heavy = sorted(m for m in ('torch', 'sentence_transformers') if m in sys.modules)\n"
    "print('HEAVY-MODULES:', ','.join(heavy) or 'none')\n"
    "sys.exit(int(code))\n"
)


def run(
    cwd: Path, suite: str, *args: str, extra_env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in UNSET}
    env.update(extra_env or {})
    env["COLUMNS"] = "80"  # the width of the separator line the documented excerpt shows
    command = [
        sys.executable,
        "-c",
        RUN_AND_REPORT_IMPORTS,
        "--citecheck",
        "-p",
        "no:cacheprovider",
    ]
    return subprocess.run(
        [*command, *args, suite],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def summary(stdout: str) -> list[str]:
    """The citecheck section of the terminal summary, separator line included."""
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if re.fullmatch(r"=+ citecheck =+", line))
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("citecheck gate passed"))
    return lines[start : end + 1]


@pytest.fixture(scope="module")
def copies(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("examples")
    for suite in (SUITE, FAILING):
        shutil.copytree(suite, root / suite.name)
    return root


@pytest.fixture(scope="module")
def passed_run(copies: Path) -> tuple[subprocess.CompletedProcess[str], Path]:
    report = copies / "report.json"
    result = run(copies, "example_suite", f"--citecheck-report={report}")
    return result, report


def test_shipped_suite_passes_offline_with_every_label_and_reason(
    passed_run: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    result, report_path = passed_run
    assert result.returncode == 0, result.stdout + result.stderr
    assert re.search(r"^=+ \d+ passed in ", result.stdout, re.M), result.stdout
    assert "citecheck gate passed" in result.stdout
    assert re.search(
        r"^\d+ claims, \d+ citations: citation precision [\d.]+ \(\d+/\d+\)", result.stdout, re.M
    )
    report = json.loads(report_path.read_text())
    verdicts = [v for claim in report["claims"] for v in claim["verdicts"]]
    assert {v["label"] for v in verdicts} >= LABELS
    assert {v["reason"] for v in verdicts if v["reason"]} >= REASONS
    assert "error" not in {v["label"] for v in verdicts}
    assert report["gate"] == {
        "passed": True,
        "decided": True,
        "failures": [],
        "not_started": 0,
        "stopped_by": None,
    }
    # Claim-level labels too: the 404 beside a supporting page leaves its claim supported.
    by_id = {claim["id"]: claim for claim in report["claims"]}
    boiling = by_id["boiling-point"]
    assert boiling["label"] == "supported"
    assert sorted(v["label"] for v in boiling["verdicts"]) == ["supported", "unreachable"]
    assert by_id["boiling-point-50-degrees"]["label"] == "contradicted"
    # A review item: a verdict below the confidence gate.
    assert any(v["review"] and v["label"] == "supported" for v in verdicts)


def test_replay_does_not_import_the_embedding_stack(
    passed_run: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    result, _ = passed_run
    assert result.returncode == 0, result.stdout + result.stderr
    assert "HEAVY-MODULES: none" in result.stdout


def test_xdist_prints_the_same_totals(
    copies: Path, passed_run: tuple[subprocess.CompletedProcess[str], Path]
) -> None:
    pytest.importorskip("xdist")
    serial, _ = passed_run
    parallel = run(copies, "example_suite", "-n", "2")
    assert parallel.returncode == 0, parallel.stdout + parallel.stderr
    assert summary(parallel.stdout) == summary(serial.stdout)


# Where the live services would be on another machine (a proxy, a gateway, a local
# server): addresses nothing listens on, so a replay that used them would fail.
ELSEWHERE = {
    "OPENAI_BASE_URL": "http://127.0.0.1:9/proxy/openai/v1",
    "CITECHECK_CRAWLBASE_URL": "http://127.0.0.1:9/crawlbase/",
    "ANTHROPIC_BASE_URL": "http://127.0.0.1:9/anthropic",
    "OLLAMA_HOST": "http://127.0.0.1:9",
    "CITECHECK_JUDGE_BASE_URL": "http://127.0.0.1:9/v1",
}


@pytest.mark.parametrize(
    "args",
    [(), ("-o", "citecheck_judge_response_format=json_object")],
    ids=["base-urls", "base-urls-and-response-format"],
)
def test_replay_does_not_depend_on_where_the_live_services_are(
    copies: Path,
    passed_run: tuple[subprocess.CompletedProcess[str], Path],
    args: tuple[str, ...],
) -> None:
    serial, _ = passed_run
    moved = run(copies, "example_suite", *args, extra_env=ELSEWHERE)
    assert moved.returncode == 0, moved.stdout + moved.stderr
    assert "stale_recording" not in moved.stdout
    assert summary(moved.stdout) == summary(serial.stdout)


def test_failing_sibling_exits_1_and_says_why(copies: Path) -> None:
    result = run(copies, "example_suite_failing")
    assert result.returncode == 1, result.stdout + result.stderr
    gate = [line for line in result.stdout.splitlines() if "citecheck gate FAILED" in line]
    assert any("citation precision" in line and "citecheck_min_precision" in line for line in gate)
    assert any("contradicted" in line for line in gate), gate
    assert "HEAVY-MODULES: none" in result.stdout
    # The reports page shows these lines as the failing suite's.
    section = (
        (REPO / "docs" / "reports.md")
        .read_text(encoding="utf-8")
        .split("`pytest --citecheck example_suite_failing`", 1)[1]
    )
    shown = re.search(r"```text\n(.*?)\n\s*```", section, re.S)
    assert shown, "no excerpt of the failing suite's gate lines in docs/reports.md"
    assert [line.strip() for line in shown.group(1).splitlines()] == gate


def test_failing_sibling_in_github_actions_annotates_the_failing_claims_lines(
    copies: Path,
) -> None:
    result = run(copies, "example_suite_failing", extra_env={"GITHUB_ACTIONS": "true"})
    assert result.returncode == 1, result.stdout + result.stderr
    commands = [line for line in result.stdout.splitlines() if line.startswith("::")]
    errors = [c for c in commands if c.startswith("::error ")]
    claim_file = copies / "example_suite_failing" / "citecheck_answers.yaml"
    lines = claim_file.read_text(encoding="utf-8").splitlines()
    failed = re.findall(r"^FAILED \[\w+\] \S+::(\S+)(?: - .*)?$", result.stdout, re.M)
    assert failed == ["charlie-russell-cause-of-death"], result.stdout
    expected_line = lines.index("  - id: charlie-russell-cause-of-death") + 1
    assert len(errors) == 1, commands
    assert errors[0].startswith(
        f"::error file=example_suite_failing/citecheck_answers.yaml,line={expected_line},"
        "title=citecheck%3A contradicted::charlie-russell-cause-of-death: "
    ), errors
    assert commands[-1].startswith("::notice title=citecheck gate failed::citecheck gate FAILED")
    # The CI page's excerpt is this run's: whole lines, or a line's start before "...".
    page = (REPO / "docs" / "gate-ci.md").read_text(encoding="utf-8")
    shown = [line for line in page.splitlines() if line.startswith(("::error ", "::notice "))]
    assert shown, "no annotation excerpt in docs/gate-ci.md"
    for line in shown:
        if line.endswith("..."):
            assert any(c.startswith(line.removesuffix("...")) for c in commands), line
        else:
            assert line in commands, line
    # Outside GitHub Actions the same run prints no workflow command.
    plain = run(copies, "example_suite_failing")
    assert not [line for line in plain.stdout.splitlines() if line.startswith("::")]


def test_record_once_on_the_recorded_suite_needs_no_key_and_writes_nothing(
    tmp_path: Path,
) -> None:
    """Nothing needs recording (a fabricated document quote is decided without a judge
    or a cassette), so no key is demanded."""
    shutil.copytree(SUITE, tmp_path / SUITE.name)
    before = {p: p.stat().st_mtime_ns for p in (tmp_path / SUITE.name).rglob("*")}
    result = run(tmp_path, "example_suite", "--citecheck-record=once")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "OPENAI_API_KEY" not in result.stdout + result.stderr
    assert re.search(r"^=+ \d+ passed in ", result.stdout, re.M), result.stdout
    after = {p: p.stat().st_mtime_ns for p in (tmp_path / SUITE.name).rglob("*")}
    assert after == before


def test_cassettes_hold_no_loopback_address_and_no_secret() -> None:
    cassettes = sorted((SUITE / "cassettes").rglob("*.yaml")) + sorted(
        (FAILING / "cassettes").rglob("*.yaml")
    )
    assert cassettes
    for path in cassettes:
        text = path.read_text(encoding="utf-8")
        name = path.relative_to(REPO)
        assert "127.0.0.1" not in text and "localhost" not in text, name
        assert "synthesized" in text.splitlines()[0].lower(), name
        for token in re.findall(r"token=([^&\s'\"]+)", text):
            assert token in ("REDACTED", "REDACTED-NORMAL", "REDACTED-JS"), (name, token)
        assert not re.search(r"(?i)^\s*(authorization|x-api-key|cookie):", text, re.M), name
        assert not re.search(r"\bsk-[A-Za-z0-9_-]{8,}", text), name
        assert "not-a-secret" not in text, name  # the recorder's fake credentials


@pytest.mark.parametrize("page", SUMMARY_PAGES, ids=lambda p: p.name)
def test_the_documented_summary_is_what_the_suite_prints(
    passed_run: tuple[subprocess.CompletedProcess[str], Path], page: Path
) -> None:
    result, _ = passed_run
    text = page.read_text(encoding="utf-8")
    assert SUMMARY_HEADING in text, f"{page.name} has no {SUMMARY_HEADING!r} section"
    section = text.split(SUMMARY_HEADING, 1)[1]
    match = re.search(r"```[a-z]*\n(.*?)\n```", section, re.S)
    assert match, f"no fenced block under {SUMMARY_HEADING!r} in {page.name}"
    excerpt = [line.rstrip() for line in match.group(1).splitlines()]
    printed = [line.rstrip() for line in summary(result.stdout)]
    assert excerpt == printed


def test_the_example_answers_replay_offline(copies: Path) -> None:
    """One saved response per format (example_suite/answers/), expanded into claims by
    `answers:` and replayed from the committed recordings."""
    result = run(copies, "example_suite/answers", "-o", "citecheck_patterns=answers.yaml", "-v")
    assert result.returncode == 0, result.stdout + result.stderr
    for answer in (
        "charlie-russell",
        "kate-winslet",
        "better-call-saul",
        "michelle-collins",
        "essex-volleyball",
        "boiling-point",
        "opengov",
        "maiden-heaven",
        "crater-lake",
        "liz-patterson",
        "starbucks-baku",
    ):
        assert re.search(rf"answers\.yaml::{answer}-\S+ PASSED", result.stdout), answer
    assert "12 claims, 16 citations: citation precision 0.6250 (10/16)" in result.stdout
    assert "HEAVY-MODULES: none" in result.stdout
