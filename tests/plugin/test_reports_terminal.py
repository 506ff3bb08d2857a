"""-v labels, per-file totals, the baseline diff, the
max-drop warning, the hint for claim files left unverified, and --help."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_citecheck.core.providers import PROVIDER_ENV
from pytest_citecheck.engine.gate import load_baseline_precision
from tests.plugin.fakes import CONFTEST, CONTRADICTED, NOT_FOUND, SUPPORTED, claims_yaml


def test_verbose_shows_each_claim_label_and_files_get_totals(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makefile(".yaml", citecheck_a=claims_yaml(SUPPORTED, CONTRADICTED))
    pytester.makefile(".yaml", citecheck_b=claims_yaml(NOT_FOUND))
    result = pytester.runpytest("--citecheck", "--citecheck-record=all", "-v")
    result.stdout.fnmatch_lines(
        [
            "citecheck_a.yaml::boils-100 PASSED [[]supported[]]*",
            "citecheck_a.yaml::boils-50 FAILED [[]contradicted[]]*",
            "citecheck_b.yaml::cats-bark PASSED [[]not_found[]]*",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "per file:",
            "  citecheck_a.yaml  2 claims, 2 citations, precision 0.5000 (1/2), 1 failed",
            "  citecheck_b.yaml  1 claim, 1 citation, precision 0.0000 (0/1)",
        ]
    )


INVENTED_QUOTE = """claims:
  - id: invented
    claim: Water boils at 50 C.
    citations:
      - document: notes.txt
        quote: Water boils at 50 degrees.
"""


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["serial", "n2"])
def test_a_claim_only_a_made_up_quote_fails_reads_fabricated(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    pytester.makefile(".txt", notes="Water boils at 100 degrees Celsius at sea level.")
    pytester.makefile(".yaml", citecheck_a=INVENTED_QUOTE)
    result = pytester.runpytest("--citecheck", "-v", "-rf", *xdist)
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "*FAILED [[]fabricated[]]*",
            "citecheck: 1 citation fabricated (allow with citecheck_allow_contradicted)",
            "claim label: fabricated",
        ]
    )
    result.stdout.fnmatch_lines(
        ["citecheck gate FAILED: 1 citation fabricated (allow with citecheck_allow_contradicted)"]
    )
    assert "[contradicted]" not in out and "0 citations contradicted" not in out, out


def test_max_drop_without_a_baseline_warns(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makefile(".yaml", citecheck_a=claims_yaml(SUPPORTED))
    result = pytester.runpytest("--citecheck", "--citecheck-record=all", "--citecheck-max-drop=0.1")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        ["*PytestConfigWarning: citecheck_max_drop is set but no --citecheck-baseline is given*"]
    )
    # Located where the user set it, not at the plugin's own source line.
    assert "command line option --citecheck-max-drop:0: PytestConfigWarning" in result.stdout.str()
    result.stdout.no_fnmatch_line("*report_hooks.py*")
    result.stdout.no_fnmatch_line("*issue_config_time_warning*")


def test_max_drop_in_ini_without_a_baseline_warns_at_the_ini_line(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makefile(".yaml", citecheck_a=claims_yaml(SUPPORTED))
    pytester.makeini("[pytest]\ncitecheck_min_precision = 0.5\ncitecheck_max_drop = 0.1\n")
    result = pytester.runpytest("--citecheck", "--citecheck-record=all")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "*tox.ini:3: PytestConfigWarning: citecheck_max_drop is set but no "
            "--citecheck-baseline is given*",
            "    citecheck_max_drop = 0.1",
        ]
    )
    result.stdout.no_fnmatch_line("*report_hooks.py*")


def test_claim_files_without_the_flag_get_a_one_line_hint(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", citecheck_a=claims_yaml(SUPPORTED))
    pytester.makepyfile(test_plain="def test_plain():\n    pass\n")
    result = pytester.runpytest()
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        ["citecheck: 1 claim file found but not verified; add --citecheck to check their citations"]
    )
    pytester.runpytest("--citecheck").stdout.no_fnmatch_line("*found but not verified*")


def test_the_hint_shows_once_under_xdist(pytester: pytest.Pytester) -> None:
    """The controller collects nothing: the workers count the claim files for it."""
    pytester.makefile(".yaml", citecheck_a=claims_yaml(SUPPORTED))
    pytester.makefile(".yaml", citecheck_b=claims_yaml(NOT_FOUND))
    pytester.makepyfile(test_plain="def test_plain():\n    pass\n")
    result = pytester.runpytest("-n", "2")
    result.assert_outcomes(passed=1)
    hint = (
        "citecheck: 2 claim files found but not verified; add --citecheck to check their citations"
    )
    assert result.stdout.lines.count(hint) == 1, result.stdout.str()


def _citecheck_help(out: str) -> dict[str, list[str]]:
    """``pytest --help``'s citecheck groups: each header and its lines, in order."""
    groups: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in out.splitlines():
        if line and not line.startswith(" "):
            header = line.rstrip(":")
            inside = header.startswith(("citation checking (pytest-citecheck)", "citecheck: "))
            current = groups.setdefault(header, []) if inside else None
        elif current is not None:
            current.append(line)
    return groups


