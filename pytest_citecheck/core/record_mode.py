"""What a record mode means, asked in one place instead of comparing strings.

The modes (:data:`~pytest_citecheck.core.defaults.RECORD_MODES`) are VCR.py's
plus ``rewrite``. A setting's value is a :class:`RecordMode` from the option
down to the cassette; every layer that behaves differently by mode -- the
engine's preflight, the cassette lock, the transport, the recorder, the plugin --
asks it one of these questions. It is a ``str`` enum, so it prints, compares and
serialises as the mode's name (``none``, ``once``...).
"""

from __future__ import annotations

from enum import StrEnum

from pytest_citecheck.core.defaults import RECORD_MODES


class RecordMode(StrEnum):
    """One record mode: ``none``, ``once``, ``new_episodes``, ``all`` or ``rewrite``."""

    NONE = "none"
    ONCE = "once"
    NEW_EPISODES = "new_episodes"
    ALL = "all"
    REWRITE = "rewrite"

    @classmethod
    def _missing_(cls, value: object) -> RecordMode:
        raise ValueError(f"record mode must be one of {', '.join(RECORD_MODES)}")

    @property
    def replay_only(self) -> bool:
        """Nothing is ever recorded: no network, no keys, no lock (``none``)."""
        return self is RecordMode.NONE

    @property
    def plays_back(self) -> bool:
        """A request the cassette holds is answered from it."""
        return self in (RecordMode.NONE, RecordMode.ONCE, RecordMode.NEW_EPISODES)

    def protects(self, cassette_exists: bool) -> bool:
        """An existing file is never changed (``none``; ``once`` once it exists)."""
        return self.replay_only or (self is RecordMode.ONCE and cassette_exists)

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
        return self is RecordMode.REWRITE

    @property
    def drops_rerecorded(self) -> bool:
        """Re-recorded exchanges replace the old ones (``all``)."""
        return self is RecordMode.ALL


# Live: a run with no cassette fetches and judges every claim, which VCR's ``all``
# mode does (``citecheck batch`` and ``serve`` without ``--record``).
LIVE = RecordMode.ALL
