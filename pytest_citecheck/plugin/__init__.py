"""The pytest entry point: thin hooks over :class:`.session.CitecheckSession`.

Merely installed, the plugin costs next to nothing (``bench/idle.py``): this
module imports only pytest and the option definitions. pydantic, the session,
the loader (yaml), the recorder, the judges and the embedding model load when
``--citecheck`` is given or the ``citecheck`` fixture is first used;
``bench/idle.py`` measures it.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Generator, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_citecheck.plugin.options import SETTINGS_KEY, check_paths, settings_from_config
from pytest_citecheck.plugin.options import pytest_addoption as pytest_addoption
from pytest_citecheck.plugin.report_hooks import REPORT_ATTR, ReportHooks, is_worker

if TYPE_CHECKING:
    from collections.abc import Sequence

    from pytest_citecheck.claims.loader import ClaimFile
    from pytest_citecheck.claims.models import Claim
    from pytest_citecheck.claims.results import ClaimResult
    from pytest_citecheck.plugin.fixture import CitecheckFixture
    from pytest_citecheck.plugin.session import CitecheckSession

GATE_NODEID = "citecheck::gate"
# The key of an xdist worker's ``workeroutput`` that carries its deselected claim items.
DESELECTED_KEY = "citecheck_deselected"
# ... and the node ids of the claim items it selected (every worker collects them all).
SELECTED_KEY = "citecheck_selected"
GATE_CATEGORY = "citecheck gate failed"
CLAIM_DOMAIN = "citecheck: "  # how a claim item names itself in reports


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from pytest_citecheck.plugin import newhooks

    pluginmanager.add_hookspecs(newhooks)


def pytest_configure(config: pytest.Config) -> None:
    settings = settings_from_config(config)
    config.stash[SETTINGS_KEY] = settings
    config.pluginmanager.register(SessionHooks(config), "citecheck-session")
    config.pluginmanager.register(ReportHooks(config, settings), "citecheck-reports")
    if settings.enabled:
        _session(config)
        if settings.recheck:
            from pytest_citecheck.plugin.recheck import RecheckHooks

            config.pluginmanager.register(RecheckHooks(config, settings), "citecheck-recheck")


def pytest_unconfigure(config: pytest.Config) -> None:
    if "pytest_citecheck.core.secrets" in sys.modules:
        from pytest_citecheck.core.secrets import uninstall_log_scrubber

        uninstall_log_scrubber()


def _session(config: pytest.Config) -> CitecheckSession:
    """The session object, built on first use (``--citecheck`` or the fixture)."""
    from pytest_citecheck.plugin.session import SESSION_KEY, CitecheckSession

    session = config.stash.get(SESSION_KEY, None)
    if session is None:
        from pytest_citecheck.core.secrets import install_log_scrubber

        install_log_scrubber()
        session = CitecheckSession(config, config.stash[SETTINGS_KEY])
        config.stash[SESSION_KEY] = session
    return session


@pytest.fixture
def citecheck(request: pytest.FixtureRequest) -> Iterator[CitecheckFixture]:
    """Verify claims and their citations; results join the citecheck session gate."""
    from contextlib import ExitStack

    from pytest_citecheck.plugin.fixture import CitecheckFixture

    _session(request.config)
    with ExitStack() as stack:
        yield CitecheckFixture(request, stack)


# -- collection -------------------------------------------------------------------


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
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
            settings = _session(self.config).settings
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
    session = _session(config)
    if session.settings.judge is not None:
        return None
    from pytest_citecheck.claims.loader import unknown_judge
    from pytest_citecheck.plugin.terms import PLUGIN_TERMS

    return unknown_judge(claim_file, session.judge, PLUGIN_TERMS)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    """A claim file that is a link to a missing file is an invalid claim file
    (pytest skips what it cannot open; a lost claim file must not pass silently).
    First, so ``-k`` and the other selections still apply to it."""
    settings = config.stash[SETTINGS_KEY]
    if not settings.enabled:
        return
    from pytest_citecheck.claims.loader import ClaimFileError
    from pytest_citecheck.plugin.session import broken_claim_links

    for path in broken_claim_links(config, settings.patterns):
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
        session = _session(self.config)
        session.pytest_session = self.session
        if not session.replaying:
            # Recording: the claims are verified concurrently, here, inside the first
            # item's call (so log capture sees their HTTP); each item then reports its
            # own result in file order. xdist: a worker's share is what it was sent.
            if is_worker(self.config):
                session.verify_ahead(_claim_items(_worker_upcoming(self)))
            else:
                session.verify_ahead(
                    _claim_items(self.session.items), _progress(self.config, self.nodeid)
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
        from pytest_citecheck.reports.report import junit_properties

        self.user_properties.extend(junit_properties(result))
        problems = session.problems(result) + recheck_problems
        if problems:
            raise ClaimFailed(result, problems)

    def repr_failure(
        self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None
    ) -> str | Any:
        if isinstance(excinfo.value, ClaimFailed):
            from pytest_citecheck.reports.report import citation_table

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


# How the item of a saved answer that cannot be imported is named (then its id).
ANSWER_ITEM = "invalid-answer-"


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


# -- results travel in reports (xdist-safe) -----------------------------------------


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if call.when != "call" or "pytest_citecheck.plugin.session" not in sys.modules:
        return report  # no citecheck session: nothing of ours ran
    from pytest_citecheck.plugin.session import RESULTS_KEY

    # Popped: from here on the report carries the results (each held once).
    results = item.stash.get(RESULTS_KEY, None)
    if results is not None:
        del item.stash[RESULTS_KEY]
    if results is None and isinstance(item, ClaimItem):
        # The run blew up before a result existed: its citations are errors,
        # never silently missing from the totals.
        detail = f"{call.excinfo.typename}: {call.excinfo.value}" if call.excinfo else "no result"
        from pytest_citecheck.claims.labels import Reason
        from pytest_citecheck.core.secrets import scrub
        from pytest_citecheck.plugin.session import error_result

        results = [error_result(item.claim, Reason.INTERNAL, scrub(detail))]
    if isinstance(item, ClaimItem) and item.config.stash[SETTINGS_KEY].recheck:
        from pytest_citecheck.plugin.recheck import attach

        attach(item, report)
    if results:
        # Across processes (xdist) as JSON; in this process the objects themselves.
        payload: Any = results
        if is_worker(item.config):
            payload = json.dumps([r.dump_with_answer() for r in results])
        setattr(report, REPORT_ATTR, payload)
    return report


def names_a_part(config: pytest.Config) -> bool:
    """The command line names claim files, test files or node ids rather than
    folders: the run covers a part of the suite (as ``-k`` does)."""
    here = config.invocation_params.dir
    return any("::" in arg or (here / arg).is_file() for arg in config.args)


class SessionHooks:
    """Hooks that need the config (``pytest_runtest_logreport`` gets none): registered
    per session, like xdist's and syrupy's session plugins. Light until a citecheck
    session exists (``--citecheck``, or the fixture used here or on a worker)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        # The test running now: an assertion about a result shows that test's results.
        self._running: pytest.Item | None = None
        # Claim items deselected (-k, -m, --lf): the gate then judges a part of the claims.
        self.deselected = 0
        # Node ids of the claim items selected (CitecheckSession.unverified); None: unknown.
        self.selected: set[str] | None = None
        # When the run started (the report's run block).
        self.started = datetime.now(UTC)

    def pytest_deselected(self, items: Sequence[pytest.Item]) -> None:
        self.deselected += sum(isinstance(item, ClaimItem) for item in items)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: object | None) -> None:
        """xdist: each worker collects (and deselects) every item; their count is kept once."""
        output = getattr(node, "workeroutput", {})
        count = output.get(DESELECTED_KEY)
        if isinstance(count, int):
            self.deselected = max(self.deselected, count)
        selected = output.get(SELECTED_KEY)
        if isinstance(selected, list):
            self.selected = (self.selected or set()) | {str(n) for n in selected}

    @property
    def session(self) -> CitecheckSession | None:
        if "pytest_citecheck.plugin.session" not in sys.modules:
            return None
        from pytest_citecheck.plugin.session import SESSION_KEY

        return self.config.stash.get(SESSION_KEY, None)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(
        self, item: pytest.Item, nextitem: pytest.Item | None
    ) -> bool | None:
        """A claim never started (Ctrl-C, ``-x``/``--maxfail`` while recording ahead):
        the session stops before its item, which is not run or reported."""
        citecheck = self.session
        if citecheck is None or not isinstance(item, ClaimItem) or is_worker(self.config):
            return None
        if not citecheck.never_started(item):
            return None
        citecheck.stop_before(item)
        return True

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, None, None]:
        self._running = item
        try:
            return (yield)
        finally:
            self._running = None

    def pytest_assertrepr_compare(
        self, config: pytest.Config, op: str, left: object, right: object
    ) -> list[str] | None:
        """``assert result.label == "supported"`` failing shows the claim's citations:
        label, reason, quote, detail, and the command that records the test again."""
        item = self._running
        if item is None or self.session is None or op not in ("==", "!="):
            return None
        from pytest_citecheck.claims.labels import Label
        from pytest_citecheck.plugin.session import RESULTS_KEY

        if not any(isinstance(side, Label) for side in (left, right)):
            return None
        results = item.stash.get(RESULTS_KEY, None)
        if not results:
            return None
        from pytest_citecheck.plugin.terms import PLUGIN_TERMS
        from pytest_citecheck.reports.report import explain_label

        rerecord = PLUGIN_TERMS.record_command(item.nodeid, "rewrite")
        return explain_label(results, left, op, right, rerecord)

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        """A judge named on the command line or in ini is built up front, so a typo
        is a usage error, not a failure per claim (keys: :meth:`pytest_collection_finish`);
        the baseline and the output paths are checked before anything runs."""
        self.started = datetime.now(UTC)
        settings = self.config.stash[SETTINGS_KEY]
        if not settings.enabled or is_worker(session.config):
            return
        baseline = check_paths(settings)
        citecheck = _session(self.config)
        citecheck.baseline = baseline
        if settings.judge:
            from pytest_citecheck.core.errors import ConfigurationError

            try:
                citecheck.judge(settings.judge)
            except (ValueError, ConfigurationError) as exc:
                where = (
                    "ini option citecheck_judge"
                    if settings.judge_origin == "ini"
                    else ("--citecheck-judge")
                )
                raise pytest.UsageError(f"{where} {settings.judge}: {exc}") from None
        for member in settings.judges or ():
            from pytest_citecheck.core.errors import ConfigurationError

            try:
                citecheck.judge(member)
            except (ValueError, ConfigurationError) as exc:
                raise pytest.UsageError(f"judge panel member {member}: {exc}") from None
        if settings.dry_run and _is_xdist_controller(session.config):
            raise pytest.UsageError(
                "--citecheck-dry-run lists the whole run in one process: drop -n/--numprocesses"
            )
        if settings.dry_run:
            return  # no request is made: no key or token is needed
        if not settings.record_mode.replay_only and _is_xdist_controller(session.config):
            # Workers cannot stop the session cleanly: check keys before they start.
            _session(self.config).preflight_files()

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """Every key and token the selected claims need is checked once, here: one
        usage error naming the variables, instead of a failure per claim."""
        config = session.config
        settings = config.stash[SETTINGS_KEY]
        if is_worker(config):
            config.workeroutput[DESELECTED_KEY] = self.deselected  # type: ignore[attr-defined]
            if settings.enabled:
                selected = [i.nodeid for i in _claim_items(session.items)]
                config.workeroutput[SELECTED_KEY] = selected  # type: ignore[attr-defined]
        if not settings.enabled or config.option.collectonly or is_worker(config):
            return
        items = _claim_items(session.items)
        self.selected = {i.nodeid for i in items}
        if items and not settings.dry_run:
            _session(config).preflight(items)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> bool | None:
        """``--citecheck-dry-run``: print what recording would do; run nothing."""
        settings = self.config.stash[SETTINGS_KEY]
        if not settings.enabled or not settings.dry_run or is_worker(self.config):
            return None
        lines = _session(self.config).dry_run_lines(_claim_items(session.items))
        terminal = self.config.pluginmanager.get_plugin("terminalreporter")
        if terminal is not None:
            terminal.ensure_newline()
            for line in lines:
                terminal.write_line(line)
        else:
            print("\n".join(lines))
        return True

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        payload = getattr(report, REPORT_ATTR, None)
        if payload is not None and report.when == "call":
            from pytest_citecheck.reports.report import ItemInfo

            item = ItemInfo(report.outcome, report.location[1], report.location[0])
            _session(self.config).add_report_results(report.nodeid, payload, item)
            if not is_worker(self.config):
                # The session holds the results now; the report pytest keeps does not.
                # (On a worker the attribute still has to travel to the controller.)
                delattr(report, REPORT_ATTR)
        _forget_quiet_phase(self.config, report)

    @pytest.hookimpl(optionalhook=True)
    def pytest_handlecrashitem(self, crashitem: str, report: pytest.TestReport, sched: Any) -> None:
        if self.config.stash[SETTINGS_KEY].enabled:
            _session(self.config).add_crashed(crashitem)

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        """Before JUnit XML is written and the terminal's last line: the run's end
        (report, gate, audit rows, report files); a failed gate becomes a failing
        ``citecheck::gate`` test case."""
        citecheck = self.session
        if citecheck is None:
            return
        citecheck.close()
        if citecheck.stopped_by is None:
            # Stopped outside citecheck's own waits: a Ctrl-C in pytest's code, -x or
            # --maxfail after a failing test, a test that asked the session to stop.
            if exitstatus == pytest.ExitCode.INTERRUPTED:
                citecheck.stopped_by = "interrupted"
            elif session.shouldfail:
                citecheck.stopped_by = "-x/--maxfail reached"
            elif session.shouldstop:
                citecheck.stopped_by = "the run stopped"
        if is_worker(session.config):
            return
        report = citecheck.finish(
            self.started, self.deselected, self.selected, subset=names_a_part(self.config)
        )
        if report is None:
            return
        if (report.gate_failures or report.output_errors) and session.exitstatus == 0:
            # A report file that cannot be written fails the run instead of vanishing.
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        if report.gate_failures:
            session.testscollected += 1  # the progress counter counts the gate case too
            self.config.hook.pytest_runtest_logreport(report=gate_report(report.gate_failures))

    def pytest_report_teststatus(
        self, report: pytest.TestReport
    ) -> tuple[str, str, tuple[str, dict[str, bool]]] | None:
        if report.nodeid == GATE_NODEID and report.failed:
            # No progress letter: it would trail the last line's "[100%]".
            return GATE_CATEGORY, "", ("GATE FAILED", {"red": True, "bold": True})
        return None


