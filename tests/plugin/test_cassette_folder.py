"""The pytest plugin checks the cassette folder before anything is fetched or judged:
one usage error naming the folder, the cause and the fix, serial
and under xdist. A ``cassettes`` that is a regular file stops even root."""

from __future__ import annotations

import pytest

from tests.plugin.fakes import CONFTEST

CLAIMS = """\
claims:
  - id: a
    claim: Water boils at 100 C.
    citations:
      - https://example.com/boiling
"""

# Every fetch and judge call is written down, so the test sees that none was made.
LOGGED = (
    CONFTEST
    + """

def _logged(method, what):
    def call(self, *args):
        with open("calls.log", "a") as log:
            log.write(f"{what} {args[0]}\\n")
        return method(self, *args)
    return call

FakeFetcher.fetch = _logged(FakeFetcher.fetch, "fetch")
FakeJudge.judge = _logged(FakeJudge.judge, "judge")
"""
)


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["serial", "n2"])
def test_a_cassette_folder_under_a_file_stops_the_run_before_any_call(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    pytester.makeconftest(LOGGED)
    pytester.makefile(".yaml", citecheck_a=CLAIMS)
    (pytester.path / "cassettes").write_text("a file where the cassette folder goes\n")

    result = pytester.runpytest("--citecheck", "--citecheck-record=once", *xdist)

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "ERROR: citecheck cannot record:",
            "*cassettes cannot be saved into cassettes/citecheck_a: it would be created in "
            "cassettes, which is not a folder, so nothing can be written under it; move that "
            "file away or choose another folder*",
        ]
    )
    assert not (pytester.path / "calls.log").exists()


def test_the_recheck_stops_before_fetching_when_it_cannot_save_beside_a_cassette(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeconftest(LOGGED)
    pytester.makefile(".yaml", citecheck_a=CLAIMS)
    assert pytester.runpytest("--citecheck", "--citecheck-record=once").ret == 0
    (pytester.path / "calls.log").unlink()
    # Where the recheck records the live pages, beside the cassette, is a regular file.
    (pytester.path / "cassettes" / "citecheck_a" / "recheck").write_text("in the way\n")

    result = pytester.runpytest("--citecheck", "--citecheck-recheck")

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "ERROR: --citecheck-recheck cannot save:",
            "  - cassettes cannot be saved into cassettes/citecheck_a/recheck: it is not a "
            "folder, so nothing can be written under it; move that file away or choose "
            "another folder",
        ]
    )
    assert not (pytester.path / "calls.log").exists()
