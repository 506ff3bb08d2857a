"""docs/options.md, generated from the option table.

``python -m pytest_citecheck.frontends.optionsdoc`` rewrites the page;
``--check`` exits 1 when the committed page differs from the table (a test runs it).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pytest_citecheck.core.files import generated_file_main
from pytest_citecheck.options.table import COMMANDS, OPTIONS, Flag, Hidden, Option

DEFAULT_PAGE = Path("docs/options.md")

_HEAD = """\
# Options

<!-- Generated from pytest_citecheck/options/table.py by
     `python -m pytest_citecheck.frontends.optionsdoc`: edit the table, not this page. -->

Every setting of pytest-citecheck, as each front end spells it: the pytest flag, the ini
option (`pytest.ini`, `pyproject.toml`'s `[tool.pytest.ini_options]`, ...), the flags of
the `citecheck` subcommands, and the field of `citecheck serve`'s configuration. Precedence
under pytest: **flag > ini > claim file (`judge:` and `judges:` only) > default**. A `–`
means the front end does not offer the setting; [why](#not-offered-and-why) is listed
below the table.

| setting | pytest flag | ini option | `citecheck` flags | service | default | what it does |
|---|---|---|---|---|---|---|
"""

_TAIL = """
Fractions are numbers in [0, 1]; a bad value is a usage error at start-up. With
`--junitxml`, each claim's test case carries `citecheck.*` properties (claim label, and per
citation its URL, label, reason, confidence, final URL and quote).

Not a reason but an `invalid-claim-file` item (with `file:line` and the fix; every other file
still runs): a lone surrogate (`"\\ud800"` in JSON or a YAML double-quoted string) or an
escaped control character (C0 or DEL) other than `\\t`, `\\n` and `\\r` in a claim, quote,
section or judge; a
claim text longer than `citecheck_max_claim_chars`; a `judge:` whose provider no built-in
judge or `pytest_citecheck_make_judge` hook serves; and a `citecheck_*.yaml` that is a
symbolic link to a missing file. `citecheck batch` reports every problem of a bad record.

What fails the session is on [Gate and CI](gate-ci.md#when-the-gate-fails).
"""


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _value_word(option: Option) -> str:
    if option.action == "store_true":
        return ""
    if option.metavar is not None:
        return option.metavar
    return "|".join(option.choices) if option.choices else "VALUE"


def _pytest_flag(option: Option) -> str:
    if not isinstance(option.pytest_flag, str):
        return "–"
    word = _value_word(option)
    return f"`{option.pytest_flag}={word}`" if word else f"`{option.pytest_flag}`"


def _ini(option: Option) -> str:
    if not isinstance(option.ini, str):
        return "–"
    return f"`{option.ini}` ({option.ini_type})"


def _cli_flags(option: Option) -> str:
    flags = []
    for command in COMMANDS:
        flag = option.flag_of(command)
        if isinstance(flag, Flag):
            word = _value_word(option)
            flags.append(f"{command} `{flag.flag}{' ' + word if word else ''}`")
    return "<br>".join(flags) or "–"


def _service(option: Option) -> str:
    return f"`{option.service}`" if isinstance(option.service, str) else "–"


def _row(option: Option) -> str:
    what = (option.doc or option.help).rstrip(".")
    cells = (
        f"`{option.name}`",
        _pytest_flag(option),
        _ini(option),
        _cli_flags(option),
        _service(option),
        option.default_text(),
        what,
    )
    return "| " + " | ".join(_cell(c) for c in cells) + " |"


def _hidden(option: Option) -> list[str]:
    """The front ends that do not offer ``option``, each with why."""
    reasons: dict[str, list[str]] = {}
    places: list[tuple[str, Flag | Hidden | str]] = [
        ("pytest flag", option.pytest_flag),
        ("ini", option.ini),
        *((f"citecheck {c}", option.flag_of(c)) for c in COMMANDS),
        ("service", option.service),
    ]
    for where, how in places:
        if isinstance(how, Hidden):
            reasons.setdefault(how.why, []).append(where)
    return [f"{', '.join(where)}: {why}" for why, where in reasons.items()]


def render() -> str:
    """The page, from the table."""
    rows = [_row(option) for option in OPTIONS]
    notes = ["", "## Not offered, and why", ""]
    for option in OPTIONS:
        notes.append(f"- `{option.name}`: " + "; ".join(_hidden(option)) + ".")
    return _HEAD + "\n".join(rows) + "\n" + "\n".join(notes) + "\n" + _TAIL


def main(argv: Sequence[str] | None = None) -> int:
    return generated_file_main(
        argv, "python -m pytest_citecheck.frontends.optionsdoc", DEFAULT_PAGE, render, "page"
    )


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
