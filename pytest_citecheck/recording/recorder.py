"""Record and replay: one cassette per claim.

A cassette holds every HTTP exchange of one claim (Crawling API and judge)
plus, in its metadata, what is not HTTP but must replay exactly: which passages
retrieval chose (so CI needs no embedding model and no float bits of the
recording machine) and the judge prompt version the replies were given for. A
recording goes stale when the page, the claim, the judge model or the prompt
changes; replay then reports it by claim instead of guessing.

Cassettes are plain VCR.py files; :mod:`pytest_citecheck.recording.cassette` reads and
writes them and :mod:`pytest_citecheck.recording.transport` serves one claim's HTTP from
its cassette, so claims record concurrently without VCR.py's process-global
patching. A recording is saved only when the claim verified without an
``error``: a failed recording leaves no file and no folder, and ``once``
records it again next time.

This module stays light (it is imported with the options); yaml and httpx load
when a cassette is opened.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_citecheck.claims.labels import Reason
from pytest_citecheck.claims.results import JudgeReply
from pytest_citecheck.core.errors import StageFailed
from pytest_citecheck.core.files import sweep_stale_temporaries
from pytest_citecheck.core.record_mode import RecordMode
from pytest_citecheck.core.secrets import scrub
from pytest_citecheck.core.terms import NEUTRAL, Terms
from pytest_citecheck.core.text import truncate
from pytest_citecheck.stages.retrieval import Ranker, describe

if TYPE_CHECKING:
    from pytest_citecheck.recording.cassette import Cassette
    from pytest_citecheck.recording.transport import ClaimHTTP
    from pytest_citecheck.stages.judges.base import Judge

METADATA_KEY = "citecheck"
METADATA_FORMAT = 1


def synthesized(path: Path) -> bool:
    """The cassette at ``path`` was made against local doubles, not live services
    (``metadata.citecheck.synthesized``, set by the example suites' recorder): its
    Storage API rids name no stored page."""
    from pytest_citecheck.recording.cassette_file import load_yaml

    try:
        data = load_yaml(path.read_text(encoding="utf-8"))
    except Exception:  # unreadable or not YAML: replaying it reports that
        return False
    meta = data.get("metadata") if isinstance(data, dict) else None
    ours = meta.get(METADATA_KEY) if isinstance(meta, dict) else None
    return isinstance(ours, dict) and bool(ours.get("synthesized"))


def cassette_path(claim_file: Path, claim_id: str, root: Path | None = None) -> Path:
    """Where a claim's cassette lives: ``<root>/<file stem>/<claim id>.yaml``, the root
    being the folder given (``--cassettes``) or ``cassettes/`` beside the claim file (or
    the test file, for the ``citecheck`` fixture). The one place this rule is written:
    the plugin, the fixture, ``citecheck batch`` and ``citecheck recheck`` all call it."""
    base = root if root is not None else claim_file.parent / "cassettes"
    return base / claim_file.stem / f"{claim_id}.yaml"


def sample_cassette_path(root: Path, answer_id: str) -> Path:
    """An Inspect sample's cassette: ``<root>/<answer id>.yaml``, the folder the scorer
    was given (the answer id is the sample's id, with its epoch past the first)."""
    return root / f"{answer_id}.yaml"


def request_cassette_name(claim: str, targets: Sequence[str], judges: Sequence[str]) -> str:
    """The cassette file name of a claim that has no id of its own (a ``/verify``
    request): named by what it verifies -- the claim text, its citations in order and
    the judges asked -- so the same request replays the same cassette, whoever sends
    it. ``water-boils-at-100-degrees-celsius-1a2b3c4d5e6f.yaml``: the claim's first
    words to find it by, a digest of all three to tell it apart."""
    question = json.dumps([claim.strip(), list(targets), list(judges)], ensure_ascii=False)
    digest = hashlib.sha256(question.encode()).hexdigest()[:12]
    words = re.findall(r"[a-z0-9]+", claim.lower())[:_NAME_WORDS]
    slug = "-".join(words)[:_NAME_CHARS].rstrip("-") or "claim"
    return f"{slug}-{digest}.yaml"


_NAME_WORDS = 6
_NAME_CHARS = 48


def retrieval_key(claim: str, passages: Sequence[str]) -> str:
    """Identifies one retrieval question: the claim and the exact page passages."""
    digest = hashlib.sha256(claim.encode())
    for passage in passages:
        digest.update(b"\x1e" + passage.encode())
    return digest.hexdigest()[:20]


class MissingRetrieval(Exception):
    """Replay only, and the cassette has no retrieval for this page and claim."""

    def __init__(self, key: str = "", claim: str | None = None) -> None:
        super().__init__(key)
        self.key = key
        self.claim = claim


class CorruptRecording(Exception):
    """The cassette cannot be read (``why``, one line, no traceback)."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


def shown_path(path: Path, terms: Terms = NEUTRAL) -> str:
    """The cassette's path as the user would open it: relative to the current folder
    when inside it (``cassettes/citecheck_water/pasta.yaml``), else in full; or as
    the front end names it (:meth:`Terms.cassette_name`)."""
    return terms.cassette_name(path)


def corrupt_detail(path: Path, nodeid: str, why: str, terms: Terms = NEUTRAL) -> str:
    """What a user reads for a corrupt cassette: which file, why, and the fix."""
    fix = terms.record_hint(nodeid, "rewrite", lead="record it again with")
    return f"the recording {shown_path(path, terms)} is corrupt: {why}{fix}"


@dataclass
class Recording:
    """An open cassette for one claim (or one test's fixture calls)."""

    path: Path
    mode: RecordMode
    nodeid: str
    cassette: Cassette
    http: ClaimHTTP
    prompt_version: str | None = None
    # False once a claim verified in it had an error: then nothing is saved.
    ok: bool = True
    # The guard's quote policy (QuotePolicy.metadata()); None: not checked.
    quote_policy: Mapping[str, Any] | None = None
    # How "record it with: ..." names the command (the front end's words).
    terms: Terms = NEUTRAL
    # Calls per (judge, question) so far: a recorded failure names the call it was.
    _calls: dict[tuple[str, str], int] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    # Whether the claims confirm their verdicts (stages/confirm.py): a cassette recorded
    # so says it in its metadata (``confirmation: true``).
    confirm: bool = True
    # Whether the claims judge their sources together when none supports alone
    # (engine/joint.py): ``joint: true`` in the metadata.
    joint: bool = True

    @property
    def replaying(self) -> bool:
        return self.mode.replay_only

    @property
    def write_protected(self) -> bool:
        return self.http.write_protected

    # -- metadata ------------------------------------------------------------

    def metadata(self) -> dict[str, Any]:
        """citecheck's part of the cassette metadata (created when recording)."""
        meta = self.cassette.metadata.get(METADATA_KEY)
        if isinstance(meta, dict):
            return meta
        meta = {"format": METADATA_FORMAT, "retrieval": {}}
        if not self.write_protected:
            self.cassette.metadata[METADATA_KEY] = meta
        return meta

    def recorded_prompt_version(self) -> str | None:
        value = self.metadata().get("judge_prompt_version")
        return str(value) if value is not None else None

    # -- the guard's quote policy ---------------------------------
    # Recorded with the claim like the prompt version: a judge reply recorded
    # under one quote-match mode or threshold is stale under another.

    def check_quote_policy(self) -> None:
        """Raise ``stale_recording`` when replaying a judge reply recorded under
        another quote policy (a cassette without one was recorded under exact)."""
        if not self.replaying or self.quote_policy is None or not self.cassette.existed:
            return
        try:
            recorded = _recorded_quote_policy(self.metadata())
        except Exception:
            recorded = _recorded_quote_policy({})
        current = dict(self.quote_policy)
        if recorded == current:
            return
        raise StageFailed(
            Reason.STALE_RECORDING,
            f"the recording in {shown_path(self.path, self.terms)} was made with "
            f"{_describe_policy(recorded)}, the current setting is {_describe_policy(current)}"
            f"{self.terms.record_hint(self.nodeid, 'rewrite')}",
        )

    def confirmation_recorded(self) -> bool:
        """Whether a confirmation call can be served: recording may send it, or the
        cassette was recorded with the confirmation (one recorded before it, or with it
        off, holds no such exchange: its verdicts replay unconfirmed, for review)."""
        if not self.write_protected or not self.cassette.existed:
            return True
        return self.metadata().get("confirmation") is True

    def joint_recorded(self) -> bool:
        """Whether a joint judgment can be served: recording may send it, or the cassette
        was recorded with it (one recorded before it, or with it off, holds none: its
        claims replay their single-source verdicts)."""
        if not self.write_protected or not self.cassette.existed:
            return True
        return self.metadata().get("joint") is True

    def judge(self, judge: Judge) -> Judge:
        """``judge``, refusing to replay a reply recorded under another quote policy."""
        return _QuotePolicyCheckedJudge(self, judge)

    # -- judges that could not be reached --------------------------------------

    def next_call(self, judge: str, question: str) -> int:
        """How many times ``judge`` was asked ``question`` in this claim, this call
        included (a panel samples one judge several times, in order)."""
        with self._lock:
            key = (judge, question)
            self._calls[key] = self._calls.get(key, 0) + 1
            return self._calls[key]

    def recorded_failure(self, judge: str, question: str, call: int) -> StageFailed | None:
        """The failure recorded for this call when replaying, else None."""
        if not self.mode.plays_back or not self.cassette.existed:
            return None
        failures = self.metadata().get(_FAILURES_KEY)
        for failure in failures if isinstance(failures, list) else ():
            if not isinstance(failure, dict):
                continue
            if (failure.get("judge"), failure.get("question"), failure.get("call")) == (
                judge,
                question,
                call,
            ):
                # Word for word what the recording run said: the replay decides alike.
                return StageFailed(
                    str(failure.get("reason") or Reason.JUDGE_UNAVAILABLE),
                    str(failure.get("detail") or ""),
                )
        return None

    def record_failure(self, judge: str, question: str, call: int, exc: StageFailed) -> None:
        """Keep a failure that left no HTTP exchange, to be replayed as it happened."""
        if self.write_protected:
            return
        with self._lock:
            failures = self.metadata().setdefault(_FAILURES_KEY, [])
            failures[:] = [
                f
                for f in failures
                if not (
                    isinstance(f, dict)
                    and (f.get("judge"), f.get("question"), f.get("call"))
                    == (judge, question, call)
                )
            ]
            failures.append(
                {
                    "judge": judge,
                    "question": question,
                    "call": call,
                    "reason": exc.reason,
                    "detail": scrub(exc.detail),
                }
            )
            self.cassette.dirty = True

    def ranker(self, live: Callable[[], Ranker]) -> Ranker:
        """A ranker that replays retrieval's recorded choices, or records new ones."""
        return _RecordedRanker(self, live)

    def finish(self, ok: bool, sweep: Callable[[Path], None] = sweep_stale_temporaries) -> bool:
        """Save what was recorded when the claim verified without error; True if saved.
        ``sweep``: what removes stale temporaries beside the cassette (a run's
        :class:`~pytest_citecheck.core.files.TemporarySweeper`; by default the save
        lists the folder)."""
        cassette = self.cassette
        if self.write_protected or not ok or not cassette.dirty:
            return False
        if self.prompt_version and len(cassette):
            meta = self.metadata()
            meta["judge_prompt_version"] = self.prompt_version
        if len(cassette):
            if self.confirm:
                self.metadata()["confirmation"] = True
            elif self.mode.starts_empty:
                self.metadata().pop("confirmation", None)
            if self.joint:
                self.metadata()["joint"] = True
            elif self.mode.starts_empty:
                self.metadata().pop("joint", None)
        if self.quote_policy is not None and len(cassette):
            meta = self.metadata()
            for key in _QUOTE_POLICY_KEYS:
                meta.pop(key, None)
            meta.update(self.quote_policy)
        if self.mode.drops_rerecorded:
            cassette.drop_rerecorded()
        cassette.save(sweep)
        return True

    # -- errors --------------------------------------------------------------

    def classify_error(self, exc: BaseException) -> tuple[str, str] | None:
        """Turn "can't play this" into a reason and the command that fixes it."""
        from pytest_citecheck.recording.transport import UnmatchedRequest

        if isinstance(exc, CorruptRecording):
            return Reason.CORRUPT_RECORDING, corrupt_detail(
                self.path, self.nodeid, exc.why, self.terms
            )
        if not isinstance(exc, UnmatchedRequest | MissingRetrieval):
            return None
        where = shown_path(self.path, self.terms)
        if not self.cassette.existed:
            what = f"no recording ({where} does not exist)"
            reason = Reason.NO_RECORDING
        elif isinstance(exc, MissingRetrieval):
            what = f"the recording in {where} has no retrieval for this page and claim"
            what += self._retrieval_difference(exc.claim)
            reason = Reason.STALE_RECORDING
        else:
            what = f"the recording in {where} has no reply for {exc.method} " + scrub(exc.uri)
            if exc.difference:
                what += f" (it {exc.difference})"
            reason = Reason.STALE_RECORDING
        recorded = self.recorded_prompt_version()
        current = self.prompt_version
        if recorded and current and recorded != current:
            what += f" (recorded with judge prompt {recorded}, current is {current})"
        mode = "once" if not self.cassette.existed else "rewrite"
        return reason, f"{what}{self.terms.record_hint(self.nodeid, mode)}"

    def _retrieval_difference(self, claim: str | None) -> str:
        """Which of the two changed: the claim text (the recorded judge requests
        hold the one recorded) or, the claim being the same, the page."""
        recorded = self.cassette.recorded_claims()
        if claim is None or not recorded:
            return ""
        if claim.strip() in recorded:
            return " (the page text differs from the recorded one)"
        return f" (claim text {_quoted(recorded[0])} was recorded, now {_quoted(claim.strip())})"


def _quoted(text: str, width: int = 60) -> str:
    return repr(truncate(text, width))


class _RecordedRanker:
    def __init__(self, recording: Recording, live: Callable[[], Ranker]) -> None:
        self._recording = recording
        self._live = live

    def rank(self, claim: str, passages: Sequence[str], k: int) -> list[tuple[int, float]]:
        recording = self._recording
        key = retrieval_key(claim, passages)
        meta = recording.metadata()
        retrieval = meta.get("retrieval")
        stored = retrieval.get(key) if isinstance(retrieval, dict) else None
        if recording.write_protected:
            if stored is None:
                raise MissingRetrieval(key, claim)
            return _ranked(stored, k, len(passages), key)
        if stored is not None and recording.mode.plays_back:
            return _ranked(stored, k, len(passages), key)
        live = self._live()
        ranked = live.rank(claim, passages, k)
        meta.setdefault("retrieval", {})[key] = [[i, round(s, 4)] for i, s in ranked]
        # Which ranker chose: replay ignores it, a diff of the cassette shows a change.
        meta["ranker"] = describe(live)
        recording.cassette.dirty = True
        return ranked


_QUOTE_POLICY_KEYS = ("quote_match", "quote_similarity")


def _recorded_quote_policy(meta: Mapping[str, Any]) -> dict[str, Any]:
    recorded = {key: meta[key] for key in _QUOTE_POLICY_KEYS if key in meta}
    return recorded or {"quote_match": "exact"}


def _describe_policy(policy: Mapping[str, Any]) -> str:
    text = f"quote match {policy.get('quote_match')}"
    if "quote_similarity" in policy:
        text += f" (similarity {policy['quote_similarity']})"
    return text


# A judge that could not be reached left no HTTP exchange to replay; its failure is
# kept in the metadata instead, so a panel that decided without it replays alike.
_FAILURES_KEY = "judge_failures"
# Failures recorded this way: the ones with no HTTP reply (an HTTP error is an exchange).
_UNANSWERED = frozenset({Reason.JUDGE_UNAVAILABLE})


class _QuotePolicyCheckedJudge:
    """The claim's judge; a replayed reply must have been recorded under the
    quote policy in force, and a judge that could not be reached when recording
    fails the same way in replay. Everything else is the wrapped judge's."""

    def __init__(self, recording: Recording, judge: Judge) -> None:
        self._recording = recording
        self._judge = judge

    @property
    def name(self) -> str:
        return self._judge.name

    def judge(self, claim: str, passages: Sequence[str]) -> JudgeReply:
        recording = self._recording
        recording.check_quote_policy()
        question = retrieval_key(claim, passages)
        call = recording.next_call(self.name, question)
        recorded = recording.recorded_failure(self.name, question, call)
        if recorded is not None:
            raise recorded
        try:
            return self._judge.judge(claim, passages)
        except StageFailed as exc:
            if exc.reason in _UNANSWERED:
                recording.record_failure(self.name, question, call, exc)
            raise

    def __getattr__(self, name: str) -> Any:
        return getattr(self._judge, name)


def _check_metadata(meta: Any) -> None:
    """citecheck's metadata must be what :class:`_RecordedRanker` wrote."""
    if not isinstance(meta, dict):
        raise CorruptRecording("its citecheck metadata is not a mapping")
    retrieval = meta.get("retrieval", {})
    if not isinstance(retrieval, dict):
        raise CorruptRecording("its retrieval metadata is not a mapping")
    for key, ranked in retrieval.items():
        ok = isinstance(ranked, list) and all(
            isinstance(pair, list)
            and len(pair) == 2
            and isinstance(pair[0], int)
            and isinstance(pair[1], int | float)
            for pair in ranked
        )
        if not ok:
            raise CorruptRecording(f"its retrieval metadata for {str(key)[:20]!r} is garbled")


def _ranked(stored: Any, k: int, passages: int, key: str) -> list[tuple[int, float]]:
    try:
        ranked = [(int(i), float(s)) for i, s in stored][:k]
    except (TypeError, ValueError):
        raise CorruptRecording("its retrieval metadata is garbled") from None
    for index, _ in ranked:
        if not 0 <= index < passages:
            raise CorruptRecording(
                f"its retrieval metadata for {key!r} names passage {index}, "
                f"but the page has {passages} (0 to {passages - 1})"
            )
    return ranked


@contextmanager
def open_recording(
    path: Path,
    mode: RecordMode | str,
    nodeid: str,
    tokens: Mapping[str, str | None],
    *,
    prompt_version: str | None = None,
    secrets: Sequence[str] = (),
    max_bytes: int | None = None,
    quote_policy: Mapping[str, Any] | None = None,
    terms: Terms = NEUTRAL,
    confirm: bool = True,
    joint: bool = True,
) -> Iterator[Recording]:
    """Open the claim's cassette and make it serve this thread's HTTP.

    Raises :class:`CorruptRecording` when the file cannot be read (see
    :func:`corrupt_detail` for the message). The caller saves with
    :meth:`Recording.finish`.
    """
    from pytest_citecheck.recording.cassette import Cassette
    from pytest_citecheck.recording.cassette_file import CorruptCassette
    from pytest_citecheck.recording.matching import token_placeholder
    from pytest_citecheck.recording.transport import ClaimHTTP, claim_http

    record_mode = RecordMode(mode)  # a mode's name from an API caller; ValueError if unknown
    placeholder = token_placeholder(tokens)
    if record_mode.starts_empty:
        cassette = Cassette(path)
    else:
        try:
            cassette = Cassette.load(path, placeholder)
        except CorruptCassette as exc:
            raise CorruptRecording(exc.why) from None
        _check_metadata(cassette.metadata.get(METADATA_KEY, {}))
    values = tuple(v for v in (*tokens.values(), *secrets) if v and len(v) >= 4)
    http = ClaimHTTP(cassette, record_mode, placeholder, values, max_bytes)
    recording = Recording(
        path,
        record_mode,
        nodeid,
        cassette,
        http,
        prompt_version,
        quote_policy=quote_policy,
        terms=terms,
        confirm=confirm,
        joint=joint,
    )
    with claim_http(http):
        yield recording
