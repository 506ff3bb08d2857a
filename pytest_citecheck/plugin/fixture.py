"""The ``citecheck`` fixture's object: verify claims inside ordinary Python tests.

The fixture function itself lives in ``plugin`` (registered without importing
this module); it builds a :class:`CitecheckFixture` on first use.

Results join the session totals and the gate; HTTP records into the test's own
cassette, ``cassettes/<module stem>/<test name>.yaml`` beside the test module.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from pytest_citecheck.claims.models import Claim, ClaimResult, Label
from pytest_citecheck.plugin.terms import PLUGIN_TERMS

if TYPE_CHECKING:
    from pytest_citecheck.recording.recorder import Recording


class CitecheckFixture:
    """Returned by the ``citecheck`` fixture."""

    def __init__(self, request: pytest.FixtureRequest, stack: ExitStack) -> None:
        from pytest_citecheck.plugin.session import RESULTS_KEY, SESSION_KEY

        self._item = request.node
        self._session = request.config.stash[SESSION_KEY]
        self._stack = stack
        self._recording: Recording | None = None
        self._judge = self._session.judge(self._session.settings.judge_for(None))
        self._base = Path(str(request.node.path)).parent
        self._roots = self._session.settings.document_roots
        self._results = self._item.stash.setdefault(RESULTS_KEY, [])
        name = re.sub(r"[^A-Za-z0-9._-]+", "_", request.node.name).strip("_")
        stem = Path(str(request.node.path)).stem
        self.cassette = self._base / "cassettes" / stem / f"{name}.yaml"

    def verify(
        self,
        claim: str,
        citations: Sequence[str | Mapping[str, str]],
        *,
        id: str | None = None,
        expect: Label | str | None = None,
    ) -> ClaimResult:
        """Verify ``claim`` against ``citations`` (URLs, or mappings like a claim file's).

        Raises :class:`~pytest_citecheck.claims.schema.ClaimValidationError` (the test
        fails with every problem and its fix) when the claim breaks the schema.
        """
        claim_obj = self._claim(
            {
                "id": id or f"claim-{len(self._results) + 1}",
                "claim": claim,
                "citations": list(citations),
                **({"expect": expect} if expect is not None else {}),
            }
        )
        if self._recording is None:
            self._recording = self._stack.enter_context(
                self._session.recording(self.cassette, self._item.nodeid, self._judge)
            )
        result = self._session.verify(claim_obj, self._recording, self._judge)
        self._results.append(result)
        return result

    def _claim(self, data: dict[str, object]) -> Claim:
        """The claim, validated by the same schema as claim files: a bad
        citation fails the test with the fix instead of being checked wrongly."""
        from pytest_citecheck.claims.documents import DocumentPathError, resolve_document
        from pytest_citecheck.claims.schema import ClaimValidationError, FieldProblem, parse_claim

        parsed = parse_claim(data)
        citations = []
        problems = []
        for i, citation in enumerate(parsed.citations):
            if citation.document is not None:
                try:
                    path = resolve_document(
                        citation.document, self._base, self._roots, PLUGIN_TERMS
                    )
                except DocumentPathError as exc:
                    problems.append(
                        FieldProblem(("citations", i, "document"), exc.problem, exc.fix)
                    )
                    continue
                citation = citation.model_copy(update={"document_path": path})
            citations.append(citation)
        if problems:
            raise ClaimValidationError(problems)
        return parsed.model_copy(update={"citations": citations})
