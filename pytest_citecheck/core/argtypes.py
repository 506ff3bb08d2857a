"""Option value types shared by the pytest options and the ``citecheck`` CLI.

Each is an argparse ``type=``: it returns the parsed value or raises
:class:`argparse.ArgumentTypeError` with the reason. No pytest here, so the CLI
loads without it (tests/unit/test_layers.py).
"""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Literal, TypeVar

from pytest_citecheck.core.defaults import RECHECK_STATUSES

if TYPE_CHECKING:
    from pytest_citecheck.core.prices import TokenPrice

_N = TypeVar("_N", int, float)
_T = TypeVar("_T")


def _number(
    text: str, convert: Callable[[str], _N], kind: str, ok: Callable[[_N], bool], problem: str
) -> _N:
    """An argparse ``type=`` body: ``text`` as a number (else "is not ``kind``"), then
    checked (else ``problem``)."""
    try:
        value = convert(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not {kind}") from None
    if not ok(value):
        raise argparse.ArgumentTypeError(f"{text!r} {problem}")
    return value


def fraction(text: str) -> float:
    """argparse ``type=``: a number in [0, 1]."""
    return _number(
        text, float, "a number between 0 and 1", lambda v: 0.0 <= v <= 1.0, "is not between 0 and 1"
    )


def judge_spec(text: str) -> str:
    """argparse ``type=``: ``provider:model``."""
    provider, sep, model = text.partition(":")
    if not sep or not provider or not model:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not PROVIDER:MODEL (e.g. openai:gpt-4o-mini, "
            "anthropic:claude-sonnet-4-6, ollama:llama3.1, openai-compatible:my-model)"
        )
    return text


def port_number(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not between 0 and 65535")
    return value


def collector_url(text: str) -> str:
    """argparse ``type=``: an OpenTelemetry collector's OTLP/HTTP URL (http or https,
    with a host; ``/v1/logs`` is added unless the URL names it)."""
    from urllib.parse import urlsplit

    parts = urlsplit(text.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a collector's OTLP/HTTP URL (e.g. http://localhost:4318)"
        )
    return text.strip()


def positive_int(text: str) -> int:
    """argparse ``type=``: a whole number >= 1."""
    return _number(text, int, "a whole number", lambda v: v >= 1, "is not at least 1")


def positive_rate(text: str) -> float:
    """argparse ``type=``: a number of events each second > 0."""
    return _positive_float(text, "a number each second", "is not a positive number")


def positive_seconds(text: str) -> float:
    """argparse ``type=``: a number of seconds > 0."""
    return _positive_float(text, "a number of seconds", "is not a positive number of seconds")


def _positive_float(text: str, what: str, why: str) -> float:
    return _number(text, float, what, lambda v: v > 0 and math.isfinite(v), why)


def claim_chars(text: str) -> int:
    """argparse ``type=``: a claim length cap in characters, 0 for none."""
    return _number(text, int, "a whole number", lambda v: v >= 0, "is negative (0 lifts the cap)")


def recheck_statuses(text: str) -> tuple[str, ...]:
    """argparse ``type=``: comma-separated recheck statuses, or ``none``."""
    given = tuple(part.strip() for part in text.split(",") if part.strip())
    if given == ("none",):
        return ()
    if not given or any(part not in RECHECK_STATUSES for part in given):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a list of recheck statuses ({', '.join(RECHECK_STATUSES)}, or none)"
        )
    return given


def _reasoned(parse: Callable[[str], _T], text: str) -> _T:
    """An argparse ``type=`` body: ``parse(text)``, whose ValueError (its message the
    reason) becomes argparse's error."""
    try:
        return parse(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def amount(text: str) -> float:
    """argparse ``type=``: a price or a budget (a number >= 0)."""
    from pytest_citecheck.core.prices import parse_amount

    return _reasoned(parse_amount, text)


def judge_prices(text: str) -> dict[str, TokenPrice]:
    """argparse ``type=``: ``PROVIDER:MODEL=IN/OUT`` entries (per million tokens)."""
    from pytest_citecheck.core.prices import parse_judge_prices

    return _reasoned(parse_judge_prices, text)


# ``citecheck_judge_temperature``: "auto" (the provider decides, see openai.py),
# "omit" (never sent) or a number (always sent as is).
Temperature = float | Literal["auto", "omit"]


def parse_temperature(text: str | float | None) -> Temperature:
    """An ini/CLI value -> :data:`Temperature`; raises ValueError naming the choices."""
    if text is None:
        return "auto"
    if isinstance(text, float | int) and not isinstance(text, bool):
        value = float(text)
    else:
        word = str(text).strip().lower()
        if word in ("", "auto"):
            return "auto"
        if word in ("omit", "none"):
            return "omit"
        try:
            value = float(word)
        except ValueError:
            raise ValueError(
                f"{text!r} is not a temperature: use auto, omit or a number from 0 to 2"
            ) from None
    if not 0.0 <= value <= 2.0:
        raise ValueError(f"{text!r} is not a temperature: use auto, omit or a number from 0 to 2")
    return value


def temperature(text: str) -> Temperature:
    """argparse ``type=``: :func:`parse_temperature`."""
    return _reasoned(parse_temperature, text)


def judge_specs(text: str) -> tuple[str, ...]:
    """argparse ``type=``: ``PROVIDER:MODEL`` specs separated by commas (or lines)."""
    specs = tuple(s.strip() for s in text.replace("\n", ",").split(",") if s.strip())
    if not specs:
        raise argparse.ArgumentTypeError(
            f"{text!r} names no judge: list PROVIDER:MODEL specs separated by commas, e.g. "
            "openai:gpt-4o-mini,anthropic:claude-haiku-4-5"
        )
    for spec in specs:
        judge_spec(spec)
    return specs


# A Crawler job's name is a folder name and an HTTP header value: a safe alphabet.
JOB_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


def job_name(text: str) -> str:
    """argparse ``type=``: a Crawler job's name."""
    if not JOB_NAME.match(text):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a job name: use letters, digits, '.', '_' or '-' (at most 64)"
        )
    return text


def crawler_name(text: str) -> str:
    """argparse ``type=``: the name of a Crawler created in the Crawlbase dashboard."""
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}", text):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a Crawler name: letters, digits, '.', '_' or '-'"
        )
    return text
