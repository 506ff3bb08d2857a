"""``--citecheck-url-policy`` / ini ``citecheck_url_policy``: with ``public`` an internal
or credentialed URL is ``url_refused`` and never fetched; the default (off) fetches it."""

from __future__ import annotations

import json

import pytest

from tests.plugin.fakes import CONFTEST

# The fake fetcher knows only example.com pages: fetching anything else is an
# internal_error, so a url_refused verdict proves no fetch was attempted.
CLAIMS = """\
claims:
  - id: internal
    claim: Water boils at 100 C.
    citations:
      - http://169.254.169.254/latest/meta-data/
      - http://0x7f000001/
      - https://alice:hunter2@example.com/boiling
      - https://example.com/boiling
"""


def _verdicts(pytester: pytest.Pytester) -> list[tuple[str, str | None]]:
    report = json.loads((pytester.path / "r.json").read_text(encoding="utf-8"))
    (claim,) = report["claims"]
    return [(v["url"], v["reason"]) for v in claim["verdicts"]]


@pytest.mark.parametrize("how", ["flag", "ini"])
def test_public_refuses_internal_urls_without_fetching(pytester: pytest.Pytester, how: str) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makefile(".yaml", citecheck_a=CLAIMS)
    args = ["--citecheck", "--citecheck-record=all", "--citecheck-report=r.json"]
    if how == "flag":
        args.append("--citecheck-url-policy=public")
    else:
        pytester.makeini("[pytest]\ncitecheck_url_policy = public\n")
    result = pytester.runpytest(*args)
    assert _verdicts(pytester) == [
        ("http://169.254.169.254/latest/meta-data/", "url_refused"),
        ("http://0x7f000001/", "url_refused"),
        ("https://REDACTED@example.com/boiling", "url_refused"),
        ("https://example.com/boiling", None),
    ]
    result.assert_outcomes(passed=1)  # one supported citation; the refused are not_found
    output = result.stdout.str() + (pytester.path / "r.json").read_text(encoding="utf-8")
    assert "hunter2" not in output


def test_the_default_fetches_every_url(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makefile(".yaml", citecheck_a=CLAIMS)
    result = pytester.runpytest(
        "--citecheck", "--citecheck-record=all", "--citecheck-report=r.json"
    )
    reasons = [reason for _, reason in _verdicts(pytester)]
    assert "url_refused" not in reasons
    assert reasons[:3] == ["internal_error"] * 3  # the fake fetcher was asked for them
    assert "hunter2" not in result.stdout.str() + (pytester.path / "r.json").read_text("utf-8")


def test_a_bad_ini_value_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\ncitecheck_url_policy = strict\n")
    result = pytester.runpytest("--citecheck")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*citecheck_url_policy*'strict' is not one of off, public*"])
