"""--citecheck-otel-file: a pytest run's verdicts as gen_ai.evaluation.result events,
parented to the span a claim file's outline names; a malformed span id is a file:line error."""

from __future__ import annotations

import json

import pytest

from tests.plugin.fakes import CONFTEST

pytest.importorskip("opentelemetry.sdk")

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
SPAN = "00f067aa0ba902b7"

CLAIMS = f"""\
claims:
  - id: boils-100
    claim: "Water boils at 100 C."
    citations:
      - url: https://example.com/boiling
      - url: https://example.com/gone
  - id: boils-50
    claim: "Water boils at 50 C."
    citations:
      - url: https://example.com/boiling
outlines:
  - answer: "trace-4bf92f35-t1"
    format: "otlp+markdown"
    response_id: "chatcmpl-42"
    trace_id: "{TRACE}"
    span_id: "{SPAN}"
    sentences:
      - claim: boils-100
      - claim: boils-50
"""


def test_every_citation_is_an_event_parented_to_the_outlined_span(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makefile(".yaml", citecheck_a=CLAIMS)
    result = pytester.runpytest(
        "--citecheck",
        "--citecheck-record=all",
        "--citecheck-allow-contradicted",
        "--citecheck-otel-file=out/events.json",
    )
    result.assert_outcomes(passed=2)
    (line,) = (pytester.path / "out" / "events.json").read_text().splitlines()
    records = json.loads(line)["resourceLogs"][0]["scopeLogs"][0]["logRecords"]
    events = {}
    for record in records:
        assert record["eventName"] == "gen_ai.evaluation.result"
        assert (record["traceId"], record["spanId"]) == (TRACE, SPAN)
        attrs = {a["key"]: next(iter(a["value"].values())) for a in record["attributes"]}
        events[(attrs["citecheck.claim.id"], attrs["citecheck.citation.url"])] = attrs
    assert set(events) == {
        ("boils-100", "https://example.com/boiling"),
        ("boils-100", "https://example.com/gone"),
        ("boils-50", "https://example.com/boiling"),
    }
    contradicted = events[("boils-50", "https://example.com/boiling")]
    assert contradicted["gen_ai.evaluation.score.label"] == "contradicted"
    assert contradicted["gen_ai.evaluation.score.value"] == 0.0
    assert contradicted["gen_ai.response.id"] == "chatcmpl-42"


def test_a_span_id_that_is_not_hex_is_a_claim_file_error(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makefile(".yaml", citecheck_a=CLAIMS.replace(SPAN, "not-a-span-id"))
    result = pytester.runpytest("--citecheck", "--citecheck-record=all")
    result.stdout.fnmatch_lines(
        ["*citecheck_a.yaml:16:*`span_id` must be 16 hex digits (not all zero)*not-a-span-id*"]
    )
