"""The install line README gives before the first release, used as a newcomer would.

The repository as committed is cloned (its ``main`` set to the commit under test); a
fresh virtual environment runs README's install block (the one after
``<!-- install-today -->``) as written, the repository's address replaced by the
clone's ``file://`` address, and then, in a separate small project of one's own: a
claim file written there, validated, dry-run, recorded once (against the loopback
doubles of the Crawling API and the judge) and replayed offline with the HTML report;
and the saved example answers imported, validated and replayed with their recordings.
A second fresh environment runs the example workflow's ``run:`` steps as a script in a
project with its own ``pyproject.toml`` and ``requirements.txt``.

They install the package's dependencies from the package index, so they run only when
``CITECHECK_NEWCOMER=1`` is set; ``.ci/run`` sets it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from pytest_citecheck import PROJECT_URL, __version__
from tests.doubles.crawlbase import CrawlbaseDouble, Page
from tests.doubles.llm import LLMDouble, verdict
from tests.e2e.test_example_suite import UNSET
from tests.unit.test_packaging import EXAMPLE_WORKFLOW, install_today, steps

REPO = Path(__file__).resolve().parents[2]
ANSWERS = REPO / "example_suite" / "answers"
TOKENS = {
    "CRAWLBASE_TOKEN": "install-normal-token-0123",
    "CRAWLBASE_JS_TOKEN": "install-js-token-4567",
    "OPENAI_API_KEY": "sk-install-key-89ab",
}
KETTLES = "https://example.com/kettle-guide"
QUOTE = "An electric kettle switches itself off when the water boils."
KETTLE_PAGE = (
    f"# Choosing a kettle\n\n{QUOTE} Descale it every few months where the water is hard.\n"
)
CLAIM_FILE = f"""\
claims:
  - id: kettle-switches-off
    claim: An electric kettle turns itself off once the water boils.
    citations:
      - {KETTLES}
    expect: supported
