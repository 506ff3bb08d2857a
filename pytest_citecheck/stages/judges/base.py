"""The judge seam every provider implements.

Providers live next to this module (``openai``, ``anthropic``, ``ollama``);
:func:`pytest_citecheck.stages.judges.make_judge` builds one from ``provider:model``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

# The reply is plain data and lives with the domain models (light to import);
# it is re-exported here, where judge authors look for it.
from pytest_citecheck.claims.results import JudgeReply

__all__ = ["Judge", "JudgeReply", "VersionedJudge"]


class Judge(Protocol):
    """Reads a claim and passages; answers a label, a verbatim quote and a confidence.

    Raises :class:`pytest_citecheck.core.errors.StageFailed` when no usable reply
    was obtained (refusal, truncation, invalid JSON, HTTP failure after
    retries) and :class:`pytest_citecheck.core.errors.ConfigurationError` for
    401/403 or a missing key.
    """

    @property
    def name(self) -> str:
        """``provider:model``, as shown in reports."""
        ...

    def judge(self, claim: str, passages: Sequence[str]) -> JudgeReply: ...


class VersionedJudge(Judge, Protocol):
    """A judge whose prompt is versioned (recordings are keyed on it). Every
    built-in provider is one."""

    @property
    def prompt_version(self) -> str:
        """Changes whenever the prompt, the message layout or the schema does."""
        ...
