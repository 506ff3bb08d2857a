"""The guard and the documents module are low layers: they never import an HTTP
client or a judge provider."""

from __future__ import annotations

import subprocess
import sys

import pytest

FORBIDDEN = ("httpx", "pytest_citecheck.stages.judges", "rapidfuzz", "yaml", "torch")


@pytest.mark.parametrize(
    "module", ["pytest_citecheck.stages.guard", "pytest_citecheck.stages.documents"]
)
def test_low_layers_import_nothing_heavy(module: str) -> None:
    probe = f"import sys, {module}\nprint(','.join(m for m in {FORBIDDEN!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_judge_reply_is_still_importable_where_judge_authors_look() -> None:
    from pytest_citecheck.claims.results import JudgeReply
    from pytest_citecheck.stages.judges.base import JudgeReply as FromJudges

    assert FromJudges is JudgeReply


def test_the_quote_policy_imports_nothing_of_the_package() -> None:
    # The pytest options build it at start-up, before --citecheck is known.
    heavy = ("pydantic", "pytest_citecheck.claims.models", "pytest_citecheck.stages.guard")
    probe = (
        "import sys, pytest_citecheck.stages.quote_policy\n"
        f"print(','.join(m for m in {heavy!r} if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
