"""Recording stops when asked: ``-x``/``--maxfail`` and Ctrl-C start no new claim.

Recording verifies the claims ahead of their items (concurrently, inside the first
item's call). Asked to stop, the engine starts no other claim -- no crawl, no judge
call, no cassette -- the claims in flight finish, the verified items report, and
the terminal says how many claims were not started. Against the loopback doubles;
the cassettes left on disk are each loaded with the cassette layer.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_citecheck.recording.cassette import Cassette
from tests.doubles.crawlbase import CrawlbaseDouble, Page
from tests.doubles.llm import JudgeCall, LLMDouble, Scripted, quote_first_passage, verdict
from tests.plugin.test_recording import RANKER_CONFTEST

TOKEN = "double-normal-token-0123"
KEY = "sk-double-openai-key-0123"
CLAIMS = 8
PAGE = "# Facts\n\n" + "Fact number {n} is true and well documented here. " * 8
# The second claim's judge contradicts it: its item fails.
FAILING = "Fact number 1 is true."


def claim_text(n: int) -> str:
    return f"Fact number {n} is true."


def suite_yaml(claims: int = CLAIMS) -> str:
    lines = ["claims:"]
    for n in range(claims):
        lines += [
            f"  - id: fact-{n}",
            f"    claim: {claim_text(n)}",
            "    citations:",
            f"      - https://example.com/fact/{n}",
        ]
    return "\n".join(lines) + "\n"


class Judge:
    """Supports every claim but :data:`FAILING` (contradicted, quoting its page, at
    once); ``delay`` seconds per other reply make a recording long enough to stop."""

    def __init__(self, delay: float = 0.0) -> None:
        self.delay = delay
        self.answered = 0
        self._lock = threading.Lock()

    def __call__(self, call: JudgeCall) -> Scripted:
        if call.claim != FAILING:  # the failing claim is decided at once
            time.sleep(self.delay)
        reply = quote_first_passage(call)
        with self._lock:
            self.answered += 1
        if call.claim == FAILING and call.passages:
            return verdict("contradicted", call.passages[0].strip()[:60].rsplit(" ", 1)[0], 0.9)
        return reply


@pytest.fixture
def judge() -> Judge:
    return Judge()


@pytest.fixture
def doubles(judge: Judge) -> Iterator[tuple[CrawlbaseDouble, LLMDouble]]:
    tokens = {"normal": TOKEN, "javascript": TOKEN + "-js"}
    with CrawlbaseDouble(tokens=tokens) as api, LLMDouble(judge, api_key=KEY) as llm:
        for n in range(CLAIMS):
            api.add(f"https://example.com/fact/{n}", Page(markdown=PAGE.format(n=n)))
        yield api, llm


def environment(api: CrawlbaseDouble, llm: LLMDouble) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("CRAWLBASE_JS_TOKEN", "PYTEST_XDIST_AUTO_NUM_WORKERS", "PYTEST_ADDOPTS")
    }
    env.update(
        CRAWLBASE_TOKEN=TOKEN,
        OPENAI_API_KEY=KEY,
        CITECHECK_CRAWLBASE_URL=api.base_url,
        OPENAI_BASE_URL=llm.base_url("openai"),
    )
    return env


def crawled(api: CrawlbaseDouble) -> set[str]:
    return {str(c.url) for c in api.api_calls}


def cassettes(root: Path) -> list[Path]:
    return sorted((root / "cassettes").rglob("*.yaml"))


def assert_all_complete(root: Path) -> list[Path]:
    """Every cassette on disk loads and holds its crawl and judge exchanges; no
    temporary file of an interrupted save is left behind."""
    found = cassettes(root)
    for path in found:
        cassette = Cassette.load(path, lambda value: value)
        hosts = {i.request["uri"].split("/")[2] for i in cassette.interactions}
        assert len(hosts) == 2, (path, hosts)  # the Crawling API and the judge
    assert not [p for p in (root / "cassettes").rglob("*") if p.name.endswith(".tmp")]
    return found


@pytest.mark.parametrize("concurrency", ["1", "2"])
@pytest.mark.parametrize("judge", [Judge(delay=0.3)], indirect=False)
def test_x_stops_starting_claims_after_the_first_failing_one(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    doubles: tuple[CrawlbaseDouble, LLMDouble],
    concurrency: str,
) -> None:
    api, llm = doubles
    a_suite(pytester, monkeypatch, doubles, suite_yaml())
    result = pytester.runpytest_subprocess(
        "--citecheck",
        "--citecheck-record=once",
        f"--citecheck-concurrency={concurrency}",
        "--citecheck-report=report.json",
        "-x",
        "-p",
        "no:cacheprovider",
    )
    result.assert_outcomes(passed=1, failed=1)
    import json

    gate = json.loads((pytester.path / "report.json").read_text(encoding="utf-8"))["gate"]
    assert gate["passed"] is False
    assert (gate["not_started"], gate["stopped_by"]) == (CLAIMS - 2, "-x/--maxfail reached")
    # Only fact-0 and fact-1 were started: the failure came before fact-0 finished
    # (two at once) or right after it (one at a time).
    assert crawled(api) == {"https://example.com/fact/0", "https://example.com/fact/1"}
    result.stdout.fnmatch_lines(
        [
            f"citecheck: {CLAIMS - 2} claims were not started (-x/--maxfail reached); "
            "nothing was billed for them"
        ]
    )
    pages = crawled(api)
    assert len(llm.calls) == len(pages)
    saved = assert_all_complete(pytester.path)
    # A cassette for each claim started, none for the others.
    assert {p.stem for p in saved} == {f"fact-{url.rsplit('/', 1)[1]}" for url in pages}


def test_maxfail_counts_failures_before_it_stops(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    doubles: tuple[CrawlbaseDouble, LLMDouble],
) -> None:
    """``--maxfail=2`` with one failing claim: nothing stops early, every claim runs."""
    api = doubles[0]
    a_suite(pytester, monkeypatch, doubles, suite_yaml())
    result = pytester.runpytest_subprocess(
        "--citecheck", "--citecheck-record=once", "--citecheck-concurrency=1", "--maxfail=2"
    )
    result.assert_outcomes(passed=CLAIMS - 1, failed=1)
    assert len(crawled(api)) == CLAIMS
    assert "not started" not in result.stdout.str()


def a_suite(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    doubles: tuple[CrawlbaseDouble, LLMDouble],
    facts: str,
    conftest: str = "",
) -> None:
    """The suite ``facts`` in ``pytester``, recording against ``doubles`` (the model-free
    ranker's conftest, plus ``conftest``)."""
    api, llm = doubles
    pytester.makeconftest(RANKER_CONFTEST + conftest)
    pytester.makefile(".yaml", citecheck_facts=facts)
    for name, value in environment(api, llm).items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("CRAWLBASE_JS_TOKEN", raising=False)


def interrupt_when_judged(proc: subprocess.Popen[str], judge: Judge, replies: int) -> str:
    """SIGINT ``proc`` once the judge answered ``replies`` times; its output."""
    deadline = time.monotonic() + 60
    while judge.answered < replies and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert proc.poll() is None, "the run ended before it could be interrupted"
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=120)
    if os.environ.get("SHOW"):
        print(out)
    return out


