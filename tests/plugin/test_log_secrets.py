"""Planted secrets never reach a log record citecheck's HTTP produces:
httpx logs every request URL (the Crawling API token rides in its query) at INFO,
httpcore and VCR.py log headers and bodies at DEBUG. Whatever the handler: captured
logs in the terminal, ``log_cli``, ``--log-file``, JUnit with ``junit_logging=all``."""

from __future__ import annotations

import logging

import pytest

from pytest_citecheck.core.secrets import install_log_scrubber, uninstall_log_scrubber
from tests.doubles.crawlbase import CrawlbaseDouble
from tests.doubles.llm import LLMDouble
from tests.plugin.test_recording import (
    SECRETS,
    doubles,  # noqa: F401 -- fixture
    record,
    stop,
    suite,  # noqa: F401 -- fixture
    written_files,
)

LOG_MODES = {
    "debug-captured": ["--log-level=DEBUG", "-rA"],
    "log-cli": ["-o", "log_cli=true", "--log-cli-level=DEBUG"],
    "log-file": ["--log-file=run.log", "--log-file-level=DEBUG"],
    "junit-logging-all": ["-o", "junit_logging=all", "--junitxml=junit.xml", "--log-level=DEBUG"],
}


def everything(result: pytest.RunResult, run_dir: pytest.Pytester) -> str:
    texts = [result.stdout.str(), result.stderr.str()]
    texts += [p.read_text(errors="replace") for p in written_files(run_dir.path)]
    return "\n".join(texts)


def assert_clean(text: str, *, records_shown: bool = True) -> None:
    for name, value in SECRETS.items():
        assert value not in text, f"{name} leaked"
    if records_shown:  # the check can fail: the records are there, scrubbed
        assert "HTTP Request:" in text
        assert "token=REDACTED" in text


@pytest.mark.allow_resend(
    "runs the same claims more than once on purpose (record, replay, recheck, compare)"
)
@pytest.mark.parametrize("mode", LOG_MODES, ids=list(LOG_MODES))
def test_recording_logs_carry_no_secret(
    suite: pytest.Pytester,  # noqa: F811
    doubles: tuple[CrawlbaseDouble, LLMDouble],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    mode: str,
) -> None:
    result = record(suite, doubles, monkeypatch, *LOG_MODES[mode])
    result.assert_outcomes(passed=3)
    # Recording verifies claims ahead of the items, where pytest's handlers may not
    # show the records; whatever is shown is scrubbed.
    assert_clean(everything(result, suite), records_shown=False)


@pytest.mark.allow_resend(
    "runs the same claims more than once on purpose (record, replay, recheck, compare)"
)
@pytest.mark.parametrize("mode", LOG_MODES, ids=list(LOG_MODES))
def test_replay_with_the_token_exported_logs_no_secret(
    suite: pytest.Pytester,  # noqa: F811
    doubles: tuple[CrawlbaseDouble, LLMDouble],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    mode: str,
) -> None:
    record(suite, doubles, monkeypatch).assert_outcomes(passed=3)
    urls = stop(*doubles)
    with monkeypatch.context() as env:
        for name, value in SECRETS.items():
            env.setenv(name, value)
        env.setenv("CITECHECK_CRAWLBASE_URL", urls[0])
        env.setenv("OPENAI_BASE_URL", urls[1])
        result = suite.runpytest_subprocess("--citecheck", *LOG_MODES[mode])
    result.assert_outcomes(passed=3)
    assert_clean(everything(result, suite))


def test_scrubber_covers_child_loggers_args_and_tracebacks(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-planted-key-for-log-test-000")
    install_log_scrubber()
    try:
        with caplog.at_level(logging.DEBUG):
            logging.getLogger("httpcore.http11").debug(
                "send_request_headers %s", [(b"Authorization", b"Bearer abc.def")]
            )
            logging.getLogger("httpx").info("HTTP Request: GET %s", "https://a/?token=XYZ&u=1")
            try:
                raise RuntimeError("key sk-planted-key-for-log-test-000 refused")
            except RuntimeError:
                logging.getLogger("vcr.stubs").exception("playback failed")
            logging.getLogger("someone.else").info("token=KEEP-unrelated")
    finally:
        uninstall_log_scrubber()
    text = caplog.text
    assert "abc.def" not in text and "Bearer REDACTED" in text
    assert "token=XYZ" not in text and "token=REDACTED&u=1" in text
    assert "sk-planted-key-for-log-test-000" not in text
    assert "RuntimeError" in text  # the traceback is kept, scrubbed
    assert "token=KEEP-unrelated" in text  # other libraries' records are left alone
