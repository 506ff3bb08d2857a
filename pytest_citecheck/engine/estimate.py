"""What recording will cost, before any request: the dry run and the budget's estimate.

One claim's estimate follows what :class:`~pytest_citecheck.engine.pipeline.Verifier`
and :class:`~pytest_citecheck.stages.fetch.CrawlbaseFetcher` do:

- each distinct citation of a claim is verified once (the same one twice is
  verified once); each claim records into its own cassette, so two claims
  citing one URL crawl it twice;
- a URL citation is one crawl (normal token, readability, ``store=true``:
  1.5 credits) when the page is a plain article; the worst case is four: the
  readability retry on a thin page and both again with the JavaScript token
  (2 x 1.5 + 2 x 2.5 = 8 credits). A ``.pdf`` URL is one crawl of its file (1.5 credits),
  a page's four after it at worst (it served HTML); none with ``pdf_fetch = direct`` (it
  is downloaded). A citation with ``paywall:`` costs nothing (not crawled, not judged);
- every citation that reaches the judge is one judge call; a page that is gone
  (404/410), a redirect to the homepage, a soft 404 or a quote not in a document
  ends before the judge, so the judge-call figure is the most there can be;
- judge tokens: the prompt (:mod:`pytest_citecheck.stages.judges.prompt`) with the
  claim and the passage budget (``DEFAULT_TOP_K`` passages of ``MAX_WORDS``
  words), at about four characters a token; the reply at :data:`REPLY_TOKENS`;
- confirmation (unless turned off): each judge call may be followed by one
  confirmation call (:mod:`pytest_citecheck.stages.confirm`) whose prompt holds the
  claim and the quote's sentence(s), counted at :data:`EVIDENCE_WORDS` words; the
  figure is the most there can be (only supported/contradicted answers are confirmed).
  Providers count differently: these are estimates, the reports give the counts.
- joint judgment (unless turned off): a claim with two or more distinct citations that
  reach the judge may be judged on all of them together (:mod:`pytest_citecheck.engine.joint`,
  only when none supports it alone), one call whose prompt holds every source's passage
  budget, then its confirmation on one sentence or two per source: two calls at most.

Retries of a 429/503 are not counted as crawls: the Crawling API does not bill
them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from pytest_citecheck.claims.models import Citation, Claim
from pytest_citecheck.claims.results import Usage
from pytest_citecheck.core.defaults import DEFAULT_PDF_FETCH, DEFAULT_TOP_K
from pytest_citecheck.core.prices import Prices, money
from pytest_citecheck.core.record_mode import RecordMode
from pytest_citecheck.core.terms import NEUTRAL, Terms
from pytest_citecheck.core.text import plural
from pytest_citecheck.engine.aggregate import snapshot_usages
from pytest_citecheck.stages.passages import MAX_WORDS

if TYPE_CHECKING:
    from pytest_citecheck.stages.judges.prompt import Ask

# Steps 1-3 of the fetch rules at most: readability, without it, both with JavaScript.
WORST_CRAWLS = 4
# The calls beside a claim's first readings (ClaimEstimate.extra).
Extra = Literal["confirm", "joint"]
# Characters per token (the usual rule of thumb for English with BPE tokenizers) and
# characters per word of English prose (a word and its space).
CHARS_PER_TOKEN = 4.0
CHARS_PER_WORD = 6.0
# A reply: {"label", "quote" (a sentence or two), "confidence"}.
REPLY_TOKENS = 100
PASSAGES_SHOWN = DEFAULT_TOP_K
# The sentence(s) a confirmation call reads: a long sentence or two.
EVIDENCE_WORDS = 60
# The dry run names this many claims (to record, left by the budget) unless asked for all.
LISTED = 10


def _crawl_credits(worst: bool) -> float:
    from pytest_citecheck.stages.fetch import credits_for

    normal = credits_for("normal", 200, 200)
    if not worst:
        return normal
    return 2 * normal + 2 * credits_for("javascript", 200, 200)


def _shot_credits() -> float:
    """A page's picture (citecheck_screenshots): one JavaScript-token crawl, not stored."""
    from pytest_citecheck.stages.fetch import credits_for

    return credits_for("javascript", 200, 200, store=False)


