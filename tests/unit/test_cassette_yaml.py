"""A cassette file reads exactly as PyYAML's C safe loader reads it: the same data,
the same refusal, whatever the file holds (the fast path only builds plain trees)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_citecheck.recording.cassette import Cassette
from pytest_citecheck.recording.cassette_file import CorruptCassette, load_yaml

TEXTS = {
    "empty": "",
    "a scalar": "just a scalar\n",
    "scalars": "a: [1, 2.5, .inf, -.nan, ~, null, yes, No, 0x1f, 0o17, 1_000, 1:30]\n",
    "quoted scalars": "a: ['1', \"\\u00e9\", 'null', \"2.5\"]\n",
    "nested": "- a\n- {b: [c, {d: e}]}\n- [[], {}]\n",
    "a repeated key": "a: 1\na: 2\n",
    "quoted keys": "'1': x\n\"true\": y\n1: z\n",
    "an anchor and alias": "x: &a [1]\ny: *a\n",
    "a merge key": "base: &b {a: 1}\nm:\n  <<: *b\n  c: 2\n",
    "a timestamp": "t: 2001-12-14\n",
    "binary": "a: !!binary aGk=\n",
    "an explicit str tag": "a:\n  - !!str 1\n",
    "the value key": "= : 1\n",
    "a python tag": "a: !!python/object/apply:os.system ['true']\n",
    "an unknown tag": "!foo x\n",
    "two documents": "a: 1\n---\nb: 2\n",
    "a list as key": "? [a]\n: b\n",
    "a flow list as key": "{[1]: 2}\n",
    "bad syntax": "a: b: c\n",
    "an unterminated quote": "'unterminated\n",
    "too deep": "[" * 2000 + "]" * 2000,
}


def _same(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return bool(a == b)


def _outcome(load: Any, text: str) -> tuple[str, Any]:
    try:
        return "data", load(text)
    except Exception as exc:  # the refusal itself is what is compared
        return "error", (type(exc), str(exc))


@pytest.mark.parametrize("text", list(TEXTS.values()), ids=list(TEXTS))
def test_a_cassette_text_loads_as_the_c_safe_loader_loads_it(text: str) -> None:
    expected = _outcome(lambda t: yaml.load(t, Loader=yaml.CSafeLoader), text)
    got = _outcome(load_yaml, text)
    assert got[0] == expected[0]
    if expected[0] == "data":
        assert _same(got[1], expected[1])
    else:
        assert got[1] == expected[1]


def test_a_python_tagged_cassette_is_corrupt_and_runs_nothing(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    path = tmp_path / "c.yaml"
    path.write_text(
        "interactions: []\nversion: 1\n"
        f"metadata: !!python/object/apply:os.system ['touch {marker}']\n"
    )
    with pytest.raises(CorruptCassette, match="not valid YAML"):
        Cassette.load(path, lambda value: value)
    assert not marker.exists()


def test_a_recorded_cassette_round_trips(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    cassette = Cassette(path)
    request = {
        "method": "GET",
        "uri": "http://example.org/?url=x",
        "body": "",
        "headers": {"accept": ["*/*"]},
    }
    response = {
        "status": {"code": 200, "message": "OK"},
        "headers": {"content-length": ["3"], "date": ["Wed, 01 Jan 2025 00:00:00 GMT"]},
        "body": {"string": 'a "b"\n\u2013 null: yes'},
    }
    cassette.append(request, response, ("GET", "http", "example.org", 80, "/", (("url", "x"),)))
    cassette.metadata = {"citecheck": {"format": 1, "retrieval": {"k": [[0, 0.5], [3, 1.0]]}}}
    cassette.save()
    loaded = Cassette.load(path, lambda value: value)
    assert [(i.request, i.response) for i in loaded.interactions] == [(request, response)]
    assert loaded.metadata == cassette.metadata
    assert loaded.to_yaml() == path.read_text()
