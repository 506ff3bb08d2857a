"""The native-quotes experiment, rebuilt: real Anthropic responses, pages that hold what
they quote, an honest judge, loopback doubles.

Real recorded Anthropic responses (``tests/data/native/anthropic_messages``; the bench
adds recorded streams, assembled from their events) are imported as a user would
(``import_response``). Each cited URL is served a page that holds the full text of every
quote cited from it, the way a crawled page carries it: markdown, the text in
paragraphs with emphasis and links, list items, table rows and blockquotes, apostrophes
and ampersands as entities, navigation links around it. Where the provider cut a quote
(Anthropic's ``...``, mid-word included) the page has the rest of the sentence; where it
elided, the page has the skipped words.

The judge double is honest: it answers ``supported`` quoting the sentence of the
passages it was shown (as a reader sees them) that shares most words with the claim,
``not_found`` when none shares enough. Nothing is hard-coded about the outcome.

Used by ``tests/integration/test_native_quotes.py`` (a subset) and
``bench/native_quotes.py`` (all responses, the rule before and after, one run).
"""

from __future__ import annotations

import html
import json
import re
from collections import defaultdict
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_citecheck.claims.importers import import_response
from pytest_citecheck.claims.importers.answer import ResponseImportError
from pytest_citecheck.claims.models import Citation, Claim
from pytest_citecheck.claims.results import Verdict
from pytest_citecheck.stages.rendered import ELLIPSIS, render
from tests.doubles.crawlbase import CrawlbaseDouble, Page
from tests.doubles.llm import JudgeCall, LLMDouble, Scripted, verdict

REPO = Path(__file__).resolve().parents[1]
RECORDED = REPO / "tests" / "data" / "native" / "anthropic_messages"
TOKENS = {"normal": "native-normal-token-not-a-secret", "javascript": "native-js-not-a-secret"}
KEY = "sk-native-quotes-key-not-a-secret"

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
# Characters markdown would read as syntax inside a line: escaped, as a page's
# markdown escapes them, so the page renders to exactly the text.
_SPECIAL = re.compile(r"([\\`*_\[\]<>|#!~])")
_FILLER = (
    "Readers also asked about the schedule for the rest of the week.",
    "Updates follow as the story develops, with more details from the agencies.",
    "The figures come from the official release published this morning.",
)
_NAV = "[Home](https://example.com/) · [News](https://example.com/news) · [Contact](https://example.com/contact)"


# -- the responses ---------------------------------------------------------------------------


def assemble_stream(events: list[dict[str, Any]]) -> dict[str, Any]:
    """An Anthropic message from its saved stream events (text and citations deltas)."""
    message: dict[str, Any] = {}
    blocks: dict[int, dict[str, Any]] = {}
    for event in events:
        kind = event.get("type")
        if kind == "message_start":
            message = dict(event["message"])
        elif kind == "content_block_start":
            block = dict(event["content_block"])
            if block.get("type") == "text":
                block["citations"] = list(block.get("citations") or [])
            blocks[event["index"]] = block
        elif kind == "content_block_delta":
            block, delta = blocks[event["index"]], event["delta"]
            if delta.get("type") == "text_delta":
                block["text"] = block.get("text", "") + delta["text"]
            elif delta.get("type") == "citations_delta":
                block.setdefault("citations", []).append(delta["citation"])
        elif kind == "message_delta":
            message.update(event.get("delta") or {})
    message["content"] = [blocks[i] for i in sorted(blocks)]
    for block in message["content"]:
        if block.get("type") == "text" and not block.get("citations"):
            block.pop("citations", None)
    return message


def load(paths: Iterable[Path]) -> list[tuple[str, dict[str, Any]]]:
    """(name, message body) of each saved response; a stream is assembled first."""
    out = []
    for path in sorted(paths):
        data = json.loads(path.read_text(encoding="utf-8"))
        body = assemble_stream(data) if isinstance(data, list) else data
        out.append((path.name.split(".")[0], body))
    return out