def prompt_tokens(claim: str) -> int:
    """Estimated input tokens of one judge call about ``claim`` with a full passage budget."""
    from pytest_citecheck.stages.judges.prompt import verdict_ask

    ask = verdict_ask(claim, [""] * PASSAGES_SHOWN)
    return _ask_tokens(ask, PASSAGES_SHOWN * MAX_WORDS)


def joint_tokens(claim: str, sources: int, words: int = PASSAGES_SHOWN * MAX_WORDS) -> int:
    """Estimated input tokens of one joint judgment about ``claim`` on ``sources``
    sources of ``words`` words each (its confirmation: :data:`EVIDENCE_WORDS` each)."""
    from pytest_citecheck.stages.judges.joint import joint_ask

    ask = joint_ask(claim, [[""] * PASSAGES_SHOWN] * sources)
    return _ask_tokens(ask, sources * words)


def confirmation_tokens(claim: str) -> int:
    """Estimated input tokens of one confirmation call about ``claim``."""
    from pytest_citecheck.stages.judges.prompt import verdict_ask

    return _ask_tokens(verdict_ask(claim, [""]), EVIDENCE_WORDS)


def _ask_tokens(ask: Ask, words: int) -> int:
    """``ask``'s prompt, schema and frame with ``words`` words of page text, in tokens."""
    chars = len(ask.system) + len(ask.schema_json) + len(ask.user) + words * CHARS_PER_WORD
    return math.ceil(chars / CHARS_PER_TOKEN)


@dataclass(frozen=True)
class ClaimEstimate:
    """What recording one claim would spend: normal case, and the most it could."""

    judge: str
    crawls: int = 0
    worst_crawls: int = 0
    judge_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    credits: float = 0.0
    worst_credits: float = 0.0
    # Confirmation calls (at most one per judge call) and their tokens.
    confirm_calls: int = 0
    confirm_input_tokens: int = 0
    confirm_output_tokens: int = 0
    # Joint judgment calls (the reading and its confirmation) and their tokens.
    joint_calls: int = 0
    joint_input_tokens: int = 0
    joint_output_tokens: int = 0
    # Every citation is a document read here, none reaching the judge: the claim is
    # decided without a request, so it never gets a recording.
    local: bool = False
    # The judge is asked through the provider's batch API (``--judge-batch``): its price.
    batch: bool = False

    def extra(self, part: Extra) -> tuple[int, int, int]:
        """Calls, input and output tokens of the calls beside the first readings:
        the confirmation's or the joint judgment's."""
        if part == "confirm":
            return self.confirm_calls, self.confirm_input_tokens, self.confirm_output_tokens
        return self.joint_calls, self.joint_input_tokens, self.joint_output_tokens

    def cost(self, prices: Prices, worst: bool = True) -> float | None:
        """Money at ``prices`` (None when a price it needs is missing)."""
        credits = self.worst_credits if worst else self.credits
        tokens = {
            self.judge: (
                self.input_tokens + self.confirm_input_tokens + self.joint_input_tokens,
                self.output_tokens + self.confirm_output_tokens + self.joint_output_tokens,
            )
        }
        return prices.cost(credits, tokens, tokens if self.batch else None)


