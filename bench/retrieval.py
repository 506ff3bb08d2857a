"""Retrieval benchmark: do the top k passages keep WiCE's gold evidence?

    python bench/retrieval.py [--data PATH] [--cuts shipped|words|both] [--cache-dir DIR]

Cuts every record's ``source_text`` into passages as the pipeline cuts a page
and ranks them against the record's claim with every ranker, in one run:

- ``bm25``, ``minilm``, ``hybrid``: what ``citecheck_ranker`` selects; the
  default is :func:`pytest_citecheck.stages.retrieval.default_ranker` (hybrid: BM25
  and MiniLM fused by min-max-normalised scores);
- ``hybrid-all-chunks``: the hybrid with MiniLM scoring every chunk of every
  passage (the default before it embedded only BM25's top candidate chunks);
- ``hybrid-6-chunks``: the hybrid embedding BM25's top 6 chunks of every page,
  a page shown whole included (the default before it embedded 4 and skipped
  pages of at most 3 passages);
- ``hybrid-always-asks``: the default before it skipped the model where BM25's
  candidates settle the three passages shown (it asked on every page of more);
- ``hybrid-rrf``: the same two fused by reciprocal rank (k=60) instead;
- ``minilm-whole``, ``hybrid-whole``: MiniLM embedding each passage whole (the
  model truncates at 256 word pieces) instead of its best 96-word chunk;
- ``rank-bm25``: BM25Okapi of the rank-bm25 package on the same tokens, the
  library bm25s was chosen over;
- ``word-overlap``: distinct claim words found in the passage (no BM25, no
  stop words), the baseline;
- ``oracle``: the fewest passages that hold a whole evidence set, the ceiling.

Measures, over the records with at least one evidence set found whole in the
passages (a sentence cut by a passage boundary counts when both halves are in
the top k):

Each ranker is asked for its top k for each k, as the pipeline asks for its top 3
(a ranker told that the caller reads its top k in page order may settle which
passages make it without ordering them):

- strict@k: the top k hold every sentence of one of the record's evidence sets;
- lenient@k: a top-k passage holds a gold sentence, or part of one cut at its edge;
- ms/passage: ranking time per passage; for the rankers that embed, the time
  to embed the record's claim and passages (cold, unless ``--cache-dir`` has
  them) is added to each.

After the table, the default's strict@3 is compared with every other ranker's
record by record: on how many records only one of the two keeps a whole
evidence set, and the two-sided sign test of that split. On 60 records a
difference of two or three records is what chance gives (p well above 0.05).

``--cuts words`` cuts long paragraphs every 200 words (the seed's rule) instead
of at sentence ends; ``both`` prints both tables. The last line is for the
default ranker and the shipped cuts:
``default ranker=<name> strict@3=<x> lenient@3=<y>``.

Held-out data: ``bench/wice.py`` converts WiCE's test split (and the dev
records not shipped) from github.com/ryokamoi/wice into this format, for
``--data``; nothing is chosen on it.

Data: WiCE (Kamoi et al. 2023), ODC-BY 1.0 annotations, Wikipedia claims
(CC BY-SA), page text archived by Common Crawl; see shared/data/README.md.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from math import comb
from pathlib import Path
from typing import Any

from pytest_citecheck.core.defaults import DEFAULT_TOP_K
from pytest_citecheck.stages.embedder import Embedder, EmbeddingStats, load_model
from pytest_citecheck.stages.passages import split_passages
from pytest_citecheck.stages.retrieval import (
    BM25Ranker,
    BuiltRanker,
    HybridRanker,
    MiniLMRanker,
    default_ranker,
    tokenize,
)
from pytest_citecheck.stages.text import normalise

# shared/data/ beside the checkout, or beside one of its parents (a git worktree).
DEFAULT_DATA = next(
    (
        found
        for parent in Path(__file__).resolve().parents[1:]
        if (found := parent / "shared" / "data" / "wice_dev.jsonl").exists()
    ),
    Path("shared/data/wice_dev.jsonl"),
)
KS = (1, 2, 3)
# The passages the pipeline shows the judge: the call that is timed.
SHOWN = DEFAULT_TOP_K
HYBRID_ALL = "hybrid-all-chunks"
ASKS = "hybrid-always-asks"
SIX = "hybrid-6-chunks"
_TOKEN = re.compile(r"\w+")

Rank = Callable[[str, Sequence[str], int], list[tuple[int, float]]]
# Where a sentence is in the passages: each option is the set of passages that
# together hold it (one passage, or two adjacent ones for a cut sentence).
Options = list[frozenset[int]]


# -- gold evidence ---------------------------------------------------------------


def locate(sentence: str, texts: Sequence[str]) -> Options:
    needle = normalise(sentence)
    inside = [frozenset({i}) for i, text in enumerate(texts) if needle in text]
    if inside:
        return inside
    return [
        frozenset({i, i + 1})
        for i in range(len(texts) - 1)
        if needle in f"{texts[i]} {texts[i + 1]}"
    ]


@dataclass
class Gold:
    """A record's evidence, located in its passages."""

    sets: list[list[Options]]  # evidence sets found whole: per sentence, its options
    passages: set[int]  # passages holding a gold sentence or part of one

    def strict(self, top: set[int]) -> bool:
        return any(all(any(o <= top for o in s) for s in ev) for ev in self.sets)

    def lenient(self, top: set[int]) -> bool:
        return bool(top & self.passages)

    def fewest(self) -> int:
        """The fewest passages that hold a whole evidence set (the oracle's k)."""
        best = sys.maxsize
        for evidence in self.sets:
            candidates = sorted({i for s in evidence for o in s for i in o})
            for n in range(1, min(len(candidates), best - 1, 6) + 1):
                if any(
                    all(any(o <= set(top) for o in s) for s in evidence)
                    for top in combinations(candidates, n)
                ):
                    best = min(best, n)
                    break
        return best