def _forget_quiet_phase(config: pytest.Config, report: pytest.TestReport) -> None:
    """Keep a claim's failure report compact.

    The terminal keeps every passed setup/teardown report and, for each failure,
    scans all of them for teardown output: quadratic, minutes for 10,000 failing
    claims. A claim item's quiet setup/teardown has nothing to show: drop it
    once the terminal has counted it (it is the last one it stored).
    """
    if report.when == "call" or not report.passed or report.sections:
        return
    if not str(report.location[2]).startswith(CLAIM_DOMAIN):
        return
    terminal = config.pluginmanager.get_plugin("terminalreporter")
    quiet = getattr(terminal, "stats", {}).get("")
    if quiet and quiet[-1] is report:
        quiet.pop()


def gate_report(failures: list[str]) -> pytest.TestReport:
    """The gate as a test case: JUnit counts it as a failure and shows its lines."""
    text = "\n".join(f"citecheck gate FAILED: {failure}" for failure in failures)
    return pytest.TestReport(
        nodeid=GATE_NODEID,
        location=("citecheck", None, "gate"),
        keywords={"citecheck": 1},
        outcome="failed",
        longrepr=text,
        when="call",
        sections=[],
        duration=0.0,
        user_properties=[(f"citecheck.gate.{i}", f) for i, f in enumerate(failures, 1)],
    )


