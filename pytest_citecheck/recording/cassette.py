"""One claim's cassette: a plain VCR.py file, read and written without VCR.py's patching.

The file is exactly what VCR.py (``vcr.use_cassette`` with its YAML
serializer) reads and writes -- ``interactions`` of ``request`` (method, uri,
body, headers as lists) and ``response`` (status, headers as lists, body
string), ``version: 1`` and an optional ``metadata`` mapping -- so any VCR.py
user can replay it with an httpx client. What this module adds is what VCR.py
does per process and citecheck needs per claim, concurrently and cheaply:

- **Loading** with PyYAML's C safe loader and a structural check: a truncated,
  empty, binary or ``!!python``-tagged file, or one of the wrong shape, raises
  :class:`CorruptCassette` with a one-line reason (no traceback reaches a user).
- **Matching** the way citecheck's VCR configuration did: method, scheme, host,
  port, path, query (the Crawling API ``token`` compared as its placeholder) and,
  for POST, the body compared as JSON. Each recorded interaction plays once, in
  recorded order (a retried 429-then-200 replays as recorded).
- **Replay that does not depend on the environment** (:meth:`Cassette.replay`):
  when nothing matches exactly, a retry of a request already played gets its
  recorded reply again (a recorded 500 stays a 500, however often it is retried),
  then a request matches the recorded one *regardless of the configured base
  URL and judge settings*: scheme, host, port and path are not compared (the
  method, the query and a POST's JSON body are), nor the body fields a judge setting shapes
  (``response_format``, ``temperature``...; ``stages.judges.compat.SETTING_FIELDS``).
  When still nothing matches, :func:`describe_difference` says what differs
  from the nearest recorded request (host, model, response format, claim text...).
- **Record modes** as VCR.py defines them: ``none`` and ``once`` with an
  existing file only replay; ``new_episodes`` replays what matches and records
  the rest; ``all`` records everything and keeps the loaded interactions that
  were not re-recorded; ``rewrite`` starts empty.
- **Saving** atomically (a temporary file renamed into place), creating the
  folder only then: a failed recording leaves no file and no folder behind.

This module holds the modes, replay and saving (:class:`Cassette`); the file's loading and
checking is :mod:`pytest_citecheck.recording.cassette_file`, the matching
:mod:`pytest_citecheck.recording.matching`. Only :mod:`yaml` is imported, and only when
this module is.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from pytest_citecheck.core.files import sweep_stale_temporaries
from pytest_citecheck.recording.cassette_file import (
    CASSETTE_VERSION,
    CorruptCassette,
    check,
    dump_yaml,
    load_yaml,
    read_interaction,
    unicode_body,
    unicode_response,
)
from pytest_citecheck.recording.matching import (
    Interaction,
    MatchKey,
    as_bytes,
    bodies_match,
    claim_of,
    endpoint,
    message_text,
    same_body,
    same_question,
)


@dataclass
class Cassette:
    """The interactions and metadata of one cassette file, in memory."""

    path: Path
    interactions: list[Interaction] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    existed: bool = False
    # Interactions recorded in this run (after the loaded ones).
    recorded: int = 0
    dirty: bool = False

    @classmethod
    def load(cls, path: Path, placeholder: Callable[[str], str]) -> Cassette:
        """Read ``path``; a missing file is an empty cassette, a bad one raises
        :class:`CorruptCassette`."""
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return cls(path)
        except IsADirectoryError:
            raise CorruptCassette(path, "it is a directory, not a file") from None
        except OSError as exc:
            raise CorruptCassette(path, f"it cannot be read ({exc.strerror})") from None
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise CorruptCassette(path, "it is not UTF-8 text") from None
        try:
            parsed = load_yaml(text)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            at = f" at line {mark.line + 1}" if mark is not None else ""
            problem = getattr(exc, "problem", None) or type(exc).__name__
            raise CorruptCassette(path, f"it is not valid YAML{at} ({problem})") from None
        except (RecursionError, MemoryError, ValueError) as exc:
            raise CorruptCassette(path, f"it cannot be parsed ({type(exc).__name__})") from None
        check(isinstance(parsed, dict), "it is not a VCR.py cassette (no mapping)", path)
        interactions = parsed.get("interactions")
        check(isinstance(interactions, list), "it has no list of interactions", path)
        metadata = parsed.get("metadata") or {}
        check(isinstance(metadata, dict), "its metadata is not a mapping", path)
        loaded = [read_interaction(r, n, path, placeholder) for n, r in enumerate(interactions)]
        return cls(path, loaded, metadata, existed=True)

    def __len__(self) -> int:
        return len(self.interactions)

    def play(self, key: MatchKey, body: bytes) -> Interaction | None:
        """The first unplayed recorded interaction matching the request, marked played."""
        return self._take(key, body, loose=False)

    def replay(self, key: MatchKey, body: bytes) -> Interaction | None:
        """Replay only: :meth:`play`, else a repeat of the last played reply to this
        same request, else the first unplayed one that matches regardless of the
        base URL and the judge settings (see the module doc)."""
        exact = self.play(key, body)
        if exact is not None:
            return exact
        for interaction in reversed(self.interactions):
            if interaction.played and interaction.key == key and same_body(interaction, body):
                return interaction
        return self._take(key, body, loose=True)

    def _take(self, key: MatchKey, body: bytes, *, loose: bool) -> Interaction | None:
        """The first unplayed interaction for this request, marked played: the same key
        and body, or (``loose``) the same endpoint and question."""
        same_body = same_question if loose else bodies_match
        for interaction in self.interactions:
            if interaction.played:
                continue
            if (endpoint(interaction.key) != endpoint(key)) if loose else interaction.key != key:
                continue
            if key[0] == "POST" and not same_body(as_bytes(interaction.request.get("body")), body):
                continue
            interaction.played = True
            return interaction
        return None

    def recorded_claims(self) -> list[str]:
        """The claim texts the recorded judge requests asked about, in order."""
        found: list[str] = []
        for interaction in self.interactions:
            if interaction.key[0] != "POST":
                continue
            try:
                data = json.loads(as_bytes(interaction.request.get("body")))
            except ValueError:
                continue
            claim = claim_of(message_text(data)) if isinstance(data, dict) else None
            if claim is not None and claim not in found:
                found.append(claim)
        return found

    def nearest(self, key: MatchKey, body: bytes) -> Interaction | None:
        """The recorded request most like this one (same method and endpoint first)."""
        candidates = [i for i in self.interactions if i.key[0] == key[0]]
        if not candidates:
            return None

        def score(interaction: Interaction) -> tuple[int, int, int]:
            same_path = interaction.key[4].rsplit("/", 1)[-1] == key[4].rsplit("/", 1)[-1]
            same_url = dict(interaction.key[5]).get("url") == dict(key[5]).get("url")
            return (int(same_url), int(same_path), int(not interaction.played))

        return max(candidates, key=score)

    def append(self, request: dict[str, Any], response: dict[str, Any], key: MatchKey) -> None:
        self.interactions.append(Interaction(request, response, key, played=True))
        self.recorded += 1
        self.dirty = True

    def drop_rerecorded(self) -> None:
        """Mode ``all``: loaded interactions that were recorded again are replaced."""
        loaded = self.interactions[: len(self.interactions) - self.recorded]
        fresh = self.interactions[len(loaded) :]
        keys = {i.key for i in fresh}
        kept = [i for i in loaded if i.key not in keys]
        self.interactions = kept + fresh

    def to_yaml(self) -> str:
        """The file text, as VCR.py's YAML serializer writes it."""
        data: dict[str, Any] = {
            "version": CASSETTE_VERSION,
            "interactions": [
                {"request": unicode_body(i.request), "response": unicode_response(i.response)}
                for i in self.interactions
            ],
        }
        if self.metadata:
            data["metadata"] = self.metadata
        text = dump_yaml(data)
        return text

    def save(self, sweep: Callable[[Path], None] = sweep_stale_temporaries) -> None:
        """Write the file atomically; the folder is created here, and removed again
        if writing failed and left it empty."""
        folder = self.path.parent
        created = not folder.exists()
        text = self.to_yaml()
        try:
            folder.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{self.path.name}.", suffix=".tmp")
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as out:
                    out.write(text)
                os.replace(tmp, self.path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        except BaseException:
            if created:
                remove_empty_folders(folder)
            raise
        self.dirty = False
        sweep(self.path)


def remove_empty_folders(folder: Path, stop: int = 2) -> None:
    """Remove ``folder`` and up to ``stop`` empty parents (``cassettes/<stem>/``)."""
    for _ in range(stop):
        try:
            folder.rmdir()
        except OSError:
            return
        folder = folder.parent
