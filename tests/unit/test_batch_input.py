"""loader.load_valid_claims: a batch keeps its good records when some are bad."""

from __future__ import annotations

from pathlib import Path

from pytest_citecheck.claims.loader import load_valid_claims

GOOD = '{"id": "a", "claim": "Water boils at 100 °C.", "urls": ["https://example.com/a"]}'


def test_bad_records_cost_only_themselves(tmp_path: Path) -> None:
    path = tmp_path / "out.jsonl"
    bad_url = '{"id": "b", "claim": "c", "urls": ["ftp://example.com/b"]}'
    path.write_text(f"{GOOD}\n{bad_url}\n{{not json\n", encoding="utf-8")
    claim_file, error = load_valid_claims(path)
    assert [c.id for c in claim_file.claims] == ["a"]
    assert error is not None
    assert [(p.line, p.problem.split(":")[0]) for p in error.problems] == [
        (2, "'ftp"),
        (3, "invalid JSON"),
    ]
    assert f"{path}:2: 'ftp://example.com/b' is not a usable URL" in str(error)


def test_a_clean_file_has_no_error(tmp_path: Path) -> None:
    path = tmp_path / "out.jsonl"
    path.write_text(GOOD + "\n", encoding="utf-8")
    claim_file, error = load_valid_claims(path)
    assert error is None
    assert [c.citations[0].url for c in claim_file.claims] == ["https://example.com/a"]
