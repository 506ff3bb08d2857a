"""What is shown of one claim: its failure table, a failed label comparison
explained, and its JUnit properties (each scrubbed)."""

from __future__ import annotations

from collections.abc import Sequence

from pytest_citecheck.claims.labels import Reason
from pytest_citecheck.claims.results import ClaimResult
from pytest_citecheck.core.secrets import scrub
from pytest_citecheck.core.text import terminal_safe, truncate
from pytest_citecheck.core.urls import page_link
from pytest_citecheck.engine.aggregate import shown_label
from pytest_citecheck.reports.listings import missing_recording


def citation_table(result: ClaimResult, *, verbose: bool = True) -> list[str]:
    """The failure report of one claim: a row per citation (scrubbed, printable).
    Not ``verbose``: a missing recording's detail (the record command, said once
    for the run) is left to the row's reason."""
    head = _hang(f"claim {result.id!r}: {result.claim}")
    expected = f" (expected {result.expect.value})" if result.expect else ""
    # Compared with an expect, the label itself; else as the reports show it (fabricated).
    shown = result.label if result.expect else shown_label(result.label, result.labels)
    why = f" ({result.reason})" if result.reason else ""
    lines = [head, f"claim label: {shown.value}{why}{expected}", ""]
    rows = [("#", "label", "reason", "conf", "final URL / source", "quote")]
    for i, v in enumerate(result.verdicts, 1):
        conf = "" if v.confidence is None else f"{v.confidence:.2f}"
        label = v.label.value + (" (review)" if v.review else "")
        rows.append(
            (
                str(i),
                label,
                v.reason
                or (Reason.PROVIDER_QUOTE_NOT_ON_PAGE if v.provider_quote_not_on_page else "-"),
                conf,
                truncate(scrub(page_link(v.final_url or v.url, v.page)), 60, flatten=True),
                truncate(scrub(v.evidence_quote or ""), 70, flatten=True),
            )
        )
    widths = [max(len(row[c]) for row in rows) for c in range(5)]
    for row in rows:
        cells = [row[c].ljust(widths[c]) for c in range(5)]
        lines.append("  ".join([*cells, row[5]]).rstrip())
    details = [
        (i, v)
        for i, v in enumerate(result.verdicts, 1)
        if v.detail and (verbose or not missing_recording(v))
    ]
    if details:
        lines.append("")
        lines.extend(_hang(f"[{i}] {v.url}: {v.detail}") for i, v in details)
    return [terminal_safe(scrub(line)) for line in lines]


def explain_label(
    results: Sequence[ClaimResult], left: object, op: str, right: object, rerecord: str | None
) -> list[str]:
    """A failed comparison of a claim label, explained by the test's claim results
    (those whose label is compared; all of them if none is): each citation's label,
    reason and quote, then the details (once each) and ``rerecord``, the command that
    records the test again. Compact: pytest shows 8 lines of it unless ``-vv``."""
    compared = [r for r in results if r.label in (left, right)]
    lines = [f"{str(left)!r} {op} {str(right)!r}"]
    details: list[str] = []
    for result in compared or results:
        expected = f", expected {result.expect.value}" if result.expect else ""
        claim = truncate(result.claim, 60, flatten=True)
        lines.append(f"claim {result.id!r} is {result.label.value}{expected}: {claim}")
        for i, v in enumerate(result.verdicts, 1):
            reason = f" [{v.reason}]" if v.reason else ""
            conf = "" if v.confidence is None else f" ({v.confidence:.2f})"
            said = truncate(v.evidence_quote, 80, flatten=True)
            quote = f': "{said}"' if v.evidence_quote else ""
            lines.append(f"  {i}. {v.label.value}{reason}{conf} {page_link(v.url, v.page)}{quote}")
            if v.detail and v.detail not in details:
                details.append(v.detail)
    lines.extend(truncate(d, 400, flatten=True) for d in details)
    recorded = any("record it with:" in d or "record it again with:" in d for d in details)
    if rerecord is not None and not recorded:
        lines.append(f"if the sources changed, record the test again: {rerecord}")
    return [scrub(line) for line in lines]


def _hang(text: str) -> str:
    """Continuation lines indented: no line of claim or page text starts a line of
    output (where CI would read ``::error::...`` as a workflow command)."""
    return "\n    ".join(text.splitlines())


def junit_properties(result: ClaimResult) -> Sequence[tuple[str, object]]:
    """Per-citation properties for ``--junitxml`` (values scrubbed)."""
    props: list[tuple[str, object]] = [("citecheck.claim_label", result.label.value)]
    if result.reason:
        props.append(("citecheck.claim_reason", result.reason))
    for i, v in enumerate(result.verdicts, 1):
        prefix = f"citecheck.citation.{i}"
        props.append((f"{prefix}.url", v.url))
        props.append((f"{prefix}.label", v.label.value))
        if v.reason:
            props.append((f"{prefix}.reason", v.reason))
        if v.confidence is not None:
            props.append((f"{prefix}.confidence", f"{v.confidence:.2f}"))
        if v.final_url:
            props.append((f"{prefix}.final_url", v.final_url))
        if v.evidence_quote:
            props.append((f"{prefix}.quote", v.evidence_quote))
    return [(name, scrub(str(value))) for name, value in props]
