"""A cassette's recording turn: one process at a time, and once per run."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

import pytest_citecheck
from pytest_citecheck.recording.lock import lock_path, recording_turn

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="no flock on Windows")

# Another process takes the turn, says so, saves for its run, then waits for stdin.
HOLDER = """
import sys
from pathlib import Path
from pytest_citecheck.recording.lock import recording_turn

cassette, run_id = Path(sys.argv[1]), sys.argv[2]
with recording_turn(cassette, "rewrite", run_id) as turn:
    cassette.parent.mkdir(parents=True, exist_ok=True)
    cassette.write_text("recorded by the holder")
    turn.saved()
    print("held", flush=True)
    sys.stdin.readline()
"""


def holder(cassette: Path, run_id: str) -> subprocess.Popen[str]:
    # The pytest_citecheck under test, not whichever one is installed.
    checkout = str(Path(pytest_citecheck.__file__).parents[1])
    path = os.pathsep.join(filter(None, [checkout, os.environ.get("PYTHONPATH")]))
    process = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(cassette), run_id],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": path},
    )
    assert process.stdout is not None
    assert process.stdout.readline().strip() == "held"
    return process


def take_turn(cassette: Path, mode: str, run_id: str) -> tuple[threading.Thread, list[str]]:
    """Take the turn in a thread; the list gets the mode it was given."""
    got: list[str] = []

    def take() -> None:
        with recording_turn(cassette, mode, run_id) as turn:
            got.append(turn.mode)

    thread = threading.Thread(target=take, daemon=True)
    thread.start()
    return thread, got


def test_this_run_replays_what_it_saved_another_run_records(tmp_path: Path) -> None:
    cassette = tmp_path / "cassettes" / "claims" / "one.yaml"
    with recording_turn(cassette, "rewrite", "run-1") as turn:
        assert turn.mode == "rewrite"
        cassette.parent.mkdir(parents=True)
        cassette.write_text("recorded")
        turn.saved()
    for mode in ("once", "new_episodes", "all", "rewrite"):
        with recording_turn(cassette, mode, "run-1") as turn:
            assert turn.mode == "none"
        with recording_turn(cassette, mode, "run-2") as turn:
            assert turn.mode == mode
    cassette.unlink()  # gone since: this run records it again
    with recording_turn(cassette, "rewrite", "run-1") as turn:
        assert turn.mode == "rewrite"


def test_an_unsaved_turn_leaves_the_next_one_recording(tmp_path: Path) -> None:
    cassette = tmp_path / "one.yaml"
    with recording_turn(cassette, "once", "run-1"):
        pass  # the recording failed: nothing saved
    with recording_turn(cassette, "once", "run-1") as turn:
        assert turn.mode == "once"


def test_replay_takes_no_lock_and_nothing_lands_beside_the_cassettes(tmp_path: Path) -> None:
    cassette = tmp_path / "cassettes" / "claims" / "one.yaml"
    lock_path(cassette).unlink(missing_ok=True)
    with recording_turn(cassette, "none", "run-1") as turn:
        assert turn.mode == "none"
    assert not lock_path(cassette).exists()
    with recording_turn(cassette, "once", "run-1"):
        pass
    assert lock_path(cassette).exists()
    assert not tmp_path.joinpath("cassettes").exists()


def test_a_second_process_waits_then_replays_what_the_first_saved(tmp_path: Path) -> None:
    cassette = tmp_path / "cassettes" / "claims" / "one.yaml"
    first = holder(cassette, "run-1")
    try:
        thread, got = take_turn(cassette, "rewrite", "run-1")
        thread.join(timeout=0.5)
        assert thread.is_alive() and got == []  # waiting for the first process
    finally:
        first.communicate("done\n", timeout=10)
    thread.join(timeout=10)
    assert got == ["none"]


def test_a_killed_holder_does_not_block_the_next_run(tmp_path: Path) -> None:
    cassette = tmp_path / "one.yaml"
    first = holder(cassette, "run-1")
    first.kill()  # no cleanup runs: the operating system drops the lock
    first.wait(timeout=10)
    thread, got = take_turn(cassette, "rewrite", "run-2")
    thread.join(timeout=10)
    assert got == ["rewrite"]