def estimate_claim(
    claim: Claim,
    judge: str,
    confirm: bool = True,
    batch: bool = False,
    joint: bool = True,
    pdf_fetch: str = DEFAULT_PDF_FETCH,
    screenshots: bool = False,
) -> ClaimEstimate:
    """The estimate for recording ``claim`` with the judge ``judge`` (``confirm``: with the
    confirmation calls; ``batch``: at the batch API's price; ``joint``: with the joint
    judgment of its sources; ``pdf_fetch``: how a ``.pdf`` URL is fetched; ``screenshots``:
    every page, a PDF too, pictured at worst: only a verdict a person must look at is)."""
    from pytest_citecheck.stages.fetch_rules import is_pdf

    pages = pdfs = judge_calls = 0
    citations = list(dict.fromkeys(claim.citations))
    for citation in citations:
        if citation.url is not None:
            if citation.paywall is not None:
                continue  # a known paywall: settled without a request
            if is_pdf(citation.url):
                pdfs += 1
            else:
                pages += 1
        elif not _document_reaches_judge(citation):
            continue
        judge_calls += 1
    tokens = prompt_tokens(claim.claim) if judge_calls else 0
    confirm_calls = judge_calls if confirm else 0
    normal, worst = _crawl_credits(worst=False), _crawl_credits(worst=True)
    # A PDF's file: one crawl (none downloaded directly), a page's crawls after it at worst.
    files = 0 if pdf_fetch == "direct" else pdfs
    crawls, worst_crawls = pages + files, (pages + pdfs) * WORST_CRAWLS + files
    credits, shot = (pages + files) * normal, _shot_credits() if screenshots else 0.0
    worst_credits = (pages + pdfs) * (worst + shot) + files * normal
    # The joint judgment: distinct sources reaching the judge (documents and pages).
    sources = judge_calls
    joint_calls = (1 + int(confirm)) if joint and sources >= 2 else 0
    joint_in = 0
    if joint_calls:
        joint_in = joint_tokens(claim.claim, sources)
        if confirm:
            joint_in += joint_tokens(claim.claim, sources, EVIDENCE_WORDS)
    return ClaimEstimate(
        joint_calls=joint_calls,
        joint_input_tokens=joint_in,
        joint_output_tokens=joint_calls * REPLY_TOKENS * 2,
        confirm_calls=confirm_calls,
        confirm_input_tokens=confirm_calls * confirmation_tokens(claim.claim),
        confirm_output_tokens=confirm_calls * REPLY_TOKENS,
        judge=judge,
        crawls=crawls,
        worst_crawls=worst_crawls,
        judge_calls=judge_calls,
        input_tokens=judge_calls * tokens,
        output_tokens=judge_calls * REPLY_TOKENS,
        credits=credits,
        worst_credits=worst_credits,
        local=not judge_calls and all(c.url is None for c in citations),
        batch=batch,
    )


def _document_reaches_judge(citation: Citation) -> bool:
    """A document citation is read locally: a quote that is not in it, or a section
    it does not have, is decided without the judge (as the pipeline does)."""
    from pytest_citecheck.stages.documents import Document

    if citation.document_path is None or (citation.quote is None and citation.section is None):
        return True
    try:
        document = Document.load(citation.document_path)
    except Exception:  # the pipeline reports it; count the call it might make
        return True
    if citation.quote is not None:
        provider = citation.quote_by == "provider"
        return document.find_quote(citation.quote, citation.section, provider) is not None
    return citation.section is None or document.section(citation.section) is not None


