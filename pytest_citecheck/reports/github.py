"""GitHub Actions workflow commands: a failing claim annotated on its line in the claim file.

When ``GITHUB_ACTIONS=true`` the plugin prints, after its summary, one
``::error`` per failing claim (its contradicted, fabricated or error citations in
the message; or its ``expect`` not met), one ``::warning`` per claim with review
items (and per claim whose contradiction a passing run allowed), and the gate
result as a ``::notice``; a claim that is what its ``expect`` says gets no error.
GitHub shows them on the claim's line in the pull request's diff, at most
:data:`PER_STEP` errors and as many warnings per step: past that, a notice says
how many more there are and where to read them.

:func:`sarif` turns the same annotations into a SARIF 2.1.0 log for GitHub code
scanning (``--citecheck-sarif``).

Every text is escaped by the workflow-command rules (``%``, CR and LF in the
message; also ``:`` and ``,`` in properties), so a claim, a quote or a page that
contains ``::`` or a newline cannot start a command of its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from pytest_citecheck import PROJECT_URL
from pytest_citecheck.claims.labels import Label
from pytest_citecheck.claims.results import ClaimResult, Verdict
from pytest_citecheck.core.secrets import scrub
from pytest_citecheck.core.text import plural, ratio
from pytest_citecheck.reports.figures import file_of
from pytest_citecheck.reports.report import Report

ENV = "GITHUB_ACTIONS"
_BAD = (Label.CONTRADICTED, Label.FABRICATED, Label.ERROR)


def enabled(environ: Mapping[str, str]) -> bool:
    """Annotations are printed only inside GitHub Actions (which sets ``GITHUB_ACTIONS=true``)."""
    return environ.get(ENV) == "true"


def escape_data(text: str) -> str:
    """A command's message: ``%``, CR and LF escaped."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A property value (``file=``, ``title=``): also ``:`` and ``,``."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


@dataclass(frozen=True)
class Annotation:
    level: str  # "error" / "warning" / "notice"
    message: str
    title: str
    file: str | None = None
    line: int | None = None  # 1-based

    def command(self) -> str:
        props = []
        if self.file is not None:
            props.append(f"file={escape_property(self.file)}")
            if self.line is not None:
                props.append(f"line={self.line}")
        props.append(f"title={escape_property(scrub(self.title))}")
        return f"::{self.level} {','.join(props)}::{escape_data(scrub(self.message))}"


# GitHub shows at most this many error and this many warning annotations per step
# (and drops the rest without a word): beyond it, one notice says how many more.
PER_STEP = 10


def annotate(
    report: Report, rootpath: Path, workspace: Path, per_step: int | None = None
) -> list[Annotation]:
    """The annotations for one session: one per failing claim (its citations in the
    message) and one per claim with review items; claim files' paths relative to
    ``workspace`` (the repository checkout), lines 1-based; the gate's notice last.
    ``per_step``: at most this many errors and this many warnings, then a notice
    saying how many more there are and where (None: all, as the SARIF log has)."""
    links = _report_links(report)
    claims = [
        a
        for nodeid, result in report.ordered()
        for a in _claim(report, nodeid, result, rootpath, workspace, links.get(nodeid, ""))
    ]
    out = claims if per_step is None else _capped(claims, per_step, report)
    t = report.totals
    figures = (
        f"{plural(t.claims, 'claim')}, {plural(t.citations, 'citation')}, citation precision "
        + ratio(t.citation_precision)
    )
    if report.gate_failures:
        text = "\n".join(f"citecheck gate FAILED: {f}" for f in report.gate_failures)
        out.append(Annotation("notice", f"{text}\n{figures}", "citecheck gate failed"))
    else:
        out.append(
            Annotation("notice", f"citecheck gate passed: {figures}", "citecheck gate passed")
        )
    return out


def _claim(
    report: Report,
    nodeid: str,
    result: ClaimResult,
    rootpath: Path,
    workspace: Path,
    link: str = "",
) -> list[Annotation]:
    """A claim's annotations: an error when it failed (a warning when it passed with
    a contradiction the run allows), and a warning for its review items; ``link``
    ends the claim's line (its row in the HTML report, when the report's URL is known)."""
    info = report.item(nodeid)
    where = info.path if info is not None and info.path else file_of(nodeid)
    file = _relative(rootpath / where, workspace)
    line = info.line + 1 if info is not None and info.line is not None else None
    claim = f"{result.id}: {result.claim}{link}"
    passed = report.passed(nodeid)
    out: list[Annotation] = []
    bad = [(i, v) for i, v in enumerate(result.verdicts, 1) if v.label in _BAD]
    if bad and not (passed and result.expect is not None):
        # Passed anyway: contradictions allowed (citecheck_allow_contradicted).
        level, allowed = ("warning", " (allowed)") if passed else ("error", "")
        labels = ", ".join(dict.fromkeys(v.label.value for _, v in bad))
        message = "\n".join([claim, *(_citation_lines(i, v) for i, v in bad)])
        out.append(Annotation(level, message, f"citecheck: {labels}{allowed}", file, line))
    elif passed is False:
        expected = f" (expected {result.expect.value})" if result.expect else ""
        out.append(
            Annotation(
                "error",
                f"{claim}\nclaim label {result.label.value}{expected}",
                f"citecheck: claim failed ({result.label.value})",
                file,
                line,
            )
        )
    review = [(i, v) for i, v in enumerate(result.verdicts, 1) if v.review]
    if review:
        lines = []
        for i, v in review:
            conf = "n/a" if v.confidence is None else f"{v.confidence:.2f}"
            lines.append(f"citation {i} {v.url}: {v.label.value} at confidence {conf}")
        out.append(
            Annotation(
                "warning",
                "\n".join([claim, *lines]) + ", below the review gate: a human should look at it",
                "citecheck: review",
                file,
                line,
            )
        )
    return out


