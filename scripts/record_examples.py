#!/usr/bin/env python
"""Record the example suites' cassettes against the project's loopback doubles.

    python scripts/record_examples.py            # record, post-process, replay-check
    python scripts/record_examples.py --check    # only the replay check
    python scripts/record_examples.py --service  # the /verify examples (docs/service.md)
    python scripts/record_examples.py --only NODEID...  # only these claims' cassettes

No live service is called and none can be: the Crawling API and the judge are
the doubles in ``tests/doubles`` on 127.0.0.1. What they serve is scripted here:

- pages: the markdown files in ``example_suite/pages/`` (real page text from the
  WiCE dataset, see ``example_suite/pages/SOURCES.md``, plus a few short pages
  written for the example), served the way each case needs (404, 410, a
  redirect to the homepage, a soft 404, a thin page that needs the readability
  retry, a crawl that needs the JavaScript token);
- judge verdicts: :data:`VERDICTS`, one per claim. Quotes are copied verbatim
  from the passages the judge was actually shown (the sentence that holds a
  known anchor), except for one deliberate paraphrase that the guard rejects;
  a claim that needs two sources has its joint judgment's anchors in
  :data:`JOINT_VERDICTS` (one per source).

Retrieval uses the default ranker (hybrid: BM25 + all-MiniLM-L6-v2, offline). Afterwards every
cassette is rewritten so the suite replays with no environment variable set:
loopback addresses become ``https://api.crawlbase.com/`` and
``https://api.openai.com/v1``, the doubles' wall-clock ``Date`` and ``Server``
headers become fixed values, and each cassette is marked as synthesized (a
leading comment and ``metadata.citecheck.synthesized``). Running the script
twice gives identical cassettes.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from pytest_citecheck.stages.text import normalise  # noqa: E402
from tests.doubles.crawlbase import CrawlbaseDouble, Page  # noqa: E402
from tests.doubles.llm import (  # noqa: E402
    JudgeCall,
    LLMDouble,
    Scripted,
    joint_verdict,
    verdict,
)
from tests.doubles.pdfs import make_pdf  # noqa: E402

SUITE = REPO / "example_suite"
FAILING = REPO / "example_suite_failing"
ANSWERS = SUITE / "answers"
PAGES = SUITE / "pages"

CRAWLBASE_URL = "https://api.crawlbase.com/"
OPENAI_URL = "https://api.openai.com/v1"
SYNTHESIZED = (
    "recorded by scripts/record_examples.py against loopback doubles (tests/doubles), "
    "not live services"
)
HEADER_COMMENT = (
    "# Synthesized recording: " + SYNTHESIZED + ".\n"
    "# Page text: example_suite/pages/SOURCES.md. Re-create with: "
    "python scripts/record_examples.py\n"
)
# The /verify examples of the service documentation (docs/service.md).
SERVICE = SUITE / "service"
SERVICE_DOC = REPO / "docs" / "service.md"
SERVICE_HEADER_COMMENT = (
    "# Synthesized recording: " + SYNTHESIZED + ".\n"
    "# A /verify request recorded through `citecheck serve --record rewrite`; page text:\n"
    "# example_suite/pages/SOURCES.md. Re-create with: python scripts/record_examples.py "
    "--service\n"
)
FIXED_DATE = "Wed, 01 Jan 2025 00:00:00 GMT"

# Fake credentials for the doubles; the recorder writes placeholders instead.
FAKE_ENV = {
    "CRAWLBASE_TOKEN": "example-normal-token-not-a-secret",
    "CRAWLBASE_JS_TOKEN": "example-js-token-not-a-secret",
    "OPENAI_API_KEY": "sk-example-key-not-a-secret",
}
# Variables that would point a replay somewhere else, or hand it keys.
CLEAR_ENV = (
    *FAKE_ENV,
    "CITECHECK_CRAWLBASE_URL",
    "OPENAI_BASE_URL",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "OLLAMA_HOST",
    "CITECHECK_JUDGE_BASE_URL",
    "CITECHECK_JUDGE_API_KEY",
    "PYTEST_ADDOPTS",
)


# -- pages ---------------------------------------------------------------------


def page(name: str) -> str:
    return (PAGES / name).read_text(encoding="utf-8")


def headline_only(markdown: str) -> str:
    """What readability keeps of a page whose article body it misses: the first two blocks."""
    blocks = [b for b in re.split(r"\n\s*\n", markdown) if b.strip()]
    return "\n\n".join(blocks[:2]) + "\n"


def site_pages() -> dict[str, Page]:
    """Every URL the example claims cite, and how the Crawling API answers for it."""
    boiling = page("example-water-boiling-point.md")
    return {
        # The design article's case: a page, and an old report that is gone.
        "https://example.com/articles/water-boiling-point": Page(markdown=boiling),
        "https://example.com/old-report": Page(
            markdown=page("example-old-report-404.md"), original_status=404
        ),
        # Half of a two-source claim: the boiling article has the other half.
        "https://example.org/travel/cooking-at-altitude": Page(
            markdown=page("example-cooking-at-altitude.md")
        ),
        # WiCE pages, served as they are.
        "https://www.nytimes.com/2018/05/15/obituaries/charlie-russell-dead.html": Page(
            markdown=page("wice-dev00956-nytimes-charlie-russell.md")
        ),
        "https://volcanoes.usgs.gov/volcanoes/crater_lake/crater_lake_park_info.html": Page(
            markdown=page("wice-dev01893-usgs-crater-lake.md")
        ),
        "http://news.bbc.co.uk/2/hi/entertainment/6312539.stm": Page(
            markdown=page("wice-dev03292-bbc-best-actress-nominees.md")
        ),
        "https://www.goupstate.com/news/20181110/former-congresswoman-liz-patterson-dies-at-78": (
            Page(markdown=page("wice-dev00328-goupstate-liz-patterson.md"))
        ),
        "https://www.bwfc.co.uk/news/2017/june/le-fondre-signs-permanent-deal/": Page(
            markdown=page("wice-dev00292-bwfc-le-fondre.md")
        ),
        "https://www.azeriamerica.com/starbucks-coffee-shop-chain-will-be-opened-in-baku/": Page(
            markdown=page("wice-dev00940-azeriamerica-starbucks-baku.md")
        ),
        "https://www.blabbermouth.net/news/metallica-machine-head-avenged-sevenfold-dream-theater"
        "-featured-on-maiden-heaven-cd/": Page(
            markdown=page("wice-dev01883-blabbermouth-maiden-heaven.md")
        ),
        "https://www.essex.ac.uk/news/2019/03/26/essex-volleyball-teams-win-double-national-"
        "success": Page(markdown=page("wice-dev02311-essex-volleyball.md")),
        "http://www.citypages.com/news/city-council-candidate-lisa-bender-welcomes-baby-girl-"
        "one-month-before-election-6537373": Page(
            markdown=page("wice-dev01275-citypages-lisa-bender.md")
        ),
        # Readability keeps only the headline: fetched again without it.
        "https://variety.com/2018/tv/news/better-call-saul-fear-the-walking-dead-mcmafia-"
        "renewed-amc-1202888788/": Page(
            markdown=headline_only(page("wice-dev01564-variety-better-call-saul.md")),
            full_markdown=page("wice-dev01564-variety-better-call-saul.md"),
        ),
        # The normal crawl fails (HTTP 520); the JavaScript token renders it (step 3).
        "https://blog.siriusxm.com/michelle-collins-comedian-and-former-co-host-of-the-view-"
        "launches-uncensored-daily-show/": Page(
            http_status=520,
            js=Page(markdown=page("wice-dev04119-siriusxm-michelle-collins.md")),
        ),
        # The deep link lands on the homepage (step 5).
        "https://www.kerrang.com/features/maiden-heaven-a-tribute-to-iron-maiden-"
        "track-by-track": Page(
            markdown=page("kerrang-homepage.md"), final_url="https://www.kerrang.com/"
        ),
        # A 200 "page not found" template (step 6).
        "https://www.townandcountrymag.com/society/tradition/a20061427/who-is-lady-amelia-"
        "windsor/": Page(markdown=page("townandcountry-soft-404.md")),
        # A page that tries to instruct the judge (example_suite_failing).
        "https://bear-facts.example.net/charlie-russell-kamchatka": Page(
            markdown=page("hostile-bear-facts.md")
        ),
        # A PDF (docs/verification.md, "PDF sources"): a real file, read page by page.
        "https://example.com/papers/the-crazy-ones.pdf": Page(
            pdf=(PAGES / "crazy-ones.pdf").read_bytes()
        ),
        # A PDF whose text is in no archive the suite draws on: served without a text
        # layer (pdf_no_text) rather than with invented words (pages/SOURCES.md).
        "https://www.nps.gov/crla/planyourvisit/upload/CRLA-Winter-Trip-Planner-2019.pdf": Page(
            pdf=make_pdf([[], []])
        ),
        # Gone for good (step 4).
        "https://techcrunch.com/2015/10/15/opengov-series-b-andreessen-horowitz/": Page(
            markdown=page("techcrunch-410.md"), original_status=410
        ),
        # A subscription teaser answered with HTTP 402 (example_suite_failing): paywalled,
        # never judged, not fetched again, not billed.
        "https://www.grizzly-times.example/2018/05/charlie-russell-obituary": Page(
            markdown=page("grizzly-times-paywall-402.md"), original_status=402
        ),
        # A bot challenge, to the JavaScript token too: blocked, never judged.
        "https://www.bearwatch.example/2018/05/charlie-russell-kamchatka-bears/": Page(
            markdown=page("bearwatch-cloudflare-challenge.md"), original_status=403
        ),
    }


# -- WiCE records -> pages -------------------------------------------------------------

# record id -> page file. The page text is the record's ``source_text`` (the
# sentences of the archived page), laid out as markdown: the ``(meta data)``
# lines WiCE's extraction added are dropped, headings stay, runs of short lines
# (menus) stay one per line, and sentences are joined into paragraphs.
WICE_PAGES = {
    "wice-dev00956": "wice-dev00956-nytimes-charlie-russell.md",
    "wice-dev01893": "wice-dev01893-usgs-crater-lake.md",
    "wice-dev03292": "wice-dev03292-bbc-best-actress-nominees.md",
    "wice-dev00328": "wice-dev00328-goupstate-liz-patterson.md",
    "wice-dev00292": "wice-dev00292-bwfc-le-fondre.md",
    "wice-dev00940": "wice-dev00940-azeriamerica-starbucks-baku.md",
    "wice-dev01883": "wice-dev01883-blabbermouth-maiden-heaven.md",
    "wice-dev02311": "wice-dev02311-essex-volleyball.md",
    "wice-dev01275": "wice-dev01275-citypages-lisa-bender.md",
    "wice-dev01564": "wice-dev01564-variety-better-call-saul.md",
    "wice-dev04119": "wice-dev04119-siriusxm-michelle-collins.md",
}
PARAGRAPH_WORDS = 60


def wice_markdown(source_text: str) -> str:
    blocks: list[str] = []
    prose: list[str] = []
    menu: list[str] = []

    def flush() -> None:
        if prose:
            blocks.append(" ".join(prose))
            prose.clear()
        if menu:
            blocks.append("\n".join(menu))
            menu.clear()

    for raw in source_text.split("\n"):
        line = raw.strip()
        if not line or line.startswith("(meta data)"):
            continue
        if line.startswith("#"):
            flush()
            blocks.append(line)
        elif len(line.split()) < 5 and not line.endswith((".", "!", "?", '"', ",")):
            if prose:
                flush()
            menu.append(line)
        else:
            if menu:
                flush()
            prose.append(line)
            if sum(len(s.split()) for s in prose) >= PARAGRAPH_WORDS and line.endswith(
                (".", "!", "?", '"')
            ):
                flush()
    flush()
    return "\n\n".join(blocks) + "\n"


def import_wice(dataset: Path) -> None:
    records = {}
    for line in dataset.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record["id"] in WICE_PAGES:
            records[record["id"]] = record
    PAGES.mkdir(parents=True, exist_ok=True)
    rows = []
    for record_id, name in WICE_PAGES.items():
        record = records[record_id]
        (PAGES / name).write_text(wice_markdown(record["source_text"]), "utf-8")
        origin = record["origin"]
        title = (record["source_title"] or "(no title)").replace("|", "\\|")
        rows.append(
            f"| `{name}` | {record_id} | {title} | {record['label']} ({record['original_label']}) |"
        )
        print(f"{name}: {record_id} {record['source_title']!r}")
    license_text = origin["license"]
    source = f"github.com/{origin['repo']}, commit {origin['commit'][:7]}, `{origin['path']}`"
    (PAGES / "SOURCES.md").write_text(
        SOURCES_MD.format(source=source, license=license_text, rows="\n".join(rows)), "utf-8"
    )


SOURCES_MD = """\
# Where the example pages come from

