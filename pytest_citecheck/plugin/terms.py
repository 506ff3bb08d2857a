"""The plugin's names for its options: ini options and ``--citecheck-*`` flags.

The engine words every message through a :class:`~pytest_citecheck.core.terms.Terms`;
these are the ones a pytest user reads (docs/architecture.md, "Wording").
"""

from __future__ import annotations

import shlex

from pytest_citecheck.core.terms import JUDGE_FROM_CLAIM, JUDGE_FROM_FLAG, JUDGE_FROM_INI, Terms


def record_command(nodeid: str, mode: str = "once") -> str:
    """The command that (re-)records one claim or test."""
    return f"pytest --citecheck --citecheck-record={mode} {shlex.quote(nodeid)}"


PLUGIN_TERMS = Terms(
    options={
        "judge": "--citecheck-judge or the ini option citecheck_judge",
        "judges": "--citecheck-judges or the ini option citecheck_judges",
        "judge_base_url": "the ini option citecheck_judge_base_url",
        "judge_temperature": "citecheck_judge_temperature",
        "judge_response_format": "citecheck_judge_response_format",
        "min_precision": "citecheck_min_precision",
        "min_reachable_precision": "citecheck_min_reachable_precision",
        "min_answer_support": "citecheck_min_answer_support",
        "allow_contradicted": "citecheck_allow_contradicted",
        "strict_review": "--citecheck-strict-review",
        "max_drop": "citecheck_max_drop",
        "min_agreement": "citecheck_min_agreement",
        "report": "--citecheck-report",
        "audit": "--citecheck-audit",
        "timeout": "citecheck_timeout",
        "max_page_bytes": "citecheck_max_page_bytes",
        "document_roots": "the ini option citecheck_document_roots",
        "max_claim_chars": "--citecheck-max-claim-chars or the ini option "
        "citecheck_max_claim_chars",
        "url_policy": "citecheck_url_policy",
        "record_mode": "--citecheck-record",
        "max_cost": "--citecheck-max-cost",
        "max_credits": "--citecheck-max-credits",
        "price_credit": "citecheck_price_credit",
        "prices": "citecheck_prices",
        "ranker": "citecheck_ranker",
    },
    assign=" = ",
    judge_origins={
        JUDGE_FROM_INI: "the ini option citecheck_judge",
        JUDGE_FROM_FLAG: "--citecheck-judge",
        JUDGE_FROM_CLAIM: "a claim file's judge:",
    },
    record=record_command,
    replay="--citecheck-record=none",
)