@dataclass
class Plan:
    """What recording a set of claims would do under one record mode. Its totals are
    its planned claims' estimates summed, in run order."""

    record_mode: RecordMode
    recorded: int = 0
    # Claims not recorded in this mode that have no recording either: replay fails them.
    no_recording: int = 0
    no_citations: int = 0
    # Claims whose document citations are decided here, with no request to record.
    local: int = 0
    # The claims to record, named for the user, each with its estimate (in run order).
    planned: list[tuple[str, ClaimEstimate]] = field(default_factory=list)
    # The recording budget the run would have (None: no limit of that kind).
    max_cost: float | None = None
    max_credits: float | None = None
    # The judge is asked through the provider's batch API: its calls cost its price.
    batch: bool = False

    def add(self, estimate: ClaimEstimate, name: str = "") -> None:
        self.planned.append((name, estimate))

    @property
    def _estimates(self) -> list[ClaimEstimate]:
        return [estimate for _, estimate in self.planned]

    @property
    def to_record(self) -> int:
        return len(self.planned)

    @property
    def crawls(self) -> int:
        return sum(e.crawls for e in self._estimates)

    @property
    def worst_crawls(self) -> int:
        return sum(e.worst_crawls for e in self._estimates)

    @property
    def credits(self) -> float:
        return sum((e.credits for e in self._estimates), 0.0)

    @property
    def worst_credits(self) -> float:
        return sum((e.worst_credits for e in self._estimates), 0.0)

    @property
    def confirm_calls(self) -> int:
        return sum(e.confirm_calls for e in self._estimates)

    @property
    def judge_calls(self) -> dict[str, int]:
        """Judge calls per judge (the judges that are asked, in run order)."""
        calls: dict[str, int] = {}
        for e in self._estimates:
            if e.judge_calls:
                calls[e.judge] = calls.get(e.judge, 0) + e.judge_calls
        return calls

    @property
    def tokens(self) -> dict[str, tuple[int, int]]:
        """The first reading's tokens per judge (in, out)."""
        return _tokens_by_judge(
            (e.judge, e.input_tokens, e.output_tokens) for e in self._estimates if e.judge_calls
        )

    @property
    def joint_calls(self) -> int:
        return sum(e.joint_calls for e in self._estimates)

    @property
    def joint_tokens(self) -> dict[str, tuple[int, int]]:
        """The joint judgments' tokens per judge (in, out)."""
        return self._tokens_of("joint")

    @property
    def confirm_tokens(self) -> dict[str, tuple[int, int]]:
        """The confirmation's tokens per judge (in, out)."""
        return self._tokens_of("confirm")

    def _tokens_of(self, part: Extra) -> dict[str, tuple[int, int]]:
        """The tokens per judge of the ``part`` calls of the planned claims."""
        spent = ((e.judge, e.extra(part)) for e in self._estimates)
        return _tokens_by_judge((judge, i, o) for judge, (calls, i, o) in spent if calls)

    def all_tokens(self) -> dict[str, tuple[int, int]]:
        """Tokens per judge, the confirmation's included (what the cost is of)."""
        return _tokens_by_judge(
            (judge, i, o)
            for by_judge in (self.tokens, self.confirm_tokens, self.joint_tokens)
            for judge, (i, o) in by_judge.items()
        )

    @property
    def total_judge_calls(self) -> int:
        return sum(self.judge_calls.values())

    def lines(
        self,
        prices: Prices | None = None,
        terms: Terms = NEUTRAL,
        *,
        listed: int | None = LISTED,
        list_all: str | None = None,
    ) -> list[str]:
        """The dry run's report, options named in ``terms``; the last line is
        machine-readable. Claims are named up to ``listed`` (None: all);
        ``list_all`` is how to ask for all of them (e.g. ``-v``)."""
        prices = prices or Prices()
        out = [f"citecheck dry run (record mode {self.record_mode}): nothing was sent"]
        replayed = (
            f"{self.recorded} replayed"
            if self.record_mode.replay_only
            else f"{self.recorded} already recorded (replayed, free)"
        )
        if self.no_recording:
            replayed += f", {self.no_recording} no recording" + (
                f" (mode none records nothing: choose a record mode with "
                f"{terms.option('record_mode')})"
                if self.record_mode.replay_only
                else ""
            )
        out.append(
            f"  claims: {self.to_record} to record, {replayed}"
            + (f", {self.no_citations} without citations" if self.no_citations else "")
            + (
                f", {self.local} decided locally (document quotes and sections, no request)"
                if self.local
                else ""
            )
        )
        out.append(
            f"  crawls: {self.crawls} (at most {self.worst_crawls} with readability and "
            "JavaScript retries)"
        )
        per_judge = ", ".join(f"{spec} {n}" for spec, n in sorted(self.judge_calls.items()))
        calls = f"  judge calls: {self.total_judge_calls} at most"
        out.append(calls + (f" ({per_judge})" if per_judge else ""))
        tin, tout = _in_and_out(self.tokens)
        out.append(f"  judge tokens (estimate): {tin} in / {tout} out")
        if self.confirm_calls:
            cin, cout = _in_and_out(self.confirm_tokens)
            out.append(
                f"  confirmation calls: {self.confirm_calls} at most, tokens (estimate) "
                f"{cin} in / {cout} out (off with {terms.option('no_confirm')})"
            )
        if self.joint_calls:
            jin, jout = _in_and_out(self.joint_tokens)
            out.append(
                f"  joint judgments: {self.joint_calls} judge calls at most (claims whose "
                f"sources none supports alone, with the confirmation), tokens (estimate) "
                f"{jin} in / {jout} out (off with {terms.option('no_joint')})"
            )
        out.append(f"  credits: {self.credits:g} (at most {self.worst_credits:g})")
        tokens = self.all_tokens()
        if prices.any:
            batch = tokens if self.batch else None
            low = prices.cost(self.credits, tokens, batch)
            high = prices.cost(self.worst_credits, tokens, batch)
            if low is None or high is None:
                missing = prices.missing(self.worst_credits, tokens, terms.option)
                out.append(f"  cost: unknown, set {' and '.join(missing)}")
            else:
                at = (
                    f", the judge calls at the batch API's price ({terms.option('judge_batch')})"
                    if self.batch
                    else ""
                )
                out.append(f"  cost: {money(low)} (at most {money(high)}{at})")
        else:
            out.append(
                f"  cost: set {terms.option('price_credit')} and {terms.option('prices')} to "
                "see it in money"
            )
        names = [name for name, _ in self.planned]
        if names:
            out.append("  to record:")
            out += _listed(names, listed, list_all)
        out += self._budget_lines(prices, listed, list_all)
        out.append(
            f"dry run: claims={self.to_record} crawls={self.worst_crawls} "
            f"judge_calls={self.total_judge_calls} confirm_calls={self.confirm_calls} "
            f"joint_calls={self.joint_calls} credits={self.worst_credits:g}"
        )
        return out

    def _budget_lines(self, prices: Prices, listed: int | None, list_all: str | None) -> list[str]:
        """Whether the budget stops the recording, and the claims it would leave.

        As the run's budget does: a claim starts only when its worst case fits in
        what is left, and once one does not, it and every claim after it are left.
        The run spends what the pages take, so two figures: with the normal cost
        already spent, and with every claim taking its worst case."""
        from pytest_citecheck.engine.budget import Budget

        if (self.max_cost is None and self.max_credits is None) or not self.planned:
            return []
        budget = f"  budget ({Budget(prices, self.max_cost, self.max_credits).describe()}):"
        normal = self._stops(prices, worst=False)
        worst = self._stops(prices, worst=True)
        if normal is None or worst is None:
            return [f"{budget} cannot tell whether it stops the recording without every price"]
        total = len(self.planned)
        claims = plural(total, "claim")
        if worst == total:
            return [f"{budget} enough for all {claims}, even at the most they could take"]
        if normal == total:
            head = (
                f"{budget} enough for all {claims} at the normal cost; if pages need the "
                f"retries it stops after {worst}, leaving:"
            )
            left = worst
        else:
            head = (
                f"{budget} stops the recording after {normal} of {claims} (after {worst} if "
                "pages need the retries), leaving:"
            )
            left = normal
        return [head, *_listed([name for name, _ in self.planned[left:]], listed, list_all)]

    def _stops(self, prices: Prices, worst: bool) -> int | None:
        """How many claims the run's budget lets start, one after the other, each
        spending its normal (or its ``worst``) case (None: the money limit needs a
        price that is not set)."""
        from pytest_citecheck.engine.budget import Budget

        budget = Budget(prices, self.max_cost, self.max_credits)
        for started, (_, estimate) in enumerate(self.planned):
            cost = estimate.cost(prices, worst=worst)
            if self.max_cost is not None and cost is None:
                return None
            reservation = budget.reserve(estimate)
            if isinstance(reservation, str):
                return started
            credits = estimate.worst_credits if worst else estimate.credits
            budget.settle(reservation, cost or 0.0, credits)
        return len(self.planned)