@pytest.mark.parametrize("verbosity", ["-v", "-q"])
@pytest.mark.parametrize("judge", [Judge(delay=0.4)], indirect=False)
def test_ctrl_c_while_recording_starts_no_new_claim_and_reports_the_verified_ones(
    pytester: pytest.Pytester,
    doubles: tuple[CrawlbaseDouble, LLMDouble],
    judge: Judge,
    verbosity: str,
) -> None:
    """-v: the claims are awaited ahead, with progress; -q: each item awaits its own."""
    judge.answered = 0
    api, llm = doubles
    pytester.makeconftest(RANKER_CONFTEST)
    # No failing claim here: every verified item passes.
    pytester.makefile(".yaml", citecheck_facts=suite_yaml().replace(FAILING, "Fact 1 holds."))
    env = environment(api, llm)
    env["PYTHONPATH"] = os.pathsep.join([str(Path.cwd()), *sys.path])
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pytest",
            "--citecheck",
            "--citecheck-record=once",
            "--citecheck-concurrency=2",
            "--citecheck-report=report.json",
            "--citecheck-md=report.md",
            "--citecheck-html=report.html",
            "-p",
            "no:cacheprovider",
            verbosity,
            "-rA",
        ],
        cwd=pytester.path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    out = interrupt_when_judged(proc, judge, 2)
    assert proc.returncode == pytest.ExitCode.INTERRUPTED, out
    pages = crawled(api)
    assert 2 <= len(pages) < CLAIMS, out
    assert "citecheck: interrupted: no new claim starts" in out
    # The claims that finished report normally, in file order, then the run stops.
    passed = re.findall(r"PASSED (?:\[\w+\] )?\S*::fact-(\d+)", out)
    assert passed == [str(n) for n in range(len(passed))] and len(passed) == len(pages), out
    not_started = CLAIMS - len(pages)
    assert (
        f"citecheck: {not_started} claims were not started (interrupted); "
        "nothing was billed for them"
    ) in out, out
    assert re.search(r"!+ Interrupted: citecheck: interrupted", out), out
    assert "citecheck gate not decided: the run stopped early" in out
    assert "gate passed" not in out
    saved = assert_all_complete(pytester.path)
    assert len(saved) == len(pages)
    assert "Traceback" not in out
    # The reports say what the terminal says: not passed, and how many never started.
    assert_reports_not_decided(pytester.path, not_started)


