"""The markdown summary: ``--citecheck-md`` and ``$GITHUB_STEP_SUMMARY``.

Rendered from the scrubbed JSON report (:meth:`Report.scrubbed_json`), so it
says exactly what the JSON file says. Cell text is escaped: a claim or a quote
can hold ``|``, backticks or HTML, and GitHub renders the summary as markdown.
"""

from __future__ import annotations

import re
from typing import Any

from pytest_citecheck.claims.labels import BAD_LABELS, LABEL_ORDER
from pytest_citecheck.claims.results import Verdict
from pytest_citecheck.core.prices import spend_text
from pytest_citecheck.core.text import plural, ratio, truncate
from pytest_citecheck.core.urls import page_link
from pytest_citecheck.engine.aggregate import (
    REVIEW_HEADING,
    alce_line,
    not_retrieved_line,
    provider_quote_line,
    review_why,
)
from pytest_citecheck.engine.gate import GATE_FAILED, GATE_PASSED, gate_title, stopped_text
from pytest_citecheck.engine.rates import RATES, from_json, rates_text
from pytest_citecheck.reports.html import anchors, claim_url, served_url

LABELS = tuple(label.value for label in LABEL_ORDER)
# What could start markup in a GFM table cell (``_`` inside words cannot).
_MD_SPECIAL = re.compile(r"([\\`*|\[\]~])")


def cell(text: object, width: int = 160) -> str:
    """One table cell: a single line, markdown and HTML inert."""
    flat = truncate(str(text), width, flatten=True)
    flat = flat.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MD_SPECIAL.sub(r"\\\1", flat)


def render_markdown(data: dict[str, Any], report_url: str | None = None) -> str:
    """The summary; with ``report_url`` (where the HTML report is served) it links
    the report and each listed claim to its row there."""
    links = anchors((c["nodeid"], c["id"]) for c in data["claims"]) if report_url else {}
    t = data["totals"]
    gate = data["gate"]
    supported = t["by_label"].get("supported", 0)
    title = gate_title(gate)
    mark = {GATE_PASSED: "✅", GATE_FAILED: "❌"}.get(title, "⚠️")
    out = [f"## citecheck: gate {title} {mark}", ""]
    out += [f"- {cell(f)}" for f in gate["failures"]]
    stopped = gate.get("not_started", 0) != 0
    if stopped:
        out.append(f"- {cell(stopped_text(gate))}")
    if gate.get("no_recording"):
        # The one line that fixes a first CI run on claim files without cassettes.
        out.append(f"- {cell(gate['no_recording'], 1000)}")
    if gate["failures"] or stopped or gate.get("no_recording"):
        out.append("")
    if report_url:
        out += [f"[HTML report]({served_url(report_url)})", ""]
    out += [
        f"**{plural(t['claims'], 'claim')}, {plural(t['citations'], 'citation')}**: "
        "citation precision "
        f"**{ratio(t['citation_precision'])}** ({supported}/{t['citations']}), reachable "
        f"precision {ratio(t['reachable_precision'])}",
        "",
        "| " + " | ".join(LABELS) + " | review |",
        "|" + "---:|" * (len(LABELS) + 1),
        "| "
        + " | ".join(str(t["by_label"].get(label, 0)) for label in LABELS)
        + f" | {t['review']} |",
        "",
    ]
    found = from_json(t.get("rates"))
    if found is not None:
        out += [f"Deep-research rates: {rates_text(found, mark=lambda f: f'**{f}**')}", ""]
    if t.get("provider_quote_not_on_page"):
        out += [cell(provider_quote_line(t["provider_quote_not_on_page"])), ""]
    if t.get("url_not_retrieved"):
        out += [cell(not_retrieved_line(t["url_not_retrieved"])), ""]
    baseline = data.get("baseline_precision")
    if baseline is not None and t["citation_precision"] is not None:
        delta = t["citation_precision"] - baseline
        out += [
            f"Baseline precision {baseline:.4f} → {t['citation_precision']:.4f} ({delta:+.4f})",
            "",
        ]
    if t["credits"] or t["input_tokens"] or t["output_tokens"]:
        out += [
            f"Crawling API credits {t['credits']:g}, judge tokens {t['input_tokens']} in / "
            f"{t['output_tokens']} out{spend_text(data.get('spend'))}",
            "",
        ]
    joint = data.get("joint")
    if joint and joint.get("claims"):
        out += [
            f"Joint judgment: {plural(joint['claims'], 'claim')} whose sources none supports "
            f"alone, {plural(joint['calls'], 'judge call')}, tokens {joint['input_tokens']} in "
            f"/ {joint['output_tokens']} out, **{joint['supported']} supported jointly**",
            "",
        ]
    panel = data.get("panel")
    if panel:
        from pytest_citecheck.engine.panel import failure_text

        out += [
            f"Judge panel: {panel['citations']} citations, {panel['unanimous']} unanimous "
            f"(agreement {ratio(panel['unanimous_share'])})",
            "",
        ]
        out += [f"- **{cell(failure_text(f))}**" for f in panel.get("failed_members") or []]
        if panel.get("not_recorded"):
            out.append(
                f"- **not recorded: {plural(panel['not_recorded'], 'claim')} whose panel "
                "lacked votes**"
            )
        if panel.get("failed_members") or panel.get("not_recorded"):
            out.append("")
    out += _answers(data)
    files = data.get("files") or {}
    if len(files) > 1:
        out += ["| file | claims | citations | precision | failed |", "|---|---:|---:|---:|---:|"]
        out += [
            f"| {cell(name)} | {f['claims']} | {f['citations']} | "
            f"{ratio(f['citation_precision'])} | {f.get('failed', 0)} |"
            for name, f in files.items()
        ]
        out.append("")
    changes = data.get("label_changes") or []
    if changes:
        out += [
            f"### Label changes against the baseline ({len(changes)})",
            "",
            "| claim | before | after |",
            "|---|---|---|",
        ]
        out += [f"| {cell(c['nodeid'])} | {c['before']} | **{c['after']}** |" for c in changes]
        out.append("")
    bad = [
        (claim, v)
        for claim in data["claims"]
        for v in claim["verdicts"]
        if v["label"] in BAD_LABELS
    ]
    if bad:
        out += [
            "### Contradicted and fabricated citations",
            "",
            "| label | claim | source | quote |",
            "|---|---|---|---|",
        ]
        out += [
            f"| {v['label']} | {_linked(claim, links, report_url)}: {cell(claim['claim'], 120)} | "
            f"{cell(page_link(v['url'], v.get('page')))} | "
            f"{cell(v.get('evidence_quote') or '', 200)} |"
            for claim, v in bad
        ]
        out.append("")
    review = [(claim, v) for claim in data["claims"] for v in claim["verdicts"] if v.get("review")]
    if review:
        out += [
            f"### {REVIEW_HEADING[0].upper()}{REVIEW_HEADING[1:]}",
            "",
            "| label | confidence | why | claim | source |",
            "|---|---:|---|---|---|",
        ]
        out += [
            f"| {v['label']} | {_confidence(v.get('confidence'))} | "
            f"{cell(review_why(Verdict.model_validate(v)))} | {cell(claim['nodeid'])}: "
            f"{cell(claim['claim'], 120)} | {cell(v['url'])} |"
            for claim, v in review
        ]
        out.append("")
    return "\n".join(out) + "\n"


