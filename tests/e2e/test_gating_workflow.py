"""The prompt-gating workflow in the docs runs as written, on the example answers.

The commands are read from the docs' code block and run one after the other in a
fresh project: the example answers saved under ``responses/`` (named by their answer
id), their committed recordings copied in, so the first recording run records
nothing; then a "prompt change" replaces one answer, the second import and recording
run record only its new sentences against the loopback doubles of the Crawling API
and the judge, and the CI command fails the session on the precision drop that the
docs quote.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.doubles.crawlbase import CrawlbaseDouble, Page
from tests.doubles.llm import LLMDouble, verdict

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "gate-ci.md"
SECTION = "## Gating prompt changes against a baseline\n"
ANSWERS = REPO / "example_suite" / "answers"
TOKENS = {
    "CRAWLBASE_TOKEN": "workflow-normal-token-0123",
    "CRAWLBASE_JS_TOKEN": "workflow-js-token-4567",
    "OPENAI_API_KEY": "sk-workflow-key-89ab",
}
KETTLES = "https://example.com/kettle-guide"
# The prompt change: the boiling-point answer now says two things its source does not.
NEW_ANSWER = (
    "Water boils at 90 degrees Celsius at sea level.[1] Salt makes water boil at 50 "
    f"degrees.[1]\n\n[1]: {KETTLES}\n"
)
KETTLE_PAGE = (
    "# Choosing a kettle\n\nAn electric kettle heats water quickly and switches itself "
    "off when the water boils. Descale it every few months where the water is hard.\n"
)


def documented() -> tuple[list[str], str]:
    page = DOC.read_text(encoding="utf-8")
    text = page[page.index(SECTION) :]
    end = text.find("\n## ", len(SECTION))
    text = text if end < 0 else text[:end]
    [script] = re.findall(r"```bash\n(.*?)```", text, re.S)
    commands = [line for line in script.splitlines() if line and not line.startswith("#")]
    [failure] = re.findall(r"```text\n(citecheck gate FAILED: .*?)\n```", text, re.S)
    return commands, failure


def project(tmp_path: Path) -> Path:
    responses = tmp_path / "responses"
    responses.mkdir()
    for saved in sorted(ANSWERS.glob("*.json")) + sorted(ANSWERS.glob("*.md")):
        answer_id = saved.name.split(".", 1)[0]
        shutil.copy(saved, responses / f"{answer_id}{saved.suffix}")
    # The example answers' recordings, under the name the imported file gives them.
    shutil.copytree(ANSWERS / "cassettes" / "answers", tmp_path / "cassettes" / "citecheck_answers")
    # BM25 ranks the new sentences when they are recorded (no model weights to load).
    (tmp_path / "pytest.ini").write_text("[pytest]\ncitecheck_ranker = bm25\n", encoding="utf-8")
    return tmp_path


def run(command: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    argv = shlex.split(command)
    argv[0] = str(Path(sys.executable).parent / argv[0])
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.allow_resend(
    "runs the same claims more than once on purpose (record, replay, recheck, compare)"
)
def test_the_documented_gating_workflow_runs_as_written(tmp_path: Path) -> None:
    commands, failure = documented()
    assert [c.split()[:2] for c in commands] == [
        ["citecheck", "import"],
        ["pytest", "--citecheck"],
        ["pytest", "--citecheck"],
        ["citecheck", "import"],
        ["pytest", "--citecheck"],
        ["pytest", "--citecheck"],
    ]
    root = project(tmp_path)
    keep = ("PATH", "HOME", "LANG", "PYTHONPATH", "SYSTEMROOT")
    with (
        CrawlbaseDouble(
            tokens={"normal": TOKENS["CRAWLBASE_TOKEN"], "javascript": TOKENS["CRAWLBASE_JS_TOKEN"]}
        ) as api,
        LLMDouble(api_key=TOKENS["OPENAI_API_KEY"]) as llm,
    ):
        api.add(KETTLES, Page(markdown=KETTLE_PAGE))
        llm.script(verdict("not_found", None, 0.9), verdict("not_found", None, 0.9))
        env = {k: v for k, v in os.environ.items() if k in keep}
        env |= TOKENS | {
            "HF_HUB_OFFLINE": "1",
            "CITECHECK_CRAWLBASE_URL": api.base_url,
            "OPENAI_BASE_URL": llm.base_url("openai"),
        }
        results = []
        for step, command in enumerate(commands):
            if step == 3:  # the prompt change: one answer saved anew
                (root / "responses" / "boiling-point.md").write_text(NEW_ANSWER, encoding="utf-8")
            results.append(run(command, root, env))
            if step == 1:
                # Every example claim has its recording: nothing was crawled or judged.
                assert (api.calls, llm.calls) == ([], []), results[-1].stdout
        crawled = sorted({c.url for c in api.api_calls})
        judged = len(llm.calls)

    *passing, gated = results
    for command, result in zip(commands, passing, strict=False):
        assert result.returncode == 0, f"{command}\n{result.stdout}{result.stderr}"
    assert "11 answers, 23 sentences, 11 uncited" in passing[1].stdout
    assert (root / "citecheck-baseline.json").is_file()
    # Only the changed answer's two new sentences were recorded, from the one page cited.
    assert (crawled, judged) == ([KETTLES], 2)
    assert gated.returncode == 1, gated.stdout + gated.stderr
    assert failure in gated.stdout.splitlines(), gated.stdout
    for secret in TOKENS.values():
        for path in (root / "cassettes").rglob("*.yaml"):
            assert secret not in path.read_text(encoding="utf-8"), path
