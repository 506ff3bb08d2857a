"""How the service words its replies: no secret or internal URL in a detail, the
options a caller or the operator can change, the 503 details."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from pytest_citecheck.core.prices import money
from pytest_citecheck.core.secrets import scrub
from pytest_citecheck.core.terms import JUDGE_FROM_CLAIM, JUDGE_FROM_FLAG, Terms
from pytest_citecheck.engine.core import Engine
from pytest_citecheck.options.table import cli_terms
from pytest_citecheck.stages.url_policy import hide_internal_urls


def public_detail(text: str) -> str:
    """A message as a caller may see it: no secret, no internal URL."""
    return hide_internal_urls(scrub(text))


# How the service's replies name what a caller can change: the request's judge,
# the flags ``citecheck serve`` was started with. Live, it records and replays nothing.
SERVICE_TERMS = Terms(
    options={**cli_terms("serve", prefix="the server's "), "judge": "the request's judge"},
    judge_origins={
        JUDGE_FROM_FLAG: "the server's --judge",
        JUDGE_FROM_CLAIM: "the request's judge",
    },
)


def budget_detail(engine: Engine) -> str:
    """The 503 detail once the service's spending cap is reached."""
    budget = engine.budget
    spent = []
    if budget.max_cost is not None:
        spent.append(f"spent {money(budget.spent_cost)} of {money(budget.max_cost)}")
    if budget.max_credits is not None:
        spent.append(f"{budget.spent_credits:g} of {budget.max_credits:g} credits")
    options = " / ".join(
        SERVICE_TERMS.option(name)
        for name, cap in (("max_cost", budget.max_cost), ("max_credits", budget.max_credits))
        if cap is not None
    )
    return (
        f"the service's spending cap ({budget.describe()}) is reached ({', '.join(spent)}): "
        f"nothing was fetched or judged for this request, and no request is verified until "
        f"the operator restarts the service with a higher cap ({options})"
    )


def service_terms(cassettes: Path | None) -> Terms:
    """:data:`SERVICE_TERMS`; with a cassette folder, also how a recording is made
    (the operator restarts the service with ``--record``) and a cassette named by its
    file name in that folder, never by a path of the server's."""
    if cassettes is None:
        return SERVICE_TERMS

    def record(request_id: str, mode: str) -> str:
        return (
            f"citecheck serve --record {mode} --cassettes DIR (the operator, DIR being this "
            "service's cassette folder, with the tokens and keys set)"
        )

    def cassette(path: Path) -> str:
        if path == cassettes:
            return "the service's cassette folder"
        if path in cassettes.parents:
            return "a folder above the service's cassette folder"
        try:
            name = path.relative_to(cassettes).as_posix()
        except ValueError:
            name = path.name
        return f"{name} in the service's cassette folder"

    return replace(
        SERVICE_TERMS, record=record, replay="the server's --record none", cassette=cassette
    )


def unconfigured_detail(message: str) -> str:
    """A 503 detail: one line per missing variable joined with "; "."""
    lines = [line.strip().removeprefix("- ") for line in message.splitlines() if line.strip()]
    return scrub("; ".join(lines))
