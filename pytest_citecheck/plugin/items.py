"""Collection: claim files become collectors, claims become test items.

A claim file yields one :class:`ClaimItem` per claim; a file (or a saved answer)
that cannot be loaded yields an :class:`InvalidClaimFile` that fails alone with
the fix. Light: pytest only, so an idle run can import it with the hooks; the
loader and the models load when a claim file is collected.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from fnmatch import fnmatch
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_citecheck.plugin.options import SETTINGS_KEY
from pytest_citecheck.plugin.report_hooks import is_worker
from pytest_citecheck.plugin.state import citecheck_session
from pytest_citecheck.plugin.terminal import progress
from pytest_citecheck.plugin.xdist import worker_upcoming

if TYPE_CHECKING:
    from pytest_citecheck.claims.loader import ClaimFile
    from pytest_citecheck.claims.models import Claim
    from pytest_citecheck.claims.results import ClaimResult
    from pytest_citecheck.plugin.session import CitecheckSession

CLAIM_DOMAIN = "citecheck: "  # how a claim item names itself in reports
# How the item of a saved answer that cannot be imported is named (then its id).
ANSWER_ITEM = "invalid-answer-"


def collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    """A claim file's collector, when citecheck runs and the name matches."""
    settings = parent.config.stash[SETTINGS_KEY]
    if settings.enabled and settings.is_claim_file(file_path.name):
        return ClaimFileCollector.from_parent(parent, path=file_path)
    return None


class ClaimFileCollector(pytest.File):
    """A claim file: one test item per claim."""

    def collect(self) -> Iterator[pytest.Item]:
        from pytest_citecheck.claims.loader import ClaimFileError, load_claim_file
        from pytest_citecheck.plugin.terms import PLUGIN_TERMS

        try:
            settings = citecheck_session(self.config).settings
            claim_file = load_claim_file(
                self.path,
                roots=settings.document_roots,
                terms=PLUGIN_TERMS,
                max_claim_chars=settings.max_claim_chars,
                answers_apart=True,
            )
        except ClaimFileError as exc:
            # Not raised as a collection error: pytest would then stop the whole
            # session, and every other claim file must still run.
            yield InvalidClaimFile.from_parent(self, name="invalid-claim-file", error=exc)
            return
        error = _unknown_judge(self.config, claim_file)
        if error is not None:
            yield InvalidClaimFile.from_parent(self, name="invalid-claim-file", error=error)
            return
        for answer, failure in claim_file.failed_answers:
            # One saved answer that cannot be imported fails alone; the rest run.
            yield InvalidClaimFile.from_parent(self, name=f"{ANSWER_ITEM}{answer}", error=failure)
        for claim in claim_file.claims:
            yield ClaimItem.from_parent(self, name=claim.id, claim=claim)


def _unknown_judge(config: pytest.Config, claim_file: ClaimFile) -> Exception | None:
    """A claim file's ``judge:`` naming a provider nobody builds (no built-in, no
    ``pytest_citecheck_make_judge`` hook) makes the file invalid at that line --
    unless --citecheck-judge or ini citecheck_judge overrides it anyway."""
    session = citecheck_session(config)
    if session.settings.judge is not None:
        return None
    from pytest_citecheck.claims.loader import unknown_judge
    from pytest_citecheck.plugin.terms import PLUGIN_TERMS

    return unknown_judge(claim_file, session.judge, PLUGIN_TERMS)