def assert_reports_not_decided(folder: Path, not_started: int, pages: bool = True) -> None:
    """report.json (and, with ``pages``, report.md and report.html) in ``folder`` say
    the gate is not decided and how many claims never started."""
    import json

    gate = json.loads((folder / "report.json").read_text(encoding="utf-8"))["gate"]
    assert gate == {
        "passed": False,
        "decided": False,
        "failures": [],
        "not_started": not_started,
        "stopped_by": "interrupted",
    }
    if not pages:
        return
    note = (
        f"The run stopped early (interrupted): {not_started} claims were not started; "
        "nothing was billed for them."
    )
    markdown = (folder / "report.md").read_text(encoding="utf-8")
    assert markdown.startswith("## citecheck: gate not decided ⚠️\n")
    assert f"- {note}" in markdown
    html = (folder / "report.html").read_text(encoding="utf-8")
    assert '<span id="gate" class="gate undecided">gate not decided</span>' in html
    assert f'<li id="stopped">{note}</li>' in html
    assert "gate passed" not in markdown + html


@pytest.mark.parametrize("judge", [Judge(delay=0.4)], indirect=False)
def test_ctrl_c_in_batch_writes_what_finished_and_exits_130(
    tmp_path: Path, doubles: tuple[CrawlbaseDouble, LLMDouble], judge: Judge
) -> None:
    api, llm = doubles
    claims = tmp_path / "facts.yaml"
    claims.write_text(suite_yaml().replace(FAILING, "Fact 1 holds."), encoding="utf-8")
    env = environment(api, llm)
    env["PYTHONPATH"] = os.pathsep.join([str(Path.cwd()), *sys.path])
    report = tmp_path / "report.json"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pytest_citecheck.frontends.cli",
            "batch",
            str(claims),
            "--record",
            "once",
            "--concurrency",
            "2",
            "--ranker",
            "bm25",
            "--json",
            str(report),
        ],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    out = interrupt_when_judged(proc, judge, 2)
    assert proc.returncode == 130, out
    pages = crawled(api)
    assert 2 <= len(pages) < CLAIMS, out
    assert "citecheck: interrupted: no new claim starts" in out
    not_started = CLAIMS - len(pages)
    assert (
        f"citecheck: {not_started} claims were not started (interrupted); "
        "nothing was billed for them"
    ) in out, out
    assert "gate passed" not in out and "Traceback" not in out, out
    import json

    written = json.loads(report.read_text(encoding="utf-8"))
    assert len(written["claims"]) == len(pages)
    assert all(c["label"] == "supported" for c in written["claims"])
    saved = assert_all_complete(tmp_path)
    assert len(saved) == len(pages)
    assert_reports_not_decided(tmp_path, not_started, pages=False)  # batch: JSON only


# A Ctrl-C landing in pytest's own code as the third claim item starts (replay verifies
# each claim as its item runs, so the items after it never ran).
INTERRUPT_AT_THIRD = """
started = []


def pytest_runtest_setup(item):
    started.append(item.nodeid)
    if len(started) == 3:
        raise KeyboardInterrupt
"""


