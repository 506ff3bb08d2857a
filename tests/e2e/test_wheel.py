"""The built wheel in someone else's project: built, installed (not editable) into a fresh
virtual environment outside the checkout, and run there as the example workflow runs it.

The source tree is copied to a temporary folder and ``python -m build --wheel`` builds
it; a new venv installs that wheel and its dependencies with pip (nothing else of this
checkout is importable there); the example suite is copied in as the project, and the
``pytest --citecheck`` command of ``docs/examples/citations.yml`` runs in it as written.

It installs the dependencies from the package index, so it runs only when
``CITECHECK_WHEEL=1`` is set; ``.ci/run`` sets it (``build`` comes with the dev extra).
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

from pytest_citecheck import PROJECT_URL, __version__
from tests.e2e.test_example_suite import UNSET
from tests.e2e.test_install_today import example_claims
from tests.unit.test_packaging import EXAMPLE_WORKFLOW, steps

REPO = Path(__file__).resolve().parents[2]
# What a source checkout may hold that is not the project: never copied into the build.
NOT_SOURCE = shutil.ignore_patterns(
    ".git", ".venv", "build", "dist", "site", "*.egg-info", "__pycache__", ".*_cache"
)

pytestmark = pytest.mark.skipif(
    os.environ.get("CITECHECK_WHEEL") != "1",
    reason="set CITECHECK_WHEEL=1 to run it: it builds the wheel and installs it from PyPI",
)


def run(
    command: list[str],
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 600,
) -> subprocess.CompletedProcess[str]:
    """Runs ``command`` and fails the test with the end of its output unless it succeeds."""
    done = subprocess.run(
        command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )
    assert done.returncode == 0, f"{command}:\n{done.stdout[-4000:]}{done.stderr[-4000:]}"
    return done


def test_the_built_wheel_installed_in_a_fresh_venv_replays_a_copied_example_suite(
    tmp_path: Path,
) -> None:
    source = tmp_path / "source"
    shutil.copytree(REPO, source, ignore=NOT_SOURCE)
    run([sys.executable, "-m", "build", "--wheel", "--outdir", str(tmp_path / "dist"), str(source)])
    (wheel,) = (tmp_path / "dist").glob("*.whl")
    assert wheel.name == f"pytest_citecheck-{__version__}-py3-none-any.whl"

    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", str(venv)], timeout=300)
    bin_dir = venv / "bin"
    env = {k: v for k, v in os.environ.items() if k not in UNSET and not k.startswith("PYTHON")}
    env |= {"PATH": f"{bin_dir}{os.pathsep}{env.get('PATH', '')}", "COLUMNS": "80"}
    env.pop("VIRTUAL_ENV", None)
    run(
        [str(bin_dir / "python"), "-m", "pip", "install", "--quiet", str(wheel)],
        env=env,
        timeout=900,
    )

    project = tmp_path / "project"
    shutil.copytree(REPO / "example_suite", project)
    # The package imported there is the installed wheel's, not this checkout nor an
    # editable link back to it.
    where = run(
        [str(bin_dir / "python"), "-c", "import pytest_citecheck as p; print(p.__file__)"],
        cwd=project,
        env=env,
    ).stdout.strip()
    site_packages = next((venv / "lib").glob("python3*/site-packages"))
    assert Path(where).is_relative_to(site_packages), where
    assert run(["citecheck", "--version"], cwd=project, env=env).stdout.strip() == (
        f"citecheck {__version__}"
    )

    (command,) = [
        s["run"] for s in steps(EXAMPLE_WORKFLOW) if "pytest --citecheck" in s.get("run", "")
    ]
    replay = run(["bash", "-c", command], cwd=project, env=env)
    claims = example_claims()
    assert re.search(rf"^=+ {claims} passed in [\d.]+s =+$", replay.stdout, re.M), replay.stdout[
        -2000:
    ]
    assert "citecheck gate passed" in replay.stdout
    html = re.search(r"--citecheck-html=(\S+)", command)
    sarif = re.search(r"--citecheck-sarif=(\S+)", command)
    assert html and sarif, command
    assert "<html" in (project / html.group(1)).read_text(encoding="utf-8").lower()
    log = json.loads((project / sarif.group(1)).read_text(encoding="utf-8"))
    driver = log["runs"][0]["tool"]["driver"]
    assert driver["informationUri"] == PROJECT_URL
    assert driver["version"] == __version__