def add_broken_links(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    """A claim file that is a link to a missing file is an invalid claim file
    (pytest skips what it cannot open; a lost claim file must not pass silently)."""
    from pytest_citecheck.claims.loader import ClaimFileError

    for path in broken_claim_links(config, config.stash[SETTINGS_KEY].patterns):
        error = ClaimFileError(
            path,
            None,
            f"the claim file is a link to {os.readlink(path)}, which does not exist",
            "point the link at the claim file, or remove the link",
        )
        collector = ClaimFileCollector.from_parent(session, path=path)
        items.append(
            InvalidClaimFile.from_parent(collector, name="invalid-claim-file", error=error)
        )


class ClaimFailed(Exception):
    def __init__(self, result: ClaimResult, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.result = result
        self.problems = problems


class ClaimItem(pytest.Item):
    """One claim and its citations, verified in its own cassette."""

    def __init__(self, *, claim: Claim, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.claim = claim

    @property
    def cassette(self) -> Path:
        from pytest_citecheck.recording.recorder import cassette_path

        return cassette_path(self.path, self.claim.id)

    def runtest(self) -> None:
        """The claim's result (recorded ahead, replayed, or rechecked), stashed for
        its report; its problems fail it."""
        session = citecheck_session(self.config)
        session.pytest_session = self.session
        if not session.replaying:
            # Recording: the claims are verified concurrently, here, inside the first
            # item's call (so log capture sees their HTTP); each item then reports its
            # own result in file order. xdist: a worker's share is what it was sent.
            if is_worker(self.config):
                session.verify_ahead(claim_items(worker_upcoming(self)))
            else:
                session.verify_ahead(
                    claim_items(self.session.items), progress(self.config, self.nodeid)
                )
        recheck_problems: list[str] = []
        if session.settings.recheck:
            from pytest_citecheck.plugin.recheck import recheck_item

            result, recheck_problems = recheck_item(self, session)
        else:
            result = session.result_for(self)
        result.file = self.path.name
        from pytest_citecheck.plugin.session import RESULTS_KEY

        self.stash[RESULTS_KEY] = [result]
        from pytest_citecheck.reports.per_claim import junit_properties

        self.user_properties.extend(junit_properties(result))
        problems = session.problems(result) + recheck_problems
        if problems:
            raise ClaimFailed(result, problems)

    def repr_failure(
        self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None
    ) -> str | Any:
        if isinstance(excinfo.value, ClaimFailed):
            from pytest_citecheck.reports.per_claim import citation_table

            lines = [f"citecheck: {p}" for p in excinfo.value.problems]
            table = citation_table(excinfo.value.result, verbose=self.config.get_verbosity() > 0)
            return _failure(self, "\n".join([*lines, "", *table]), headline=lines[0])
        from pytest_citecheck.core.secrets import scrub

        default = super().repr_failure(excinfo, style=style)
        text = str(default)
        cleaned = scrub(text)
        return default if cleaned == text else cleaned

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, (self.claim.line or 1) - 1, f"{CLAIM_DOMAIN}{self.claim.id}"


def _failure(item: ClaimItem, text: str, headline: str) -> Any:
    """A claim's failure as pytest shows it: the whole text in the failures section,
    and only its first line in the short test summary. (A plain string is both: on
    CI, where pytest does not trim summary lines, every claim's table would print
    twice.) Built from pytest's own traceback parts, so xdist carries it whole."""
    from _pytest._code.code import (
        ReprEntryNative,
        ReprExceptionInfo,
        ReprFileLocation,
        ReprTraceback,
    )

    path, line, _ = item.reportinfo()
    entries = [ReprEntryNative([text + "\n"])]
    return ReprExceptionInfo(
        reprtraceback=ReprTraceback(entries, None, style="native"),
        reprcrash=ReprFileLocation(str(path), (line or 0) + 1, headline),
    )


class InvalidClaimFile(pytest.Item):
    """Stands for a claim file that could not be loaded: fails with the fix, alone."""

    def __init__(self, *, error: Exception, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.error = error

    def runtest(self) -> None:
        raise self.error

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        what = "invalid saved answer" if self.name.startswith(ANSWER_ITEM) else "invalid claim file"
        return f"{what}: {self.error}"

    def reportinfo(self) -> tuple[Path, int | None, str]:
        line = getattr(self.error, "line", None)
        return self.path, None if line is None else line - 1, f"citecheck: {self.path.name}"


def stop_if_never_started(session: CitecheckSession, item: pytest.Item) -> bool | None:
    """A claim never started (Ctrl-C, ``-x``/``--maxfail`` while recording ahead):
    the session stops before its item, which is not run or reported (True)."""
    if not isinstance(item, ClaimItem) or is_worker(item.config):
        return None
    if not session.ahead.never_started(item):
        return None
    session.ahead.stop_before(item)
    return True


def claim_items(items: Sequence[pytest.Item]) -> list[ClaimItem]:
    return [i for i in items if isinstance(i, ClaimItem)]


# -- claim files found without collecting (the xdist controller, broken links) ----


def claim_files(config: pytest.Config, patterns: Sequence[str]) -> list[Path]:
    """Claim files under the run's paths (``norecursedirs`` honoured)."""
    return [p for p in _claim_paths(config, patterns) if p.is_file()]


def broken_claim_links(config: pytest.Config, patterns: Sequence[str]) -> list[Path]:
    """Claim file names under the run's paths that are links to nothing: pytest
    does not collect them, so they would be skipped without a word."""
    return [p for p in _claim_paths(config, patterns) if p.is_symlink() and not p.exists()]


def _claim_paths(config: pytest.Config, patterns: Sequence[str]) -> list[Path]:
    skip = [str(p) for p in config.getini("norecursedirs")]
    found: list[Path] = []
    for arg in config.args or [str(config.rootpath)]:
        root = Path(config.invocation_params.dir, arg.split("::", 1)[0])
        if root.is_file() or (root.is_symlink() and not root.exists()):
            found.append(root)
            continue
        if not root.is_dir():
            continue
        for path in root.rglob("*"):
            rel = path.relative_to(root).parts[:-1]
            if any(fnmatch(part, pattern) for part in rel for pattern in skip):
                continue
            if any(fnmatch(path.name, p) for p in patterns) and (
                path.is_file() or path.is_symlink()
            ):
                found.append(path)
    return found
