"""Convert a WiCE split into the records bench/retrieval.py reads (held-out data).

    python bench/wice.py WICE_JSONL [--split test] [--exclude FILE] > out.jsonl

``WICE_JSONL`` is ``data/entailment_retrieval/claim/<split>.jsonl`` of
github.com/ryokamoi/wice (commit ddeb6c1). Each output record has the fields
of shared/data/wice_dev.jsonl: the page's sentences joined by newlines as
``source_text`` (records whose page is longer than 20,000 characters are left
out, as in the shipped file), the non-empty gold evidence sets as sentences,
and ``label`` ``supported`` or ``not_found``. ``--exclude`` leaves out the
records of another file (by id), so the 81 shipped dev records can be kept
apart from the rest of dev.

Why: bench/retrieval.py's 60 scored dev records are the numbers the ranker is
held to, and a change that moves two of them is noise. The WiCE test split
(333 records with a page under 20,000 characters) is never used to choose
anything and says whether a change holds beyond dev.

Data: WiCE (Kamoi et al. 2023), annotations ODC-BY 1.0, claims from Wikipedia
(CC BY-SA), page text archived by Common Crawl. Converted output is not
committed to this repository.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

MAX_CHARS = 20_000
ORIGIN = {
    "repo": "ryokamoi/wice",
    "commit": "ddeb6c183665e2a20c5f03c5aa07f03888b9870f",
    "license": "WiCE annotations: ODC-BY 1.0; claims: Wikipedia text (CC BY-SA); "
    "evidence: web pages archived by Common Crawl.",
}


def convert(raw: dict[str, Any], split: str, path: str) -> dict[str, Any] | None:
    sentences: list[str] = raw["evidence"]
    text = "\n".join(sentences)
    if len(text) > MAX_CHARS:
        return None
    sets = [[sentences[i] for i in s] for s in raw["supporting_sentences"] if s]
    meta = raw["meta"]
    return {
        "id": f"wice-{meta['id']}",
        "claim": raw["claim"],
        "source_text": text,
        "source_sentences": sentences,
        "label": "supported" if raw["label"] == "supported" else "not_found",
        "original_label": raw["label"],
        "evidence": sets[0] if sets else None,
        "evidence_sets": sets or None,
        "split": split,
        "origin": {**ORIGIN, "path": path},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "source", type=Path, help="WiCE's data/entailment_retrieval/claim/<split>.jsonl"
    )
    parser.add_argument("--split", default="test")
    parser.add_argument("--exclude", type=Path, action="append", default=[])
    args = parser.parse_args(argv)
    skip = {
        json.loads(line)["id"]
        for path in args.exclude
        for line in path.read_text().splitlines()
        if line.strip()
    }
    path = f"data/entailment_retrieval/claim/{args.split}.jsonl"
    kept = 0
    for line in args.source.read_text().splitlines():
        if not line.strip():
            continue
        record = convert(json.loads(line), args.split, path)
        if record is None or record["id"] in skip:
            continue
        print(json.dumps(record, ensure_ascii=False))
        kept += 1
    print(f"{kept} records", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