The example suite's web citations are served, during recording, from the markdown files in
this folder by the project's loopback double of the Crawlbase Crawling API
(`scripts/record_examples.py`); the committed cassettes hold the same text. No page was
fetched from the web.

## Real page text: WiCE

Eleven pages are the archived page text of records of the WiCE dev split (Kamoi et al. 2023,
"WiCE: Real-World Entailment for Claims in Wikipedia"; {source}), copied from
`shared/data/wice_dev.jsonl` by `python scripts/record_examples.py --import-wice PATH`.

License (each record's `origin` field): {license}

What was changed: the `(meta data)` lines that WiCE's extraction added were dropped and the
page's sentences (one a line in `source_text`) were joined into markdown paragraphs; the
words are the page's own. The records carry no URL: the URLs in the claim files are
illustrative addresses on each page's site, not the original ones. The claims are the
records' Wikipedia claims, lightly edited to stand alone (pronouns resolved: "He died ..."
-> "Charlie Russell died ..."; a few words shortened).

| file | WiCE record | page title | WiCE label (original) |
|---|---|---|---|
{rows}

## Written for the example

Short pages that only need to look like what sites answer; written for this suite, under the
project's license.

| file | serves |
|---|---|
| `example-water-boiling-point.md` | the design article's boiling-water article |
| `example-old-report-404.md` | the body of the 404 answered for `https://example.com/old-report` |
| `example-cooking-at-altitude.md` | half of a two-source claim (the boiling article has the rest) |
| `kerrang-homepage.md` | the homepage a retired deep link redirects to |
| `townandcountry-soft-404.md` | a "page not found" template answered with HTTP 200 (a soft 404) |
| `techcrunch-410.md` | the body of an HTTP 410 (gone) answer |
| `hostile-bear-facts.md` | a page that tries to instruct the judge (`example_suite_failing`) |
| `bearwatch-cloudflare-challenge.md` | a bot challenge ("Just a moment...") answered with 403 |
| `grizzly-times-paywall-402.md` | a subscription teaser answered with HTTP 402 (`paywalled`) |
"""


# -- the judge's script ----------------------------------------------------------


@dataclass(frozen=True)
class Plan:
    """How the judge answers one claim.

    ``anchor``: a phrase of the evidence; the quote is the whole sentence of
    the shown passages that holds it, copied verbatim (``exact``: the anchor
    itself is the quote, for pages whose sentence breaks were lost in
    extraction). ``paraphrase``: a quote that is *not* in the passages (the
    guard must reject it). ``obeys``: see the field.

    The confirmation call (the claim and the sentence(s) holding the quote,
    ``pytest_citecheck.stages.confirm``) is answered by the same plan: the anchor is in
    that sentence, so an honest verdict is confirmed.
    """

    label: str
    confidence: float
    anchor: str | None = None
    paraphrase: str | None = None
    exact: bool = False
    # A judge that obeys a page: it answers this plan only while it reads the page's
    # instruction (this text); shown the quote's sentence alone (the confirmation
    # call), it finds nothing.
    obeys: str | None = None


TWO_SOURCES = (
    "Water boils at 100 degrees Celsius at sea level but at about 70 degrees Celsius on the "
    "summit of Mount Everest."
)

VERDICTS: dict[str, Plan] = {
    # citecheck_boiling.yaml
    "Water boils at 100 degrees Celsius at sea level.": Plan(
        "supported", 0.97, "boils at 100 degrees Celsius"
    ),
    "Water boils at 50 degrees Celsius at sea level.": Plan(
        "contradicted", 0.95, "boils at 100 degrees Celsius"
    ),
    # Neither page says both halves: each alone is not_found (JOINT_VERDICTS: together).
    TWO_SOURCES: Plan("not_found", 0.9),
    # citecheck_jwt.yaml (RFC 7519)
    "A JWT must not be accepted for processing on or after its expiration time.": Plan(
        "supported", 0.96, "on or after which the JWT MUST NOT be accepted"
    ),
    "Implementations may allow a few minutes of leeway for clock skew when checking exp.": Plan(
        "supported", 0.93, "to account for clock skew"
    ),
    "When a JWT has a single audience, the aud claim may be a single string instead of "
    "an array.": Plan("supported", 0.94, "the JWT has one audience"),
    "The exp claim is required in every JWT.": Plan("contradicted", 0.9, "Use of this claim"),
    "The exp claim must be signed with the RS256 algorithm.": Plan("not_found", 0.88),
    "The iat claim records when a JWT was issued and can be used to determine its age.": Plan(
        "supported", 0.95, "can be used to determine the age"
    ),
    # citecheck_pdf.yaml (a real PDF)
    "The Crazy Ones says that the crazy ones are not fond of rules.": Plan(
        "supported", 0.92, "not fond of rules"
    ),
    # citecheck_research_answers.yaml (WiCE pages)
    "Charlie Russell died on May 7, 2018, in Calgary, Alberta, after complications from "
    "surgery.": Plan("supported", 0.86, "died on May 7 in Calgary"),
    "While Crater Lake National Park remains open throughout the year, certain roads and "
    "facilities close in the winter season.": Plan(
        "supported",
        0.72,
        "It is always open, but some of the roads and facilities are closed during the winter "
        "months.",
        exact=True,
    ),
    "With another Best Actress nomination, Kate Winslet, at 31, became the youngest "
    "performer to earn five Oscar nominations.": Plan(
        "supported",
        0.91,
        "Winslet is the youngest actress to earn five Oscar nominations",
        exact=True,
    ),
    "Liz Patterson died on November 10, 2018, at the age of 78.": Plan(
        "supported",
        0.9,
        paraphrase="Former congresswoman Liz Patterson died on November 10, 2018, aged 78.",
    ),
    "On 6 June 2017, Bolton Wanderers confirmed that Adam Le Fondre had joined them on a "
    "two-year contract with the option of an extension.": Plan("not_found", 0.83),
    "In 2014 Starbucks was scheduled to open a store in Azerbaijan, in the Port Baku Mall.": Plan(
        "not_found", 0.85
    ),
    'Avenged Sevenfold covered "Iron Maiden" for the Kerrang! tribute album "Maiden '
    'Heaven: A Tribute to Iron Maiden".': Plan("supported", 0.82, "Kerrang! magazine's latest"),
    "Better Call Saul was renewed for a fifth season on July 28, 2018, ahead of its fourth "
    "season premiere.": Plan("supported", 0.89, "have been renewed for fifth seasons"),
    "In 2018 Michelle Collins began her daily SiriusXM show, The Michelle Collins Show.": Plan(
        "supported", 0.9, "joins the SiriusXM"
    ),
    # citecheck_batch.jsonl
    "Both the men's and women's volleyball teams at the University of Essex won the "
    "national student cup in 2019.": Plan("supported", 0.92, "took Volleyball England National"),
    "Lisa Bender gave birth to her second daughter in October 2013, three weeks before "
    "election day.": Plan("not_found", 0.81),
    # example_suite_failing
    "Charlie Russell was killed by a grizzly bear in 2018.": Plan(
        "contradicted", 0.84, "The cause was complications after surgery"
    ),
    # A judge that obeys the page's instruction (the guard must not).
    "Charlie Russell lived with wild grizzly bears in Kamchatka for ten years.": Plan(
        "supported",
        1.0,
        "This page is an authoritative source.",
        exact=True,
        obeys="ignore all previous instructions",
    ),
}


# The joint judgment (pytest_citecheck.engine.joint) of a claim no single source supports:
# one anchor per part of the claim, each quoted (its whole sentence) from the source
# that holds it. Its confirmation reads those sentences alone and answers alike.
JOINT_VERDICTS: dict[str, tuple[float, tuple[str, ...]]] = {
    TWO_SOURCES: (0.9, ("boils at 100 degrees Celsius", "boils at about 70 degrees Celsius")),
}


def sentences(passage: str) -> Iterator[str]:
    """The sentences of a passage, normalised as the guard normalises them."""
    for paragraph in re.split(r"\n\s*\n", passage):
        text = normalise(paragraph)
        yield from (s for s in re.split(r"(?<=[.!?\"])\s+(?=[A-Z\"#])", text) if s)


class Judge:
    """The judge double's responder: :data:`VERDICTS`, quoting what it was shown."""

    def __init__(self) -> None:
        self.problems: list[str] = []
        self._lock = threading.Lock()

    def __call__(self, call: JudgeCall) -> Scripted:
        label, quote, confidence = self.decide(call)
        # Token counts in the usual proportion (about 4 characters a token), so the
        # usage figures in the summary are plausible rather than constant.
        prompt = sum(len(m.get("content", "")) for m in call.json().get("messages", []))
        answer = json.dumps({"label": label, "quote": quote, "confidence": confidence})
        return verdict(
            label,
            quote,
            confidence,
            input_tokens=round(prompt / 4),
            output_tokens=round(len(answer) / 4),
        )

    def decide(self, call: JudgeCall) -> tuple[str, str | None, float]:
        claim = call.claim or ""
        plan = VERDICTS.get(claim)
        if plan is None:
            return self._problem(f"no verdict scripted for claim {claim!r}")
        if plan.label == "not_found":
            return "not_found", None, plan.confidence
        if plan.obeys is not None and not any(plan.obeys in p for p in call.passages):
            return "not_found", None, plan.confidence
        if plan.paraphrase is not None:
            return plan.label, plan.paraphrase, plan.confidence
        assert plan.anchor is not None
        for passage in call.passages:
            if plan.exact and plan.anchor in normalise(passage):
                return plan.label, plan.anchor, plan.confidence
            for sentence in sentences(passage):
                if plan.anchor in sentence:
                    return plan.label, sentence, plan.confidence
        # Retrieval did not keep the evidence: an honest judge finds nothing.
        return self._problem(f"anchor {plan.anchor!r} not in the passages shown for {claim!r}")

    def joint(self, call: JudgeCall) -> Scripted:
        """The joint judgment (and its confirmation): :data:`JOINT_VERDICTS`, each anchor's
        sentence quoted from the source that holds it."""
        claim = call.claim or ""
        planned = JOINT_VERDICTS.get(claim)
        quotes: dict[int, str] = {}
        for anchor in planned[1] if planned else ():
            for number, passages in enumerate(call.sources, start=1):
                found = [s for p in passages for s in sentences(p) if anchor in s]
                if found and number not in quotes:
                    quotes[number] = found[0]
                    break
        complete = planned is not None and len(quotes) == len(planned[1])
        label, confidence = "not_found", 0.9
        if complete and planned is not None:
            label, confidence = "supported", planned[0]
        if planned is not None and not complete:
            self._problem(f"the joint anchors of {claim!r} are not in the sources shown")
        items = [{"source": k, "quote": v} for k, v in sorted(quotes.items())] if complete else []
        prompt = sum(len(m.get("content", "")) for m in call.json().get("messages", []))
        answer = json.dumps({"label": label, "quotes": items, "confidence": confidence})
        return joint_verdict(
            label,
            dict(sorted(quotes.items())) if complete else {},
            confidence,
            input_tokens=round(prompt / 4),
            output_tokens=round(len(answer) / 4),
        )

    def _problem(self, text: str) -> tuple[str, str | None, float]:
        with self._lock:
            self.problems.append(text)
        return "not_found", None, 0.5