def gold_for(record: dict[str, Any], passages: Sequence[str]) -> Gold | None:
    texts = [normalise(p) for p in passages]
    sets: list[list[Options]] = []
    anywhere: set[int] = set()
    # 21 records have no evidence set (None) and a few have empty ones.
    for evidence in record.get("evidence_sets") or []:
        located = [locate(s, texts) for s in evidence or [] if normalise(s)]
        for options in located:
            anywhere |= {i for o in options for i in o}
        if located and all(located):
            sets.append(located)
    return Gold(sets, anywhere) if sets else None


# -- baselines -------------------------------------------------------------------


def overlap_rank(claim: str, passages: Sequence[str], k: int) -> list[tuple[int, float]]:
    """Distinct lower-cased claim words found in the passage; ties keep page order."""
    words = set(_TOKEN.findall(claim.lower()))
    scores = [float(len(words & set(_TOKEN.findall(p.lower())))) for p in passages]
    order = sorted(range(len(passages)), key=lambda i: (-scores[i], i))
    return [(i, scores[i]) for i in order[:k]]


def rank_bm25_rank(claim: str, passages: Sequence[str], k: int) -> list[tuple[int, float]]:
    """rank-bm25's BM25Okapi (k1=1.5, b=0.75) on the tokens BM25Ranker uses."""
    from rank_bm25 import BM25Okapi

    corpus = [tokenize(p) for p in passages]
    if not any(corpus):
        return [(i, 0.0) for i in range(min(k, len(passages)))]
    scores = [float(s) for s in BM25Okapi(corpus).get_scores(tokenize(claim))]
    order = sorted(range(len(passages)), key=lambda i: (-scores[i], i))
    return [(i, scores[i]) for i in order[:k]]


# -- the run ---------------------------------------------------------------------


@dataclass
class Score:
    strict: list[int] = field(default_factory=lambda: [0] * len(KS))
    lenient: list[int] = field(default_factory=lambda: [0] * len(KS))
    seconds: float = 0.0
    # Per record, in order: did the top 3 hold a whole evidence set? (paired comparisons)
    strict3: list[bool] = field(default_factory=list)

    def add(self, tops: dict[int, set[int]], gold: Gold, seconds: float) -> None:
        """``tops[k]``: the passages the ranker's top ``k`` holds, for each k in KS."""
        for n, k in enumerate(KS):
            self.strict[n] += gold.strict(tops[k])
            self.lenient[n] += gold.lenient(tops[k])
        self.strict3.append(gold.strict(tops[3]))
        self.seconds += seconds


def sign_test(wins: int, losses: int) -> float:
    """Two-sided exact sign test: how likely a split at least this uneven is
    when neither ranker is better (ties, records both get or both miss, drop out)."""
    n = wins + losses
    if n == 0:
        return 1.0
    tail = sum(comb(n, i) for i in range(min(wins, losses) + 1)) / 2**n
    return min(1.0, 2 * tail)


class AlwaysAsks(HybridRanker):
    """The default as it was before it skipped the model where BM25's candidates
    settle the passages shown: the model scores the candidates of every page that
    is not shown whole."""

    @staticmethod
    def settled(found: Any, k: int) -> bool:
        return False


@dataclass
class Contender:
    name: str
    rank: Rank
    # What the ranker embeds of a record (its embeddings' cost is added to its time).
    embeds: Callable[[str, Sequence[str]], list[str]] | None = None
    # Whose embedder pays for it (None: the shared one).
    embedder: Embedder | None = None