def test_help_groups_the_citecheck_flags_so_the_section_reads(
    pytester: pytest.Pytester,
) -> None:
    from pytest_citecheck.options.table import OPTIONS
    from pytest_citecheck.plugin.options import HELP_GROUPS

    out = pytester.runpytest("--help").stdout.str()
    groups = _citecheck_help(out)
    assert list(groups) == list(HELP_GROUPS.values()), out
    # The groups follow each other: nothing of pytest's or another plugin's between them.
    headers = [line for line in out.splitlines() if line and not line.startswith(" ")]
    first = headers.index(next(iter(groups)) + ":")
    assert headers[first : first + len(groups)] == [f"{g}:" for g in groups]
    text = {g: " ".join(" ".join(lines).split()).replace("- ", "-") for g, lines in groups.items()}
    flags = [o.pytest_flag for o in OPTIONS if isinstance(o.pytest_flag, str)]
    everything = " ".join(text.values())
    for flag in flags:
        assert f"{flag}" in everything, flag
    assert "--citecheck" not in out.split(next(iter(groups)), 1)[0]
    # No help text ends in an empty note.
    assert "()" not in everything, [line for g in groups.values() for line in g if "()" in line]
    assert "--citecheck-html" in text["citecheck: report files"]
    judge = text["citecheck: the judge, a judge panel, confirmation"]
    for provider, env in PROVIDER_ENV.items():
        assert f"{provider} " in judge
        assert env.key_env in judge and env.url_env in judge
    assert "CRAWLBASE_TOKEN" in judge


def test_every_pytest_flag_names_a_help_group_and_every_group_is_used() -> None:
    from pytest_citecheck.options.table import OPTIONS
    from pytest_citecheck.plugin.options import HELP_GROUPS

    flags = [o for o in OPTIONS if isinstance(o.pytest_flag, str)]
    assert [o.name for o in flags if o.help_group not in HELP_GROUPS] == []
    # A group on a setting pytest has no flag for is a slip: it would never be shown.
    assert [o.name for o in OPTIONS if o.help_group and not isinstance(o.pytest_flag, str)] == []
    assert {o.help_group for o in flags} == set(HELP_GROUPS)


# -- the baseline diff -----------------------------------------------------------

BOILS = ("boils", "Water boils at 100 C.", ["https://example.com/boiling"], None)
CATS = ("cats", "Cats bark.", ["https://example.com/other"], None)
# Same ids, the claims the fake judge labels differently.
BOILS_NOW = ("boils", "Water boils at 50 C.", ["https://example.com/boiling"], None)
CATS_NOW = ("cats", "Water boils at 100 C.", ["https://example.com/boiling"], None)

# The keys a 0.1.0 report had; a report stripped to them must still load.
OLD_KEYS = ("citecheck_report", "totals", "gate", "baseline_precision", "claims")


