"""Deep-research reports in: real reports saved as markdown, OpenAI's deep-research
response, and the reference styles reports use (numbered sources lists, HTML anchors).

The reports are real (tests/data/deep_research/SOURCES.md): every marker must resolve to
the URL its sources list gives it, and one claim is made per cited sentence.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from pytest_citecheck.claims.importers import ImportedAnswer, ResponseImportError, import_response

DATA = Path(__file__).parent.parent / "data"
REPORTS = DATA / "deep_research"
# A sources-list entry as these reports write it: "[7] Title: https://..." or
# "1. [Title](https://...)"; read here independently of the importer.
_ENTRY = re.compile(r"^(?:\[(\d+)\]|(\d+)\.)\s.*?(https?://[^\s)]+)", re.MULTILINE)
_MARKERS = re.compile(r"((?:\[\d+\])+)")


def report(name: str) -> str:
    return (REPORTS / f"open_deep_research__{name}_task_016_v1.md").read_text(encoding="utf-8")


def sources_list(text: str) -> dict[str, str]:
    body = text[text.index("## Sources") :]
    return {(m.group(1) or m.group(2)): m.group(3).rstrip("/") for m in _ENTRY.finditer(body)}


def urls(answer: ImportedAnswer) -> list[set[str]]:
    return [{c.url.rstrip("/") for c in claim.claim.citations} for claim in answer.claims]


@pytest.mark.parametrize(
    ("name", "claims", "unattached"), [("deepseekv4flash", 15, 2), ("gpt4.1", 11, 0)]
)
def test_a_real_report_resolves_every_marker_to_its_source(
    name: str, claims: int, unattached: int
) -> None:
    text = report(name)
    answer = import_response(text, format="markdown", answer_id=name)
    listed = sources_list(text)
    # Every group of markers in the body names sources of the list, and the claims cite
    # exactly those sources' URLs: nothing resolved to another entry, nothing dropped.
    body = text[: text.index("## Sources")]
    cited_in_body = {n for group in _MARKERS.findall(body) for n in re.findall(r"\d+", group)}
    assert cited_in_body <= set(listed)
    cited_urls = set().union(*urls(answer))
    assert cited_urls == {listed[n] for n in cited_in_body}
    assert len(answer.claims) == claims
    # No marker, no sources-list line and no heading of it is left in any sentence.
    for sentence in answer.sentences:
        assert not re.search(r"\[\d+\]|https?://|^Sources$", sentence.text), sentence.text
    assert {u.url.rstrip("/") for u in answer.unattached} == {
        listed[n] for n in set(listed) - cited_in_body
    }
    assert len(answer.unattached) == unattached


def test_a_sentence_with_stacked_markers_cites_each_of_them() -> None:
    text = report("deepseekv4flash")
    listed = sources_list(text)
    answer = import_response(text, format="markdown", answer_id="d")
    by_text = {c.claim.claim: {u.url.rstrip("/") for u in c.claim.citations} for c in answer.claims}
    sentence = "This has been the consistent, branded name used by Red Rooster for this offer"
    (claim,) = [t for t in by_text if t.startswith(sentence)]
    assert by_text[claim] == {listed[n] for n in ("4", "5", "8", "9")}  # "[4][5][8][9]"
    assert claim.endswith("across decades.")  # the markers are gone from the claim


def test_a_quotation_of_several_sentences_stays_in_its_claim() -> None:
    # The report quotes its sources two sentences at a time; a claim cut inside the
    # quotation was its last sentence alone ('We never missed a Tuesday."'), which
    # says nothing checkable and opens no quotation it closes.
    answer = import_response(report("deepseekv4flash"), format="markdown", answer_id="d")
    claims = [c.claim.claim for c in answer.claims]
    assert (
        'A Facebook recollection states: "Who can remember back in the 90’s when Red Rooster '
        'had $2.00 chicken & chips every Tuesday? We never missed a Tuesday."'
    ) in claims
    assert not [c for c in claims if c.count('"') % 2], claims


def test_a_source_named_without_a_link_is_an_error_that_points_at_both_places() -> None:
    # Claude's report lists "6. [Red Rooster Every Day Deals Commercial 2002 - Referenced in
    # historical documentation]": a source with no URL, cited in the body as [6]. It cannot
    # be checked, so the import says so (never a silent drop, never "no definition").
    with pytest.raises(ResponseImportError) as info:
        import_response(report("claudehaiku45"), format="markdown", answer_id="c")
    error = info.value
    assert error.where == "line 56, column 1"  # the sources-list entry
    assert "the definition of [6] holds no http(s) URL" in error.problem
    assert "the marker at line 23, column 239 cites it" in error.problem
    assert "remove the marker [6]" in error.fix


def test_the_same_report_imports_once_its_unlinked_source_is_dropped() -> None:
    text = report("claudehaiku45").replace(" [6]", "")
    answer = import_response(text, format="markdown", answer_id="c")
    listed = sources_list(text)
    assert "6" not in listed
    assert set().union(*urls(answer)) == set(listed.values())
    # Fourteen sentences carry a marker (counted by hand; a quote's inner sentence that
    # ends in its marker is one of them, as the marker cites it).
    assert len(answer.claims) == 14


def test_openai_deep_research_response() -> None:
    path = DATA / "native/openai_deep_research/ruby_llm__o4-mini-deep-research.json"
    answer = import_response(json.loads(path.read_text(encoding="utf-8")))
    assert answer.format == "openai-responses"
    assert [c.claim.claim for c in answer.claims] == [
        "Under standard atmospheric pressure (1 atm at sea level), pure water boils at "
        "100 °C (212 °F).",
        "Answer: 100 °C",
    ]
    for claim in answer.claims:
        (citation,) = claim.claim.citations
        assert citation.url.startswith("https://kids.britannica.com/students/article/water/")
        # Forty web searches and page opens are not citations.
    assert [s.text for s in answer.uncited] == [
        "At higher altitudes (lower pressure), water boils at lower temperatures."
    ]


# -- HTML anchors ----------------------------------------------------------------------------

HTML_REPORT = """\
# Boiling