def contenders(
    default: BuiltRanker, embedder: Embedder, cache_dir: Path | None = None
) -> list[Contender]:
    """What ships (the default, and each ``citecheck_ranker`` choice) and the
    variants it was chosen over, sharing one embedder."""
    bm25 = BM25Ranker()
    chunked = MiniLMRanker(embedder)
    whole = MiniLMRanker(embedder, chunk_words=0)

    def of(minilm: MiniLMRanker) -> Callable[[str, Sequence[str]], list[str]]:
        return lambda claim, passages: [claim, *(c for p in passages for c in minilm.chunks(p))]

    # One function per embedding need: the rankers that share it share its cost.
    chunked_texts, whole_texts = of(chunked), of(whole)

    hybrid = HybridRanker(bm25, chunked)
    six = HybridRanker(bm25, MiniLMRanker(Embedder(cache_dir)), candidates=6)
    asks = AlwaysAsks(bm25, MiniLMRanker(Embedder(cache_dir)), shown=SHOWN)
    shipped = {
        "bm25": Contender("bm25", bm25.rank),
        "minilm": Contender("minilm", chunked.rank, chunked_texts),
        "hybrid": Contender("hybrid", hybrid.rank, hybrid.embeds),
    }
    shipped.pop(default.name)
    default_embeds = getattr(default, "embeds", None if default.name == "bm25" else chunked_texts)
    return [
        Contender(
            f"{default.name} (default)",
            default.rank,
            default_embeds,
            getattr(getattr(default, "semantic", None), "embedder", None),
        ),
        *shipped.values(),
        # The hybrid before it embedded only BM25's candidate chunks: every chunk.
        Contender(HYBRID_ALL, HybridRanker(bm25, chunked, candidates=None).rank, chunked_texts),
        # Its own embedder, so it pays for its embeddings cold as the default does.
        Contender(SIX, six.rank, lambda c, p: six.embeds(c, p), six.semantic.embedder),
        Contender(ASKS, asks.rank, lambda c, p: asks.embeds(c, p), asks.semantic.embedder),
        Contender("hybrid-rrf", HybridRanker(bm25, chunked, "rrf").rank, hybrid.embeds),
        Contender("minilm-whole", whole.rank, whole_texts),
        Contender("hybrid-whole", HybridRanker(bm25, whole).rank, whole_texts),
        Contender("rank-bm25", rank_bm25_rank),
        Contender("word-overlap", overlap_rank),
    ]


@dataclass
class Table:
    cuts: str
    records: int = 0
    scored: int = 0
    passages: int = 0
    scores: dict[str, Score] = field(default_factory=dict)
    oracle: list[int] = field(default_factory=lambda: [0] * len(KS))
    # Texts a ranker embeds for the top 3 the pipeline shows, over every record scored.
    embedded: dict[str, int] = field(default_factory=dict)


def run(
    records: list[dict[str, Any]],
    keep_sentences: bool,
    default: BuiltRanker,
    embedder: Embedder,
    cuts: str,
    cache_dir: Path | None = None,
) -> Table:
    table = Table(cuts=cuts, records=len(records))
    field_ = contenders(default, embedder, cache_dir)
    for c in field_:
        table.scores[c.name] = Score()
    for record in records:
        claim = record["claim"]
        passages = split_passages(record["source_text"], keep_sentences=keep_sentences)
        gold = gold_for(record, passages)
        if gold is None:
            continue  # no evidence annotated, or none found whole in the passages
        table.scored += 1
        table.passages += len(passages)
        # Each ranker that embeds pays for the embeddings it needs, measured
        # once (cold); its ranking then finds them in memory.
        costs: dict[Any, float] = {}
        for c in field_:
            if c.embeds is not None and c.embeds not in costs:
                started = time.perf_counter()
                (c.embedder or embedder).embed(c.embeds(claim, passages))
                costs[c.embeds] = time.perf_counter() - started
        for c in field_:
            if c.embeds is not None and (c.name == ASKS or c.name.endswith("(default)")):
                texts = len(set(c.embeds(claim, passages)))
                table.embedded[c.name] = table.embedded.get(c.name, 0) + texts
        for c in field_:
            # Asked for each k, as the pipeline asks for its top 3: a ranker told what
            # is shown may rank only as far as the set it is asked for. The time is
            # the pipeline's call (k=3) and the embeddings it needs.
            tops: dict[int, set[int]] = {}
            seconds = costs.get(c.embeds, 0.0)
            for k in sorted(KS, reverse=True):
                started = time.perf_counter()
                tops[k] = {i for i, _ in c.rank(claim, passages, k)}
                if k == SHOWN:
                    seconds += time.perf_counter() - started
            table.scores[c.name].add(tops, gold, seconds)
        fewest = gold.fewest()
        for n, k in enumerate(KS):
            table.oracle[n] += fewest <= k
    return table