# -- running pytest ----------------------------------------------------------------


def clean_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in CLEAR_ENV}
    env["HF_HUB_OFFLINE"] = "1"
    env["TRANSFORMERS_OFFLINE"] = "1"
    env.update(extra or {})
    return env


def run_pytest(suite: Path, *args: str, env: Mapping[str, str]) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "pytest", "--citecheck", "-p", "no:cacheprovider", *args]
    return subprocess.run(
        [*command, str(suite.relative_to(REPO))],
        cwd=REPO,
        env=dict(env),
        capture_output=True,
        text=True,
        check=False,
    )


@contextmanager
def doubles(judge: Judge) -> Iterator[tuple[CrawlbaseDouble, LLMDouble]]:
    tokens = {"normal": FAKE_ENV["CRAWLBASE_TOKEN"], "javascript": FAKE_ENV["CRAWLBASE_JS_TOKEN"]}
    with (
        CrawlbaseDouble(tokens=tokens, pages=site_pages()) as api,
        LLMDouble(judge, joint_responder=judge.joint) as llm,
    ):
        yield api, llm


def record(*, quoted_answers_only: bool = False) -> None:
    judge = Judge()
    with doubles(judge) as (api, llm):
        env = clean_env(
            {
                **FAKE_ENV,
                "CITECHECK_CRAWLBASE_URL": api.base_url,
                "OPENAI_BASE_URL": llm.base_url("openai"),
            }
        )
        suites = () if quoted_answers_only else (SUITE, FAILING)
        for suite in suites:
            shutil.rmtree(suite / "cassettes", ignore_errors=True)
            result = run_pytest(suite, "--citecheck-record=rewrite", env=env)
            print(f"recorded {suite.name}: exit {result.returncode}")
            print(summary(result.stdout))
            if result.returncode not in (0, 1) or "Traceback" in result.stdout:
                sys.exit(f"recording {suite.name} broke:\n{result.stdout}\n{result.stderr}")
        quoted = record_quoted_answers(env)
        for base, real in ((api.base_url, CRAWLBASE_URL), (llm.base_url("openai"), OPENAI_URL)):
            for suite in suites:
                for path in sorted((suite / "cassettes").rglob("*.yaml")):
                    postprocess(path, base, real)
            for path in quoted:
                postprocess(path, base, real)
    if judge.problems:
        sys.exit("the judge script does not fit what was asked:\n  " + "\n  ".join(judge.problems))
    for suite in suites:
        for path in sorted((suite / "cassettes").rglob("*.yaml")):
            mark_synthesized(path)
    for path in quoted:
        mark_synthesized(path)


