"""Quote-matching benchmark: how often each guard mode accepts what it should, and what it
should not, on real page text.

For every record of shared/data/wice_dev.jsonl, the page is cut into passages as
the pipeline cuts it, and the judge is "shown" the passage holding a gold
evidence sentence plus its two neighbours (a top-3 of one page region). Judge
quotes are then made from:

- **light edits** of the evidence sentences (should be accepted): verbatim (the
  control), an ellipsis for a skipped middle clause, dropped commas and
  semicolons, a changed capital, a final period added or dropped, a look-alike
  apostrophe inside a word, two edits at once, typos;
- **meaning changes** of the evidence sentences (never to be accepted): a
  negation inserted or removed (or skipped by an ellipsis), a number skipped by an
  ellipsis, a number or a
  month changed;
- **unrelated sentences from the same page**, outside the shown passages,
  verbatim and lightly edited (never to be accepted);
- typos are light edits; a whole word replaced is what the threshold decides
  (shown apart, in no total).

Each quote goes through ``guard()`` as a ``supported`` reply, in exact mode (the
baseline, measured in the same run) and in fuzzy mode at the given thresholds.

    python bench/quotes.py [--data PATH] [--similarity 0.9] [--sweep 0.8,0.85,0.95]

Data: WiCE (Kamoi et al. 2023), ODC-BY 1.0 annotations, Wikipedia claims
(CC BY-SA), page text archived by Common Crawl; see shared/data/README.md.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from pytest_citecheck.claims.labels import Label
from pytest_citecheck.claims.results import JudgeReply, Passage
from pytest_citecheck.core.defaults import DEFAULT_QUOTE_SIMILARITY
from pytest_citecheck.stages.fuzzy import fold, skipped_meaning
from pytest_citecheck.stages.guard import guard
from pytest_citecheck.stages.passages import split_passages
from pytest_citecheck.stages.quote_policy import EXACT, QuotePolicy
from pytest_citecheck.stages.text import normalise

# shared/ beside the checkout (main), or beside the folder of worktrees.
_HERE = Path(__file__).resolve()
DEFAULT_DATA = next(
    (
        path
        for root in (_HERE.parents[2], _HERE.parents[3])
        if (path := root / "shared" / "data" / "wice_dev.jsonl").exists()
    ),
    _HERE.parents[2] / "shared" / "data" / "wice_dev.jsonl",
)
SEED = 13
UNRELATED_PER_RECORD = 3

Edit = Callable[[str], str | None]  # None: the edit does not apply to this sentence


# -- light edits (should be accepted) ----------------------------------------------


def verbatim(s: str) -> str | None:
    return s


def _is_negation(word: str) -> bool:
    word = word.lower().strip('.,;:!?"()')
    return word in ("not", "no", "never", "cannot", "without") or word.endswith("n't")


def ellipsis(s: str) -> str | None:
    words = s.split()
    if len(words) < 14:
        return None  # each piece must stay a real span
    cut = len(words) // 3
    if skipped_meaning(" ".join(words[cut : 2 * cut])) is not None:
        # Skipping a negation or a number is no light edit (see ellipsis_over_negation,
        # ellipsis_over_number).
        return None
    return " ".join(words[:cut]) + " ... " + " ".join(words[2 * cut :])


def drop_punctuation(s: str) -> str | None:
    # Not ":" -- dropping it from "4:14 PM" changes a number.
    edited = re.sub(r"[,;]", "", s)
    return edited if edited != s else None


def change_case(s: str) -> str | None:
    first = s[0]
    if not first.isalpha():
        return None
    return (first.lower() if first.isupper() else first.upper()) + s[1:]


def final_period(s: str) -> str | None:
    return s[:-1] if s.endswith(".") else s + "."


def apostrophe(s: str) -> str | None:
    text = normalise(s)
    edited = re.sub(r"(?<=\w)'(?=\w)", "\u00b4", text)
    return edited if edited != text else None


def typos(s: str) -> str | None:
    """A letter dropped from each of the two longest words."""
    words = s.split()
    longest = sorted(range(len(words)), key=lambda i: -len(words[i]))[:2]
    if len(words) < 6 or any(len(words[i]) < 6 for i in longest):
        return None
    for i in longest:
        words[i] = words[i][:3] + words[i][4:]
    return " ".join(words)


def swapped_word(s: str) -> str | None:
    """The longest word replaced by another word of the same length: a one-word paraphrase."""
    words = s.split()
    if len(words) < 6:
        return None
    i = max(range(len(words)), key=lambda k: len(words[k]))
    if len(words[i]) < 6 or not words[i].isalpha():
        return None
    words[i] = "abcdefghijklmnopqrstuvwxyz"[: len(words[i])]
    return " ".join(words)


def two_edits(s: str) -> str | None:
    edited = drop_punctuation(s)
    return change_case(edited) if edited else None


# -- meaning changes (never to be accepted) ------------------------------------------

_AUXILIARY = re.compile(r"\b(is|was|are|were|has|have|had|can|will|would|could|should)\b")
_NEGATION = re.compile(r"\s*\b(not|never)\b|n't\b")
_NUMBER = re.compile(r"\d+")
_MONTHS = [
    *("January", "February", "March", "April", "May", "June"),
    *("July", "August", "September", "October", "November", "December"),
]


def insert_negation(s: str) -> str | None:
    match = _AUXILIARY.search(s)
    return s[: match.end()] + " not" + s[match.end() :] if match else None


def remove_negation(s: str) -> str | None:
    edited = _NEGATION.sub("", s, count=1)
    return edited if edited != s else None


def ellipsis_over_negation(s: str) -> str | None:
    words = s.split()
    k = next((i for i, w in enumerate(words) if _is_negation(w)), None)
    if k is None or k < 5 or len(words) - k - 2 < 5:
        return None
    return " ".join(words[:k]) + " ... " + " ".join(words[k + 2 :])


def ellipsis_over_number(s: str) -> str | None:
    """The middle third skipped, as ``ellipsis`` cuts it, where that third holds a number
    and no negation (a number an ellipsis skips changes the meaning)."""
    words = s.split()
    if len(words) < 14:
        return None
    cut = len(words) // 3
    if skipped_meaning(" ".join(words[cut : 2 * cut])) != "a number":
        return None
    return " ".join(words[:cut]) + " ... " + " ".join(words[2 * cut :])


def change_number(s: str) -> str | None:
    match = _NUMBER.search(s)
    if not match:
        return None
    digits = match.group()
    changed = digits[:-1] + str((int(digits[-1]) + 1) % 10)
    return s[: match.start()] + changed + s[match.end() :]


def change_month(s: str) -> str | None:
    for i, month in enumerate(_MONTHS):
        if re.search(rf"\b{month}\b", s):
            return re.sub(rf"\b{month}\b", _MONTHS[(i + 1) % 12], s, count=1)
    return None


ACCEPT: dict[str, Edit] = {
    "verbatim (control)": verbatim,
    "ellipsis for a middle clause": ellipsis,
    "dropped , ;": drop_punctuation,
    "changed first capital": change_case,
    "final period added/dropped": final_period,
    "look-alike apostrophe (´)": apostrophe,
    "dropped punctuation + capital": two_edits,
    "typos (a letter off, two words)": typos,
}
# Not a light edit, not a change of meaning either: what the threshold decides.
THRESHOLD: dict[str, Edit] = {
    "longest word replaced": swapped_word,
}
REFUSE: dict[str, Edit] = {
    "negation inserted": insert_negation,
    "negation removed": remove_negation,
    "ellipsis over a negation": ellipsis_over_negation,
    "ellipsis over a number": ellipsis_over_number,
    "number changed": change_number,
    "month changed": change_month,
}


# -- the page -------------------------------------------------------------------------


def evidence_sentences(record: dict[str, Any]) -> list[str]:
    sets = record.get("evidence_sets") or []
    sentences = {s for evidence_set in sets if evidence_set for s in evidence_set}
    return sorted(s for s in sentences if normalise(s))


def shown_for(passages: list[str], sentence: str) -> list[Passage] | None:
    """The passage holding ``sentence`` (or the two it runs across) and neighbours."""
    texts = [normalise(p) for p in passages]
    needle = normalise(sentence)
    hits = [i for i, t in enumerate(texts) if needle in t]
    if not hits:
        hits = [i for i in range(len(texts) - 1) if needle in f"{texts[i]} {texts[i + 1]}"]
    if not hits:
        return None
    centre = hits[0]
    indices = range(max(0, centre - 1), min(len(passages), centre + 2))
    return [Passage(index=i, text=passages[i]) for i in indices]


def cases(
    records: list[dict[str, Any]],
) -> Iterator[tuple[str, bool | None, str, list[Passage]]]:
    """``(category, should_accept, quote, shown)`` for every applicable case
    (``None``: neither, the threshold decides)."""
    rng = random.Random(SEED)
    for record in records:
        passages = split_passages(record["source_text"])
        for sentence in evidence_sentences(record):
            shown = shown_for(passages, sentence)
            if shown is None:
                continue
            for name, edit in ACCEPT.items():
                if (quote := edit(sentence)) is not None:
                    yield name, True, quote, shown
            for name, edit in REFUSE.items():
                if (quote := edit(sentence)) is not None:
                    yield name, False, quote, shown
            for name, edit in THRESHOLD.items():
                if (quote := edit(sentence)) is not None:
                    yield name, None, quote, shown
            # Outside the shown passages even when markup and case are ignored.
            visible = fold(" ".join(p.text for p in shown))[0]
            others = [
                s
                for s in record["source_sentences"]
                if len(s.split()) >= 5 and fold(s)[0] not in visible
            ]
            for other in rng.sample(others, min(UNRELATED_PER_RECORD, len(others))):
                yield "unrelated same-page sentence", False, other, shown
                if (edited := two_edits(other)) is not None:
                    yield "unrelated, lightly edited", False, edited, shown


# -- the run --------------------------------------------------------------------------


def accepted(quote: str, shown: list[Passage], policy: QuotePolicy) -> bool:
    reply = JudgeReply(label="supported", quote=quote, confidence=0.9)
    return guard(reply, shown, policy).label is Label.SUPPORTED


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--similarity", type=float, default=DEFAULT_QUOTE_SIMILARITY)
    parser.add_argument("--sweep", default="0.8,0.85,0.95")
    args = parser.parse_args()
    records = [json.loads(line) for line in args.data.read_text().splitlines() if line]
    thresholds = [args.similarity, *(float(t) for t in args.sweep.split(",") if t)]
    policies = {"exact": EXACT} | {f"fuzzy {t:g}": QuotePolicy("fuzzy", t) for t in thresholds}

    counts: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    expected: dict[str, bool | None] = {}
    seconds: dict[str, float] = defaultdict(float)
    all_cases = list(cases(records))
    for category, should, quote, shown in all_cases:
        expected[category] = should
        counts[category]["n"] += 1
        for name, policy in policies.items():
            start = time.perf_counter()
            counts[category][name] += accepted(quote, shown, policy)
            seconds[name] += time.perf_counter() - start

    names = list(policies)
    width = max(len(c) for c in counts) + 2
    print(f"WiCE dev: {len(records)} records, {len(all_cases)} judge quotes, seed {SEED}")
    print(f"{'quote':<{width}}{'n':>5}" + "".join(f"{n:>12}" for n in names))
    groups = (
        (True, "should be accepted"),
        (False, "must be refused"),
        (None, "the threshold decides"),
    )
    for should, title in groups:
        print(f"-- {title} (acceptance rate)")
        for category, row in counts.items():
            if expected[category] is should:
                rates = "".join(f"{row[n] / row['n']:>12.1%}" for n in names)
                print(f"{category:<{width}}{row['n']:>5}{rates}")
    for should, title in ((True, "true accepts"), (False, "false accepts")):
        rows = [r for c, r in counts.items() if expected[c] is should]
        total = sum(r["n"] for r in rows)
        rates = "".join(f"{sum(r[n] for r in rows) / total:>12.1%}" for n in names)
        print(f"{'== ' + title:<{width}}{total:>5}{rates}")
    per_call = "".join(f"{seconds[n] / len(all_cases) * 1e6:>10.0f}us" for n in names)
    print(f"{'mean guard() time':<{width}}{'':>5}{per_call}")


if __name__ == "__main__":
    main()
