"""Record and replay: one VCR.py cassette per claim.

A cassette holds every HTTP exchange of one claim (Crawling API and judge)
plus, in VCR's cassette metadata, what is not HTTP but must replay exactly:
which passages retrieval chose (so CI needs no embedding model and no float
bits of the recording machine) and the judge prompt version the replies were
given for. A recording goes stale when the page, the claim, the judge model or
the prompt changes; replay then reports it by claim instead of guessing.

vcr and yaml are imported only when a cassette is opened.
"""

from __future__ import annotations

import hashlib
import json
import shlex
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_citecheck.errors import StageFailed
from pytest_citecheck.models import JudgeReply, Reason
from pytest_citecheck.retrieval import Ranker
from pytest_citecheck.secrets import (
    REDACTED,
    SECRET_HEADERS,
    TOKEN_PLACEHOLDERS,
    redact_values,
    scrub,
)

if TYPE_CHECKING:
    from pytest_citecheck.judges.base import Judge

RECORD_MODES = ("none", "once", "new_episodes", "all", "rewrite")
METADATA_KEY = "citecheck"
METADATA_FORMAT = 1


def cassette_path(claim_file: Path, claim_id: str) -> Path:
    """``cassettes/<file stem>/<claim id>.yaml`` beside the claim file."""
    return claim_file.parent / "cassettes" / claim_file.stem / f"{claim_id}.yaml"


def record_command(nodeid: str, mode: str = "once") -> str:
    """The command that (re-)records one claim or test."""
    return f"pytest --citecheck --citecheck-record={mode} {shlex.quote(nodeid)}"


def retrieval_key(claim: str, passages: Sequence[str]) -> str:
    """Identifies one retrieval question: the claim and the exact page passages."""
    digest = hashlib.sha256(claim.encode())
    for passage in passages:
        digest.update(b"\x1e" + passage.encode())
    return digest.hexdigest()[:20]


def _is_json(body: Any) -> Any:
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    if not isinstance(body, str) or not body:
        return None
    try:
        return json.loads(body)
    except ValueError:
        return None


def _post_body_matcher(r1: Any, r2: Any) -> None:
    """Judge replies replay by what was asked: POST bodies must be equal as JSON.

    GETs are not compared (a GET recorded with ``body: null`` vs a live ``b''``
    must still match, WIRE.md §6.3 gotcha 12).
    """
    if r1.method != "POST" or r2.method != "POST":
        return
    left, right = _is_json(r1.body), _is_json(r2.body)
    if left is None or right is None:
        left, right = r1.body, r2.body
    if left != right:
        raise AssertionError("the request bodies differ (the judge was asked something else)")


