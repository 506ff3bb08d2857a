"""The ``citecheck`` fixture: verify claims inside ordinary Python tests.

Results join the session totals and the gate; HTTP records into the test's own
cassette, ``cassettes/<module stem>/<test name>.yaml`` beside the test module.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from pytest_citecheck.models import Citation, Claim, ClaimResult, Label

if TYPE_CHECKING:
    from pytest_citecheck.recording import Recording


class CitecheckFixture:
    """Returned by the ``citecheck`` fixture."""

    def __init__(self, request: pytest.FixtureRequest, stack: ExitStack) -> None:
        from pytest_citecheck.session import RESULTS_KEY, SESSION_KEY

        self._item = request.node
        self._session = request.config.stash[SESSION_KEY]
        self._stack = stack
        self._recording: Recording | None = None
        self._judge = self._session.judge(self._session.settings.judge_for(None))
        self._base = Path(str(request.node.path)).parent
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
        """Verify ``claim`` against ``citations`` (URLs, or mappings like a claim file's)."""
        if self._recording is None:
            self._recording = self._stack.enter_context(
                self._session.recording(self.cassette, self._item.nodeid, self._judge)
            )
        parsed = [self._citation(c) for c in citations]
        claim_obj = Claim(
            id=id or f"claim-{len(self._results) + 1}",
            claim=claim,
            citations=parsed,
            expect=Label(expect) if expect is not None else None,
        )
        result = self._session.verify(claim_obj, self._recording, self._judge)
        self._results.append(result)
        return result

    def _citation(self, citation: str | Mapping[str, str]) -> Citation:
        if isinstance(citation, str):
            return Citation(url=citation)
        data = dict(citation)
        if "document" in data:
            data["document_path"] = str((self._base / data["document"]).resolve())
        return Citation.model_validate(data)


@pytest.fixture
def citecheck(request: pytest.FixtureRequest) -> Iterator[CitecheckFixture]:
    """Verify claims and their citations; results join the citecheck session gate."""
    with ExitStack() as stack:
        yield CitecheckFixture(request, stack)
