"""Workflow-command escaping (GitHub's rules for messages and properties)."""

from __future__ import annotations

from pytest_citecheck.reports.github import Annotation, enabled, escape_data, escape_property


def test_message_escapes_percent_and_line_breaks_only() -> None:
    assert escape_data("50% of\r\nit::x,y") == "50%25 of%0D%0Ait::x,y"


def test_properties_also_escape_colon_and_comma() -> None:
    assert escape_property("a:b,c%\n") == "a%3Ab%2Cc%25%0A"


def test_a_command_is_one_line_whatever_its_texts_hold() -> None:
    command = Annotation(
        "error", "line one\n::warning::two", "t::x,y", file="dir,a/f:1.yaml", line=7
    ).command()
    assert command == (
        "::error file=dir%2Ca/f%3A1.yaml,line=7,title=t%3A%3Ax%2Cy::line one%0A::warning::two"
    )
    assert "\n" not in command


def test_only_github_actions_turns_them_on() -> None:
    assert enabled({"GITHUB_ACTIONS": "true"})
    assert not enabled({"GITHUB_ACTIONS": "false"})
    assert not enabled({})
