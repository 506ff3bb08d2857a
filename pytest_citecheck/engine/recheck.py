"""Citation rot: fetch recorded citations live again and compare (no pytest).

Replay says "the page said this when we recorded it"; :class:`Rechecker` says
whether it still does. For each claim with a cassette it replays the recording
(the recorded verdicts and the page text the cassette holds), fetches every cited
URL live again through the same fetcher and rules (Crawling API, JavaScript
escalation, :func:`~pytest_citecheck.stages.fetch_rules.fetch_page`), and gives
each citation one :class:`RecheckStatus`:

- ``same``: the page text is unchanged (after :func:`~pytest_citecheck.stages.text.normalise`);
- ``changed``: the text changed, but the recorded evidence quote is still on the
  page (exactly, or as the guard's quote policy allows), or there was no quote;
- ``evidence_gone``: the recorded quote is no longer on the page; the judge is
  asked again on the live page and its verdict is reported beside the old one;
- ``page_gone``: 404, 410, a soft 404 or an empty page; ``moved``: the deep link
  now lands on the homepage; ``blocked``: a bot challenge, an origin refusal or a
  paywall (``paywalled``);
- ``error``: nothing could be compared (no replayable recording, a failed crawl).

What the recheck fetched (and the judge's new answers) is recorded in a cassette
of its own, :func:`live_cassette_path`, never in the original. With ``update``
a claim whose pages are not all ``same`` is verified again in full on the live
pages -- the judge's recorded replies are replayed where its question is
unchanged -- and that recording replaces the original cassette.
"""

from __future__ import annotations

import contextlib
import difflib
import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from pytest_citecheck.claims.labels import Label, Reason
from pytest_citecheck.claims.models import Citation, Claim
from pytest_citecheck.claims.results import ClaimResult, JudgeReply, Passage, Verdict
from pytest_citecheck.core.defaults import RecheckStatus
from pytest_citecheck.core.errors import ConfigurationError, CrawlDeferred
from pytest_citecheck.core.files import sweep_stale_temporaries
from pytest_citecheck.core.providers import TokenKind
from pytest_citecheck.core.record_mode import RecordMode
from pytest_citecheck.core.terms import NEUTRAL, Terms
from pytest_citecheck.core.urls import fetch_url
from pytest_citecheck.engine.core import Engine
from pytest_citecheck.engine.preflight import CRAWLBASE_TOKEN_ENV
from pytest_citecheck.engine.settings import EngineSettings, StageHooks
from pytest_citecheck.stages.quote_policy import EXACT, QuotePolicy

if TYPE_CHECKING:
    from pytest_citecheck.recording.recorder import Recording
    from pytest_citecheck.stages.fetch_rules import Fetcher, FetchResult


LIVE_FOLDER = "recheck"

# A live page that settled without text, by reason: what became of the page.
_SETTLED = {
    Reason.HTTP_404: RecheckStatus.PAGE_GONE,
    Reason.HTTP_410: RecheckStatus.PAGE_GONE,
    Reason.SOFT_404: RecheckStatus.PAGE_GONE,
    Reason.EMPTY_PAGE: RecheckStatus.PAGE_GONE,
    Reason.REDIRECTED_TO_HOMEPAGE: RecheckStatus.MOVED,
    Reason.BLOCKED: RecheckStatus.BLOCKED,
    Reason.PAYWALLED: RecheckStatus.BLOCKED,
}
_EVIDENCE_LABELS = (Label.SUPPORTED, Label.CONTRADICTED)


def live_cassette_path(cassette: Path) -> Path:
    """Where the recheck of ``cassettes/<stem>/<id>.yaml`` records:
    ``cassettes/<stem>/recheck/<id>.yaml`` (a claim id never holds a ``/``)."""
    return cassette.parent / LIVE_FOLDER / cassette.name


def recheck_folder_problems(cassettes: Iterable[Path], terms: Terms) -> list[str]:
    """Each folder a recheck of ``cassettes`` could not save its live recordings into
    (beside each cassette that exists: only those are rechecked)."""
    from pytest_citecheck.engine.preflight import cassette_folder_problems

    # A recheck replays already: replaying instead is no way out.
    return cassette_folder_problems(
        [live_cassette_path(c).parent for c in cassettes if c.is_file()],
        replace(terms, replay=None),
    )


