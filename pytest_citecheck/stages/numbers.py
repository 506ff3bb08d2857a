"""The numbers and dates a claim states, and whether a piece of evidence states them too.

A judge that answers ``supported`` for "The widget weighs 42 kilograms." with a
sentence that gives no weight has not found the claim. :func:`missing_numbers`
is the deterministic floor under a ``supported`` verdict: every number and date of the
claim must be in the evidence, in any common written form:

- numbers: ``42`` = ``42.0`` = ``forty-two`` = ``forty two``; ``1,000`` = ``1000`` =
  ``one thousand``; ``1.5 million`` = ``1,500,000``; ordinals ``5th`` = ``fifth``
  (``first`` and ``second`` are read as words: "second" is also a unit of time);
- dates: ``May 7, 2018`` = ``7 May 2018`` = ``2018-05-07`` = ``7 May`` with ``2018``
  elsewhere in the evidence; ``October 2013`` = ``Oct. 2013``; a year alone is a number.

What a number counts (kilograms, seasons) is not compared: the confirmation call reads
the sentence and decides that.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pytest_citecheck.stages.text import remembered

_UNITS = {
    "zero": 0,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "thirteen": 13,
    "fourteen": 14,
    "fifteen": 15,
    "sixteen": 16,
    "seventeen": 17,
    "eighteen": 18,
    "nineteen": 19,
}
_TENS = {
    "twenty": 20,
    "thirty": 30,
    "forty": 40,
    "fifty": 50,
    "sixty": 60,
    "seventy": 70,
    "eighty": 80,
    "ninety": 90,
}
_ORDINALS = {
    "third": 3,
    "fourth": 4,
    "fifth": 5,
    "sixth": 6,
    "seventh": 7,
    "eighth": 8,
    "ninth": 9,
    "tenth": 10,
    "eleventh": 11,
    "twelfth": 12,
}
_SCALES = {"hundred": 100, "thousand": 1_000, "million": 1_000_000, "billion": 1_000_000_000}
_MONTHS = {
    name: number
    for number, names in enumerate(
        (
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ),
        start=1,
    )
    for name in names
}
_MONTH = r"(?P<month>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>[12]\d{3})"
_DATES = [
    re.compile(rf"\b{_MONTH}\s+{_DAY}\b(?:,?\s+{_YEAR}\b)?", re.I),  # May 7, 2018
    re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH}(?:,?\s+{_YEAR}\b)?", re.I),  # 7 May 2018
    re.compile(rf"\b{_MONTH},?\s+{_YEAR}\b", re.I),  # October 2013
    re.compile(r"\b(?P<year>[12]\d{3})-(?P<mnum>[01]?\d)-(?P<day>[0-3]?\d)\b"),  # 2018-05-07
]
_WORD_NUMBER = (
    r"(?:(?:"
    + "|".join(_TENS)
    + r")(?:[- ](?:"
    + "|".join(_UNITS)
    + r"))?|"
    + "|".join(_UNITS)
    + "|"
    + "|".join(_ORDINALS)
    + r")"
)
_NUMBER = re.compile(
    r"(?<![\w.,])(?P<digits>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)(?:st|nd|rd|th)?"
    r"(?:\s+(?P<scale>hundred|thousand|million|billion)\b)?"
    rf"|\b(?P<word>{_WORD_NUMBER})\b(?:\s+(?P<wscale>hundred|thousand|million|billion)\b)?",
    re.I,
)


@dataclass(frozen=True)
class Date:
    month: int
    day: int | None
    year: int | None
    text: str


def _dates(text: str) -> tuple[list[Date], str]:
    """The dates of ``text`` and the text with them blanked out."""
    found: list[Date] = []
    chars = list(text)
    for pattern in _DATES:
        for match in pattern.finditer(text):
            if any(c == "\0" for c in chars[match.start() : match.end()]):
                continue
            groups = match.groupdict()
            month = int(groups["mnum"]) if groups.get("mnum") else _MONTHS[groups["month"].lower()]
            day = int(groups["day"]) if groups.get("day") else None
            year = int(groups["year"]) if groups.get("year") else None
            if month < 1 or month > 12 or (day is not None and not 1 <= day <= 31):
                continue
            found.append(Date(month, day, year, match.group(0)))
            chars[match.start() : match.end()] = "\0" * (match.end() - match.start())
    return found, "".join(chars)


def _word_value(word: str) -> float:
    word = word.lower()
    if word in _ORDINALS:
        return _ORDINALS[word]
    if word in _UNITS:
        return _UNITS[word]
    tens, _, unit = word.replace(" ", "-").partition("-")
    return _TENS[tens] + (_UNITS.get(unit, 0) if unit else 0)


def _numbers(text: str) -> list[tuple[float, str]]:
    out: list[tuple[float, str]] = []
    for match in _NUMBER.finditer(text):
        if match.group("digits"):
            value = float(match.group("digits").replace(",", ""))
            scale = match.group("scale")
        else:
            value = _word_value(match.group("word"))
            scale = match.group("wscale")
        if scale:
            value *= _SCALES[scale.lower()]
        out.append((value, match.group(0)))
    return out


def stated_numbers(text: str) -> list[str]:
    """The numbers and dates ``text`` states, as it writes them, in order of kind (dates
    first): what an ellipsis may not skip (:func:`pytest_citecheck.stages.guard.skipped_meaning`).
    "one", "first" and "second" are read as words, as for the claim."""
    dates, rest = _dates(text)
    return [d.text for d in dates] + [written for _, written in _numbers(rest)]


def missing_numbers(claim: str, evidence: str) -> list[str]:
    """The numbers and dates of ``claim`` (as the claim writes them) that ``evidence``
    does not state in any form (see the module doc); empty when it states them all."""
    claim_dates, claim_rest = _dates(claim)
    evidence_dates, evidence_numbers = _stated(evidence)
    missing: list[str] = []
    for date in claim_dates:
        if not any(_same_date(date, other, evidence_numbers) for other in evidence_dates):
            missing.append(date.text)
    for value, text in _numbers(claim_rest):
        if value not in evidence_numbers:
            missing.append(text)
    return missing


@remembered(maxsize=1024)
def _stated(evidence: str) -> tuple[tuple[Date, ...], frozenset[float]]:
    """The dates ``evidence`` states, and every number it states (the years of its
    dates among them)."""
    dates, rest = _dates(evidence)
    numbers = {value for value, _ in _numbers(rest)}
    numbers |= {float(d.year) for d in dates if d.year is not None}
    return tuple(dates), frozenset(numbers)


def _same_date(claim: Date, evidence: Date, numbers: frozenset[float]) -> bool:
    if claim.month != evidence.month:
        return False
    if claim.day is not None and evidence.day != claim.day:
        return False
    return claim.year is None or evidence.year == claim.year or float(claim.year) in numbers