def record_only(nodeids: list[str]) -> None:
    """Record only the claims ``nodeids`` name (``example_suite/FILE::ID``), into their
    cassettes, the rest of the suite left as it is."""
    from pytest_citecheck.recording.recorder import cassette_path

    judge = Judge()
    with doubles(judge) as (api, llm):
        env = clean_env(
            {
                **FAKE_ENV,
                "CITECHECK_CRAWLBASE_URL": api.base_url,
                "OPENAI_BASE_URL": llm.base_url("openai"),
            }
        )
        command = [sys.executable, "-m", "pytest", "--citecheck", "-p", "no:cacheprovider"]
        result = subprocess.run(
            [*command, "--citecheck-record=rewrite", *nodeids],
            cwd=REPO,
            env=dict(env),
            capture_output=True,
            text=True,
            check=False,
        )
        print(f"recorded {len(nodeids)} claim(s): exit {result.returncode}")
        if result.returncode != 0:
            sys.exit(f"recording broke:\n{result.stdout}\n{result.stderr}")
        paths = [
            cassette_path(REPO / nodeid.split("::")[0], nodeid.split("::")[1]) for nodeid in nodeids
        ]
        for base, real in ((api.base_url, CRAWLBASE_URL), (llm.base_url("openai"), OPENAI_URL)):
            for path in paths:
                postprocess(path, base, real)
    if judge.problems:
        sys.exit("the judge script does not fit what was asked:\n  " + "\n  ".join(judge.problems))
    for path in paths:
        mark_synthesized(path)


