"""The HTML report's charts and pictures (reports/charts.py): what each draws from the
JSON report, and a picture shown only when its stored file is what its name says."""

from __future__ import annotations

import hashlib
from pathlib import Path

from pytest_citecheck.reports.charts import (
    label_mix,
    label_mix_chart,
    picture,
    rates_chart,
    shot_fact,
)


def test_the_rate_bars_are_as_long_as_the_rates_and_an_unrated_one_is_empty() -> None:
    rates = {"link_works": 0.75, "link_works_count": 3, "relevant": 0.5, "relevant_count": 2}
    rates |= {"fact_check": None, "fact_check_count": 0, "rated": 4}
    svg = str(rates_chart(rates))
    assert svg.count('class="rate-bar"') == 3
    assert 'width="120.0" height="11" fill="#1a7f37"' in svg  # 0.75 of 160 pixels
    assert 'width="80.0" height="11" fill="#1a7f37"' in svg
    assert 'width="0.0" height="11" fill="#1a7f37"' in svg  # nothing rated: empty, "n/a"
    assert "<title>fact check n/a (0/4)</title>" in svg
    assert "style=" not in svg  # the page's CSP allows no inline style


def test_the_label_mix_counts_each_claim_once_and_draws_it_in_label_order() -> None:
    sentences = [
        {"claim_id": "a", "label": "contradicted"},
        {"claim_id": "a", "label": "contradicted"},  # one claim, two sentences
        {"claim_id": "b", "label": "supported"},
        {"claim_id": "c", "label": None},
        {"claim_id": None, "label": None},  # uncited: no claim
    ]
    mix = label_mix(sentences)
    assert mix == {"contradicted": 1, "supported": 1, "not run": 1}
    svg = str(label_mix_chart(mix))
    labels = [part.split('"')[0] for part in svg.split('data-label="')[1:]]
    assert labels == ["supported", "contradicted", "not run"]
    assert "<title>supported 1, contradicted 1, not run 1</title>" in svg


def test_a_name_in_the_chart_is_escaped() -> None:
    assert "<b>" not in str(label_mix_chart({"<b>": 1}))


def _stored(tmp_path: Path, body: bytes) -> dict[str, object]:
    digest = hashlib.sha256(body).hexdigest()
    path = tmp_path / f"{digest}.png"
    path.write_bytes(body)
    return {"status": "taken", "sha256": digest, "file": str(path), "media_type": "image/png"}


def test_a_stored_picture_is_inlined_and_one_changed_or_gone_is_not(tmp_path: Path) -> None:
    shot = _stored(tmp_path, b"\x89PNG picture")
    shown = picture(shot)
    assert shown is not None and shown["src"] == "data:image/png;base64,iVBORyBwaWN0dXJl"
    Path(str(shot["file"])).write_bytes(b"another picture")
    changed = picture(shot)
    assert changed is not None and changed["src"] is None and "was changed" in changed["detail"]
    Path(str(shot["file"])).unlink()
    gone = picture(shot)
    assert gone is not None and gone["src"] is None and "is not there" in gone["detail"]


def test_only_a_file_named_by_its_hash_is_read(tmp_path: Path) -> None:
    secret = tmp_path / "notes.png"
    secret.write_bytes(b"private")
    digest = hashlib.sha256(b"private").hexdigest()
    shot = {"status": "taken", "sha256": digest, "file": str(secret), "media_type": "image/png"}
    shown = picture(shot)
    assert shown is not None and shown["src"] is None


def test_an_svg_is_never_inlined(tmp_path: Path) -> None:
    shot = {**_stored(tmp_path, b"<svg onload=alert(1)>"), "media_type": "image/svg+xml"}
    shown = picture(shot)
    assert shown is not None and shown["src"] is None


def test_the_fact_names_the_picture_and_its_cost() -> None:
    assert shot_fact(None) is None
    assert shot_fact({"status": "taken", "sha256": "ab", "credits": 2.0}) == "taken (2 credits), ab"
    missing = {"status": "missing", "detail": "the picture's link answered HTTP 404", "credits": 2}
    assert shot_fact(missing) == "missing (2 credits): the picture's link answered HTTP 404"