def _confidence(value: object) -> str:
    return f"{value:.2f}" if isinstance(value, int | float) else "n/a"


def _linked(claim: dict[str, Any], links: dict[str, str], report_url: str | None) -> str:
    """A claim's node id, linked to its row in the HTML report when its URL is known."""
    name = cell(claim["nodeid"])
    if report_url is None:
        return name
    return f"[{name}]({claim_url(report_url, links[claim['nodeid']])})"


def _answers(data: dict[str, Any]) -> list[str]:
    """The imported answers: support and ALCE's figures over all of them, then one row each."""
    answers = data.get("answers") or []
    totals = data.get("answer_totals")
    if not answers or not totals:
        return []
    alce = alce_line(
        totals.get("citation_recall"),
        totals.get("citation_precision"),
        totals["answers"],
        mark=lambda figure: f"**{figure}**",
    )
    out = [
        f"**{totals['answers']} answer{'s' if totals['answers'] != 1 else ''}**: answer support "
        f"**{ratio(totals['answer_support'])}** ({totals['supported']}/{totals['claims']} "
        f"claims), {totals['uncited']} uncited sentence{'s' if totals['uncited'] != 1 else ''}",
        "",
        alce,
        "",
        "| answer | file | sentences | cited | uncited | supported | support "
        "| citation recall | citation precision |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    out += [
        f"| {cell(a['id'])} | {cell(a['file'])} | {a['sentences']} | {a['cited']} | "
        f"{a['uncited']} | {a['supported']}/{a['claims']} | {ratio(a['answer_support'])} | "
        f"{_alce_cell(a, 'citation_recall', 'sentences_supported', 'sentences_counted')} | "
        f"{_alce_cell(a, 'citation_precision', 'citations_supporting', 'citations')} |"
        for a in answers
    ]
    rated = [(a, found) for a in answers if (found := from_json(a.get("rates"))) is not None]
    if rated:
        out += ["", "| answer | link works | relevant | fact check | not rated |"]
        out.append("|---|---:|---:|---:|---:|")
        out += [
            f"| {cell(a['id'])} | "
            + " | ".join(f"{ratio(r.rate(k))} ({r.count(k)}/{r.rated})" for k in RATES)
            + f" | {r.not_rated} |"
            for a, r in rated
        ]
    return [*out, ""]


def _alce_cell(answer: dict[str, Any], figure: str, part: str, whole: str) -> str:
    """``0.5000 (1/2)``; ``n/a`` for a report written before these figures existed."""
    if figure not in answer:
        return "n/a"
    return f"{ratio(answer[figure])} ({answer[part]}/{answer[whole]})"