class CitationRecheck(BaseModel):
    """One cited URL, then and now."""

    url: str
    status: RecheckStatus
    detail: str | None = None
    recorded: Verdict
    # What the live fetch gave: a label/reason when it settled without text.
    live_label: Label | None = None
    live_reason: str | None = None
    live_final_url: str | None = None
    live_original_status: int | None = None
    live_rid: str | None = None
    # The recorded page's rid in the Storage API, for ``citecheck audit page`` (None:
    # none was recorded, or the recording was synthesized and names no stored page).
    stored_rid: str | None = None
    # The token kind that stored it (Storage may be kept per token: asked first).
    stored_with: TokenKind | None = None
    # The judge asked again on the live page (evidence_gone, or an update).
    new: Verdict | None = None
    # The passage that held the recorded evidence, and the live passage closest to it.
    recorded_passage: str | None = None
    live_passage: str | None = None
    credits: float = 0.0


class ClaimRecheck(BaseModel):
    """One claim's rechecked citations (document citations are not rechecked)."""

    nodeid: str
    id: str
    claim: str
    cassette: str
    live_cassette: str | None = None
    # True when ``update`` replaced the original cassette with the live recording.
    updated: bool = False
    citations: list[CitationRecheck] = Field(default_factory=list)
    # The recording replayed (None: nothing was replayed); not part of the report.
    result: ClaimResult | None = Field(default=None, exclude=True)


@dataclass
class _Remembering:
    """A fetcher that keeps what it fetched for each URL of the claim at hand (per
    thread: claims are rechecked concurrently, each in one thread); with ``reuse``,
    a URL is fetched once and served from memory afterwards."""

    inner: Fetcher
    reuse: bool = False
    terms: Terms = NEUTRAL
    _local: threading.local = field(default_factory=threading.local, repr=False)

    @property
    def pages(self) -> dict[str, FetchResult]:
        pages: dict[str, FetchResult] | None = getattr(self._local, "pages", None)
        if pages is None:
            pages = self._local.pages = {}
        return pages

    def fetch(self, url: str) -> FetchResult:
        if self.reuse and url in self.pages:
            return self.pages[url]
        from pytest_citecheck.stages.fetch_rules import fetch_raw

        result = fetch_raw(self.inner, url, self.terms)
        self.pages[url] = result
        return result

    def close(self) -> None:
        close = getattr(self.inner, "close", None)
        if callable(close):
            close()


def _remembering_engine(
    settings: EngineSettings,
    hooks: StageHooks,
    environ: Mapping[str, str] | None,
    reuse: bool,
) -> tuple[Engine, Callable[[], _Remembering]]:
    engine = Engine.from_settings(settings, environ=environ)

    def make_fetcher() -> _Remembering:
        inner = hooks.make_fetcher() if hooks.make_fetcher else None
        if inner is None:
            from pytest_citecheck.stages.fetch import CrawlbaseFetcher

            inner = CrawlbaseFetcher.from_env(
                engine.environ,
                require_tokens=False,
                retry=engine.retry_policy(),
                client=engine.http_client(),
            )
        return _Remembering(inner, reuse=reuse, terms=engine.settings.terms)

    engine.stages.hooks = replace(hooks, make_fetcher=make_fetcher)

    def fetcher() -> _Remembering:
        built = engine.fetcher()
        assert isinstance(built, _Remembering)
        return built

    return engine, fetcher


