"""The cassette folder is checked before any paid request: a
folder that cannot be created, is not writable or whose disk is nearly full stops a
recording run at start-up, naming the folder, the cause and the fix, with nothing
fetched or judged; a run that only replays is not stopped (loopback doubles only).

The tests run as root in CI, where ``chmod 0o555`` stops no write: a read-only folder
is chmod-ed *and*, for root, refused as a read-only mount refuses it (``EROFS`` from
creating a file in it); the parent that is a regular file and the full disk (the free-
space probe replaced) need no privilege either way."""

from __future__ import annotations

import errno
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_citecheck.core import files
from pytest_citecheck.core.defaults import MIN_CASSETTE_FREE_BYTES
from pytest_citecheck.core.errors import ConfigurationError
from pytest_citecheck.engine.core import Engine
from pytest_citecheck.engine.settings import EngineSettings, StageHooks
from pytest_citecheck.frontends.cli import main
from tests.doubles import recording_environ
from tests.doubles.crawlbase import CrawlbaseDouble, Page
from tests.doubles.llm import LLMDouble
from tests.doubles.ranking import WordOverlap

TOKENS = {"normal": "planted-normal-token-folder-1", "javascript": "planted-js-token-folder-2"}
KEY = "sk-planted-folder-check-key-3"
URL = "https://example.com/articles/tower"
PAGE = "# Tower\n\n" + "The tower is 330 metres tall and stands in Paris. " * 6


@pytest.fixture
def doubles() -> Iterator[tuple[CrawlbaseDouble, LLMDouble]]:
    with CrawlbaseDouble(tokens=TOKENS) as api, LLMDouble(api_key=KEY) as llm:
        api.add(URL, Page(markdown=PAGE))
        yield api, llm


@pytest.fixture
def env(
    doubles: tuple[CrawlbaseDouble, LLMDouble], monkeypatch: pytest.MonkeyPatch
) -> dict[str, str]:
    api, llm = doubles
    values = recording_environ(api.base_url, llm.base_url("openai"), TOKENS, KEY)
    for name, value in values.items():
        monkeypatch.setenv(name, value)
    from pytest_citecheck.stages import retrieval

    monkeypatch.setattr(retrieval, "make_ranker", lambda name, cache_dir=None: WordOverlap())
    return values


