"""What a record mode means, asked in one place instead of comparing strings.

The modes (:data:`~pytest_citecheck.core.defaults.RECORD_MODES`) are VCR.py's
plus ``rewrite``. Every layer that behaves differently by mode -- the engine's
preflight, the cassette lock, the transport, the recorder, the plugin -- asks a
:class:`RecordMode` one of these questions.
"""

from __future__ import annotations

from dataclasses import dataclass

from pytest_citecheck.core.defaults import RECORD_MODES


@dataclass(frozen=True)
class RecordMode:
    """One record mode: ``none``, ``once``, ``new_episodes``, ``all`` or ``rewrite``."""

    name: str

    def __post_init__(self) -> None:
        if self.name not in RECORD_MODES:
            raise ValueError(f"record mode must be one of {', '.join(RECORD_MODES)}")

    @property
    def replay_only(self) -> bool:
        """Nothing is ever recorded: no network, no keys, no lock (``none``)."""
        return self.name == "none"

    @property
    def plays_back(self) -> bool:
        """A request the cassette holds is answered from it."""
        return self.name in ("none", "once", "new_episodes")

    def protects(self, cassette_exists: bool) -> bool:
        """An existing file is never changed (``none``; ``once`` once it exists)."""
        return self.replay_only or (self.name == "once" and cassette_exists)

    def may_record(self, cassette_exists: bool) -> bool:
        """Verifying with this cassette may go to the network."""
        return not self.protects(cassette_exists)

    @property
    def live_without_cassette(self) -> bool:
        """Without a cassette a claim is verified live (any mode but ``none``)."""
        return not self.replay_only

    @property
    def starts_empty(self) -> bool:
        """The old file is ignored and replaced (``rewrite``)."""
        return self.name == "rewrite"

    @property
    def drops_rerecorded(self) -> bool:
        """Re-recorded exchanges replace the old ones (``all``)."""
        return self.name == "all"