@dataclass
class Recording:
    """An open cassette for one claim, with the knobs the pipeline needs."""

    path: Path
    mode: str
    nodeid: str
    cassette: Any
    prompt_version: str | None = None
    # The guard's quote policy (QuotePolicy.metadata()); None: not checked.
    quote_policy: Mapping[str, Any] | None = None

    @property
    def replaying(self) -> bool:
        return self.mode == "none"

    # -- metadata ------------------------------------------------------------

    def metadata(self) -> dict[str, Any]:
        """citecheck's part of the cassette metadata (VCR raises MissingMetadataError
        under ``none`` when the cassette has none)."""
        meta: dict[str, Any] = self.cassette.get_metadata(
            METADATA_KEY, {"format": METADATA_FORMAT, "retrieval": {}}
        )
        return meta

    def note_prompt_version(self, version: str) -> None:
        if self.replaying:
            return
        meta = self.metadata()
        if meta.get("judge_prompt_version") != version:
            meta["judge_prompt_version"] = version
            self.cassette.dirty = True

    def recorded_prompt_version(self) -> str | None:
        try:
            value = self.metadata().get("judge_prompt_version")
        except Exception:
            return None
        return str(value) if value is not None else None

    # -- the guard's quote policy (DESIGN §3.11) ---------------------------------
    # Recorded with the claim like the prompt version: a judge reply recorded
    # under one quote-match mode or threshold is stale under another.

    def note_quote_policy(self) -> None:
        if self.replaying or self.quote_policy is None:
            return
        meta = self.metadata()
        if _recorded_quote_policy(meta) != dict(self.quote_policy):
            for key in _QUOTE_POLICY_KEYS:
                meta.pop(key, None)
            meta.update(self.quote_policy)
            self.cassette.dirty = True

    def check_quote_policy(self) -> None:
        """Raise ``stale_recording`` when replaying a judge reply recorded under
        another quote policy (a cassette without one was recorded under exact)."""
        if not self.replaying or self.quote_policy is None or not self.path.exists():
            return
        try:
            recorded = _recorded_quote_policy(self.metadata())
        except Exception:
            recorded = _recorded_quote_policy({})
        current = dict(self.quote_policy)
        if recorded == current:
            return
        where = f"{self.path.parent.name}/{self.path.name}"
        raise StageFailed(
            Reason.STALE_RECORDING,
            f"the recording in {where} was made with {_describe_policy(recorded)}, the current "
            f"setting is {_describe_policy(current)}; record it with: "
            f"{record_command(self.nodeid, 'rewrite')}",
        )

    def judge(self, judge: Judge) -> Judge:
        """``judge``, refusing to replay a reply recorded under another quote policy."""
        return _QuotePolicyCheckedJudge(self, judge)

    def ranker(self, live: Callable[[], Ranker]) -> Ranker:
        """A ranker that replays retrieval's recorded choices, or records new ones."""
        return _RecordedRanker(self, live)

    # -- errors --------------------------------------------------------------

    def classify_error(self, exc: BaseException) -> tuple[str, str] | None:
        """Turn VCR's "can't play this" errors into a reason and the fix."""
        name = type(exc).__name__
        if name not in ("CannotOverwriteExistingCassetteException", "MissingMetadataError"):
            return None
        where = f"{self.path.parent.name}/{self.path.name}"
        request = getattr(exc, "failed_request", None)
        if not self.path.exists():
            what = f"no recording ({where} does not exist)"
            reason = Reason.NO_RECORDING
        elif request is None:
            what = f"the recording in {where} has no retrieval for this page and claim"
            reason = Reason.STALE_RECORDING
        else:
            what = f"the recording in {where} has no reply for {request.method} " + scrub(
                request.uri
            )
            reason = Reason.STALE_RECORDING
        recorded = self.recorded_prompt_version()
        current = self.prompt_version
        if recorded and current and recorded != current:
            what += f" (recorded with judge prompt {recorded}, current is {current})"
        mode = "once" if not self.path.exists() else "rewrite"
        return reason, f"{what}; record it with: {record_command(self.nodeid, mode)}"


class _RecordedRanker:
    def __init__(self, recording: Recording, live: Callable[[], Ranker]) -> None:
        self._recording = recording
        self._live = live

    def rank(self, claim: str, passages: Sequence[str], k: int) -> list[tuple[int, float]]:
        recording = self._recording
        key = retrieval_key(claim, passages)
        if recording.replaying:
            stored = recording.metadata().get("retrieval", {}).get(key)
            if stored is None:
                from vcr.errors import MissingMetadataError

                raise MissingMetadataError(cassette=recording.cassette, key=key)
            return [(int(i), float(s)) for i, s in stored][:k]
        meta = recording.metadata()
        stored = meta.setdefault("retrieval", {}).get(key)
        if stored is not None and recording.mode in ("once", "new_episodes"):
            return [(int(i), float(s)) for i, s in stored][:k]
        ranked = self._live().rank(claim, passages, k)
        meta["retrieval"][key] = [[i, round(s, 4)] for i, s in ranked]
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


class _QuotePolicyCheckedJudge:
    """The claim's judge; a replayed reply must have been recorded under the
    quote policy in force. Everything else is the wrapped judge's."""

    def __init__(self, recording: Recording, judge: Judge) -> None:
        self._recording = recording
        self._judge = judge

    @property
    def name(self) -> str:
        return self._judge.name

    def judge(self, claim: str, passages: Sequence[str]) -> JudgeReply:
        self._recording.check_quote_policy()
        return self._judge.judge(claim, passages)

    async def ajudge(self, claim: str, passages: Sequence[str]) -> JudgeReply:
        self._recording.check_quote_policy()
        reply: JudgeReply = await self._judge.ajudge(claim, passages)  # type: ignore[attr-defined]
        return reply

    def __getattr__(self, name: str) -> Any:
        return getattr(self._judge, name)


