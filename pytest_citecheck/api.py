"""The public API for scripts: everything docs/python.md and the other pages
import from Python, in one place.

The package's own modules are internal and may move; what is named here is
what a script, a ``conftest.py`` or a plugin can rely on::

    from pytest_citecheck.api import Citation, Claim, Engine, EngineSettings

- verifying claims: :class:`Engine`, :class:`EngineSettings`;
- the claim and its result: :class:`Claim`, :class:`Citation`, :class:`ClaimResult`,
  :class:`Verdict`, :class:`Label`, :data:`BAD_LABELS`;
- reading a claim from a mapping: :func:`parse_claim` (raises
  :class:`ClaimValidationError`); claims from an LLM response with native
  citations: :func:`import_response` gives an :class:`ImportedAnswer` (raises
  :class:`ResponseImportError`); a saved conversation: :func:`import_conversation`
  gives one per assistant turn;
- replacing a stage through the ``pytest_citecheck_make_*`` hooks: a judge returns a
  :class:`JudgeReply` (:class:`Judge` is its protocol), a fetcher a :class:`FetchResult`
  (:class:`Fetcher`), a ranker follows :class:`Ranker`; :func:`default_ranker` is the
  built-in one; :class:`StageTransport` records a custom stage's HTTP in the claim's
  cassette.

Package code never imports this module: it is a door for users, not a layer.
"""

from __future__ import annotations

from pytest_citecheck.claims.importers import (
    ImportedAnswer,
    ResponseImportError,
    import_response,
)
from pytest_citecheck.claims.importers.conversation import import_conversation
from pytest_citecheck.claims.labels import BAD_LABELS, Label
from pytest_citecheck.claims.models import Citation, Claim
from pytest_citecheck.claims.results import ClaimResult, JudgeReply, Verdict
from pytest_citecheck.claims.schema import ClaimValidationError, parse_claim
from pytest_citecheck.engine.core import Engine
from pytest_citecheck.engine.settings import EngineSettings
from pytest_citecheck.recording.transport import StageTransport
from pytest_citecheck.stages.fetch_rules import Fetcher, FetchResult
from pytest_citecheck.stages.judges.base import Judge
from pytest_citecheck.stages.retrieval import Ranker, default_ranker

__all__ = [
    "BAD_LABELS",
    "Citation",
    "Claim",
    "ClaimResult",
    "ClaimValidationError",
    "Engine",
    "EngineSettings",
    "FetchResult",
    "Fetcher",
    "ImportedAnswer",
    "Judge",
    "JudgeReply",
    "Label",
    "Ranker",
    "ResponseImportError",
    "StageTransport",
    "Verdict",
    "default_ranker",
    "import_conversation",
    "import_response",
    "parse_claim",
]
