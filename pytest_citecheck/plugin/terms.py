"""The plugin's names for its options: ini options and ``--citecheck-*`` flags.

The engine words every message through a :class:`~pytest_citecheck.core.terms.Terms`;
these are the ones a pytest user reads (docs/architecture.md, "Wording"), each
derived from the option table.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from pytest_citecheck.core.terms import JUDGE_FROM_CLAIM, JUDGE_FROM_FLAG, JUDGE_FROM_INI, Terms
from pytest_citecheck.options.table import OPTIONS, plugin_term


def record_command(nodeid: str, mode: str = "once") -> str:
    """The command that (re-)records one claim or test."""
    return record_all([nodeid], mode)


def record_all(nodeids: Sequence[str], mode: str = "once") -> str:
    """The command that (re-)records several claims, tests or files at once."""
    return f"pytest --citecheck --citecheck-record={mode} " + " ".join(map(shlex.quote, nodeids))


PLUGIN_TERMS = Terms(
    options={option.name: term for option in OPTIONS if (term := plugin_term(option)) is not None},
    assign=" = ",
    judge_origins={
        JUDGE_FROM_INI: "the ini option citecheck_judge",
        JUDGE_FROM_FLAG: "--citecheck-judge",
        JUDGE_FROM_CLAIM: "a claim file's judge:",
    },
    record=record_command,
    record_many=record_all,
    replay="--citecheck-record=none",
)