def _listed(names: list[str], listed: int | None, list_all: str | None) -> list[str]:
    """Claim names, one a line, at most ``listed`` of them and how many more."""
    shown = names if listed is None else names[:listed]
    out = [f"    {name}" for name in shown]
    if len(names) > len(shown):
        how = f" ({list_all} lists them all)" if list_all else ""
        out.append(f"    ... and {len(names) - len(shown)} more{how}")
    return out


def _tokens_by_judge(tokens: Iterable[tuple[str, int, int]]) -> dict[str, tuple[int, int]]:
    """``(judge, in, out)`` summed per judge, the judges in the order first seen."""
    out: dict[str, tuple[int, int]] = {}
    for judge, tokens_in, tokens_out in tokens:
        i, o = out.get(judge, (0, 0))
        out[judge] = (i + tokens_in, o + tokens_out)
    return out


def plan(
    claims: Iterable[Claim],
    record_mode: RecordMode,
    will_record: Callable[[Claim], bool],
    judge_for: Callable[[Claim], str],
    name_for: Callable[[Claim], str] | None = None,
    confirm: bool = True,
    batch: bool = False,
    has_recording: Callable[[Claim], bool] | None = None,
    joint: bool = True,
    pdf_fetch: str = DEFAULT_PDF_FETCH,
    screenshots: bool = False,
) -> Plan:
    """The plan for ``claims``: ``will_record(claim)`` says whether it would be
    recorded; ``name_for(claim)`` names it in the list (default: its id); ``batch``:
    the judge is asked through the batch API; ``has_recording(claim)``: a claim not
    recorded has a recording to replay (None: every one has)."""
    out = Plan(record_mode, batch=batch)
    for claim in claims:
        if not claim.citations:
            out.no_citations += 1
        elif will_record(claim):
            estimate = estimate_claim(
                claim, judge_for(claim), confirm, batch, joint, pdf_fetch, screenshots
            )
            if estimate.local:
                out.local += 1
            else:
                out.add(estimate, name_for(claim) if name_for is not None else claim.id)
        elif has_recording is None or has_recording(claim):
            out.recorded += 1
        else:
            out.no_recording += 1
    return out