class _Progress:
    """The terminal, for the recording progress line, with output capture suspended."""

    def __init__(self, config: pytest.Config, terminal: Any, nodeid: str) -> None:
        self._terminal = terminal
        self._nodeid = nodeid
        self._verbose = config.get_verbosity() > 0
        self._capture = config.pluginmanager.get_plugin("capturemanager")
        self.isatty = bool(getattr(terminal, "isatty", False))

    def _free(self) -> Any:
        from contextlib import nullcontext

        if self._capture is None:
            return nullcontext()
        return self._capture.global_and_fixture_disabled()

    def start(self) -> None:
        """On a terminal the progress overwrites the item's line (``file.yaml ``), which
        :meth:`done` writes again below it; in a log it starts a line of its own."""
        if not self.isatty:
            with self._free():
                self._terminal.ensure_newline()

    def rewrite(self, line: str, erase: bool = False) -> None:
        with self._free():
            self._terminal.rewrite(line, erase=erase)

    def write(self, text: str) -> None:
        with self._free():
            self._terminal.write(text)

    def write_line(self, line: str) -> None:
        with self._free():
            self._terminal.write_line(line)

    def done(self) -> None:
        """Start the item's line again (``file.yaml ``, or its node id with ``-v``) below
        ours: the terminal reporter then writes it, beginning with a line break."""
        with self._free():
            if hasattr(self._terminal, "currentfspath"):
                self._terminal.currentfspath = None
            if not self._verbose and hasattr(self._terminal, "write_fspath_result"):
                self._terminal.write_fspath_result(self._nodeid, "")