"""

pytestmark = pytest.mark.skipif(
    os.environ.get("CITECHECK_NEWCOMER") != "1",
    reason="set CITECHECK_NEWCOMER=1 to run it: it makes fresh venvs and installs from PyPI",
)


@dataclass(frozen=True)
class Venv:
    root: Path
    env: dict[str, str]

    def run(
        self, command: str, cwd: Path, extra: dict[str, str] | None = None, timeout: float = 900
    ) -> subprocess.CompletedProcess[str]:
        """``command`` through bash in ``cwd``, with this venv first on PATH."""
        return subprocess.run(
            ["bash", "-c", command],
            cwd=cwd,
            env=self.env | (extra or {}),
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def ok(
        self, command: str, cwd: Path, extra: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        done = self.run(command, cwd, extra)
        assert done.returncode == 0, f"{command}:\n{done.stdout[-4000:]}{done.stderr[-4000:]}"
        return done


def fresh_venv(path: Path) -> Venv:
    """A new virtual environment with nothing but the pip Python bundles."""
    subprocess.run([sys.executable, "-m", "venv", str(path)], check=True, timeout=300)
    bin_dir = path / "bin"
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in UNSET and not k.startswith(("PYTHON", "PYTEST"))
    }
    env |= {"PATH": f"{bin_dir}{os.pathsep}{env.get('PATH', '')}", "COLUMNS": "80"}
    env.pop("VIRTUAL_ENV", None)
    return Venv(path, env)


def local(command: str, clone: Path) -> str:
    """``command`` with the repository's address replaced by the clone's."""
    assert PROJECT_URL in command, command
    return command.replace(PROJECT_URL, clone.as_uri())


@pytest.fixture(scope="module")
def clone(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    path = tmp_path_factory.mktemp("upstream") / "pytest-citecheck"
    subprocess.run(
        ["git", "clone", "--quiet", "--no-local", str(REPO), str(path)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    # The line names the default branch: here it is the commit under test.
    subprocess.run(["git", "-C", str(path), "checkout", "--quiet", "-B", "main"], check=True)
    return path


@pytest.fixture(scope="module")
def installed(clone: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Venv]:
    venv = fresh_venv(tmp_path_factory.mktemp("newcomer") / ".venv")
    block = "\n".join(install_today(REPO / "README.md"))
    venv.ok(f"set -e\n{local(block, clone)}", cwd=venv.root.parent)
    yield venv


def own_project(root: Path) -> Path:
    root.mkdir()
    # BM25 ranks the passages when recording: no torch, no model weights.
    (root / "pytest.ini").write_text("[pytest]\ncitecheck_ranker = bm25\n", encoding="utf-8")
    return root


def test_the_documented_line_installs_the_clone_not_an_editable_link(
    installed: Venv, clone: Path
) -> None:
    where = installed.ok(
        "python -c 'import pytest_citecheck as p; print(p.__file__)'", installed.root.parent
    ).stdout.strip()
    site_packages = next((installed.root / "lib").glob("python3*/site-packages"))
    assert Path(where).is_relative_to(site_packages), where
    assert installed.ok("citecheck --version", installed.root.parent).stdout.strip() == (
        f"citecheck {__version__}"
    )
    # The pip that comes with the venv refuses a git+file:/// address; the block's first
    # line is what lets its second work.
    bare = fresh_venv(installed.root.parent / "bare")
    (line,) = [c for c in install_today(REPO / "README.md") if "git+" in c]
    refused = bare.run(local(line, clone), cwd=installed.root.parent)
    pip = bare.ok("pip --version", installed.root.parent).stdout.split()[1]
    if pip.startswith("23.2."):  # Python 3.11's
        assert refused.returncode != 0, refused.stdout
        assert "Invalid requirement" in refused.stderr, refused.stderr


def test_a_claim_file_of_ones_own_validates_dry_runs_records_and_replays_with_a_report(
    installed: Venv, clone: Path, tmp_path: Path
) -> None:
    project = own_project(tmp_path / "project")
    (project / "citecheck_kettle.yaml").write_text(CLAIM_FILE, encoding="utf-8")
    # Recording ranks the passages: the bm25 extra, by the documented line's extra form.
    (line,) = [c for c in install_today(REPO / "README.md") if "git+" in c]
    installed.ok(
        local(line.replace("pytest-citecheck @", "pytest-citecheck[bm25] @"), clone), project
    )

    valid = installed.ok("citecheck validate citecheck_kettle.yaml", project)
    assert "1 file, 1 claim, no problems" in valid.stdout, valid.stdout + valid.stderr
    with (
        CrawlbaseDouble(
            tokens={"normal": TOKENS["CRAWLBASE_TOKEN"], "javascript": TOKENS["CRAWLBASE_JS_TOKEN"]}
        ) as api,
        LLMDouble(api_key=TOKENS["OPENAI_API_KEY"]) as llm,
    ):
        api.add(KETTLES, Page(markdown=KETTLE_PAGE))
        llm.script(verdict("supported", QUOTE, 0.95))
        doubles = TOKENS | {
            "HF_HUB_OFFLINE": "1",
            "CITECHECK_CRAWLBASE_URL": api.base_url,
            "OPENAI_BASE_URL": llm.base_url("openai"),
        }
        dry = installed.ok("pytest --citecheck --citecheck-record=all --citecheck-dry-run", project)
        assert (api.calls, llm.calls) == ([], []), dry.stdout
        assert re.search(
            r"^dry run: claims=1 crawls=\d+ judge_calls=1 confirm_calls=1 joint_calls=0 credits=",
            dry.stdout,
            re.M,
        ), dry.stdout
        recorded = installed.ok("pytest --citecheck --citecheck-record=once", project, doubles)
        assert "1 passed" in recorded.stdout, recorded.stdout
        # The one page cited (a page this short is fetched again, as a thin one is).
        assert {c.url for c in api.api_calls} == {KETTLES}
        assert len(llm.calls) == 1
    # Offline now: no token, no double; the recording alone answers.
    replay = installed.ok("pytest --citecheck --citecheck-html=citecheck-report.html", project)
    assert re.search(r"^=+ 1 passed in [\d.]+s =+$", replay.stdout, re.M), replay.stdout
    assert "citecheck gate passed" in replay.stdout
    html = (project / "citecheck-report.html").read_text(encoding="utf-8")
    assert "kettle-switches-off" in html and QUOTE in html
    for secret in TOKENS.values():
        for path in (project / "cassettes").rglob("*.yaml"):
            assert secret not in path.read_text(encoding="utf-8"), path


def test_saved_answers_imported_there_validate_and_replay_their_recordings_with_a_report(
    installed: Venv, tmp_path: Path
) -> None:
    project = own_project(tmp_path / "project")
    responses = project / "responses"
    responses.mkdir()
    for saved in sorted(ANSWERS.glob("*.json")) + sorted(ANSWERS.glob("*.md")):
        shutil.copy(saved, responses / f"{saved.name.split('.', 1)[0]}{saved.suffix}")
    # The example answers' recordings, under the name the imported file gives them.
    shutil.copytree(ANSWERS / "cassettes" / "answers", project / "cassettes" / "citecheck_answers")

    imported = installed.ok("citecheck import responses -o citecheck_answers.yaml", project)
    assert (project / "citecheck_answers.yaml").is_file(), imported.stdout + imported.stderr
    installed.ok("citecheck validate citecheck_answers.yaml", project)
    replay = installed.ok("pytest --citecheck --citecheck-html=citecheck-report.html", project)
    assert "11 answers, 23 sentences, 11 uncited" in replay.stdout, replay.stdout
    assert "citecheck gate passed" in replay.stdout
    assert "no_recording" not in replay.stdout
    html = (project / "citecheck-report.html").read_text(encoding="utf-8")
    assert "charlie-russell" in html
    seen_in_a_browser(project / "citecheck-report.html", tmp_path / "imported-report.png")


def example_claims() -> int:
    """How many claims the example suite holds, as pytest collects them here."""
    listed = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--citecheck", "--co", "-q"],
        cwd=REPO / "example_suite",
        capture_output=True,
        text=True,
        timeout=120,
    )
    found = re.search(r"^(\d+) tests? collected", listed.stdout, re.M)
    assert found, listed.stdout + listed.stderr
    return int(found.group(1))


def seen_in_a_browser(report: Path, shot: Path) -> None:
    """The report as a person opens it: headless Chromium at 1280 px, a screenshot taken;
    the claim column readable and nothing pushed off-screen by the imported ids."""
    sync_api = pytest.importorskip("playwright.sync_api")
    from tests.e2e.test_html_browser import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS

    if not CHROMIUM.exists():
        pytest.skip(f"no browser at {CHROMIUM}: apt-get install chromium")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(report.as_uri())
        heads = page.locator("#claims thead th").all_inner_texts()
        widths = page.eval_on_selector_all(
            "#claims thead th", "els => els.map(e => e.getBoundingClientRect().width)"
        )
        scroll_width = page.evaluate("document.documentElement.scrollWidth")
        page.screenshot(path=str(shot), full_page=True)
        browser.close()
    ARTIFACTS.mkdir(exist_ok=True)
    shutil.copy(shot, ARTIFACTS / "install-today-report.png")
    assert shot.stat().st_size > 10_000  # a picture of a page, not a blank one
    columns = dict(zip(heads, widths, strict=True))
    assert columns["claim"] >= 400, columns
    assert scroll_width <= 1280
    assert errors == []


def test_the_example_workflow_run_steps_work_as_a_script_in_a_project_of_ones_own(
    clone: Path, tmp_path: Path
) -> None:
    venv = fresh_venv(tmp_path / "runner")
    # actions/setup-python's Python comes with a current pip; the venv's is older.
    venv.ok("python -m pip install --quiet --upgrade pip", tmp_path)
    project = tmp_path / "workspace"
    shutil.copytree(REPO / "example_suite", project, ignore=shutil.ignore_patterns("service"))
    # The user's own package and test dependencies: the workflow must install both.
    (project / "src" / "kettles").mkdir(parents=True)
    (project / "src" / "kettles" / "__init__.py").write_text("BOILS_AT = 100\n", encoding="utf-8")
    (project / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n'
        '[project]\nname = "kettles"\nversion = "0.0.1"\n',
        encoding="utf-8",
    )
    (project / "requirements.txt").write_text("iniconfig\n", encoding="utf-8")
    (project / "test_kettles.py").write_text(
        "import kettles\n\n\ndef test_boils() -> None:\n    assert kettles.BOILS_AT == 100\n",
        encoding="utf-8",
    )
    summary = tmp_path / "step-summary.md"
    github = {
        "GITHUB_ACTIONS": "true",
        "GITHUB_WORKSPACE": str(project),
        "GITHUB_STEP_SUMMARY": str(summary),
    }
    runs = [str(step["run"]) for step in steps(EXAMPLE_WORKFLOW) if "run" in step]
    assert len(runs) == 2, runs
    install, gate = runs
    venv.ok(f"set -e\n{local(install, clone)}", project, github)
    where = venv.ok("python -c 'import kettles; print(kettles.__file__)'", tmp_path).stdout
    assert Path(where.strip()).is_relative_to(project), where  # pip install -e .
    assert venv.ok("pip show iniconfig", tmp_path).returncode == 0

    result = venv.ok(f"set -e\n{gate}", project, github)
    # The project's own test and the example suite's claims.
    claims = example_claims()
    assert re.search(rf"^=+ {claims + 1} passed in [\d.]+s =+$", result.stdout, re.M), (
        result.stdout[-3000:]
    )
    assert "::notice title=citecheck gate passed::" in result.stdout
    html = re.search(r"--citecheck-html=(\S+)", gate)
    sarif = re.search(r"--citecheck-sarif=(\S+)", gate)
    assert html and sarif, gate
    assert "<html" in (project / html.group(1)).read_text(encoding="utf-8").lower()
    log = json.loads((project / sarif.group(1)).read_text(encoding="utf-8"))
    assert log["version"] == "2.1.0"
    assert "citation precision" in summary.read_text(encoding="utf-8")