@dataclass
class Experiment:
    """The claims of the imported responses that cite URLs with quotes, and the quotes
    each URL was cited with (every one, not only the claim's first)."""

    claims: list[Claim]
    quotes: dict[str, list[str]]
    skipped: list[str]

    @property
    def citations(self) -> list[Citation]:
        return [c for claim in self.claims for c in claim.citations]


def experiment(responses: Iterable[tuple[str, dict[str, Any]]]) -> Experiment:
    claims: list[Claim] = []
    quotes: dict[str, list[str]] = defaultdict(list)
    skipped: list[str] = []
    for name, body in responses:
        try:
            answer = import_response(body, answer_id=name, format="anthropic")
        except ResponseImportError as exc:
            skipped.append(f"{name}: {exc.problem}")
            continue
        for imported in answer.claims:
            for source in imported.sources:
                if source.url and source.quote and source.quote not in quotes[source.url]:
                    quotes[source.url].append(source.quote)
            cited = [c for c in imported.claim.citations if c.url and c.quote]
            if cited:
                claims.append(imported.claim.model_copy(update={"citations": cited}))
    return Experiment(claims, dict(quotes), skipped)


# -- the pages -------------------------------------------------------------------------------


def full_text(quote: str) -> str:
    """The source text a provider quote was cut from: entities decoded, each elision
    filled with the words skipped, a word cut at an end completed."""
    pieces = ELLIPSIS.split(html.unescape(quote))
    leading = len(pieces) > 1 and not pieces[0].strip()
    trailing = len(pieces) > 1 and not pieces[-1].strip()
    inner = pieces[1 if leading else 0 : -1 if trailing else None]
    text = ""
    for j, piece in enumerate(inner):
        glued_start = piece[:1].isalnum()  # cut inside a word
        if j == 0 and leading:
            text = "Up" if glued_start else "Before that,"
        elif j > 0:
            text += "ing" if text[-1:].isalnum() else ""
            text += " the forecast said earlier " + ("re" if glued_start else "")
        text += piece
    if trailing:
        text += "ing and more." if text[-1:].isalnum() else " and more."
    return " ".join(text.split())


def _escape(text: str, entities: bool = True) -> str:
    text = _SPECIAL.sub(r"\\\1", text)
    return text.replace("&", "&amp;").replace("'", "&#39;") if entities else text


def _marked(text: str) -> str:
    """One line of markdown that renders to ``text``: some words bold or linked, the
    apostrophes as entities."""
    words = [_escape(w) for w in text.split(" ")]
    for i in range(1, len(words), 11):
        if words[i] and not words[i].endswith("\\"):
            words[i] = f"**{words[i]}**"
    for i in range(5, len(words), 13):
        if words[i] and "*" not in words[i]:
            words[i] = f"[{words[i]}](https://example.com/topic/{i})"
    return " ".join(words)


