"""What a judge panel does to verdict errors, with simulated judges of known error rates.

    python bench/panel.py [--data PATH] [--rounds N] [--seed S]

This shows the mechanism, not real models: every simulated member answers WiCE
dev's gold label (``supported`` or ``not_found``) and, with probability ``p``,
independently of the other members and of the record, flips it to one of the two
other labels (uniformly). Real judges' errors are correlated (the same hard
record fools several models), so a real panel gains less than this table shows.

Each record is judged ``--rounds`` times (a fixed seed: the table is the same on
every run) by panels of 1, 3 and 5 members, decided by the shipped rule
(:func:`pytest_citecheck.engine.panel.decide`), ``majority`` and ``unanimous``.
One member is the baseline, measured in the same run. Columns:

- ``wrong``: the final label differs from the gold label;
- ``silent``: wrong and not marked for review (what a CI gate would pass or fail
  on without a human seeing it);
- ``false sup``: labelled ``supported`` where the gold label is ``not_found``;
- ``review``: marked for review (the panel did not agree).

Data: WiCE (Kamoi et al. 2023), ODC-BY 1.0 annotations, Wikipedia claims
(CC BY-SA); see shared/data/README.md.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

from pytest_citecheck.claims.labels import Label
from pytest_citecheck.claims.results import PanelVote
from pytest_citecheck.engine.panel import RULES, decide

DEFAULT_DATA = next(
    (
        found
        for parent in Path(__file__).resolve().parents[1:]
        if (found := parent / "shared" / "data" / "wice_dev.jsonl").exists()
    ),
    Path("shared/data/wice_dev.jsonl"),
)
LABELS = (Label.SUPPORTED, Label.CONTRADICTED, Label.NOT_FOUND)
SIZES = (1, 3, 5)
ERROR_RATES = (0.1, 0.2, 0.3)


def member_vote(gold: Label, p: float, rng: random.Random, name: str) -> PanelVote:
    label = gold
    if rng.random() < p:
        label = rng.choice([other for other in LABELS if other is not gold])
    quote = "a quote" if label in (Label.SUPPORTED, Label.CONTRADICTED) else None
    return PanelVote(judge=name, label=label, evidence_quote=quote, confidence=0.9)


def _single(vote: PanelVote) -> tuple[Label, bool]:
    return vote.label, False


def _decided(votes: list[PanelVote], rule: str) -> tuple[Label, bool]:
    d = decide(votes, rule)
    return d.label, d.review


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--seed", type=int, default=24)
    args = parser.parse_args(argv)
    if not args.data.exists():
        print(f"no data at {args.data}: pass --data PATH (shared/data/wice_dev.jsonl)")
        return 2
    records = [json.loads(line) for line in args.data.read_text("utf-8").splitlines() if line]
    golds = [Label(r["label"]) for r in records]
    print(
        f"WiCE dev gold labels: {len(golds)} records "
        f"({sum(g is Label.SUPPORTED for g in golds)} supported), {args.rounds} rounds, "
        f"seed {args.seed}; simulated members flip the gold label with probability p"
    )
    print("(the mechanism, not real models: simulated errors are independent)")
    print()
    print("|   p | members | rule      |  wrong | silent | false sup | review |")
    print("|----:|--------:|-----------|-------:|-------:|----------:|-------:|")
    for p in ERROR_RATES:
        for size in SIZES:
            for rule in RULES if size > 1 else ("(single)",):
                m = _measure(golds, size, rule, p, args.rounds, args.seed)
                print(
                    f"| {p:.1f} | {size:>7} | {rule:<9} | {m['wrong']:>6.1%} | "
                    f"{m['silent']:>6.1%} | {m['false_supported']:>9.1%} | {m['review']:>6.1%} |"
                )
    return 0


def _measure(
    golds: list[Label], size: int, rule: str, p: float, rounds: int, seed: int
) -> dict[str, float]:
    rng = random.Random(f"{seed}-{size}-{rule}-{p}")
    counts = {"wrong": 0, "silent": 0, "false_supported": 0, "review": 0}
    total = 0
    for _ in range(rounds):
        for gold in golds:
            votes = [member_vote(gold, p, rng, f"sim:{i}") for i in range(size)]
            label, review = _single(votes[0]) if size == 1 else _decided(votes, rule)
            total += 1
            wrong = label is not gold
            counts["wrong"] += wrong
            counts["silent"] += wrong and not review
            counts["false_supported"] += label is Label.SUPPORTED and gold is not Label.SUPPORTED
            counts["review"] += review
    return {key: value / total for key, value in counts.items()}


if __name__ == "__main__":
    sys.exit(main())
