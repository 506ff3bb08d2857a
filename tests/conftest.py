from __future__ import annotations

import signal
from collections.abc import Iterator
from typing import Any

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

from tests.doubles import PAID, resend_phase

# A paid request body shown in a failure: enough to tell which call it was.
_SHOWN = 300


def pytest_configure(config: pytest.Config) -> None:
    # The Ctrl-C tests send SIGINT to this process, to a child, or call
    # _thread.interrupt_main(). A suite started in the background of a shell without
    # job control (`cmd &` in a script, nohup) inherits SIGINT ignored, and so does
    # every child: the children then finish instead of stopping, and interrupt_main()
    # does nothing, so a test that waits for the stop hangs. Python's own handler is
    # put back here, before xdist starts its workers (which inherit it).
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    config.addinivalue_line(
        "markers",
        "allow_resend(reason): the test sends the same paid request (a judge call, a "
        "crawl, a push) to a double more than once on purpose (it exercises a retry)",
    )


@pytest.fixture(autouse=True)
def _no_step_summary(monkeypatch: pytest.MonkeyPatch) -> None:
    """The runs these tests start must not append to this job's own GitHub step
    summary nor print workflow commands; tests of those features set
    GITHUB_STEP_SUMMARY / GITHUB_ACTIONS themselves."""
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)


@pytest.fixture(autouse=True)
def _each_paid_request_once(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fail a test in which the same paid request body (a judge call, a crawl, a
    Crawler push) reached a test double twice: a resend the provider bills twice while
    the cassette and the cost report show one. A test that exercises a
    retry on purpose says so with ``@pytest.mark.allow_resend(reason)``. Counted per
    phase (tests/doubles ``resend_phase``): each engine built here starts one, and a test
    that runs the same claims again in a subprocess calls ``resend_phase()`` between."""
    from pytest_citecheck.engine.core import Engine

    PAID.forget()
    built = Engine.__init__

    def each_engine_a_phase(engine: Engine, *args: Any, **kwargs: Any) -> None:
        # One engine, one run: the same claims run again by a new engine (record, then
        # replay or recheck) may send what the last run sent; one run may not.
        resend_phase()
        built(engine, *args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Engine, "__init__", each_engine_a_phase)
        yield
    resent = PAID.resent()
    PAID.forget()
    if not resent or request.node.get_closest_marker("allow_resend") is not None:
        return
    lines = [
        f"{double} received {where} {times} times: {body[:_SHOWN].decode('utf-8', 'replace')!r}"
        for double, where, body, times in resent
    ]
    pytest.fail(
        "the same paid request reached a double more than once (a resend: billed twice, "
        "counted once); fix the resend, or mark the test @pytest.mark.allow_resend(reason) "
        "if it tests one:\n" + "\n".join(lines),
        pytrace=False,
    )


@pytest.fixture(autouse=True)
def _ctrl_c_handler_restored() -> Iterator[None]:
    """Fail a test that leaves Ctrl-C's handling changed: the SIGINT handler (one left
    by an in-process run of the plugin, the CLI or a server) or SIGINT blocked in the
    main thread's signal mask (which every later subprocess inherits). A later test's
    Ctrl-C in the same process, or in a child it starts, would then be swallowed, and a
    test that waits for it hangs or sees the run finish. Both are put back, so only
    the leaking test fails."""
    before = signal.getsignal(signal.SIGINT)
    blocked_before = signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, [])
    yield
    after = signal.getsignal(signal.SIGINT)
    blocked = signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, [])
    problems = []
    if after is not before:
        signal.signal(signal.SIGINT, before)
        problems.append(f"the SIGINT handler changed ({after!r}, was {before!r})")
    if blocked != blocked_before:
        how = signal.SIG_UNBLOCK if blocked else signal.SIG_BLOCK
        signal.pthread_sigmask(how, [signal.SIGINT])
        problems.append(f"SIGINT {'blocked' if blocked else 'unblocked'} in the main thread")
    if problems:
        pytest.fail(
            "the test left Ctrl-C's handling changed: "
            + "; ".join(problems)
            + ": restore it where it was changed",
            pytrace=False,
        )
