"""Recording orchestration: which claims may go to the network, and one cassette
opened, shared and saved.

Opening takes the cassette's turn (:mod:`pytest_citecheck.recording.lock`): another
process recording it first is waited for, and a cassette this run (``run_id``)
already saved is replayed, so a claim is billed once per run. A cassette is saved
only when every claim verified in it went without error (:func:`failed`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_citecheck.claims.labels import Label
from pytest_citecheck.claims.results import ClaimResult
from pytest_citecheck.core.files import TemporarySweeper
from pytest_citecheck.core.providers import TOKEN_ENV
from pytest_citecheck.core.record_mode import RecordMode
from pytest_citecheck.engine.settings import EngineSettings

if TYPE_CHECKING:
    from pytest_citecheck.recording.recorder import Recording
    from pytest_citecheck.stages.judges.base import Judge


def will_record(mode: RecordMode, cassette: Path | None) -> bool:
    """Whether verifying with ``cassette`` may go to the network (what preflight
    checks keys for, what the budget counts). Mode ``none`` never records; without
    a cassette any other mode verifies live."""
    if cassette is None:
        return mode.live_without_cassette
    return mode.may_record(cassette.exists())


def failed(result: ClaimResult) -> bool:
    """An error verdict: then nothing is saved, and ``once`` records the claim again.
    A panel member that failed while its panel still decided is saved with the rest:
    its failure is in the cassette (an HTTP error as its exchange, an unreachable
    judge in the metadata), so a replay decides what this run did."""
    return any(v.label is Label.ERROR for v in result.verdicts)


class Cassettes:
    """Opens cassettes for one engine: its record mode, run, tokens and secrets."""

    def __init__(self, settings: EngineSettings, environ: Mapping[str, str], run_id: str) -> None:
        self.settings = settings
        self.environ = environ
        self.run_id = run_id
        self._sweep = TemporarySweeper()

    @contextmanager
    def open(self, cassette: Path, nodeid: str, judge: Judge | None = None) -> Iterator[Recording]:
        """The open cassette; saved on exit when nothing failed. Raises
        CorruptRecording for an unreadable file. ``judge``: the judge the claims in
        it ask, already built; its prompt version is recorded with its replies (a
        replay that misses says which one it was)."""
        from pytest_citecheck.core.secrets import secret_values
        from pytest_citecheck.recording.lock import recording_turn
        from pytest_citecheck.recording.recorder import open_recording

        settings = self.settings
        tokens: dict[str, str | None] = {k: self.environ.get(env) for k, env in TOKEN_ENV.items()}
        with (
            recording_turn(cassette, settings.record_mode, self.run_id) as turn,
            open_recording(
                cassette,
                turn.mode,
                nodeid,
                tokens,
                prompt_version=getattr(judge, "prompt_version", None),
                secrets=secret_values(self.environ),
                max_bytes=settings.max_page_bytes,
                quote_policy=settings.quote_policy.metadata(),
                terms=settings.terms,
                confirm=not settings.no_confirm,
                joint=not settings.no_joint,
            ) as recording,
        ):
            yield recording
            if recording.finish(ok=recording.ok, sweep=self._sweep):
                turn.saved()
