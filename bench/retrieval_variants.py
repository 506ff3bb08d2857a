"""The ranker variants measured against the shipped hybrid, on dev and held-out data.

    python bench/retrieval_variants.py [--data PATH ...] [--cache-dir DIR]

bench/retrieval.py measures what ships. This script measures what was tried
on top of it and not shipped, each variant once, on every ``--data`` file
(default: shared/data/wice_dev.jsonl; held-out files come from bench/wice.py),
with the shipped ``hybrid`` as the baseline in the same run:

- ``stemmed``: BM25 on Snowball-stemmed words (needs PyStemmer; skipped without);
- ``bigrams``: BM25 plus 0.25 x BM25 over adjacent word pairs (phrase matches,
  as in the sequential dependence model, Metzler & Croft 2005);
- ``coverage``: the first passage by score, then each next one by 0.7 x score +
  0.3 x the IDF weight of claim words it adds to those already chosen (a
  whole evidence set is often spread over passages);
- ``lead``: +0.1 (of the [0, 1] fused score) for the page's first passage,
  where titles, bylines and dates are (WiCE's evidence sets often need them);
- ``sentence-bm25``: BM25 over the page's sentences, a passage scoring its best;
- ``zscore``: fusion by z-scores instead of min-max;
- ``chunks48``: MiniLM over 48-word chunks instead of 96 (twice the embeddings).

For each file: strict@3 and lenient@3 (see bench/retrieval.py), first-passage
lenient recall, and the records on which only the baseline or only the variant
keeps a whole evidence set in its top 3, with the two-sided sign test over all
files together. A variant worth shipping wins clearly on held-out data, not by
two records on dev.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any

from retrieval import DEFAULT_DATA, Gold, gold_for, sign_test

from pytest_citecheck.stages.embedder import Embedder
from pytest_citecheck.stages.passages import split_passages
from pytest_citecheck.stages.retrieval import BM25Ranker, MiniLMRanker, tokenize

Scores = list[float]
_SENTENCE = re.compile(r"\n+|(?<=[.!?])\s+(?=[A-Z\"“])")


@dataclass
class Case:
    claim: str
    passages: list[str]
    gold: Gold
    bm25: Scores
    minilm: Scores


def minmax(scores: Sequence[float]) -> Scores:
    low, high = min(scores), max(scores)
    return [0.0] * len(scores) if high == low else [(s - low) / (high - low) for s in scores]


def zscore(scores: Sequence[float]) -> Scores:
    mean = sum(scores) / len(scores)
    sd = math.sqrt(sum((s - mean) ** 2 for s in scores) / len(scores))
    return [0.0] * len(scores) if sd == 0 else [(s - mean) / sd for s in scores]


def fuse(*parts: Sequence[float], norm: Callable[[Sequence[float]], Scores] = minmax) -> Scores:
    return [sum(xs) for xs in zip(*(norm(p) for p in parts), strict=True)]


def order(scores: Sequence[float]) -> list[int]:
    return sorted(range(len(scores)), key=lambda i: (-scores[i], i))


def bm25_lists(query: list[str], docs: list[list[str]]) -> Scores:
    """BM25 (bm25s, Lucene, k1=1.5, b=0.75) over pre-tokenised documents."""
    import bm25s

    vocab = {t for d in docs for t in d}
    query = [t for t in query if t in vocab]
    if not query:
        return [0.0] * len(docs)
    index = bm25s.BM25(k1=1.5, b=0.75, method="lucene")
    index.index(docs, show_progress=False)
    return [float(s) for s in index.get_scores(query)]


def words(texts: Sequence[str], stemmer: Any = None) -> list[list[str]]:
    import bm25s

    out = bm25s.tokenize(
        list(texts), stopwords="en", stemmer=stemmer, show_progress=False, return_ids=False
    )
    return [list(t) for t in out]


def pairs(tokens: list[str]) -> list[str]:
    return [f"{a} {b}" for a, b in pairwise(tokens)]


# -- the variants ----------------------------------------------------------------


def baseline(case: Case) -> list[int]:
    return order(fuse(case.bm25, case.minilm))


def stemmed(stemmer: Any) -> Callable[[Case], list[int]]:
    def rank(case: Case) -> list[int]:
        docs = words(case.passages, stemmer)
        query = words([case.claim], stemmer)[0]
        return order(fuse(bm25_lists(query, docs), case.minilm))

    return rank


def bigrams(case: Case) -> list[int]:
    docs = words(case.passages)
    query = words([case.claim])[0]
    phrase = bm25_lists(pairs(query), [pairs(d) for d in docs])
    lexical = [u + 0.25 * b for u, b in zip(case.bm25, phrase, strict=True)]
    return order(fuse(lexical, case.minilm))


def coverage(case: Case) -> list[int]:
    claim = set(tokenize(case.claim))
    held = [set(d) & claim for d in words(case.passages)]
    n = len(held)
    idf = {
        t: math.log(1 + (n - (df := sum(t in h for h in held)) + 0.5) / (df + 0.5)) for t in claim
    }
    total = sum(idf[t] for t in claim if any(t in h for h in held)) or 1.0
    relevance = minmax(fuse(case.bm25, case.minilm))
    chosen: list[int] = []
    covered: set[str] = set()
    rest = list(range(n))
    while rest and len(chosen) < 3:
        if chosen:
            value = {
                i: 0.7 * relevance[i] + 0.3 * sum(idf[t] for t in held[i] - covered) / total
                for i in rest
            }
        else:
            value = {i: relevance[i] for i in rest}
        best = max(rest, key=lambda i: (value[i], -i))
        chosen.append(best)
        rest.remove(best)
        covered |= held[best]
    return chosen + sorted(rest, key=lambda i: (-relevance[i], i))


def lead(case: Case) -> list[int]:
    scores = [s / 2 for s in fuse(case.bm25, case.minilm)]
    scores[0] += 0.1
    return order(scores)


def sentence_bm25(case: Case) -> list[int]:
    sentences: list[str] = []
    owner: list[int] = []
    for i, passage in enumerate(case.passages):
        for sentence in _SENTENCE.split(passage):
            if sentence.strip():
                sentences.append(sentence)
                owner.append(i)
    scores = bm25_lists(words([case.claim])[0], words(sentences))
    best = [0.0] * len(case.passages)
    for i, s in zip(owner, scores, strict=True):
        best[i] = max(best[i], s)
    return order(fuse(best, case.minilm))


def by_zscore(case: Case) -> list[int]:
    return order(fuse(case.bm25, case.minilm, norm=zscore))


def chunks48(embedder: Embedder) -> Callable[[Case], list[int]]:
    small = MiniLMRanker(embedder, chunk_words=48)
    return lambda case: order(fuse(case.bm25, small.scores(case.claim, case.passages)))


# -- the run ---------------------------------------------------------------------


def load(path: Path, bm25: BM25Ranker, minilm: MiniLMRanker) -> list[Case]:
    cases = []
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        record = json.loads(line)
        passages = split_passages(record["source_text"])
        gold = gold_for(record, passages)
        if gold is None:
            continue
        claim = record["claim"]
        scores = bm25.scores(claim, passages), minilm.scores(claim, passages)
        cases.append(Case(claim, passages, gold, *scores))
    return cases


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--data", type=Path, action="append", default=None)
    parser.add_argument("--cache-dir", type=Path, default=None)
    args = parser.parse_args(argv)
    files: list[Path] = args.data or [DEFAULT_DATA]

    embedder = Embedder(args.cache_dir)
    bm25, minilm = BM25Ranker(), MiniLMRanker(embedder)
    data = {path: load(path, bm25, minilm) for path in files}

    variants: dict[str, Callable[[Case], list[int]] | None] = {"hybrid (shipped)": baseline}
    try:
        import Stemmer

        variants["stemmed"] = stemmed(Stemmer.Stemmer("english"))
    except ImportError:
        variants["stemmed"] = None
    variants |= {
        "bigrams": bigrams,
        "coverage": coverage,
        "lead": lead,
        "sentence-bm25": sentence_bm25,
        "zscore": by_zscore,
        "chunks48": chunks48(embedder),
    }

    hits: dict[str, list[bool]] = {}
    heads = " | ".join(f"{p.stem[:14]:>14} s@3   l@3   l@1" for p in files)
    print(f"{'variant':<17} {heads} | {'+':>3} {'-':>3} {'p':>5}")
    for name, rank in variants.items():
        if rank is None:
            print(f"{name:<17} (skipped: PyStemmer is not installed)")
            continue
        cells, mine = [], []
        for cases in data.values():
            strict3 = lenient3 = lenient1 = 0
            for case in cases:
                top = rank(case)
                ok = case.gold.strict(set(top[:3]))
                mine.append(ok)
                strict3 += ok
                lenient3 += case.gold.lenient(set(top[:3]))
                lenient1 += case.gold.lenient(set(top[:1]))
            n = len(cases)
            cells.append(
                f"{f'{strict3}/{n}':>14} {strict3 / n:.3f} {lenient3 / n:.3f} {lenient1 / n:.3f}"
            )
        hits[name] = mine
        base = hits["hybrid (shipped)"]
        wins = sum(a and not b for a, b in zip(mine, base, strict=True))
        losses = sum(b and not a for a, b in zip(mine, base, strict=True))
        print(
            f"{name:<17} {' | '.join(cells)} | {wins:>3} {losses:>3} "
            f"{sign_test(wins, losses):>5.2f}"
        )
    print("(+/-: records where only the variant / only the shipped hybrid keeps a whole")
    print(" evidence set in its top 3, over all files; p: two-sided sign test)")
    print(f"embeddings: {embedder.stats.computed} computed, {embedder.stats.from_disk} from disk")
    return 0


if __name__ == "__main__":
    sys.exit(main())