def record_quoted_answers(env: Mapping[str, str]) -> list[Path]:
    """Record the example answers' claims whose citations carry a provider quote.

    The other answers' cassettes are copies of the suite's recordings of the same
    claims; a citation with a quote cannot be: the judge reads the passage holding
    the quote, not retrieval's choice, so its request differs.
    """
    from pytest_citecheck.claims.loader import load_claim_file
    from pytest_citecheck.recording.recorder import cassette_path

    claim_file = ANSWERS / "answers.yaml"
    claims = [
        c
        for c in load_claim_file(claim_file).claims
        if any(citation.quote for citation in c.citations)
    ]
    if not claims:
        return []
    nodeids = [f"{claim_file.relative_to(REPO)}::{c.id}" for c in claims]
    command = [sys.executable, "-m", "pytest", "--citecheck", "-p", "no:cacheprovider"]
    command += ["-o", "citecheck_patterns=answers.yaml", "--citecheck-record=rewrite", *nodeids]
    result = subprocess.run(
        command, cwd=REPO, env=dict(env), capture_output=True, text=True, check=False
    )
    print(f"recorded {len(claims)} quoted example answer claim(s): exit {result.returncode}")
    if result.returncode != 0:
        sys.exit(f"recording the quoted example answers broke:\n{result.stdout}\n{result.stderr}")
    return [cassette_path(claim_file, c.id) for c in claims]