def recorded_suite(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, api: CrawlbaseDouble, llm: LLMDouble
) -> None:
    """The suite of :data:`CLAIMS` supported claims, recorded: what the next run replays."""
    a_suite(pytester, monkeypatch, (api, llm), suite_yaml().replace(FAILING, "Fact 1 holds."))
    pytester.runpytest_subprocess(
        "--citecheck", "--citecheck-record=once", "-p", "no:cacheprovider"
    ).assert_outcomes(passed=CLAIMS)


def test_ctrl_c_in_a_replay_leaves_the_gate_not_decided(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    doubles: tuple[CrawlbaseDouble, LLMDouble],
) -> None:
    """Before, the replay's summary and reports said ``gate passed`` over the two
    claims that ran."""
    recorded_suite(pytester, monkeypatch, *doubles)
    pytester.makeconftest(RANKER_CONFTEST + INTERRUPT_AT_THIRD)
    result = pytester.runpytest_subprocess(
        "--citecheck",
        "--citecheck-report=report.json",
        "--citecheck-md=report.md",
        "--citecheck-html=report.html",
        "-p",
        "no:cacheprovider",
    )
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            f"citecheck: {CLAIMS - 2} claims were not started (interrupted); "
            "nothing was billed for them",
            "citecheck gate not decided: the run stopped early",
        ]
    )
    assert "gate passed" not in result.stdout.str()
    assert_reports_not_decided(pytester.path, CLAIMS - 2)


def test_x_under_xdist_counts_the_claims_from_the_workers(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    doubles: tuple[CrawlbaseDouble, LLMDouble],
) -> None:
    """The xdist controller collects no items: its workers tell it which claims were
    selected, so after ``-x`` it counts the claims that never ran (here none: xdist
    lets the items it already sent finish) instead of calling the gate undecided."""
    pytest.importorskip("xdist")
    import json

    recorded_suite(pytester, monkeypatch, *doubles)
    pytester.makepyfile(test_a_fails="def test_fails():\n    assert False\n")
    result = pytester.runpytest_subprocess(
        "--citecheck", "--citecheck-report=report.json", "-n", "2", "-x", "-p", "no:cacheprovider"
    )
    data = json.loads((pytester.path / "report.json").read_text(encoding="utf-8"))
    gate, ran = data["gate"], len(data["claims"])
    assert gate["not_started"] == CLAIMS - ran, result.stdout.str()
    assert gate["decided"] is (ran == CLAIMS), result.stdout.str()
    assert gate["passed"] is (ran == CLAIMS), result.stdout.str()


# A Ctrl-C landing in pytest's own reporting of the first claim item, while the other
# claims recorded ahead are still in flight.
CTRL_C_WHILE_REPORTING = """

import os
import signal


def pytest_runtest_logreport(report):
    if report.when == "call" and report.nodeid.endswith("::fact-0"):
        os.kill(os.getpid(), signal.SIGINT)
"""


@pytest.mark.parametrize("judge", [Judge(delay=0.4)], indirect=False)
def test_ctrl_c_between_two_items_stops_as_a_ctrl_c_while_waiting_does(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    doubles: tuple[CrawlbaseDouble, LLMDouble],
    judge: Judge,
) -> None:
    """Before, the KeyboardInterrupt ended the session inside the first item's report:
    no item reported and no "no new claim starts"."""
    api = doubles[0]
    facts = suite_yaml().replace(FAILING, "Fact 1 holds.")
    a_suite(pytester, monkeypatch, doubles, facts, CTRL_C_WHILE_REPORTING)
    result = pytester.runpytest_subprocess(
        "--citecheck",
        "--citecheck-record=once",
        "--citecheck-concurrency=2",
        "-p",
        "no:cacheprovider",
        "-q",
        "-rA",
    )
    out = result.stdout.str()
    assert result.ret == pytest.ExitCode.INTERRUPTED, out
    assert "citecheck: interrupted: no new claim starts" in out, out
    pages = crawled(api)
    assert 2 <= len(pages) < CLAIMS, out
    passed = re.findall(r"PASSED (?:\[\w+\] )?\S*::fact-(\d+)", out)
    assert passed == [str(n) for n in range(len(pages))], out
    assert f"citecheck: {CLAIMS - len(pages)} claims were not started (interrupted)" in out
    assert "citecheck gate not decided: the run stopped early" in out
    assert len(assert_all_complete(pytester.path)) == len(pages)