def spend(
    results: Iterable[object], prices: Prices
) -> tuple[float, dict[str, tuple[int, int]], float | None]:
    """Credits, tokens per judge and money (None: a price is missing) of verdicts; the
    calls answered through a batch API are counted at its price."""
    credits, tokens, batch, _ = judge_spend(results)
    return credits, tokens, prices.cost(credits, tokens, batch)


def judge_spend(
    results: Iterable[object],
) -> tuple[float, dict[str, tuple[int, int]], dict[str, tuple[int, int]], int]:
    """Credits; tokens per judge; of those, the tokens answered through a batch API;
    and how many judge calls the batch API answered."""
    credits = 0.0
    tokens: dict[str, tuple[int, int]] = {}
    batch: dict[str, tuple[int, int]] = {}
    batch_calls = 0
    for result in results:
        for verdict in getattr(result, "verdicts", ()):
            credits += verdict.credits
            snapshot = verdict.archive.verdict if verdict.archive is not None else None
            if snapshot is not None and snapshot.judge:
                # A rotted citation's snapshot check (citecheck_wayback_verify).
                for usage in snapshot_usages(verdict):
                    i, o = tokens.get(snapshot.judge, (0, 0))
                    tokens[snapshot.judge] = (i + usage.input_tokens, o + usage.output_tokens)
            if not verdict.judge:
                continue
            # The first reading and the confirmation calls behind the verdict.
            usages = [verdict.usage, *(c.usage for c in verdict.confirmations())]
            batch_calls += _count(tokens, batch, verdict.judge, usages)
        joint = getattr(result, "joint", None)
        if joint is not None and joint.judge:
            # The claim's joint judgment and its confirmation (engine/joint.py).
            batch_calls += _count(tokens, batch, joint.judge, joint.usages())
    return credits, tokens, batch, batch_calls


def _count(
    tokens: dict[str, tuple[int, int]],
    batch: dict[str, tuple[int, int]],
    judge: str,
    usages: Iterable[Usage | None],
) -> int:
    """Add ``usages`` to ``judge``'s tokens (and the batch's); how many were batch calls."""
    batch_calls = 0
    for usage in usages:
        if usage is None:
            continue
        i, o = tokens.get(judge, (0, 0))
        tokens[judge] = (i + usage.input_tokens, o + usage.output_tokens)
        if usage.batch:
            i, o = batch.get(judge, (0, 0))
            batch[judge] = (i + usage.input_tokens, o + usage.output_tokens)
            batch_calls += 1
    return batch_calls


def _in_and_out(by_judge: Mapping[str, tuple[int, int]]) -> tuple[int, int]:
    """The tokens in and out of every judge of ``by_judge`` together."""
    return sum(i for i, _ in by_judge.values()), sum(o for _, o in by_judge.values())
