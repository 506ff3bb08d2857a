"""The native-quotes experiment on the real Anthropic responses the project keeps
(``tests/native_quotes.py`` builds it; ``bench/native_quotes.py`` runs it on every
response, streams included): no honest answer ends ``fabricated``."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_citecheck.claims.labels import Label
from tests import native_quotes as native
from tests.native_quotes import Experiment


@pytest.fixture(scope="module")
def exp() -> Experiment:
    found = native.experiment(native.load(native.RECORDED.glob("*.json")))
    # The real responses: cut quotes, entities and markup among them.
    quotes = [c.quote or "" for c in found.citations]
    assert len(quotes) >= 12
    assert sum(q.endswith("...") for q in quotes) >= 5
    assert any("&#x27;" in q for q in quotes)
    assert all(c.quote_by == "provider" for c in found.citations)
    return found


@pytest.mark.allow_resend(
    "runs the same claims more than once on purpose (record, replay, recheck, compare)"
)
def test_provider_quotes_on_pages_that_hold_them_are_never_fabricated(
    exp: Experiment, tmp_path: Path
) -> None:
    with native.served(exp) as (api, llm):
        with native.exact_markdown_matching():
            before = native.verify(
                native.as_if_written_by_the_user(exp.claims), api, llm, tmp_path / "b"
            )
        asked, confirmed = len(llm.calls), len(llm.confirmations)
        after = native.verify(exp.claims, api, llm, tmp_path / "a")
        # Every judge call of this run: first readings and confirmations (the double
        # tells a confirmation apart only when the quote is verbatim in its sentence).
        after_calls = llm.calls[asked:] + llm.confirmations[confirmed:]
    # Matched in the markdown and held against the provider, most were "fabricated".
    assert sum(v.label is Label.FABRICATED for v in before) > len(before) // 2
    assert [v.label for v in after].count(Label.FABRICATED) == 0
    assert not any(v.provider_quote_not_on_page for v in after)
    # Each quote was found: the judge read the passage holding it and answered, once,
    # plus one confirmation call per supported answer.
    assert len(after_calls) == len(after) + sum(v.confirmation is not None for v in after)
    assert {v.label for v in after} <= {Label.SUPPORTED, Label.NOT_FOUND}
    assert sum(v.label is Label.SUPPORTED for v in after) >= len(after) // 2


def test_provider_quotes_on_pages_that_changed_are_judged_and_marked(
    exp: Experiment, tmp_path: Path
) -> None:
    with native.served(exp, stale=True) as (api, llm):
        after = native.verify(exp.claims, api, llm, tmp_path)
        assert len(llm.calls) == len(after)
    assert all(v.provider_quote_not_on_page for v in after)
    assert all(v.label is Label.NOT_FOUND for v in after)  # the honest judge finds nothing


def test_the_same_quotes_written_by_a_model_are_still_fabricated_when_absent(
    exp: Experiment, tmp_path: Path
) -> None:
    with native.served(exp, stale=True) as (api, llm):
        after = native.verify(native.as_if_written_by_the_user(exp.claims), api, llm, tmp_path)
        assert llm.calls == []
    assert all(v.label is Label.FABRICATED for v in after)
