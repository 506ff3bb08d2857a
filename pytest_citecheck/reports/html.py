"""The HTML report: ``--citecheck-html=PATH``.

One self-contained file rendered from the Jinja2 template shipped as package
data (``templates/report.html.j2``, with ``report.css`` and ``report.js``
inlined): no network fetch of any kind, so it works from ``file://`` and as a
CI artifact. Made from the scrubbed JSON report, with autoescape on; its
Content-Security-Policy runs only the package's own script (by hash), so even
a page quoting ``<script>`` could not run anything in it.

jinja2 is imported here only, when a page is asked for.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import re
from collections import Counter
from collections.abc import Iterable
from importlib.resources import files
from typing import TYPE_CHECKING, Any
from urllib.parse import quote as url_quote

from pytest_citecheck.claims.labels import BAD_LABELS, LABEL_ORDER, Label, Reason
from pytest_citecheck.core.prices import money
from pytest_citecheck.core.secrets import scrub
from pytest_citecheck.core.text import ratio
from pytest_citecheck.core.urls import page_link
from pytest_citecheck.engine.aggregate import deciding, shown_label
from pytest_citecheck.engine.gate import gate_title, stopped_text
from pytest_citecheck.engine.rates import RATE_NAMES
from pytest_citecheck.reports.charts import (
    label_mix,
    label_mix_chart,
    picture,
    rates_chart,
    shot_fact,
)

if TYPE_CHECKING:
    import jinja2

LABELS = tuple(label.value for label in LABEL_ORDER)
_TEMPLATES = files("pytest_citecheck.reports") / "templates"


def _csp_hash(text: str) -> str:
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return "sha256-" + base64.b64encode(digest).decode("ascii")


def locate(text: str, quote: str) -> tuple[int, int] | None:
    """Where ``quote`` sits in ``text``: exact; else as the guard finds it, in the page
    as a reader sees it (the markdown span of the rendered text, so the page's own text
    is marked); else ignoring case, spacing and punctuation between words (the guard
    accepts lightly edited quotes)."""
    if not quote.strip():
        return None
    start = text.find(quote)
    if start >= 0:
        return start, start + len(quote)
    from pytest_citecheck.stages.rendered import locate as locate_rendered

    span = locate_rendered(text, quote)
    if span is not None:
        return span
    words = re.findall(r"\w+", quote)
    if not words:
        return None
    pattern = r"\W+".join(re.escape(w) for w in words)
    match = re.search(pattern, text, flags=re.IGNORECASE)
    return None if match is None else match.span()


def _passages(verdict: dict[str, Any], quote: str) -> tuple[list[dict[str, Any]], bool]:
    """The passages to show, evidence first: the one holding the quote, then the
    others the judge read by rank (score, best first), then any without a score in
    page order -- so on a page full of navigation the quote is at the top."""
    out = []
    for p in verdict.get("passages") or []:
        text = p["text"]
        span = locate(text, quote) if quote else None
        entry = {"index": p["index"], "score": p.get("score"), "text": text, "mark": None}
        if span is not None:
            start, end = span
            entry.update(before=text[:start], mark=text[start:end], after=text[end:])
        out.append(entry)

    def order(entry: dict[str, Any]) -> tuple[int, float, int]:
        if entry["mark"] is not None:
            return (0, 0.0, entry["index"])
        if entry["score"] is not None:
            return (1, -float(entry["score"]), entry["index"])
        return (2, 0.0, entry["index"])

    out.sort(key=order)
    return out, any(entry["mark"] is not None for entry in out)


def _facts(v: dict[str, Any]) -> list[tuple[str, str]]:
    facts: list[tuple[str, Any]] = [
        ("label", v["label"]),
        ("reason", v.get("reason")),
        ("confidence", None if v.get("confidence") is None else f"{v['confidence']:.2f}"),
        ("evidence quote", v.get("evidence_quote")),
        # Added by the fuzzy guard when the judge's own words differ from the page's.
        ("judge's quote", v.get("judge_quote")),
        ("quote similarity", v.get("quote_similarity", v.get("similarity"))),
        ("final URL", v.get("final_url")),
        ("original status", v.get("original_status")),
        ("rid", v.get("rid")),
        ("section", v.get("section")),
        # A PDF's page the evidence is on, as a link that opens the file there.
        ("page", None if v.get("page") is None else page_link(v["url"], v["page"])),
        # A citation with no recording names the judge that would record it, not one that judged.
        ("records with" if v.get("reason") == Reason.NO_RECORDING else "judge", v.get("judge")),
        # Set when the guard overruled the judge (injection, relevance, a refused quote).
        ("judge's label", v.get("judge_label")),
        (
            "judge's confidence",
            None if v.get("judge_confidence") is None else f"{v['judge_confidence']:.2f}",
        ),
        (
            "provider quote",
            "not on the page fetched: the judge read retrieval's passages"
            if v.get("provider_quote_not_on_page")
            else None,
        ),
        (
            "retrieved",
            "no tool result of the conversation returned this URL (url_not_retrieved)"
            if v.get("url_not_retrieved")
            else None,
        ),
        ("credits", v.get("credits") or None),
        ("picture", shot_fact(v.get("screenshot"))),
        ("detail", v.get("detail")),
    ]
    return [(name, str(value)) for name, value in facts if value not in (None, "")]


def _judge_said(v: dict[str, Any]) -> str | None:
    """What the judge answered when the guard overruled it: ``the judge said supported
    (0.92)`` (its quote is in the facts: the evidence quote or the judge's quote)."""
    label = v.get("judge_label")
    if not label:
        return None
    confidence = v.get("judge_confidence")
    return f"the judge said {label}" + ("" if confidence is None else f" ({confidence:.2f})")


def _member(m: dict[str, Any]) -> dict[str, Any]:
    """One judge panel member's vote, for the side-by-side table."""
    return {
        "judge": m["judge"],
        "label": m["label"],
        "confidence": "–" if m.get("confidence") is None else f"{m['confidence']:.2f}",
        "reason": m.get("reason") or "",
        # A member that failed shows why (which server, what it said) where its quote would be.
        "quote": m.get("evidence_quote")
        or m.get("judge_quote")
        or (m.get("detail") if m["label"] == "error" else "")
        or "",
    }


def anchors(claims: Iterable[tuple[str, str]]) -> dict[str, str]:
    """Each claim's deep link in the HTML report (``report.html#<anchor>``), by node id,
    from its (node id, claim id) pairs: its claim id, or its node id when another file
    has a claim of the same id."""
    pairs = list(claims)
    seen = Counter(claim_id for _, claim_id in pairs)
    return {nodeid: claim_id if seen[claim_id] == 1 else nodeid for nodeid, claim_id in pairs}


def claim_url(report_url: str, anchor: str) -> str:
    """The address that opens one claim in the HTML report served at ``report_url``:
    the anchor percent-encoded, so no claim id can end the URL or add to it, and
    spaces, quotes, brackets and parentheses in the URL too, so it stays one link in
    markdown and in an annotation."""
    return f"{served_url(report_url)}#{url_quote(anchor, safe='')}"


def served_url(report_url: str) -> str:
    """The report's own address as :func:`claim_url` writes it (no fragment)."""
    return url_quote(report_url.split("#", 1)[0].strip(), safe=":/?@!$&*+,;=%~")


def _rank(c: dict[str, Any], review: bool) -> int:
    """Where a claim sorts: failed first, then under review, then the rest."""
    if c.get("passed") is False:
        return 0
    return 1 if review else 2


def _claim(c: dict[str, Any], anchor: str, order: int) -> dict[str, Any]:
    labels = [Label(v["label"]) for v in c["verdicts"]]
    decided = deciding(Label(c["label"]), labels)
    # The citation shown open when the claim is: the first that decided its label.
    focus = decided[0] if decided else 0
    verdicts = []
    for i, v in enumerate(c["verdicts"]):
        quote = v.get("evidence_quote") or ""
        passages, found = _passages(v, quote)
        verdicts.append(
            {
                "label": v["label"],
                "url": v["url"],
                "reason": v.get("reason"),
                "review": v.get("review", False),
                "provider_quote_not_on_page": v.get("provider_quote_not_on_page", False),
                "url_not_retrieved": v.get("url_not_retrieved", False),
                "quote": quote,
                "quote_found": found,
                "judge_said": _judge_said(v),
                "facts": _facts(v),
                "passages": passages,
                "panel": [_member(m) for m in v.get("panel") or []],
                "archive": _archive(v.get("archive")),
                "picture": picture(v.get("screenshot")),
                "open": i == focus,
            }
        )
    review = any(v.get("review") for v in c["verdicts"])
    confidences = [v["confidence"] for v in c["verdicts"] if v.get("confidence") is not None]
    search = " ".join(
        [c["nodeid"], c["claim"]]
        + [str(v.get(k) or "") for v in c["verdicts"] for k in ("url", "reason", "evidence_quote")]
    )
    return {
        "nodeid": c["nodeid"],
        "id": c["id"],
        "anchor": anchor,
        "order": order,
        "rank": _rank(c, review),
        "file": c["nodeid"].split("::", 1)[0],
        "claim": c["claim"],
        "label": shown_label(Label(c["label"]), labels).value,
        "labels": sorted({c["label"], *(v["label"] for v in c["verdicts"])}),
        "expect": c.get("expect"),
        "passed": c.get("passed"),
        # Only the reasons of the citations that decided the claim's label.
        "reasons": sorted(
            {c["verdicts"][i]["reason"] for i in decided if c["verdicts"][i].get("reason")}
        ),
        "confidence": f"{min(confidences):.2f}" if confidences else "–",
        "review": review,
        "search": " ".join(search.split()).lower(),
        "verdicts": verdicts,
    }


def _archive(archive: dict[str, Any] | None) -> dict[str, Any] | None:
    """What the Wayback Machine said of a citation; its snapshot a link only when it is
    an http(s) address (the archive's answer is not the report's to trust)."""
    if not archive:
        return None
    snapshot = archive.get("snapshot_url") or ""
    linked = snapshot.lower().startswith(("http://", "https://"))
    return {**archive, "link": snapshot if linked else None}


def _claims(claims: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The claim rows, failed first, then those under review, then the rest, each
    group in file order (``order`` keeps the file order for the page's toggle)."""
    by_node = anchors((c["nodeid"], c["id"]) for c in claims)
    rows = [_claim(c, by_node[c["nodeid"]], i) for i, c in enumerate(claims)]
    return sorted(rows, key=lambda row: (row["rank"], row["order"]))


@functools.cache
def _environment() -> jinja2.Environment:
    """The templates' environment: autoescaped, an unknown name an error. One per
    process, so each template is compiled once (it compiles again if its file changes)."""
    import jinja2

    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(_TEMPLATES)),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def render_html(data: dict[str, Any]) -> str:
    """The page for one scrubbed JSON report (:meth:`Report.scrubbed_json`)."""
    from markupsafe import Markup

    env = _environment()
    style = (_TEMPLATES / "report.css").read_text(encoding="utf-8")
    script = (_TEMPLATES / "report.js").read_text(encoding="utf-8")
    bad = BAD_LABELS
    changes = [
        {**c, "new_contradiction": c["after"] in bad and c["before"] not in bad}
        for c in data.get("label_changes") or []
    ]
    page = env.get_template("report.html.j2").render(
        gate=data["gate"],
        gate_title=gate_title(data["gate"]),
        stopped=stopped_text(data["gate"]) if data["gate"].get("not_started", 0) != 0 else None,
        totals=data["totals"],
        spend=data.get("spend"),
        money=money,
        baseline_precision=data.get("baseline_precision"),
        run=data.get("run"),
        panel=data.get("panel"),
        files=data.get("files") or {},
        changes=changes,
        claims=_claims(data["claims"]),
        answers=data.get("answers") or [],
        answer_totals=data.get("answer_totals"),
        labels=LABELS,
        rate_names=RATE_NAMES,
        rates_chart=rates_chart,
        mix_chart=lambda sentences: label_mix_chart(label_mix(sentences)),
        fmt=ratio,
        style=Markup(style),
        script=Markup(script),
        style_hash=_csp_hash(style),
        script_hash=_csp_hash(script),
    )
    return scrub(page)


# -- the recheck page ------------------------------------------------------------------


def word_diff(then: str, now: str) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    """The recorded and the live passage as segments, word by word (difflib):
    ``equal`` on both sides, ``delete`` only in the recorded one, ``insert`` only in
    the live one. Whitespace stays with the word before it."""
    import difflib

    a, b = re.findall(r"\S+\s*", then), re.findall(r"\S+\s*", now)
    matcher = difflib.SequenceMatcher(None, [w.strip() for w in a], [w.strip() for w in b])
    left: list[dict[str, str]] = []
    right: list[dict[str, str]] = []
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            left.append({"op": "equal", "text": "".join(a[i1:i2])})
            right.append({"op": "equal", "text": "".join(b[j1:j2])})
            continue
        if i2 > i1:
            left.append({"op": "delete", "text": "".join(a[i1:i2])})
        if j2 > j1:
            right.append({"op": "insert", "text": "".join(b[j1:j2])})
    return left, right


def _recheck_facts(check: dict[str, Any]) -> list[tuple[str, str]]:
    recorded = check["recorded"]
    new = check.get("new") or {}
    facts: list[tuple[str, Any]] = [
        ("detail", check.get("detail")),
        ("recorded label", recorded["label"]),
        ("recorded reason", recorded.get("reason")),
        ("recorded quote", recorded.get("evidence_quote")),
        ("new label", new.get("label")),
        ("new reason", new.get("reason")),
        ("new quote", new.get("evidence_quote")),
        ("live result", check.get("live_reason") or check.get("live_label")),
        ("live final URL", check.get("live_final_url")),
        ("live original status", check.get("live_original_status")),
        ("recorded rid", recorded.get("rid")),
        ("live rid", check.get("live_rid")),
        ("credits", check.get("credits") or None),
    ]
    return [(name, str(value)) for name, value in facts if value not in (None, "")]


def render_recheck_html(data: dict[str, Any]) -> str:
    """The recheck page for one JSON recheck report
    (:meth:`~pytest_citecheck.reports.recheck.RecheckReport.to_json`)."""
    from markupsafe import Markup

    env = _environment()
    style = "\n".join(
        (_TEMPLATES / name).read_text(encoding="utf-8") for name in ("report.css", "recheck.css")
    )
    rows = []
    for claim in data["claims"]:
        for check in claim["citations"]:
            then_text, now_text = check.get("recorded_passage"), check.get("live_passage")
            then: list[dict[str, str]] = []
            now: list[dict[str, str]] = []
            if then_text and now_text:
                then, now = word_diff(then_text, now_text)
            elif then_text:
                then = [{"op": "delete", "text": then_text}]
            new = check.get("new")
            rows.append(
                {
                    "status": check["status"],
                    "nodeid": claim["nodeid"],
                    "claim": claim["claim"],
                    "url": check["url"],
                    "change": f"{check['recorded']['label']} -> {new['label']}" if new else None,
                    "facts": _recheck_facts(check),
                    "then": then,
                    "now": now,
                    "rid": check["recorded"].get("rid"),
                    "open": check["status"] != "same",
                }
            )
    page = env.get_template("recheck.html.j2").render(
        gate=data["gate"],
        totals=data["totals"],
        rows=rows,
        style=Markup(style),
        style_hash=_csp_hash(style),
    )
    return scrub(page)