Water boils at 100 °C at sea level.<sup><a href="#fn1">1</a></sup> It freezes at 0 °C, \
as <a href="https://b.org/freeze" title="NIST">the NIST note</a> says.
Ice floats <a href='https://c.org/ice'>[2]</a>. See <a href="/local">our page</a> for more.

<ol class="footnotes">
<li id="fn1">Boiling point, <a href="https://a.org/boil">https://a.org/boil</a></li>
</ol>
"""


def test_html_anchors_cite_like_markdown_links() -> None:
    answer = import_response(HTML_REPORT, format="markdown", answer_id="h")
    assert [(c.claim.claim, [u.url for u in c.claim.citations]) for c in answer.claims] == [
        ("Water boils at 100 °C at sea level.", ["https://a.org/boil"]),
        ("It freezes at 0 °C, as the NIST note says.", ["https://b.org/freeze"]),
        ("Ice floats.", ["https://c.org/ice"]),
    ]
    # The relative link stays plain text; the footnote list is no answer text.
    assert [s.text for s in answer.uncited] == ["See our page for more."]
    assert answer.unattached == []


def test_an_html_footnote_into_no_element_is_an_error() -> None:
    with pytest.raises(ResponseImportError) as info:
        import_response('Water boils.<a href="#fn9">9</a>\n', format="markdown")
    assert info.value.where == "line 1, column 13"
    assert 'id="fn9"' in info.value.problem


def test_an_html_footnote_whose_note_has_no_url_is_an_error() -> None:
    text = 'Water boils.<a href="#n1">1</a>\n\n<p id="n1">Smith, personal communication.</p>\n'
    with pytest.raises(ResponseImportError, match=r"definition of \[#n1\] holds no http"):
        import_response(text, format="markdown")


def test_an_html_anchor_that_is_no_page_is_refused() -> None:
    with pytest.raises(ResponseImportError, match="is a javascript: link, not a page"):
        import_response('Water <a href="javascript:alert(1)">boils</a>.', format="markdown")
