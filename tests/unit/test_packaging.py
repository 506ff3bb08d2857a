"""What a user installing the package, or copying a snippet from the docs, relies on.

The version and the project URL are each kept in one place (``pytest_citecheck``);
pyproject's metadata, the SARIF log, the install lines and the pre-commit snippets must
name the same. The CI snippet shown in README and on the Gate and CI page is the example
workflow file, and the workflow files carry the steps their comments promise.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

import yaml

from pytest_citecheck import PROJECT_URL, __version__
from pytest_citecheck.options.table import OPTIONS
from pytest_citecheck.reports.github import sarif

REPO = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
EXAMPLE_WORKFLOW = REPO / "docs" / "examples" / "citations.yml"
RELEASE_WORKFLOW = REPO / ".github" / "workflows" / "release.yml"
# The pages a user copies install lines and snippets from.
PAGES = (
    REPO / "README.md",
    REPO / "docs" / "install.md",
    REPO / "docs" / "gate-ci.md",
    EXAMPLE_WORKFLOW,
    REPO / ".pre-commit-hooks.yaml",
)
GIT_INSTALL = f'pip install "pytest-citecheck @ git+{PROJECT_URL}@v{__version__}"'
# The line that works before the first release: the repository's default branch.
GIT_INSTALL_TODAY = f'pip install "pytest-citecheck @ git+{PROJECT_URL}@main"'
# It marks the block a newcomer copies first (README and the install page).
INSTALL_MARKER = "<!-- install-today -->"
# The major version of each action the example workflow uses: the current ones (2026).
ACTIONS = {
    "actions/checkout": "v7",
    "actions/setup-python": "v7",
    "actions/upload-artifact": "v7",
    "github/codeql-action/upload-sarif": "v4",
}


def text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def workflow(path: Path) -> dict[str, Any]:
    loaded = yaml.safe_load(text(path))
    assert isinstance(loaded, dict), path
    return loaded


def triggers(flow: dict[str, Any]) -> Any:
    # YAML 1.1 reads the bare key `on` as the boolean true.
    return flow.get("on", flow.get(True))


def steps(path: Path) -> list[dict[str, Any]]:
    """Every step of every job of the workflow file at ``path``."""
    return [step for job in workflow(path)["jobs"].values() for step in job["steps"]]


def uses(step: dict[str, Any], action: str) -> bool:
    return str(step.get("uses", "")).split("@")[0] == action


def fenced(page: Path, heading: str, lang: str) -> str:
    """The first ``lang`` block under ``heading`` on ``page``."""
    section = text(page).split(heading, 1)[1]
    match = re.search(rf"```{lang}\n(.*?)\n```", section, re.S)
    assert match, f"{page.name} has no {lang} block under {heading!r}"
    return match.group(1)


def install_today(page: Path) -> list[str]:
    """The commands of the bash block that follows the install marker on ``page``."""
    body = text(page)
    assert body.count(INSTALL_MARKER) == 1, page.name
    match = re.match(r"\n```bash\n(.*?)\n```", body.split(INSTALL_MARKER, 1)[1], re.S)
    assert match, f"{page.name}: no bash block right after {INSTALL_MARKER}"
    return match.group(1).splitlines()


def test_the_version_is_read_from_the_package() -> None:
    project = PYPROJECT["project"]
    assert "version" not in project
    assert "version" in project["dynamic"]
    assert PYPROJECT["tool"]["setuptools"]["dynamic"]["version"] == {
        "attr": "pytest_citecheck.__version__"
    }


def test_every_project_url_is_under_the_one_project_url() -> None:
    urls = PYPROJECT["project"]["urls"]
    assert set(urls) == {"Homepage", "Documentation", "Repository", "Issues", "Changelog"}
    assert urls["Homepage"] == urls["Repository"] == PROJECT_URL
    for name, url in urls.items():
        assert url.startswith(f"{PROJECT_URL}/") or url == PROJECT_URL, (name, url)


def test_the_sarif_log_points_at_the_project_url() -> None:
    log = sarif([], __version__)
    (run,) = log["runs"]  # type: ignore[misc]
    assert run["tool"]["driver"]["informationUri"] == PROJECT_URL


def test_the_docs_name_the_project_by_the_one_url_and_no_placeholder() -> None:
    for page in PAGES:
        body = text(page)
        assert "<owner>" not in body, page.name
        assert 'pypi.org/project/pytest-citecheck/"' not in body, page.name
        # Any GitHub address of a pytest-citecheck repository is the project's.
        for found in re.findall(r"https://github\.com/[^/\s\"']+/pytest-citecheck\b", body):
            assert found == PROJECT_URL, (page.name, found)


def test_the_install_line_of_today_is_the_same_in_readme_the_install_page_and_the_workflow() -> (
    None
):
    upgrade = "python -m pip install --upgrade pip"
    for page in (REPO / "README.md", REPO / "docs" / "install.md"):
        assert install_today(page) == [upgrade, GIT_INSTALL_TODAY], page.name
        # It comes before the lines that only work once the release is out.
        assert text(page).index(INSTALL_MARKER) < text(page).index(GIT_INSTALL), page.name
    (install,) = [
        s["run"] for s in steps(EXAMPLE_WORKFLOW) if "pytest-citecheck" in s.get("run", "")
    ]
    assert GIT_INSTALL_TODAY in install.splitlines()


def test_the_release_lines_are_kept_for_later_the_pypi_name_and_the_current_tag() -> None:
    for page, heading in (
        (REPO / "README.md", "Once the release is out"),
        (REPO / "docs" / "install.md", "## From PyPI, once released"),
    ):
        pypi = fenced(page, heading, "bash")
        assert pypi.splitlines()[0].split("#")[0].strip() == "pip install pytest-citecheck"
        assert "pip install 'pytest-citecheck[embed]'" in pypi
        assert GIT_INSTALL in text(page), page.name
    assert "not yet published" in text(REPO / "README.md").split("## Try it")[0]


def test_the_pre_commit_snippets_use_the_project_url_and_a_hook_it_defines() -> None:
    hooks = {hook["id"] for hook in yaml.safe_load(text(REPO / ".pre-commit-hooks.yaml"))}
    for page, heading in (
        (REPO / "docs" / "install.md", "## pre-commit"),
        (REPO / "docs" / "gate-ci.md", "## `citecheck validate` and pre-commit"),
    ):
        (repo,) = yaml.safe_load(fenced(page, heading, "yaml"))["repos"]
        assert repo["repo"] == PROJECT_URL
        assert repo["rev"] == f"v{__version__}"
        assert {hook["id"] for hook in repo["hooks"]} <= hooks


def test_the_ci_snippets_are_the_example_workflow_file() -> None:
    workflow_text = text(EXAMPLE_WORKFLOW).rstrip("\n")
    assert fenced(REPO / "README.md", "## CI: GitHub Actions", "yaml") == workflow_text
    assert fenced(REPO / "docs" / "gate-ci.md", "## GitHub Actions", "yaml") == workflow_text


def test_the_example_workflow_installs_the_plugin_replays_and_uploads_both_reports() -> None:
    flow = workflow(EXAMPLE_WORKFLOW)
    assert set(triggers(flow)) == {"push", "pull_request"}
    assert flow["permissions"]["security-events"] == "write"
    all_steps = steps(EXAMPLE_WORKFLOW)
    runs = [str(step.get("run", "")) for step in all_steps]
    # The user's own project (when it has one) and its requirements, then the plugin.
    (install,) = [line for line in runs if GIT_INSTALL_TODAY in line]
    assert "if [ -f requirements.txt ]; then pip install -r requirements.txt; fi" in install
    assert "pip install -e ." in install
    # Nothing is restored: the recordings are in the checkout.
    assert not any(uses(step, "actions/cache") for step in all_steps)
    (command,) = [line for line in runs if line.startswith("pytest --citecheck")]
    flags = {flag.split("=")[0] for flag in command.split() if flag.startswith("--")}
    known = {o.pytest_flag for o in OPTIONS if isinstance(o.pytest_flag, str)}
    assert flags <= known, flags - known
    assert "--citecheck-record" not in flags  # replay: the default mode records nothing
    html = re.search(r"--citecheck-html=(\S+)", command)
    sarif_path = re.search(r"--citecheck-sarif=(\S+)", command)
    assert html and sarif_path, command
    (artifact,) = [s for s in all_steps if uses(s, "actions/upload-artifact")]
    assert html.group(1) in artifact["with"]["path"]
    (upload,) = [s for s in all_steps if uses(s, "github/codeql-action/upload-sarif")]
    assert upload["with"]["sarif_file"] == sarif_path.group(1)
    # A failing gate fails the pytest step: both uploads still run.
    assert "always()" in artifact["if"] and "always()" in upload["if"]


def test_the_sarif_upload_cannot_turn_the_job_red_and_the_actions_are_current() -> None:
    all_steps = steps(EXAMPLE_WORKFLOW)
    (upload,) = [s for s in all_steps if uses(s, "github/codeql-action/upload-sarif")]
    # Code scanning off (a private repository without it): the upload fails, the job not.
    assert upload["continue-on-error"] is True
    # A fork's pull request: its token cannot write security events, so no upload at all.
    condition = " ".join(upload["if"].split())
    assert (
        "(github.event_name != 'pull_request' || "
        "github.event.pull_request.head.repo.full_name == github.repository)"
    ) in condition
    # Nothing else may fail the job but the install and the gate.
    assert [s for s in all_steps if s.get("continue-on-error")] == [upload]
    used = {
        str(s["uses"]).split("@")[0]: str(s["uses"]).split("@")[1] for s in all_steps if "uses" in s
    }
    assert used == ACTIONS


def test_the_release_workflow_builds_on_a_version_tag_and_publishes_by_trusted_publishing() -> None:
    flow = workflow(RELEASE_WORKFLOW)
    assert triggers(flow) == {"push": {"tags": ["v*"]}}
    jobs = flow["jobs"]
    (publish_name,) = [
        name
        for name, job in jobs.items()
        if any(uses(step, "pypa/gh-action-pypi-publish") for step in job["steps"])
    ]
    publish = jobs[publish_name]
    assert publish["permissions"]["id-token"] == "write"
    # No stored token: trusted publishing needs none.
    assert not any("password" in step.get("with", {}) for step in publish["steps"])
    build = jobs[publish["needs"]]
    runs = " ".join(str(step.get("run", "")) for step in build["steps"])
    assert "python -m build" in runs
    assert "twine check" in runs
    assert "__version__" in runs and "GITHUB_REF_NAME" in runs


def test_the_changelog_has_an_unreleased_section_and_one_for_the_version() -> None:
    changelog = text(REPO / "CHANGELOG.md")
    assert "## [Unreleased]" in changelog
    assert re.search(rf"^## \[{re.escape(__version__)}\]", changelog, re.M)
    assert f"[{__version__}]: {PROJECT_URL}/releases/tag/v{__version__}" in changelog


def test_the_license_file_is_the_license_pyproject_declares() -> None:
    declared = PYPROJECT["project"]["license"]
    text = (REPO / "LICENSE").read_text(encoding="utf-8")
    assert declared == "MIT"
    assert text.startswith("MIT License\n")
    assert "Permission is hereby granted, free of charge" in text
