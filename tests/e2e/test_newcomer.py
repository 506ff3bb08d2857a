"""A newcomer's first minutes, scripted: a fresh clone, a fresh venv, README's commands.

The repository as committed is cloned into a temporary folder, a new virtual
environment is made there with nothing but pip, and README's "Try it" command is
run exactly as written, with no token or key in the environment. Its output must end
with the summary README shows under "What a run prints", byte for byte, and pass.

It installs the package and its dependencies from the package index (about a minute),
so it runs only when ``CITECHECK_NEWCOMER=1`` is set; ``.ci/run`` sets it.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.test_example_suite import SUMMARY_HEADING, UNSET, summary
from tests.e2e.test_install_today import example_claims

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(
    os.environ.get("CITECHECK_NEWCOMER") != "1",
    reason="set CITECHECK_NEWCOMER=1 to run it: it makes a fresh venv and installs from PyPI",
)


def readme_block(heading: str, lang: str) -> str:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text.split(heading, 1)[1]
    match = re.search(rf"```{lang}\n(.*?)\n```", section, re.S)
    assert match, f"README has no {lang} block under {heading!r}"
    return match.group(1)


def test_a_fresh_clone_and_venv_run_the_readme_try_it_command_as_written(
    tmp_path: Path,
) -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    clone = tmp_path / "pytest-citecheck"
    subprocess.run(
        ["git", "clone", "--quiet", "--no-local", str(REPO), str(clone)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    command = readme_block("## Try it", "bash")
    assert command.startswith("pip install -e . && pytest --citecheck "), command
    subprocess.run([sys.executable, "-m", "venv", str(clone / ".venv")], check=True, timeout=300)
    bin_dir = clone / ".venv" / "bin"
    env = {k: v for k, v in os.environ.items() if k not in UNSET and not k.startswith("PYTHON")}
    env |= {"PATH": f"{bin_dir}{os.pathsep}{env.get('PATH', '')}", "COLUMNS": "80"}
    env.pop("VIRTUAL_ENV", None)
    run = subprocess.run(
        ["bash", "-c", command],
        cwd=clone,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    # The package under test is the clone's, in the fresh venv: not this checkout's.
    where = subprocess.run(
        [str(bin_dir / "python"), "-c", "import pytest_citecheck as p; print(p.__file__)"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert Path(where).is_relative_to(clone), where
    expected = [line.rstrip() for line in readme_block(SUMMARY_HEADING, "text").splitlines()]
    assert [line.rstrip() for line in summary(run.stdout)] == expected
    claims = example_claims()
    assert re.search(rf"^=+ {claims} passed in [\d.]+s =+$", run.stdout, re.M), run.stdout[-2000:]
