"""Retrieval benchmark: does the top-k keep WiCE's gold evidence?

Embeds the passages of every record of shared/data/wice_dev.jsonl with
all-MiniLM-L6-v2 (the ranker the pipeline uses) and, in the same run, ranks
them with naive word overlap (no BM25, no stop words) as a baseline. A
passage is *gold* when it contains a sentence of one of the record's
annotated evidence sets (or, for a sentence cut by a passage boundary, when
the sentence runs across it and its neighbour).

    python bench/retrieval.py [--data PATH] [--layout text|sentences|both]

``text`` cuts ``source_text`` as the pipeline cuts a page (WiCE joins
sentences by single newlines, so most records are one long paragraph cut
every 200 words); ``sentences`` makes each sentence a paragraph first, so
passages never cut a sentence.

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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_citecheck.guard import normalise
from pytest_citecheck.passages import split_passages
from pytest_citecheck.retrieval import MiniLMRanker, load_model

DEFAULT_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "wice_dev.jsonl"
_TOKEN = re.compile(r"\w+")

Rank = Callable[[str, Sequence[str], int], list[tuple[int, float]]]


def passages_for(record: dict[str, Any], layout: str) -> list[str]:
    if layout == "sentences":
        return split_passages("\n\n".join(record["source_sentences"]))
    return split_passages(record["source_text"])


def evidence_sentences(record: dict[str, Any]) -> list[str]:
    # 21 records have no evidence set (None) and a few have empty ones.
    sets = record.get("evidence_sets") or []
    sentences = {s for evidence_set in sets if evidence_set for s in evidence_set}
    return sorted(s for s in sentences if normalise(s))


def gold_passages(passages: Sequence[str], sentences: Sequence[str]) -> set[int]:
    """Indices of passages holding a gold sentence (both halves of a cut one)."""
    texts = [normalise(p) for p in passages]
    gold: set[int] = set()
    for sentence in sentences:
        needle = normalise(sentence)
        inside = {i for i, text in enumerate(texts) if needle in text}
        if not inside:
            inside = {
                j
                for i in range(len(texts) - 1)
                if needle in f"{texts[i]} {texts[i + 1]}"
                for j in (i, i + 1)
            }
        gold |= inside
    return gold


def overlap_rank(claim: str, passages: Sequence[str], k: int) -> list[tuple[int, float]]:
    """Distinct lower-cased claim words found in the passage; ties keep page order."""
    words = set(_TOKEN.findall(claim.lower()))
    scores = [float(len(words & set(_TOKEN.findall(p.lower())))) for p in passages]
    order = sorted(range(len(passages)), key=lambda i: (-scores[i], i))
    return [(i, scores[i]) for i in order[:k]]


@dataclass
class Result:
    records: int = 0
    passages: int = 0
    seconds: float = 0.0
    top1: int = 0
    top3: int = 0
    chance_top1: float = 0.0  # expected top-1 hits of a random ranking

    def add(self, ranked: list[tuple[int, float]], gold: set[int]) -> None:
        self.top1 += bool(ranked and ranked[0][0] in gold)
        self.top3 += bool({i for i, _ in ranked[:3]} & gold)


def run(records: list[dict[str, Any]], layout: str, rank: Rank) -> tuple[Result, Result, int]:
    model, baseline = Result(), Result()
    skipped = 0
    for record in records:
        passages = passages_for(record, layout)
        gold = gold_passages(passages, evidence_sentences(record))
        if not gold:
            skipped += 1  # no annotated evidence, or none found in the passages
            continue
        for result, ranker in ((model, rank), (baseline, overlap_rank)):
            started = time.perf_counter()
            ranked = ranker(record["claim"], passages, len(passages))
            result.seconds += time.perf_counter() - started
            result.records += 1
            result.passages += len(passages)
            result.add(ranked, gold)
            result.chance_top1 += len(gold) / len(passages)
    return model, baseline, skipped


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--layout", choices=["text", "sentences", "both"], default="both")
    args = parser.parse_args(argv)
    records = [json.loads(line) for line in args.data.read_text().splitlines() if line.strip()]

    started = time.perf_counter()
    load_model()
    print(f"model load (import + weights): {time.perf_counter() - started:.1f} s")
    ranker = MiniLMRanker()

    layouts = ["text", "sentences"] if args.layout == "both" else [args.layout]
    header = (
        f"{'layout':<10} {'ranker':<13} {'records':>7} {'passages':>8} {'time s':>7} "
        f"{'pass/s':>7} {'top-1':>13} {'top-3':>13}"
    )
    for layout in layouts:
        model, baseline, skipped = run(records, layout, ranker.rank)
        print()
        print(
            f"layout={layout}: {len(records)} records, "
            f"{skipped} skipped (no evidence annotated or locatable)"
        )
        print(header)
        for name, r in (("MiniLM", model), ("word-overlap", baseline)):
            rate = r.passages / r.seconds if r.seconds else float("inf")
            print(
                f"{layout:<10} {name:<13} {r.records:>7} {r.passages:>8} {r.seconds:>7.2f} "
                f"{rate:>7.1f} {r.top1:>4}/{r.records} {r.top1 / r.records:>5.1%} "
                f"{r.top3:>4}/{r.records} {r.top3 / r.records:>5.1%}"
            )
        print(
            f"{'':<10} random ranking, expected top-1: "
            f"{model.chance_top1 / model.records:.1%} "
            f"(mean {model.passages / model.records:.1f} passages per record)"
        )
        pairs = (("top-1", model.top1, baseline.top1), ("top-3", model.top3, baseline.top3))
        for label, a, b in pairs:
            ratio = f"{a / b:.2f}x" if b else "n/a"
            print(f"{'':<10} MiniLM / word-overlap {label}: {ratio}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
