"""What the HTML report draws rather than writes: the three deep-research rates as bars,
an answer's label mix as one stacked bar (small inline SVG, nothing loaded), and a cited
page's picture (citecheck_screenshots) inlined as a ``data:`` image, so the report stays
one self-contained file.

Every value drawn is a number or an escaped name; the SVG uses presentation attributes
only (the report's Content-Security-Policy allows no inline ``style``).
"""

from __future__ import annotations

import base64
import hashlib
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from markupsafe import Markup, escape

from pytest_citecheck.claims.labels import LABEL_ORDER
from pytest_citecheck.core.text import ratio
from pytest_citecheck.engine.rates import RATE_NAMES
from pytest_citecheck.stages.screenshot import valid_image_name

# A picture larger than this is not inlined (the report would grow past reading).
MAX_PICTURE_BYTES = 8 * 1024 * 1024
_WIDTH = 160  # a bar's full length, in pixels
_ROW = 16
_LABEL_COLUMN = 76
_COLOURS = {
    "supported": "#1a7f37",
    "contradicted": "#cf222e",
    "fabricated": "#8250df",
    "not_found": "#bf8700",
    "unreachable": "#6e7781",
    "error": "#82071e",
    "not run": "#d0d7de",
}


def rates_chart(rates: Mapping[str, Any]) -> Markup:
    """The three rates (:meth:`pytest_citecheck.engine.rates.Rates.to_json`) as three
    bars, each with its figure; a rate with nothing to rate is an empty bar and "n/a"."""
    rows = []
    for i, (key, name) in enumerate(RATE_NAMES.items()):
        value = rates.get(key)
        share = float(value) if isinstance(value, int | float) else 0.0
        y = i * _ROW
        length = round(max(0.0, min(1.0, share)) * _WIDTH, 1)
        count, rated = rates.get(f"{key}_count", 0), rates.get("rated", 0)
        text = f"{name} {ratio(value)} ({count}/{rated})"
        rows.append(
            f'<g class="rate-bar" data-rate="{escape(key)}" data-value="{escape(ratio(value))}">'
            f"<title>{escape(text)}</title>"
            f'<text x="0" y="{y + 11}" font-size="11">{escape(name)}</text>'
            f'<rect x="{_LABEL_COLUMN}" y="{y + 2}" width="{_WIDTH}" height="11" fill="#eaeef2"/>'
            f'<rect class="fill" x="{_LABEL_COLUMN}" y="{y + 2}" width="{length}" height="11" '
            f'fill="#1a7f37"/>'
            f'<text x="{_LABEL_COLUMN + _WIDTH + 6}" y="{y + 11}" font-size="11">'
            f"{escape(ratio(value))}</text></g>"
        )
    width, height = _LABEL_COLUMN + _WIDTH + 48, len(RATE_NAMES) * _ROW + 2
    return Markup(
        f'<svg class="chart rates-chart" role="img" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" xmlns="http://www.w3.org/2000/svg">'
        f"<title>deep-research rates</title>{''.join(rows)}</svg>"
    )


def label_mix(sentences: Iterable[Mapping[str, Any]]) -> Counter[str]:
    """An answer's claims by label (a claim that did not run is "not run")."""
    labels: dict[str, str] = {}
    for s in sentences:
        claim = s.get("claim_id")
        if claim:
            labels[str(claim)] = str(s.get("label") or "not run")
    return Counter(labels.values())


def label_mix_chart(mix: Mapping[str, int]) -> Markup:
    """One stacked bar: each label's share of an answer's claims, in the report's order."""
    order = [label.value for label in LABEL_ORDER] + ["not run"]
    total = sum(mix.values())
    parts, x = [], 0.0
    for label in order:
        n = mix.get(label, 0)
        if not n or not total:
            continue
        length = round(n / total * _WIDTH * 2, 1)
        parts.append(
            f'<rect class="seg" data-label="{escape(label)}" data-count="{n}" x="{x}" y="0" '
            f'width="{length}" height="12" fill="{_COLOURS.get(label, "#57606a")}">'
            f"<title>{escape(label)}: {n} of {total}</title></rect>"
        )
        x += length
    legend = ", ".join(f"{label} {mix[label]}" for label in order if mix.get(label))
    width = _WIDTH * 2
    return Markup(
        f'<svg class="chart label-mix" role="img" width="{width}" height="12" '
        f'viewBox="0 0 {width} 12" xmlns="http://www.w3.org/2000/svg">'
        f"<title>{escape(legend or 'no claims')}</title>{''.join(parts)}</svg>"
    )


def shot_fact(shot: Mapping[str, Any] | None) -> str | None:
    """The picture in one line, for a verdict's facts: what it was and what it cost."""
    if not shot:
        return None
    cost = f"{shot.get('credits') or 0:g} credits"
    if shot.get("status") == "taken":
        return f"taken ({cost}), {shot.get('sha256')}"
    return f"missing ({cost}): {shot.get('detail')}"


def picture(shot: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A verdict's picture for the page: ``src`` a ``data:`` image when its stored file
    is there and still is what its name says; else why it is not shown."""
    if not shot:
        return None
    if shot.get("status") != "taken" or not shot.get("file"):
        return {"src": None, "detail": shot.get("detail") or "no picture"}
    path = Path(str(shot["file"]))
    if not valid_image_name(path.name):  # only a file the recording named by its hash
        return {"src": None, "detail": f"not a stored picture ({path.name})"}
    try:
        if path.stat().st_size > MAX_PICTURE_BYTES:
            return {"src": None, "detail": f"the picture {path.name} is too large to inline"}
        body = path.read_bytes()
    except OSError:
        return {"src": None, "detail": f"the stored picture {path.name} is not there"}
    if hashlib.sha256(body).hexdigest() != shot.get("sha256"):
        return {"src": None, "detail": f"the stored picture {path.name} was changed"}
    kind = str(shot.get("media_type") or "image/jpeg")
    if not kind.startswith("image/") or kind == "image/svg+xml":
        return {"src": None, "detail": f"not a picture the report shows ({kind})"}
    encoded = base64.b64encode(body).decode("ascii")
    return {"src": f"data:{kind};base64,{encoded}", "detail": None, "name": path.name}