def read_only(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Make ``folder`` read-only: its mode, and for root (whom modes do not stop) the
    refusal a read-only mount gives to a file created in it."""
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o555)
    if os.geteuid() == 0:
        real = tempfile.mkstemp

        def mkstemp(*args: Any, **kwargs: Any) -> tuple[int, str]:
            where = kwargs.get("dir")
            if where is not None and Path(where).resolve() == folder.resolve():
                raise OSError(errno.EROFS, os.strerror(errno.EROFS))
            return real(*args, **kwargs)

        monkeypatch.setattr(tempfile, "mkstemp", mkstemp)


@pytest.fixture(autouse=True)
def _writable_again(tmp_path: Path) -> Iterator[None]:
    yield
    for folder, _, _ in os.walk(tmp_path):
        Path(folder).chmod(0o755)


def claim_file(tmp_path: Path) -> Path:
    path = tmp_path / "claims.jsonl"
    path.write_text(f'{{"id": "tower", "claim": "The tower is in Paris.", "urls": ["{URL}"]}}\n')
    return path


def sent_nothing(doubles: tuple[CrawlbaseDouble, LLMDouble]) -> bool:
    api, llm = doubles
    return api.api_calls == [] and llm.calls == []


def test_batch_stops_before_paying_when_the_cassette_folder_is_read_only(
    tmp_path: Path,
    doubles: tuple[CrawlbaseDouble, LLMDouble],
    env: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = claim_file(tmp_path)
    cassettes = tmp_path / "tapes"
    read_only(cassettes / "claims", monkeypatch)
    monkeypatch.chdir(tmp_path)

    code = main(["batch", str(path), "--record", "once", "--cassettes", str(cassettes)])

    err = capsys.readouterr().err
    assert code == 2, err
    assert sent_nothing(doubles)
    assert "cassettes cannot be saved into tapes/claims: it is not writable" in err
    assert "make it writable for this user" in err
    assert "or record into another folder with --cassettes" in err
    assert not list((cassettes / "claims").iterdir())  # the probe left nothing behind


def test_batch_stops_when_the_cassette_folder_would_be_created_under_a_file(
    tmp_path: Path,
    doubles: tuple[CrawlbaseDouble, LLMDouble],
    env: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = claim_file(tmp_path)
    # The default cassettes/ beside the claim file is a regular file.
    (tmp_path / "cassettes").write_text("not a folder\n")
    monkeypatch.chdir(tmp_path)

    code = main(["batch", str(path), "--record", "once"])

    err = capsys.readouterr().err
    assert code == 2, err
    assert sent_nothing(doubles)
    assert (
        "cassettes cannot be saved into cassettes/claims: it would be created in cassettes, "
        "which is not a folder, so nothing can be written under it; move that file away"
    ) in err


def test_a_nearly_full_disk_stops_the_recording_and_enough_space_lets_it_run(
    tmp_path: Path,
    doubles: tuple[CrawlbaseDouble, LLMDouble],
    env: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = claim_file(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(files, "free_bytes", lambda folder: MIN_CASSETTE_FREE_BYTES - 1)

    code = main(["batch", str(path), "--record", "once"])

    err = capsys.readouterr().err
    assert code == 2, err
    assert sent_nothing(doubles)
    assert "has 64.0 MiB free on its disk, and recording needs at least 64.0 MiB" in err
    assert "free some space on that disk" in err

    monkeypatch.setattr(files, "free_bytes", lambda folder: MIN_CASSETTE_FREE_BYTES)
    code = main(["batch", str(path), "--record", "once"])
    assert code == 0, capsys.readouterr().err
    assert (tmp_path / "cassettes" / "claims" / "tower.yaml").is_file()


def test_a_replay_only_run_is_not_stopped_by_a_read_only_folder(
    tmp_path: Path,
    doubles: tuple[CrawlbaseDouble, LLMDouble],
    env: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = claim_file(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert main(["batch", str(path), "--record", "once"]) == 0
    doubles[0].reset()
    doubles[1].reset()
    read_only(tmp_path / "cassettes" / "claims", monkeypatch)
    capsys.readouterr()

    # Replaying saves nothing, and once with the cassette there replays too.
    for mode in ("none", "once"):
        code = main(["batch", str(path), "--record", mode])
        assert code == 0, capsys.readouterr().err
    assert sent_nothing(doubles)


def test_the_engine_api_raises_one_configuration_error(
    tmp_path: Path, doubles: tuple[CrawlbaseDouble, LLMDouble], env: dict[str, str]
) -> None:
    from pytest_citecheck.claims.models import Citation, Claim

    claim = Claim(id="tower", claim="The tower is in Paris.", citations=[Citation(url=URL)])
    blocker = tmp_path / "blocker"
    blocker.write_text("")
    with (
        Engine.from_settings(
            EngineSettings(record_mode="once"),  # type: ignore[arg-type]
            StageHooks(make_ranker=WordOverlap),
            environ=env,
        ) as engine,
        pytest.raises(ConfigurationError, match="blocker, which is not a folder"),
    ):
        engine.preflight([claim], cassette_for=lambda c: blocker / "deep" / f"{c.id}.yaml")
    assert sent_nothing(doubles)


def test_recheck_stops_before_fetching_when_it_cannot_save_beside_the_cassette(
    tmp_path: Path,
    doubles: tuple[CrawlbaseDouble, LLMDouble],
    env: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = claim_file(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert main(["batch", str(path), "--record", "once"]) == 0
    doubles[0].reset()
    doubles[1].reset()
    read_only(tmp_path / "cassettes" / "claims", monkeypatch)
    capsys.readouterr()

    code = main(["recheck", str(path)])

    err = capsys.readouterr().err
    assert code == 2, err
    assert sent_nothing(doubles)
    assert "cassettes cannot be saved into cassettes/claims/recheck: it would be created in" in err
    assert "cassettes/claims, which is not writable" in err


def test_serve_refuses_to_start_recording_into_a_read_only_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("uvicorn")
    cassettes = tmp_path / "served"
    read_only(cassettes, monkeypatch)
    monkeypatch.chdir(tmp_path)

    code = main(["serve", "--record", "once", "--cassettes", str(cassettes)])

    err = capsys.readouterr().err
    assert code == 2, err
    assert f"--cassettes {cassettes}: cassettes cannot be saved into served: it is not" in err
    assert "(or replay the committed recordings with --record none)" in err


def test_the_service_answers_503_before_paying_when_its_disk_fills(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("uvicorn")
    import httpx

    from pytest_citecheck.frontends.service import ServiceConfig
    from tests.integration.test_service import OPENAI_KEY, add_pages, body, serving

    cassettes = tmp_path / "served"
    cassettes.mkdir()
    with CrawlbaseDouble() as api, LLMDouble(api_key=OPENAI_KEY) as llm:
        add_pages(api)
        environ = {
            "CRAWLBASE_TOKEN": api.tokens["normal"],
            "CRAWLBASE_JS_TOKEN": api.tokens["javascript"],
            "CITECHECK_CRAWLBASE_URL": api.base_url,
            "OPENAI_API_KEY": OPENAI_KEY,
            "OPENAI_BASE_URL": llm.base_url("openai"),
        }
        with serving(ServiceConfig(record_mode="once", cassettes=cassettes), environ) as url:
            # The disk fills after the service started: each request checks again.
            monkeypatch.setattr(files, "free_bytes", lambda folder: 1024 * 1024)
            reply = httpx.post(f"{url}/verify", json=body(0), timeout=60)
        assert api.api_calls == [] and llm.calls == []
    assert reply.status_code == 503, reply.text
    detail = reply.json()["detail"]
    assert detail.startswith(
        "cassettes cannot be saved into the service's cassette folder: it has 1.0 MiB free"
    )
    assert "free some space on that disk, or record into another folder with the server" in detail
    assert str(tmp_path) not in detail
    assert list(cassettes.iterdir()) == []


def test_the_check_leaves_the_folder_as_it_found_it(tmp_path: Path) -> None:
    # A replay of a recorded suite under --citecheck-record=once is checked too (some
    # claim might record) and must write nothing: not even the folder's modification time.
    from pytest_citecheck.core.files import folder_problem

    folder = tmp_path / "cassettes"
    folder.mkdir()
    (folder / "kept.yaml").write_text("x", encoding="utf-8")
    os.utime(folder, ns=(1_000_000_000, 2_000_000_000))
    assert folder_problem(folder, 0) is None
    assert folder.stat().st_mtime_ns == 2_000_000_000
    assert sorted(p.name for p in folder.iterdir()) == ["kept.yaml"]
