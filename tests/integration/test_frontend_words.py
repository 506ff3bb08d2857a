"""What the shared report tells a ``citecheck batch`` user is in the batch's words,
never the pytest plugin's flags (loopback doubles only)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_citecheck.frontends.cli import main
from tests.doubles.crawlbase import CrawlbaseDouble
from tests.doubles.llm import LLMDouble
from tests.integration.test_cassette_folder import claim_file, doubles, env  # noqa: F401


def test_the_batch_says_how_to_confirm_a_recording_in_its_own_flags(
    tmp_path: Path,
    doubles: tuple[CrawlbaseDouble, LLMDouble],  # noqa: F811
    env: dict[str, str],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = claim_file(tmp_path)
    monkeypatch.chdir(tmp_path)
    # Recorded without the confirmation, then replayed with it on.
    assert main(["batch", path.name, "--record", "once", "--no-confirm"]) == 0
    capsys.readouterr()

    main(["batch", path.name, "--record", "none"])

    out = capsys.readouterr().out
    assert "not confirmed: 1 verdict replayed from recordings made without the confirmation" in out
    assert "record it with: citecheck batch claims.jsonl --record new_episodes)" in out
    assert "--citecheck" not in out