# -- VCR configuration --------------------------------------------------------


def _scrub_token(tokens: Mapping[str, str | None]) -> Callable[..., str]:
    by_value = {value: TOKEN_PLACEHOLDERS[kind] for kind, value in tokens.items() if value}

    def replace(key: str, value: str, request: Any) -> str:
        if value in TOKEN_PLACEHOLDERS.values():
            return value
        return by_value.get(value, REDACTED)

    return replace


def _scrub_response(response: dict[str, Any]) -> dict[str, Any]:
    headers = response.get("headers", {})
    for name in list(headers):
        if name.lower() in SECRET_HEADERS:
            del headers[name]
        elif name.lower() == "storage_url":
            headers[name] = [scrub(v) for v in headers[name]]
    # Bodies lose only the exact secret values: a page or a judge reply that
    # merely looks like a credential is evidence and must replay as recorded.
    # Nor a local server's model path in a JSON judge reply (judges.compat.recordable_reply);
    # pages (text/markdown) are never touched.
    from pytest_citecheck.judges.compat import recordable_reply

    content_types = [
        value
        for name, values in headers.items()
        if name.lower() == "content-type"
        for value in (values if isinstance(values, list) else [values])
    ]
    is_json = any("json" in str(value).lower() for value in content_types)

    def clean(text: str) -> str:
        text = redact_values(text)
        return recordable_reply(text) if is_json else text

    body = response.get("body", {})
    string = body.get("string")
    if isinstance(string, bytes):
        cleaned = clean(string.decode("utf-8", "replace"))
        if cleaned != string.decode("utf-8", "replace"):
            body["string"] = cleaned.encode()
    elif isinstance(string, str):
        body["string"] = clean(string)
    return response


def _scrub_request(request: Any) -> Any:
    if isinstance(request.body, bytes | str) and request.body:
        text = request.body.decode() if isinstance(request.body, bytes) else request.body
        cleaned = redact_values(text)
        if cleaned != text:
            request.body = cleaned.encode() if isinstance(request.body, bytes) else cleaned
    return request


def make_vcr(mode: str, tokens: Mapping[str, str | None]) -> Any:
    """A VCR configured so no secret reaches a cassette and judge calls match by body."""
    import vcr

    vcr_mode = {"rewrite": "all"}.get(mode, mode)
    config = vcr.VCR(
        record_mode=vcr_mode,
        filter_query_parameters=[("token", _scrub_token(tokens))],
        filter_headers=list(SECRET_HEADERS),
        before_record_request=_scrub_request,
        before_record_response=_scrub_response,
        decode_compressed_response=True,
        match_on=("method", "scheme", "host", "port", "path", "query", "citecheck_body"),
    )
    # VCR's default allow_playback_repeats=False is what we need: identical
    # requests in one claim are made once (the pipeline memoises them), and a
    # retried request (429 then 200) must replay in recorded order.
    config.register_matcher("citecheck_body", _post_body_matcher)
    return config


@contextmanager
def open_recording(
    path: Path,
    mode: str,
    nodeid: str,
    tokens: Mapping[str, str | None],
    prompt_version: str | None = None,
    quote_policy: Mapping[str, Any] | None = None,
) -> Iterator[Recording]:
    """Open the claim's cassette for the duration of its verification."""
    if mode not in RECORD_MODES:
        raise ValueError(f"record mode must be one of {', '.join(RECORD_MODES)}")
    if mode == "rewrite" and path.exists():
        path.unlink()
    if mode != "none":
        # VCR's persister creates the folder with a check-then-create race that
        # xdist workers recording claims of the same file lose.
        path.parent.mkdir(parents=True, exist_ok=True)
    # Under "none" a missing file is fine to open: every request then fails
    # with a "no recording" error, and a claim that needs no HTTP (a fabricated
    # quote) still passes.
    with make_vcr(mode, tokens).use_cassette(str(path)) as cassette:
        recording = Recording(path, mode, nodeid, cassette, prompt_version, quote_policy)
        yield recording
        if prompt_version and not recording.replaying and len(cassette) > 0:
            recording.note_prompt_version(prompt_version)
        if not recording.replaying and len(cassette) > 0:
            recording.note_quote_policy()