def print_table(table: Table) -> None:
    n = table.scored
    print()
    print(
        f"cuts={table.cuts}: {table.records} records, {n} scored "
        f"({table.records - n} without an evidence set found whole), "
        f"{table.passages} passages ({table.passages / n:.1f} per record)"
    )
    heads = [f"strict@{k}" for k in KS] + [f"lenient@{k}" for k in KS]
    print(f"{'ranker':<18} " + " ".join(f"{h:>9}" for h in heads) + f" {'ms/passage':>10}")
    for name, s in table.scores.items():
        cells = [f"{x / n:>9.3f}" for x in (*s.strict, *s.lenient)]
        ms = 1000 * s.seconds / table.passages
        print(f"{name:<18} " + " ".join(cells) + f" {ms:>10.2f}")
    oracle = [f"{x / n:>9.3f}" for x in table.oracle] + [f"{'':>9}"] * len(KS)
    print(f"{'oracle':<18} " + " ".join(oracle) + f" {'':>10}")
    embedded = ", ".join(f"{name} {texts / n:.2f}" for name, texts in table.embedded.items())
    print(f"texts embedded per record for the top {SHOWN} shown: {embedded}")
    # Paired: on how many records does the default keep a whole evidence set in
    # its top 3 where another ranker does not, and the other way round?
    default, *others = table.scores.items()
    print()
    print(f"strict@3, {default[0]} against each ranker, record by record ({n} records):")
    heads = f"{'both':>5} {'neither':>7} {'only default':>12} {'only it':>7} {'sign test p':>11}"
    print(f"{'ranker':<18} {heads}")
    for name, s in others:
        pairs = list(zip(default[1].strict3, s.strict3, strict=True))
        wins = sum(a and not b for a, b in pairs)
        losses = sum(b and not a for a, b in pairs)
        both = sum(a and b for a, b in pairs)
        print(
            f"{name:<18} {both:>5} {n - both - wins - losses:>7} {wins:>12} {losses:>7} "
            f"{sign_test(wins, losses):>11.2f}"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--cuts", choices=["shipped", "words", "both"], default="shipped")
    parser.add_argument(
        "--cache-dir",
        type=Path,
        default=None,
        help="persistent embedding cache (default: none, every embedding is computed)",
    )
    args = parser.parse_args(argv)
    records = [json.loads(line) for line in args.data.read_text().splitlines() if line.strip()]

    started = time.perf_counter()
    load_model()
    print(f"model load (import + weights): {time.perf_counter() - started:.1f} s")
    default = default_ranker(args.cache_dir)
    # The default embeds with its own embedder, the others share one: each pays for
    # its own embeddings cold (unless --cache-dir has them).
    embedder = Embedder(args.cache_dir)

    plan = {"shipped": [("shipped", True)], "words": [("words", False)]}
    plan["both"] = plan["words"] + plan["shipped"]
    tables = [
        run(records, keep, default, embedder, cuts, args.cache_dir)
        for cuts, keep in plan[args.cuts]
    ]
    for table in tables:
        print_table(table)
    print()
    for who, used in (("default", default), ("others", embedder)):
        stats = getattr(used, "embedding_stats", None) or getattr(used, "stats", None)
        if stats is None or not isinstance(stats, EmbeddingStats):
            continue
        print(
            f"embeddings ({who}; the top 1, 2 and 3 each asked for): {stats.computed} "
            f"computed, {stats.from_disk} from the disk cache, {stats.from_memory} reused "
            "in memory"
        )
    last = tables[-1]
    mine = f"{default.name} (default)"
    score = last.scores[mine]
    strict3, lenient3 = (x[KS.index(3)] / last.scored for x in (score.strict, score.lenient))
    for other, how in (
        (ASKS, "the model on every page not shown whole"),
        (HYBRID_ALL, "every chunk embedded"),
        (SIX, "BM25's top 6 chunks"),
    ):
        theirs = last.scores[other]
        before3 = theirs.strict[KS.index(3)] / last.scored
        ms = {n: 1000 * last.scores[n].seconds / last.passages for n in (mine, other)}
        print(
            f"the default against {other} ({how}, a hybrid before): strict@3 {strict3:.3f} vs "
            f"{before3:.3f} (difference {strict3 - before3:+.3f}), ms/passage "
            f"{ms[mine]:.2f} vs {ms[other]:.2f}"
        )
    print(
        f"default ranker={default.name} strict@3={strict3:.3f} lenient@3={lenient3:.3f}"
        + ("" if last.cuts == "shipped" else f" (cuts={last.cuts})")
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
