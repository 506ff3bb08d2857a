"""How often the guard's relevance and injection checks refuse honest evidence (WiCE dev).

    python bench/relevance.py [--data PATH]

Every record's ``source_text`` is cut into passages as the pipeline cuts a page
(:func:`pytest_citecheck.stages.passages.split_passages`). For each gold evidence
sentence of each evidence set, found in the passages (in one passage, or across
two adjacent ones), the sentence is taken as the judge's quote and checked
against the record's claim by
:func:`pytest_citecheck.stages.relevance.about_claim`:

- ``in passage`` (what the guard does): the quote read in the passage that holds it;
- ``quote alone`` (the baseline the guard does not use): the quote against the
  claim with no passage around it;
- ``other claim`` (the control): the same quote and passage against the claim of
  another record (the next one in the file), which it is not about: the share
  refused is what the check catches.

A refused gold sentence is a false rejection: its citation would become
``not_found`` (``quote_not_about_claim``) and go to review.

Then :func:`pytest_citecheck.stages.injection.find_injection` runs over every
passage of every page: each hit on these ordinary pages is a false alarm (a
``suspected_injection`` that would send an honest citation to review).

Data: WiCE (Kamoi et al. 2023), ODC-BY 1.0 annotations, Wikipedia claims
(CC BY-SA), page text archived by Common Crawl; see shared/data/README.md.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from pathlib import Path
from typing import Any

from pytest_citecheck.stages.injection import find_injection
from pytest_citecheck.stages.passages import split_passages
from pytest_citecheck.stages.quote_policy import too_short
from pytest_citecheck.stages.relevance import about_claim
from pytest_citecheck.stages.text import normalise

DEFAULT_DATA = next(
    (
        found
        for parent in Path(__file__).resolve().parents[1:]
        if (found := parent / "shared" / "data" / "wice_dev.jsonl").exists()
    ),
    Path("shared/data/wice_dev.jsonl"),
)


def holding(sentence: str, passages: list[str]) -> str | None:
    """The passage (or two adjacent passages) that holds ``sentence``, or None."""
    needle = normalise(sentence)
    texts = [normalise(p) for p in passages]
    for text in texts:
        if needle in text:
            return text
    for first, second in itertools.pairwise(texts):
        if needle in f"{first} {second}":
            return f"{first} {second}"
    return None


def run(records: list[dict[str, Any]]) -> dict[str, Any]:
    counts = {"sentences": 0, "in_passage": 0, "alone": 0, "other": 0, "short": 0}
    refused_examples: list[tuple[str, str]] = []
    pages = flagged_pages = passages_total = 0
    alarms: list[str] = []
    for n, record in enumerate(records):
        passages = split_passages(record["source_text"])
        pages += 1
        passages_total += len(passages)
        hits = [find_injection([p]) for p in passages]
        found = [h for h in hits if h is not None]
        if found:
            flagged_pages += 1
            alarms += [f"{record['id']}: {h.pattern}: {h.text}" for h in found]
        other = records[(n + 1) % len(records)]["claim"]
        seen: set[str] = set()
        for evidence in record.get("evidence_sets") or []:
            for sentence in evidence or []:
                if not normalise(sentence) or sentence in seen:
                    continue
                seen.add(sentence)
                passage = holding(sentence, passages)
                if passage is None:
                    continue
                if too_short(sentence):
                    counts["short"] += 1  # the guard refuses these before relevance
                    continue
                counts["sentences"] += 1
                if not about_claim(record["claim"], sentence, passage):
                    counts["in_passage"] += 1
                    refused_examples.append((record["claim"], sentence))
                counts["alone"] += not about_claim(record["claim"], sentence, sentence)
                counts["other"] += not about_claim(other, sentence, passage)
    return {
        "counts": counts,
        "refused": refused_examples,
        "pages": pages,
        "passages": passages_total,
        "flagged_pages": flagged_pages,
        "alarms": alarms,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    args = parser.parse_args(argv)
    if not args.data.exists():
        print(f"no data at {args.data}: pass --data PATH (shared/data/wice_dev.jsonl)")
        return 2
    records = [json.loads(line) for line in args.data.read_text("utf-8").splitlines() if line]
    result = run(records)
    c = result["counts"]
    total = c["sentences"]
    print(f"WiCE dev: {len(records)} records, {total} gold evidence sentences found in their")
    print(f"passages ({c['short']} more are below the quote minimum and never reach the check)")
    print()
    print(f"| {'check':<34} | refused | share  |")
    print(f"|{'-' * 36}|--------:|-------:|")
    for name, key in (
        ("in passage (the guard)", "in_passage"),
        ("quote alone (baseline, not used)", "alone"),
        ("other record's claim (control)", "other"),
    ):
        share = c[key] / total if total else 0.0
        print(f"| {name:<34} | {c[key]:>7} | {share:>6.1%} |")
    print()
    print(
        f"injection patterns on ordinary pages: {result['flagged_pages']} of {result['pages']} "
        f"pages ({len(result['alarms'])} of {result['passages']} passages) flagged"
    )
    for alarm in result["alarms"]:
        print(f"  false alarm: {alarm}")
    for claim, sentence in result["refused"]:
        print(f"  refused gold: {sentence[:90]!r} for {claim[:70]!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