def _progress(config: pytest.Config, nodeid: str) -> _Progress | None:
    """Where recording progress goes: the terminal, unless ``-q``."""
    terminal = config.pluginmanager.get_plugin("terminalreporter")
    if terminal is None or config.get_verbosity() < 0:
        return None
    return _Progress(config, terminal, nodeid)


def _is_xdist_controller(config: pytest.Config) -> bool:
    return not is_worker(config) and bool(getattr(config.option, "numprocesses", None))


def _claim_items(items: Sequence[pytest.Item]) -> list[ClaimItem]:
    return [i for i in items if isinstance(i, ClaimItem)]


def _worker_upcoming(item: pytest.Item) -> list[pytest.Item]:
    """This item and the ones the xdist controller has already sent this worker."""
    interactor = next(
        (
            p
            for p in item.config.pluginmanager.get_plugins()
            if type(p).__name__ == "WorkerInteractor" and hasattr(p, "torun")
        ),
        None,
    )
    if interactor is None:
        return [item]
    items = item.session.items
    try:
        with interactor.torun.lock() as queue:
            indices = [interactor.nextitem_index, *queue]
    except Exception:  # a newer xdist: fall back to one claim at a time
        return [item]
    return [item] + [items[i] for i in indices if isinstance(i, int) and 0 <= i < len(items)]