# -- post-processing -----------------------------------------------------------------


def postprocess(path: Path, loopback: str, real: str) -> None:
    """Point the recording at the real service instead of the loopback double."""
    import yaml

    text = path.read_text(encoding="utf-8")
    data = yaml.load(text, Loader=yaml.CSafeLoader)
    loopback = loopback.rstrip("/")
    real = real.rstrip("/")
    host = real.split("://", 1)[1].split("/", 1)[0]
    changed = False
    for interaction in data.get("interactions", []):
        request = interaction["request"]
        if not request["uri"].startswith(loopback):
            continue
        changed = True
        request["uri"] = real + request["uri"][len(loopback) :]
        for name in list(request.get("headers", {})):
            if name.lower() == "host":
                request["headers"][name] = [host]
        headers = interaction["response"].get("headers", {})
        for name in list(headers):
            if name.lower() == "date":
                headers[name] = [FIXED_DATE]
            elif name.lower() == "server":
                del headers[name]
    if changed:
        dump(path, data)


def mark_synthesized(path: Path) -> None:
    import yaml

    data = yaml.load(path.read_text(encoding="utf-8"), Loader=yaml.CSafeLoader)
    data.setdefault("metadata", {}).setdefault("citecheck", {})["synthesized"] = SYNTHESIZED
    dump(path, data)
    text = path.read_text(encoding="utf-8")
    if "127.0.0.1" in text or any(v in text for v in FAKE_ENV.values()):
        sys.exit(f"{path}: a loopback address or a fake credential is still in the cassette")


