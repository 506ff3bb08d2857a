"""The option table is what every front end offers: docs/options.md is generated from
it, and the flags it gives each front end exist and reach what they set."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from pytest_citecheck.core.defaults import DEFAULT_CONCURRENCY
from pytest_citecheck.frontends import cli, optionsdoc
from pytest_citecheck.options.table import COMMANDS, OPTIONS, Flag
from pytest_citecheck.plugin.options import settings_from_config
from pytest_citecheck.plugin.session import CitecheckSession

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "options.md"


def test_the_committed_options_page_is_the_one_the_table_makes(tmp_path: Path) -> None:
    assert PAGE.read_text(encoding="utf-8") == optionsdoc.render(), (
        "docs/options.md is stale: run python -m pytest_citecheck.frontends.optionsdoc"
    )
    stale = tmp_path / "options.md"
    stale.write_text(optionsdoc.render().replace("--citecheck-judge-base-url", "--x"), "utf-8")
    assert optionsdoc.main([str(stale), "--check"]) == 1
    assert optionsdoc.main([str(PAGE), "--check"]) == 0


def test_the_page_names_every_setting_in_every_front_end() -> None:
    text = PAGE.read_text(encoding="utf-8")
    for option in OPTIONS:
        assert f"| `{option.name}` |" in text, option.name
        if isinstance(option.pytest_flag, str):
            assert f"`{option.pytest_flag}" in text, option.name
        if isinstance(option.ini, str):
            assert f"`{option.ini}`" in text, option.name
        for command in COMMANDS:
            flag = option.flag_of(command)
            if isinstance(flag, Flag):
                assert f"{command} `{flag.flag}" in text, (option.name, command)


@pytest.mark.parametrize("command", COMMANDS)
def test_each_subcommand_has_the_flags_the_table_gives_it(
    capsys: pytest.CaptureFixture[str], command: str
) -> None:
    with pytest.raises(SystemExit):
        cli.build_parser().parse_args([command, "--help"])
    out = capsys.readouterr().out
    flags = [f.flag for o in OPTIONS if isinstance(f := o.flag_of(command), Flag)]
    assert flags
    for flag in flags:
        assert f"{flag} " in out or f"{flag}\n" in out, (command, flag)


def test_recheck_help_states_the_concurrency_the_recheck_uses(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        cli.build_parser().parse_args(["recheck", "--help"])
    flat = " ".join(capsys.readouterr().out.split())
    assert f"claims rechecked at once (default {DEFAULT_CONCURRENCY})" in flat
    docs = " ".join((ROOT / "docs" / "recheck.md").read_text(encoding="utf-8").split())
    assert f"claims rechecked at once, default {DEFAULT_CONCURRENCY}" in docs


def test_batch_takes_the_quote_policy_like_recheck(tmp_path: Path) -> None:
    claims = tmp_path / "claims.jsonl"
    claims.write_text("", encoding="utf-8")
    args = cli.build_parser().parse_args(
        ["batch", str(claims), "--quote-match", "fuzzy", "--quote-similarity", "0.75"]
    )
    policy = cli.engine_settings(args, cli.batch_terms()).quote_policy
    assert (policy.mode, policy.similarity) == ("fuzzy", 0.75)


def test_the_judge_base_url_has_a_pytest_flag_that_wins_over_the_ini(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeini("[pytest]\ncitecheck_judge_base_url = http://127.0.0.1:1/v1\n")
    config = pytester.parseconfig("--citecheck", "--citecheck-judge-base-url=http://127.0.0.1:2/v1")
    engine = CitecheckSession(config, settings_from_config(config)).engine_settings()
    assert engine.judge_base_url == "http://127.0.0.1:2/v1"


def test_a_document_root_flag_lets_a_claim_read_outside_the_rootdir(
    pytester: pytest.Pytester,
) -> None:
    outside = pytester.path.parent / f"{pytester.path.name}-docs"
    outside.mkdir()
    config = pytester.parseconfig("--citecheck", f"--citecheck-document-root={outside}")
    assert settings_from_config(config).document_roots == (config.rootpath, outside)


def test_pytest_help_types_every_numeric_ini_option(pytester: pytest.Pytester) -> None:
    out = pytester.runpytest("--help").stdout.str()
    for name, kind in (
        ("citecheck_judge_samples", "int"),
        ("citecheck_max_claim_chars", "int"),
        ("citecheck_min_agreement", "float"),
        ("citecheck_max_cost", "float"),
        ("citecheck_max_credits", "float"),
        ("citecheck_price_credit", "float"),
    ):
        assert f"  {name} ({kind}):" in out, name
    assert "--citecheck-judge-base-url" in out


def test_the_batch_replays_by_default_and_runs_live_only_when_asked(tmp_path: Path) -> None:
    from pytest_citecheck.core.record_mode import LIVE, RecordMode

    claims = tmp_path / "claims.jsonl"
    claims.write_text("", encoding="utf-8")
    default = cli.build_parser().parse_args(["batch", str(claims)])
    assert cli.engine_settings(default, cli.batch_terms()).record_mode is RecordMode.NONE
    live = cli.build_parser().parse_args(["batch", str(claims), "--record", "live"])
    assert cli.engine_settings(live, cli.batch_terms()).record_mode is LIVE


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (
            ["recheck", "{file}", "--judge-batch"],
            "--judge-batch is not a setting of `citecheck recheck` (a recheck asks the judge "
            "again for a few citations, at once); it is one of `citecheck batch`",
        ),
        (
            ["validate", "{file}", "--via-crawler=nightly"],
            "--via-crawler is not a setting of `citecheck validate`",
        ),
    ],
)
def test_another_subcommands_setting_is_refused_with_why_and_where(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], said: str
) -> None:
    records = tmp_path / "claims.jsonl"
    records.write_text("", encoding="utf-8")
    assert cli.main([a.format(file=records) for a in argv]) == 2
    err = capsys.readouterr().err
    assert f"citecheck {argv[0]}: error: {said}" in err
    # Every subcommand named as taking it does take it.
    flag = argv[2].partition("=")[0]
    owners = [c for c in ("batch", "recheck") if f"`citecheck {c}`" in err.partition("one of")[2]]
    assert owners
    for command in owners:
        assert cli.main([command, "--help"]) == 0
        assert flag in capsys.readouterr().out


def test_an_unknown_flag_is_still_argparses_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    records = tmp_path / "claims.jsonl"
    records.write_text("", encoding="utf-8")
    assert cli.main(["batch", str(records), "--no-such-flag"]) == 2
    assert "unrecognized arguments: --no-such-flag" in capsys.readouterr().err


def _subparser(command: str) -> argparse.ArgumentParser:
    for action in cli.build_parser()._actions:
        if isinstance(action, argparse._SubParsersAction) and command in action.choices:
            found: argparse.ArgumentParser = action.choices[command]
            return found
    raise AssertionError(command)


@pytest.mark.parametrize("command", COMMANDS)
def test_every_flag_of_a_subcommand_is_a_flag_of_the_table(command: str) -> None:
    # serve's --host, --port, --key-file, --allowed-host and import's --from, -o, --document,
    # --force were declared beside the table, so docs/options.md left them out.
    table = {
        spelling
        for o in OPTIONS
        if isinstance(f := o.flag_of(command), Flag)
        for spelling in (f.flag, f.short)
        if spelling
    }
    flags = {s for a in _subparser(command)._actions for s in a.option_strings} - {"-h", "--help"}
    assert flags <= table, sorted(flags - table)
    text = PAGE.read_text(encoding="utf-8")
    for flag in flags - {f for f in flags if not f.startswith("--")}:
        assert f"{command} `{flag}" in text, (command, flag)