class Rechecker:
    """Rechecks recorded claims against the live pages (see the module docstring).

    ``settings`` are the engine's (judge, ranker, quote policy, caps); the record
    mode is chosen here. ``hooks`` may supply a fetcher, judge or ranker, as for
    :class:`~pytest_citecheck.engine.core.Engine`.
    """

    def __init__(
        self,
        settings: EngineSettings,
        *,
        update: bool = False,
        hooks: StageHooks | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        hooks = hooks or StageHooks()
        self.update = update
        self.settings = settings
        self.replay, self._replay_fetcher = _remembering_engine(
            replace(settings, record_mode=RecordMode.NONE), hooks, environ, reuse=False
        )
        self.live, self._live_fetcher = _remembering_engine(
            replace(settings, record_mode=RecordMode.NEW_EPISODES), hooks, environ, reuse=True
        )
        # Live folders emptied by --update, removed at close: while claims are rechecked
        # concurrently, another claim may be about to record into the same folder.
        self._emptied: set[Path] = set()

    def __enter__(self) -> Rechecker:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        self.replay.close()
        self.live.close()
        for folder in sorted(self._emptied):
            with contextlib.suppress(OSError):  # not empty: a recheck kept its recording
                folder.rmdir()

    def preflight(self, cassettes: Iterable[Path] = ()) -> None:
        """Fetching live needs the Crawling API token (unless a custom fetcher is
        used), and each of ``cassettes`` a folder the recheck can save its live
        recording into (:func:`live_cassette_path`, beside the cassette) before a page
        is fetched. Raises one :class:`ConfigurationError` listing the problems."""
        from pytest_citecheck.stages.fetch import CrawlbaseFetcher

        problems: list[str] = []
        custom = not isinstance(self._live_fetcher().inner, CrawlbaseFetcher)
        if not custom and not self.live.environ.get(CRAWLBASE_TOKEN_ENV):
            problems.append(
                f"{CRAWLBASE_TOKEN_ENV} is not set: a recheck fetches every cited page live "
                f"again through the Crawling API; set {CRAWLBASE_TOKEN_ENV} to your Crawlbase "
                "Normal token"
            )
        problems += recheck_folder_problems(cassettes, self.settings.terms)
        if len(problems) == 1:
            raise ConfigurationError(problems[0])
        if problems:
            raise ConfigurationError("\n".join(f"  - {p}" for p in problems))

    # -- one claim -------------------------------------------------------------------

    def recheck(self, claim: Claim, cassette: Path, nodeid: str) -> ClaimRecheck:
        """Recheck ``claim`` recorded in ``cassette``; never raises for a claim's failure."""
        out = ClaimRecheck(nodeid=nodeid, id=claim.id, claim=claim.claim, cassette=str(cassette))
        cited = url_citations(claim)
        if not cited:
            return out
        if not cassette.is_file():
            detail = f"there is no recording to recheck ({_where(cassette)} does not exist)"
            out.citations = [error_check(c.target, detail) for c in cited]
            return out
        recorded, pages = self._replayed(claim, cassette, nodeid)
        out.result = recorded
        verdicts = dict(zip(claim.citations, recorded.verdicts, strict=False))
        live_path = live_cassette_path(cassette)
        # What a previous recheck recorded is not this one's: a file there afterwards
        # is this run's recording.
        live_path.unlink(missing_ok=True)
        fetcher = self._live_fetcher()
        fetcher.pages.clear()
        try:
            judge = self.live.judge(self.settings.judge_for(claim))
            with self.live.recording(live_path, nodeid, judge) as rec:
                _seed(rec, cassette, self.live)
                checks = [
                    self._compare(c, verdicts[c], pages.get(fetch_url(c.url or ""))) for c in cited
                ]
                self._ask_again(rec, claim, cited, checks)
                rec.cassette.interactions = [i for i in rec.cassette.interactions if i.played]
        except CrawlDeferred:
            raise  # a Crawler job's JavaScript page is on its way: rechecked when it comes
        except Exception as exc:  # a corrupt or unwritable cassette, a bug: never a pass
            out.citations = [error_check(c.target, f"{type(exc).__name__}: {exc}") for c in cited]
            return out
        from pytest_citecheck.recording.recorder import synthesized

        if not synthesized(cassette):
            for check in checks:
                check.stored_rid = check.recorded.rid
                check.stored_with = check.recorded.stored_with()
        out.citations = checks
        if live_path.is_file():
            out.live_cassette = str(live_path)
        if self.update and _needs_update(checks) and self._replace(cassette, live_path, checks):
            out.updated = True
            out.live_cassette = None
        return out

    def _replayed(
        self, claim: Claim, cassette: Path, nodeid: str
    ) -> tuple[ClaimResult, dict[str, FetchResult]]:
        fetcher = self._replay_fetcher()
        fetcher.pages.clear()
        result = self.replay.verify(claim, cassette, nodeid)
        return result, dict(fetcher.pages)

    def _compare(
        self, citation: Citation, recorded: Verdict, recorded_page: FetchResult | None
    ) -> CitationRecheck:
        from pytest_citecheck.stages.fetch_rules import apply_rules, fetch_page

        url = citation.url or ""
        if recorded.label is Label.ERROR:
            detail = f"the recording cannot be replayed ({recorded.reason}): {recorded.detail}"
            return error_check(url, detail, recorded)
        max_bytes = self.settings.max_page_bytes
        try:
            live = fetch_page(self._live_fetcher(), url, max_bytes)
        except CrawlDeferred:
            raise
        except Exception as exc:  # a configuration error, a bug: reported, never a pass
            return error_check(url, f"the live fetch failed: {type(exc).__name__}: {exc}", recorded)
        check = CitationRecheck(
            url=url,
            status=RecheckStatus.ERROR,
            recorded=recorded,
            live_label=live.label,
            live_reason=live.reason,
            live_final_url=live.final_url,
            live_original_status=live.original_status,
            live_rid=live.rid,
            credits=live.credits,
        )
        then = apply_rules(fetch_url(url), recorded_page, max_bytes).text if recorded_page else None
        status, why = classify(recorded, then, live, self.settings.quote_policy)
        check.status, check.detail = status, why
        if status in (RecheckStatus.CHANGED, RecheckStatus.EVIDENCE_GONE) and live.text:
            check.recorded_passage, check.live_passage = _side_by_side(recorded, live.text)
        return check

    def _ask_again(
        self,
        rec: Recording,
        claim: Claim,
        cited: Sequence[Citation],
        checks: Sequence[CitationRecheck],
    ) -> None:
        """The judge on the live pages: where the evidence is gone, or (update) the
        whole claim when any page is not the same."""
        if self.update and _needs_update(checks):
            ask = claim
        else:
            gone = [c for c, k in zip(cited, checks, strict=True) if _asks(k)]
            if not gone:
                return
            ask = claim.model_copy(update={"citations": gone})
        result = self.live.verify_in(rec, ask)
        new = dict(zip(ask.citations, result.verdicts, strict=False))
        for citation, check in zip(cited, checks, strict=True):
            verdict = new.get(citation)
            if verdict is not None and (self.update or _asks(check)):
                check.new = verdict

    def _replace(self, cassette: Path, live_path: Path, checks: Sequence[CitationRecheck]) -> bool:
        """Put the live recording in place of the original, atomically; only a
        recording that verified without an error replaces anything."""
        if not live_path.is_file() or any(
            c.new is not None and c.new.label is Label.ERROR for c in checks
        ):
            return False
        fd, tmp = tempfile.mkstemp(dir=cassette.parent, prefix=f".{cassette.name}.", suffix=".tmp")
        os.close(fd)
        try:
            shutil.copyfile(live_path, tmp)
            os.replace(tmp, cassette)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        sweep_stale_temporaries(cassette)
        live_path.unlink()
        self._emptied.add(live_path.parent)
        return True


# -- helpers -------------------------------------------------------------------------


def classify(
    recorded: Verdict, then: str | None, live: FetchResult, policy: QuotePolicy = EXACT
) -> tuple[RecheckStatus, str | None]:
    """What became of a citation: its recorded verdict, the page text the recording
    held (``then``; None when it settled without text) and the live fetch (rules
    applied). ``policy`` decides whether the recorded quote is still on the page."""
    from pytest_citecheck.stages.text import normalise

    if live.text is None:
        if (live.label, live.reason) == (recorded.label, recorded.reason):
            return RecheckStatus.SAME, f"as recorded: {live.reason or live.label}"
        return _SETTLED.get(live.reason or "", RecheckStatus.ERROR), live.detail
    if then is not None and normalise(then) == normalise(live.text):
        return RecheckStatus.SAME, None
    if then is None:
        was = recorded.reason or recorded.label.value
        return RecheckStatus.CHANGED, f"the page has text again (recorded: {was})"
    quote = _evidence(recorded)
    if quote is None:
        return RecheckStatus.CHANGED, "the page changed; the recorded verdict quoted nothing"
    if quote_on_page(live.text, quote, recorded.label, policy):
        return RecheckStatus.CHANGED, "the page changed; the evidence quote is still on it"
    return RecheckStatus.EVIDENCE_GONE, "the evidence quote is no longer on the page"


def quote_on_page(text: str, quote: str, label: Label, policy: QuotePolicy = EXACT) -> bool:
    """Whether the guard would accept ``quote`` for ``label`` anywhere on the page."""
    from pytest_citecheck.stages.guard import guard
    from pytest_citecheck.stages.passages import split_passages

    passages = [Passage(index=i, text=t) for i, t in enumerate(split_passages(text))]
    reply = JudgeReply(label=label.value, quote=quote, confidence=1.0)  # type: ignore[arg-type]
    return guard(reply, passages, policy).label is label


def url_citations(claim: Claim) -> list[Citation]:
    seen: list[Citation] = []
    for citation in claim.citations:
        if citation.url is not None and citation not in seen:
            seen.append(citation)
    return seen


def _where(path: Path) -> str:
    return f"{path.parent.name}/{path.name}"


def error_check(url: str, detail: str, recorded: Verdict | None = None) -> CitationRecheck:
    recorded = recorded or Verdict(url=url, label=Label.ERROR, reason=Reason.NO_RECORDING)
    return CitationRecheck(url=url, status=RecheckStatus.ERROR, detail=detail, recorded=recorded)


def _evidence(verdict: Verdict) -> str | None:
    """The quote a recorded verdict stood on (None: it stood on no quote)."""
    if verdict.label in _EVIDENCE_LABELS and verdict.evidence_quote and verdict.reason is None:
        return verdict.evidence_quote
    return None


def _asks(check: CitationRecheck) -> bool:
    return check.status is RecheckStatus.EVIDENCE_GONE


def _needs_update(checks: Sequence[CitationRecheck]) -> bool:
    return any(c.status not in (RecheckStatus.SAME, RecheckStatus.ERROR) for c in checks)


def _seed(rec: Recording, original: Path, engine: Engine) -> None:
    """Start the live recording with the original's judge replies and retrieval
    choices: a question asked again unchanged is answered as recorded, at no cost.
    The Crawling API's replies (GET) are never seeded: pages are fetched live."""
    from pytest_citecheck.core.providers import TOKEN_ENV
    from pytest_citecheck.recording.cassette import Cassette
    from pytest_citecheck.recording.matching import token_placeholder
    from pytest_citecheck.recording.recorder import METADATA_FORMAT, METADATA_KEY

    tokens: dict[str, str | None] = {k: engine.environ.get(env) for k, env in TOKEN_ENV.items()}
    loaded = Cassette.load(original, token_placeholder(tokens))
    rec.cassette.interactions = [i for i in loaded.interactions if i.key[0] != "GET"]
    meta = loaded.metadata.get(METADATA_KEY)
    retrieval = meta.get("retrieval") if isinstance(meta, dict) else None
    live_meta: dict[str, Any] = {
        "format": METADATA_FORMAT,
        "retrieval": dict(retrieval) if isinstance(retrieval, dict) else {},
        "recheck_of": _where(original),
    }
    if isinstance(meta, dict) and "ranker" in meta:
        live_meta["ranker"] = meta["ranker"]
    rec.cassette.metadata = {METADATA_KEY: live_meta}
    rec.cassette.recorded = 0


def _side_by_side(recorded: Verdict, live_text: str) -> tuple[str | None, str | None]:
    """The recorded passage that held the evidence (else the first shown), and the
    live passage that holds the quote, else the one most like the recorded passage."""
    from pytest_citecheck.stages.guard import quote_in_passages
    from pytest_citecheck.stages.passages import split_passages

    shown = recorded.passages
    if not shown:
        return None, None
    quote = _evidence(recorded)
    then = next((p.text for p in shown if quote and quote_in_passages(quote, [p])), shown[0].text)
    live = split_passages(live_text)
    if not live:
        return then, None
    if quote:
        holding = [t for t in live if quote_in_passages(quote, [Passage(index=0, text=t)])]
        if holding:
            return then, holding[0]
    return then, max(live, key=lambda t: _likeness(then, t))


def _likeness(a: str, b: str) -> float:
    matcher = difflib.SequenceMatcher(None, a.split(), b.split(), autojunk=False)
    if matcher.real_quick_ratio() == 0:
        return 0.0
    return matcher.ratio()