def page_markdown(quotes: list[str]) -> str:
    """A page holding the full text of each quote, each in a block of another kind:
    a plain paragraph, one with emphasis, links and entities, a list item, a table row,
    a blockquote."""
    blocks = ["# The page", _NAV]
    for k, quote in enumerate(quotes):
        text = full_text(quote)
        blocks.append(_FILLER[k % len(_FILLER)])
        style = k % 5
        if style == 0:
            blocks.append("Update: " + _escape(text, entities=False))
        elif style == 1:
            blocks.append("Update: " + _marked(text))
        elif style == 2:
            blocks.append("- Update: " + _escape(text, entities=False) + "\n- " + _FILLER[0])
        elif style == 3:
            words = text.split(" ")
            half = max(1, len(words) // 2)
            left, right = " ".join(words[:half]), " ".join(words[half:])
            blocks.append(
                "| Item | Detail |\n|---|---|\n"
                f"| Update: {_escape(left)} | {_escape(right)} |\n| Next | {_FILLER[1]} |"
            )
        else:
            blocks.append("> Update: " + _marked(text))
    blocks.append(_NAV)
    return "\n\n".join(blocks) + "\n"


def changed_page() -> str:
    """A page that no longer holds what was quoted (it changed since the answer)."""
    return "\n\n".join(["# The page", _NAV, *_FILLER, _NAV]) + "\n"


# -- the judge -------------------------------------------------------------------------------


def _words(text: str) -> set[str]:
    return {w.casefold() for w in _WORD.findall(text) if len(w) > 2}


def honest_judge(call: JudgeCall) -> Scripted:
    """``supported`` with the sentence of the passages shown (as a reader sees them) that
    shares most words with the claim; ``not_found`` when none shares a third of them."""
    claim = _words(call.claim or "")
    best, score = None, 0.0
    for passage in call.passages:
        for sentence in _SENTENCE_END.split(render(passage).text):
            shared = len(claim & _words(sentence)) / max(1, len(claim))
            if shared > score:
                best, score = sentence, shared
    if best is None or score < 1 / 3:
        return verdict("not_found", None, 0.8)
    return verdict("supported", best[:400].rsplit(" ", 1)[0] if len(best) > 400 else best, 0.9)


@contextmanager
def served(exp: Experiment, stale: bool = False) -> Iterator[tuple[CrawlbaseDouble, LLMDouble]]:
    """The doubles: every cited URL served its page (``stale``: one that changed)."""
    with (
        CrawlbaseDouble(tokens=TOKENS) as api,
        LLMDouble(api_key=KEY, responder=honest_judge) as llm,
    ):
        for url, quotes in exp.quotes.items():
            markdown = changed_page() if stale else page_markdown(quotes)
            api.add(url, Page(markdown=markdown))
        yield api, llm


# -- running it --------------------------------------------------------------------------------


def verify(claims: list[Claim], api: CrawlbaseDouble, llm: LLMDouble, root: Path) -> list[Verdict]:
    """Every claim verified against the doubles (recorded under ``root``), its verdicts."""
    from pytest_citecheck.engine.core import Engine
    from pytest_citecheck.engine.settings import EngineSettings, StageHooks
    from pytest_citecheck.plugin.terms import PLUGIN_TERMS
    from pytest_citecheck.recording.recorder import cassette_path
    from tests.doubles import recording_environ
    from tests.doubles.ranking import WordOverlap

    environ = recording_environ(api.base_url, llm.base_url("openai"), TOKENS, KEY)
    settings = EngineSettings(record_mode="all", terms=PLUGIN_TERMS)
    with Engine.from_settings(settings, StageHooks(make_ranker=WordOverlap), environ=environ) as e:
        results = e.verify_claims_sync(
            claims, cassette_for=lambda c: cassette_path(root / "citecheck_native.yaml", c.id)
        )
    return [v for result in results for v in result.verdicts]


def as_if_written_by_the_user(claims: list[Claim]) -> list[Claim]:
    """The claims with every quote taken for one the model or a person wrote."""
    return [
        c.model_copy(
            update={"citations": [x.model_copy(update={"quote_by": "user"}) for x in c.citations]}
        )
        for c in claims
    ]


@contextmanager
def exact_markdown_matching() -> Iterator[None]:
    """Quotes looked for in the page's markdown only, normalised, with no ellipsis read:
    how every quote check matched before pages were read as a reader sees them."""
    from pytest_citecheck.stages.guard import QuoteIndex
    from pytest_citecheck.stages.text import normalise

    def markdown_only(
        self: QuoteIndex, quote: str, provider: bool = False
    ) -> list[tuple[int, int]]:
        return list(self.occurrences(normalise(quote)))

    original = QuoteIndex.find
    QuoteIndex.find = markdown_only  # type: ignore[method-assign]
    try:
        yield
    finally:
        QuoteIndex.find = original  # type: ignore[method-assign]