def _capped(annotations: list[Annotation], per_step: int, report: Report) -> list[Annotation]:
    """At most ``per_step`` errors and ``per_step`` warnings, then one notice with
    how many more there are and where to read them."""
    kept: list[Annotation] = []
    left = {"error": 0, "warning": 0}
    shown = {"error": 0, "warning": 0}
    for a in annotations:
        if shown[a.level] < per_step:
            shown[a.level] += 1
            kept.append(a)
        else:
            left[a.level] += 1
    if left["error"] or left["warning"]:
        more = [
            plural(n, what)
            for n, what in ((left["error"], "failing claim"), (left["warning"], "warning"))
            if n
        ]
        where = ["the citecheck summary in this step's log"]
        for what, path in report.written:
            if what == "HTML report":
                where.append(f"the HTML report ({path.name})")
            elif "GITHUB_STEP_SUMMARY" in what:
                where.append("the step summary")
        places = where[0] if len(where) == 1 else f"{', '.join(where[:-1])} or {where[-1]}"
        kept.append(
            Annotation(
                "notice",
                f"{' and '.join(more)} more: GitHub shows {per_step} errors and {per_step} "
                f"warnings per step; see {places}",
                "citecheck: more annotations",
            )
        )
    return kept


def _report_links(report: Report) -> dict[str, str]:
    """Per node id, a line linking the claim in the HTML report (none when the
    report's URL is not known)."""
    if not report.report_url:
        return {}
    from pytest_citecheck.reports.html import anchors, claim_url

    by_node = anchors((nodeid, r.id) for nodeid, r in report.ordered())
    return {
        nodeid: f"\nHTML report: {claim_url(report.report_url, anchor)}"
        for nodeid, anchor in by_node.items()
    }


def _citation_lines(index: int, v: Verdict) -> str:
    """One bad citation inside its claim's message: label, reason, quote, detail."""
    reason = f" [{v.reason}]" if v.reason else ""
    lines = [f"citation {index} {v.url}: {v.label.value}{reason}"]
    if v.evidence_quote:
        said = "quoted, but not in the source" if v.label is Label.FABRICATED else "the source says"
        lines.append(f'{said}: "{v.evidence_quote}"')
    if v.detail:
        lines.append(v.detail)
    return "\n".join(lines)


def _relative(path: Path, workspace: Path) -> str:
    """``path`` relative to the checkout, as GitHub wants it (absolute if outside)."""
    try:
        return path.resolve().relative_to(workspace.resolve()).as_posix()
    except ValueError:
        return path.resolve().as_posix()


SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_SARIF_LEVEL = {"error": "error", "warning": "warning", "notice": "note"}


def sarif(annotations: list[Annotation], version: str) -> dict[str, object]:
    """A SARIF 2.1.0 log of the annotations that have a place in a claim file (the
    gate's notice has none); one rule per title (``citecheck: contradicted``...)."""
    located = [(a, a.file) for a in annotations if a.file is not None]
    rules = sorted({_rule_id(a.title) for a, _ in located})
    results = []
    for a, file in located:
        region = {"startLine": a.line} if a.line is not None else {}
        results.append(
            {
                "ruleId": _rule_id(a.title),
                "level": _SARIF_LEVEL[a.level],
                "message": {"text": scrub(a.message)},
                "locations": [
                    {
                        "physicalLocation": {
                            "artifactLocation": {"uri": _uri(file)},
                            **({"region": region} if region else {}),
                        }
                    }
                ],
            }
        )
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "citecheck",
                        "version": version,
                        "informationUri": PROJECT_URL,
                        "rules": [
                            {"id": rule, "shortDescription": {"text": rule.replace("/", ": ")}}
                            for rule in rules
                        ],
                    }
                },
                "results": results,
            }
        ],
    }


def _uri(file: str) -> str:
    """A path relative to the checkout stays as is; one outside it becomes a file URI."""
    return Path(file).as_uri() if Path(file).is_absolute() else file


def _rule_id(title: str) -> str:
    """``citecheck: contradicted (allowed)`` -> ``citecheck/contradicted``."""
    name = title.removeprefix("citecheck: ").split(" (", 1)[0].strip().replace(" ", "-")
    return f"citecheck/{name}"