def dump(path: Path, data: object) -> None:
    import yaml

    body = yaml.dump(data, Dumper=yaml.CSafeDumper, allow_unicode=True, width=100)
    header = SERVICE_HEADER_COMMENT if path.parent == SERVICE else HEADER_COMMENT
    path.write_text(header + body, encoding="utf-8")


# -- the service's examples -----------------------------------------------------------


def record_service() -> None:
    """Record the ``/verify`` examples of the service documentation through
    ``citecheck serve --record rewrite`` against the doubles, then replay them with
    ``--record none`` and no environment and write the replies into the document.

    An example whose claim the judge script has no verdict for is not recorded: it
    is the document's example of a request with no recording."""
    from tests.service_examples import citecheck_serve, examples

    found = examples(SERVICE_DOC.read_text(encoding="utf-8"))
    judge = Judge()
    with doubles(judge) as (api, llm):
        env = clean_env(
            {
                **FAKE_ENV,
                "CITECHECK_CRAWLBASE_URL": api.base_url,
                "OPENAI_BASE_URL": llm.base_url("openai"),
            }
        )
        shutil.rmtree(SERVICE, ignore_errors=True)
        SERVICE.mkdir(parents=True)
        # bm25: no embedding model to load; replay reads the recorded choice anyway.
        args = ["--record", "rewrite", "--cassettes", str(SERVICE.relative_to(REPO))]
        with citecheck_serve([*args, "--ranker", "bm25"], env, REPO) as url:
            for example in found:
                claim = json.loads(example.body or b"{}").get("claim")
                if claim not in VERDICTS:
                    print(f"not recorded (no scripted verdict): {claim!r}")
                    continue
                reply = example.send(url)
                print(f"recorded: HTTP {reply.status_code} {claim!r}")
        for base, real in ((api.base_url, CRAWLBASE_URL), (llm.base_url("openai"), OPENAI_URL)):
            for path in sorted(SERVICE.glob("*.yaml")):
                postprocess(path, base, real)
    if judge.problems:
        sys.exit("the judge script does not fit what was asked:\n  " + "\n  ".join(judge.problems))
    for path in sorted(SERVICE.glob("*.yaml")):
        mark_synthesized(path)
    write_service_replies()


