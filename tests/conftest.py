from __future__ import annotations

# pytester's in-process runs drop the modules first imported inside them, and
# some libraries keep module-level state that outlives such a reload:
# - PyYAML's C extension cannot be imported twice (its emitter then rejects the
#   re-imported event classes);
# - httpx maps httpcore's exceptions through a table filled on first use; if
#   httpcore is first imported inside a pytester run, later runs raise
#   unmapped httpcore errors that no `except httpx.TransportError` catches.
# Import them once, up front.
import httpcore  # noqa: F401
import httpx  # noqa: F401
import pytest
import vcr  # noqa: F401
import yaml  # noqa: F401


@pytest.fixture(autouse=True)
def _no_step_summary(monkeypatch: pytest.MonkeyPatch) -> None:
    """The runs these tests start must not append to this job's own GitHub step
    summary nor print workflow commands; tests of those features set
    GITHUB_STEP_SUMMARY / GITHUB_ACTIONS themselves."""
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
