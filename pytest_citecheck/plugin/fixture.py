"""The ``citecheck`` fixture's object: verify claims inside ordinary Python tests.

The fixture function itself lives in ``plugin`` (registered without importing
this module); it builds a :class:`CitecheckFixture` on first use.

Results join the session totals and the gate; HTTP records into the test's own
cassette, ``cassettes/<module stem>/<test name>.yaml`` beside the test module.
``verify_answer`` imports an LLM response with native citations
(:mod:`pytest_citecheck.claims.importers`) and verifies each cited sentence the same way.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from pytest_citecheck.claims.labels import Label
from pytest_citecheck.claims.models import Claim
from pytest_citecheck.claims.results import ClaimResult
from pytest_citecheck.claims.schema import CITATION_KEYS
from pytest_citecheck.plugin.startup import preflight_claim
from pytest_citecheck.plugin.state import citecheck_session
from pytest_citecheck.plugin.terms import PLUGIN_TERMS
from pytest_citecheck.recording.recorder import cassette_path

if TYPE_CHECKING:
    from pytest_citecheck.engine.aggregate import AnswerResult
    from pytest_citecheck.recording.recorder import Recording


def provide(request: pytest.FixtureRequest) -> Iterator[CitecheckFixture]:
    """The ``citecheck`` fixture's value for one test (the session built first)."""
    citecheck_session(request.config)
    with ExitStack() as stack:
        yield CitecheckFixture(request, stack)


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
        self._answers = 0
        self._name = request.node.name
        name = re.sub(r"[^A-Za-z0-9._-]+", "_", request.node.name).strip("_")
        self.cassette = cassette_path(Path(str(request.node.path)), name)

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
        return self._verify(claim_obj)

    def verify_answer(
        self, response: object, *, format: str = "auto", id: str | None = None
    ) -> AnswerResult:
        """Import ``response`` and verify every cited sentence of it.

        ``response`` is what the LLM API returned: an SDK object (openai, anthropic,
        google-genai; any pydantic model is read with ``model_dump()``), its dict, or
        its JSON text; markdown text with links or ``[n]`` markers too. ``format`` is
        one of the importers' formats, or ``auto``. ``id`` names the answer and
        prefixes its claim ids (default: the test's name, ``-2``, ``-3``... for later
        answers of the same test). A response that cannot be imported fails the test
        with the place and the fix.
        """
        from pytest_citecheck.claims.importers import ResponseImportError, import_response
        from pytest_citecheck.engine.aggregate import AnswerResult, figures

        self._answers += 1
        answer_id = id or (self._name if self._answers == 1 else f"{self._name}-{self._answers}")
        failure: str | None = None
        try:
            answer = import_response(response, format=format, answer_id=answer_id)
        except ResponseImportError as exc:
            failure = f"citecheck.verify_answer: {exc}"
        if failure is not None:
            pytest.fail(failure, pytrace=False)
        outline = answer.outline(origin=self._item.nodeid)
        results = []
        for imported in answer.claims:
            claim = imported.claim
            claim_obj = self._claim(
                {
                    "id": claim.id,
                    "claim": claim.claim,
                    "citations": [
                        c.model_dump(exclude_none=True, include=set(CITATION_KEYS))
                        for c in claim.citations
                    ],
                }
            )
            results.append(self._verify(claim_obj.model_copy(update={"answer": outline})))
        return AnswerResult(**dict(figures(outline, {r.id: r for r in results})), results=results)

    def _verify(self, claim: Claim) -> ClaimResult:
        # Its claims are known only now: the start-up key check runs here, before
        # the first request (a missing key stops the session, as for claim files).
        preflight_claim(self._session, claim, self.cassette)
        if self._recording is None:
            self._recording = self._stack.enter_context(
                self._session.recording(self.cassette, self._item.nodeid, self._judge)
            )
        result = self._session.verify(claim, self._recording, self._judge)
        self._results.append(result)
        return result

    def _claim(self, data: dict[str, object]) -> Claim:
        """The claim, validated by the same schema as claim files: a bad
        citation fails the test with the fix instead of being checked wrongly."""
        from pytest_citecheck.claims.documents import DocumentPathError, resolve_document
        from pytest_citecheck.claims.schema import ClaimValidationError, FieldProblem, parse_claim

        parsed = parse_claim(
            data, max_claim_chars=self._session.settings.max_claim_chars, terms=PLUGIN_TERMS
        )
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