@pytest.fixture
def diffed(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> pytest.RunResult:
    pytester.makeconftest(CONFTEST)
    pytester.makefile(".yaml", citecheck_a=claims_yaml(BOILS, CATS))
    pytester.runpytest("--citecheck", "--citecheck-record=all", "--citecheck-report=base.json")
    new = json.loads((pytester.path / "base.json").read_text())
    old = {key: new[key] for key in OLD_KEYS}
    for claim in old["claims"]:
        del claim["passed"]
    (pytester.path / "old.json").write_text(json.dumps(old))

    pytester.makefile(".yaml", citecheck_a=claims_yaml(BOILS_NOW, CATS_NOW))
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    return pytester.runpytest(
        "--citecheck",
        "--citecheck-record=all",
        "--citecheck-allow-contradicted",
        "--citecheck-max-drop=1",
        "--citecheck-baseline=old.json",
        "--citecheck-report=now.json",
        "--citecheck-md=now.md",
        "--citecheck-html=now.html",
    )


def test_new_report_loads_as_a_baseline(
    pytester: pytest.Pytester, diffed: pytest.RunResult
) -> None:
    assert load_baseline_precision(pytester.path / "base.json") == 0.5
    assert load_baseline_precision(pytester.path / "now.json") == 0.5


def test_terminal_lists_label_changes_new_contradictions_first(diffed: pytest.RunResult) -> None:
    diffed.stdout.fnmatch_lines(
        [
            "baseline precision 0.5000 -> 0.5000 (+0.0000)",
            "label changes against the baseline (2):",
            "  citecheck_a.yaml::boils  supported -> contradicted",
            "  citecheck_a.yaml::cats  not_found -> supported",
        ]
    )


def test_json_and_markdown_carry_the_diff(
    pytester: pytest.Pytester, diffed: pytest.RunResult, tmp_path: Path
) -> None:
    data = json.loads((pytester.path / "now.json").read_text())
    assert data["label_changes"] == [
        {"nodeid": "citecheck_a.yaml::boils", "before": "supported", "after": "contradicted"},
        {"nodeid": "citecheck_a.yaml::cats", "before": "not_found", "after": "supported"},
    ]
    md = (pytester.path / "now.md").read_text()
    assert "### Label changes against the baseline (2)" in md
    assert "| citecheck\\_a.yaml::boils | supported | **contradicted** |" in md or (
        "| citecheck_a.yaml::boils | supported | **contradicted** |" in md
    )
    assert "| contradicted | citecheck_a.yaml::boils: Water boils at 50 C. |" in md
    assert "Water boils at 100 degrees Celsius" in md  # the quote that decided it
    step = (tmp_path / "summary.md").read_text()
    assert step == "earlier step\n" + md  # appended, not overwritten
    html = (pytester.path / "now.html").read_text()
    assert "Label changes against the baseline (2)" in html


def test_a_report_path_that_cannot_be_written_is_a_usage_error_before_any_claim_runs(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makefile(".yaml", citecheck_a=claims_yaml(SUPPORTED))
    pytester.makefile(".txt", blocker="a file, not a directory")
    for flag in ("--citecheck-md", "--citecheck-html"):
        result = pytester.runpytest(
            "--citecheck", "--citecheck-record=all", f"{flag}=blocker.txt/summary.out"
        )
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines(
            [f"*{flag} blocker.txt/summary.out: blocker.txt is a file, so nothing can be written*"]
        )
        assert "citation precision" not in result.stdout.str()


@pytest.mark.parametrize("workers", ["0", "2"])
def test_labels_and_outcomes_with_xdist(pytester: pytest.Pytester, workers: str) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makefile(".yaml", citecheck_a=claims_yaml(SUPPORTED, CONTRADICTED, NOT_FOUND))
    result = pytester.runpytest(
        "--citecheck", "--citecheck-record=all", "-v", "-n", workers, "--citecheck-report=r.json"
    )
    result.stdout.fnmatch_lines(["*FAILED [[]contradicted[]]*citecheck_a.yaml::boils-50*"])
    data = json.loads((pytester.path / "r.json").read_text())
    assert [(c["id"], c["passed"]) for c in data["claims"]] == [
        ("boils-100", True),
        ("boils-50", False),
        ("cats-bark", True),
    ]


def test_each_report_file_written_is_named_with_its_location(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makefile(".yaml", citecheck_a=claims_yaml(SUPPORTED))
    out = pytester.path / "out"
    result = pytester.runpytest(
        "--citecheck",
        "--citecheck-record=all",
        f"--citecheck-report={out / 'r.json'}",
        f"--citecheck-csv={out / 'r.csv'}",
        f"--citecheck-md={out / 'r.md'}",
        f"--citecheck-html={out / 'r.html'}",
    )
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "citecheck gate passed",
            f"citecheck JSON report: {(out / 'r.json').as_uri()}",
            f"citecheck CSV report: {(out / 'r.csv').as_uri()}",
            f"citecheck markdown summary: {(out / 'r.md').as_uri()}",
            f"citecheck HTML report: {(out / 'r.html').as_uri()}",
        ]
    )
    for name in ("r.json", "r.csv", "r.md", "r.html"):
        assert (out / name).is_file()
    # Nothing written, nothing named.
    plain = pytester.runpytest("--citecheck")
    plain.stdout.no_fnmatch_line("citecheck * report: file://*")
