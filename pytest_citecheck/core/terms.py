"""How a front end names its options: the words in the engine's messages.

The engine, the gate, the recorder and the stages tell a user which setting to
change ("below the minimum precision", "record it with: ...") without knowing
whether they run under pytest, ``citecheck batch`` or ``citecheck serve``. Each
front end passes its own :class:`Terms` (``plugin/terms.py``,
``frontends/cli/``, ``frontends/service/``); a message asks it how to name
an option (:meth:`Terms.option`) or the command that records a claim
(:meth:`Terms.record_hint`). No string is rewritten afterwards.

Plain data with no imports from the package (docs/architecture.md, "Wording").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

# Where a judge spec came from (EngineSettings.judge_origin, or the claim's own).
JUDGE_FROM_FLAG = "flag"
JUDGE_FROM_INI = "ini"
JUDGE_FROM_CLAIM = "claim"


@dataclass(frozen=True)
class Terms:
    """One front end's names for its options and its record/replay commands.

    ``options`` maps an option's neutral name (``min_precision``, ``judge``,
    ``timeout``...) to how this front end spells it (``citecheck_min_precision``,
    ``--min-precision``); an option the front end cannot set is named in plain
    words. ``assign`` joins an option and a value (``" = "`` for an ini file,
    ``" "`` for a flag). ``judge_origins`` names where a judge came from
    (:data:`JUDGE_FROM_FLAG`, :data:`JUDGE_FROM_INI`, :data:`JUDGE_FROM_CLAIM`).
    ``record(nodeid, mode)`` is the command that records one claim (None: this
    front end cannot record); ``record_many(nodeids, mode)`` records several claims or
    files in one command (None: one command a claim); ``replay`` is how to replay
    instead of recording.
    ``cassette(path)`` names a cassette file in a message (None: relative to the
    current folder when inside it, else in full); a service names it inside its
    cassette folder, so a caller never learns a path of the server's.
    """

    options: Mapping[str, str] = field(default_factory=dict)
    assign: str = " "
    judge_origins: Mapping[str, str] = field(default_factory=dict)
    record: Callable[[str, str], str] | None = None
    replay: str | None = None
    record_many: Callable[[Sequence[str], str], str] | None = None
    cassette: Callable[[Path], str] | None = None

    def option(self, name: str) -> str:
        """How a user names option ``name`` here."""
        return self.options.get(name) or f"the {name.replace('_', ' ')}"

    def setting(self, name: str, value: str) -> str:
        """Option ``name`` set to ``value``, as a user writes it here."""
        if name in self.options:
            return f"{self.options[name]}{self.assign}{value}"
        return f"{self.option(name)} to {value}"

    def judge_origin(self, origin: str) -> str:
        """Where a judge from ``origin`` was chosen, e.g. "--judge"."""
        return self.judge_origins.get(origin) or self.option("judge")

    def record_command(self, nodeid: str, mode: str) -> str | None:
        """The command that (re-)records ``nodeid`` with ``mode``, if there is one."""
        return None if self.record is None else self.record(nodeid, mode)

    def record_all_command(self, nodeids: Sequence[str], mode: str) -> str | None:
        """The one command that records all of ``nodeids`` (claims or files), if there is one."""
        if self.record_many is not None:
            return self.record_many(nodeids, mode)
        if len(nodeids) == 1:
            return self.record_command(nodeids[0], mode)
        return None

    def record_hint(self, nodeid: str, mode: str, lead: str = "record it with") -> str:
        """``"; record it with: CMD"``, or nothing when this front end cannot record."""
        command = self.record_command(nodeid, mode)
        return "" if command is None else f"; {lead}: {command}"

    def cassette_name(self, path: Path) -> str:
        """How a message names the cassette at ``path``."""
        if self.cassette is not None:
            return self.cassette(path)
        absolute = path.absolute()
        try:
            return absolute.relative_to(Path.cwd()).as_posix()
        except ValueError:
            return absolute.as_posix()

    def replay_hint(self, lead: str = "or replay the committed recordings with") -> str:
        """``" (or replay ... with FLAG)"``, or nothing when this front end cannot replay."""
        return "" if self.replay is None else f" ({lead} {self.replay})"


# An API caller's wording (the engine used as a library): plain words, no commands;
# the judge, which a message asks the caller to choose, by the setting that chooses it.
NEUTRAL = Terms(options={"judge": "EngineSettings.judge"})
