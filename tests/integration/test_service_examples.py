"""The service documentation's ``/verify`` examples, run as written.

``citecheck serve --record none --cassettes example_suite/service`` is started as a
process with no token or key in its environment; each curl command of
``docs/service.md`` is sent to it (on the test's port instead of 8000) and
its status and JSON must be what the page shows.
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from pathlib import Path

from pytest_citecheck import PROJECT_URL
from pytest_citecheck.frontends.service import HEALTH_ENV_VARS
from tests.service_examples import citecheck_serve, examples

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "service.md"
CASSETTES = REPO / "example_suite" / "service"


def offline_env() -> dict[str, str]:
    """This environment without any token, key or base URL a provider could use."""
    providers = ("CITECHECK_", "CRAWLBASE_", "OPENAI_", "ANTHROPIC_", "OLLAMA_")
    return {
        name: value
        for name, value in os.environ.items()
        if name not in HEALTH_ENV_VARS and not name.startswith(providers)
    }


def test_the_documented_examples_replay_with_no_token_as_written() -> None:
    documented = examples(DOC.read_text(encoding="utf-8"))
    statuses = [e.status for e in documented]
    # A supported claim, a contradicted one, a refused URL, a request never recorded,
    # an unknown judge.
    assert statuses == [200, 200, 422, 404, 422]
    assert [e.reply.get("label") for e in documented[:2]] == ["supported", "contradicted"]
    assert documented[2].reply["detail"][0]["type"] == "url_refused"
    args = ["--record", "none", "--cassettes", str(CASSETTES.relative_to(REPO))]
    with citecheck_serve(args, offline_env(), REPO) as url:
        replies = [example.send(url) for example in documented]
    for example, reply in zip(documented, replies, strict=True):
        assert (reply.status_code, reply.json()) == (example.status, example.reply), example.command


def test_the_committed_recordings_say_they_were_made_against_the_doubles() -> None:
    cassettes = sorted(CASSETTES.glob("*.yaml"))
    assert len(cassettes) == 2
    for path in cassettes:
        text = path.read_text(encoding="utf-8")
        assert text.startswith("# Synthesized recording: ")
        assert "against loopback doubles (tests/doubles), not live services" in text
        assert "127.0.0.1" not in text and "not-a-secret" not in text
    doc = DOC.read_text(encoding="utf-8")
    assert "loopback doubles" in doc and "not\nrecordings of the live services" in doc


def test_the_missing_recording_reply_names_no_path_of_the_server() -> None:
    [missing] = [e for e in examples(DOC.read_text(encoding="utf-8")) if e.status == 404]
    detail = json.dumps(missing.reply)
    assert "in the service's cassette folder does not exist" in detail
    assert "citecheck serve --record once --cassettes DIR" in detail
    assert str(REPO) not in detail and "example_suite" not in detail


def test_the_try_it_section_says_it_needs_a_clone_and_gives_the_commands() -> None:
    # The recordings are not in the wheel: only pytest_citecheck's packages are.
    setuptools = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"][
        "setuptools"
    ]
    assert setuptools["packages"]["find"]["include"] == ["pytest_citecheck*"]
    assert not CASSETTES.is_relative_to(REPO / "pytest_citecheck")
    section = DOC.read_text(encoding="utf-8").split("## Trying `citecheck serve` without a token")[
        1
    ]
    section = section.split("\n## ", 1)[0]
    assert "needs a clone" in " ".join(section.split())
    match = re.search(r"```bash\n(.*?)\n```", section, re.S)
    assert match, "no bash block in the section"
    clone, install, serve = match.group(1).splitlines()
    assert clone == f"git clone {PROJECT_URL} && cd pytest-citecheck"
    assert install == "pip install -e '.[service]'"
    assert serve == f"citecheck serve --record none --cassettes {CASSETTES.relative_to(REPO)}"