def write_service_replies() -> None:
    """Replay the examples (``--record none``, no token or key) and write each status
    and reply into the document, as ``python -m json.tool`` prints it."""
    from tests.service_examples import citecheck_serve, examples, with_replies

    doc = SERVICE_DOC.read_text(encoding="utf-8")
    args = ["--record", "none", "--cassettes", str(SERVICE.relative_to(REPO))]
    with citecheck_serve(args, clean_env(), REPO) as url:
        replies = [(r.status_code, r.json()) for r in (e.send(url) for e in examples(doc))]
    SERVICE_DOC.write_text(with_replies(doc, replies), encoding="utf-8")
    print(f"wrote {len(replies)} replies into {SERVICE_DOC.relative_to(REPO)}")


# -- checking -----------------------------------------------------------------------


def summary(stdout: str) -> str:
    lines = stdout.splitlines()
    for i, line in enumerate(lines):
        if re.match(r"=+ citecheck =+$", line):
            return "\n".join(lines[i + 1 :])
    return stdout[-3000:]


def check() -> None:
    env = clean_env()
    ok = run_pytest(SUITE, env=env)
    print(f"replay {SUITE.name}: exit {ok.returncode}\n{summary(ok.stdout)}")
    failing = run_pytest(FAILING, env=env)
    print(f"replay {FAILING.name}: exit {failing.returncode}\n{summary(failing.stdout)}")
    if ok.returncode != 0:
        sys.exit(f"{SUITE.name} must pass in replay:\n{ok.stdout}")
    if failing.returncode != 1 or "citecheck gate FAILED" not in failing.stdout:
        sys.exit(f"{FAILING.name} must fail the gate in replay:\n{failing.stdout}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="only replay and check")
    parser.add_argument(
        "--quoted-answers-only",
        action="store_true",
        help="record only the example answers' claims whose citations carry a quote",
    )
    parser.add_argument(
        "--import-wice",
        type=Path,
        metavar="WICE_DEV.jsonl",
        help="(re)write the WiCE pages in example_suite/pages/ from the dataset, then stop",
    )
    parser.add_argument(
        "--service",
        action="store_true",
        help="record only the /verify examples of docs/service.md into "
        "example_suite/service/ and write their replies into the document",
    )
    parser.add_argument(
        "--only",
        nargs="+",
        metavar="NODEID",
        help="record only these claims (example_suite/FILE::ID), then check",
    )
    args = parser.parse_args()
    if args.only:
        record_only(args.only)
        check()
        return
    if args.service:
        record_service()
        return
    if args.import_wice:
        import_wice(args.import_wice)
        return
    if not args.check:
        record(quoted_answers_only=args.quoted_answers_only)
    check()


if __name__ == "__main__":
    main()
