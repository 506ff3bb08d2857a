"""What an importer returns: one answer, its sentences, and the claims the citations make.

An :class:`ImportedAnswer` keeps every sentence of the answer, cited or not, each with
the id of the claim made from it (``None`` when nothing cites it), so answer-level
figures (cited and uncited sentences) and reports that colour an answer by its claims'
labels are built on it without re-reading the response.

Claim ids come from the answer id and the sentence's own text (:func:`claim_id`), not
its position: editing one sentence renames only that sentence's claim, and every other
claim keeps its id and so its cassette.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Callable, Sequence
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict

from pytest_citecheck.claims.fragments import text_fragment_quote
from pytest_citecheck.claims.models import (
    ID_MAX_LENGTH,
    AnswerOutline,
    Citation,
    Claim,
    OutlineSentence,
    QuoteBy,
    kind,
    suggest_id,
)
from pytest_citecheck.core.errors import CitecheckError
from pytest_citecheck.core.text import shown, terminal_safe

T = TypeVar("T")

__all__ = [
    "AnswerSentence",
    "CitedSource",
    "ImportedAnswer",
    "ImportedClaim",
    "QuoteBy",
    "Reader",
    "ResponseImportError",
    "UncitedSourcesWarning",
    "claim_id",
    "either_case",
    "provider_quote",
]


class ResponseImportError(CitecheckError, ValueError):
    """A response cannot be turned into claims: which response, where in it, the fix.

    ``where`` is a path into the response (``output[1].content[0].annotations[2]``) or
    a place in the answer text (``content line 3, column 14``).
    """

    def __init__(self, response: str, where: str, problem: str, fix: str) -> None:
        # A response's own text in a message (a hostile URL's ESC, BEL, NUL) is named,
        # never printed raw: every part, however the message was put together.
        response, where, problem, fix = (shown(part) for part in (response, where, problem, fix))
        # Everything in args so the error pickles (pytest-xdist workers).
        super().__init__(response, where, problem, fix)
        self.response = response
        self.where = where
        self.problem = problem
        self.fix = fix

    def __str__(self) -> str:
        place = f"{self.response}: {self.where}" if self.where else self.response
        return f"{place}: {self.problem}\n  fix: {self.fix}"


def guarded(label: str, what: str, fixes: tuple[str, str], run: Callable[[], T]) -> T:
    """``run()`` of one ``what`` (a response, a conversation) named ``label``: any
    surprise is its :class:`ResponseImportError`, so one input's surprise never costs
    the others. ``fixes``: the fix when it is nested too deeply, and when it fails."""
    nested, failed = fixes
    try:
        return run()
    except ResponseImportError:
        raise
    except RecursionError:
        raise ResponseImportError(label, "", f"the {what} is nested too deeply", nested) from None
    except Exception as exc:
        raise ResponseImportError(
            label,
            "",
            f"the {what} cannot be imported ({type(exc).__name__}: {terminal_safe(str(exc))})",
            failed,
        ) from exc


def provider_quote(quote: str | None) -> QuoteBy | None:
    """Who wrote a quote the provider extracted from what it read: the provider."""
    return "provider" if quote is not None else None


class UncitedSourcesWarning(UserWarning):
    """A response read with no sentence cited although it carries sources."""


class CitedSource(BaseModel):
    """One citation as the provider gave it, with where it sits in the response.

    ``url`` is the URL as cited (tracking parameters such as ``utm_source`` removed);
    ``resolved_url`` is where a redirect link (Gemini's grounding redirects) leads,
    filled in once it has been followed (the importers never touch the network).

    ``quote_by`` says who wrote ``quote``: ``provider`` when the API extracted it from
    what it read (Anthropic ``cited_text``, Bedrock ``sourceContent``, Gemini
    ``retrievedContext.text``, xAI chunk content): the model cannot have invented it;
    ``model`` for a quote the model wrote into its answer. ``url_by`` says who wrote
    ``url``, and so the quote its ``#:~:text=`` fragment holds: ``provider`` for a
    native citation annotation of the API response, ``model`` for a link the model
    printed in its answer text (markdown, a repeated link). ``retrieved_at`` is when the
    provider fetched the page (Anthropic web fetch); ``note`` what the provider said
    about the page (Gemini url_context: paywalled, unreachable); ``paywall`` who said
    the page is behind a paywall (Gemini's ``URL_RETRIEVAL_STATUS_PAYWALL``): it
    becomes the citation's ``paywall``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    url: str | None = None
    document: str | None = None
    quote: str | None = None
    quote_by: QuoteBy | None = None
    url_by: Literal["provider", "model"] = "provider"
    title: str | None = None
    resolved_url: str | None = None
    retrieved_at: str | None = None
    note: str | None = None
    paywall: str | None = None
    where: str = ""
    # The 1-based page of a PDF the provider says the quote is on.
    page: int | None = None

    def citation(self) -> Citation:
        fields: dict[str, Any] = {"url": self.url, "document": self.document, "quote": self.quote}
        if self.page is not None:
            fields["page"] = self.page
        if self.paywall is not None and self.url is not None:
            fields["paywall"] = self.paywall
        if self.quote is not None:
            # A quote with no provider behind it was taken from the answer's own text.
            fields["quote_by"] = self.quote_by or "model"
        elif self.url is not None and text_fragment_quote(self.url) is not None:
            # The URL's text fragment is the quote: written by whoever wrote the URL.
            fields["quote_by"] = self.url_by
        return Citation(**fields)


class AnswerSentence(BaseModel):
    """One sentence (or list item) of the answer; ``start``/``end`` index its ``text``."""

    model_config = ConfigDict(frozen=True)

    text: str
    claim_id: str | None
    start: int
    end: int


class ImportedClaim(BaseModel):
    """A claim made from a cited sentence, with every provider citation behind it."""

    claim: Claim
    # In response order; several may share one URL (one claim citation each URL).
    sources: list[CitedSource]


class ImportedAnswer(BaseModel):
    """One response, imported."""

    id: str
    format: str
    # The provider's own id for the response (``resp_...``, ``msg_...``), if it has one.
    response_id: str | None = None
    # The answer text with citation markers removed; sentences point into it.
    text: str
    sentences: list[AnswerSentence]
    claims: list[ImportedClaim]
    # Sources the response lists without tying them to a sentence (a trailing list of
    # links, Perplexity sources no marker points at, annotations without a position).
    unattached: list[CitedSource] = []
    # Facts a user should know, e.g. "the response has no grounding metadata".
    notes: list[str] = []
    # What may be wrong with the import itself: sources the response carries that no
    # sentence got (printed as warnings, never silent).
    warnings: list[str] = []
    # A turn of a conversation (:mod:`~pytest_citecheck.claims.importers.conversation`):
    # the conversation's id and the turn's number; None for a single response.
    conversation: str | None = None
    turn: int | None = None
    # An answer read from a trace (:mod:`~pytest_citecheck.claims.importers.otel`): the
    # hex trace and span ids of the span that produced it.
    trace_id: str | None = None
    span_id: str | None = None

    @property
    def claim_list(self) -> list[Claim]:
        return [c.claim for c in self.claims]

    @property
    def uncited(self) -> list[AnswerSentence]:
        return [s for s in self.sentences if s.claim_id is None]

    def outline(self, origin: str = "") -> AnswerOutline:
        """What the claims made from this answer carry into their results."""
        return AnswerOutline(
            id=self.id,
            format=self.format,
            origin=origin,
            sentences=[OutlineSentence(text=s.text, claim_id=s.claim_id) for s in self.sentences],
            conversation=self.conversation,
            turn=self.turn,
            response_id=self.response_id,
            trace_id=self.trace_id,
            span_id=self.span_id,
        )


# -- claim ids ------------------------------------------------------------------------------

_ANSWER_PART = 40
_WORDS_PART = 36
_HASH_CHARS = 8


def normalise_sentence(text: str) -> str:
    """What the id hashes: case, width and spacing do not count."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def claim_id(answer_id: str, sentence: str) -> str:
    """``<answer>-<first words>-<hash of the sentence>``: stable under edits elsewhere.

    Satisfies the claim-file id rules (letters, digits, ``._-``; at most
    :data:`~pytest_citecheck.claims.models.ID_MAX_LENGTH` characters; no Windows device
    name, since the answer part never contains a dot).
    """
    normal = normalise_sentence(sentence)
    digest = hashlib.sha256(normal.encode("utf-8")).hexdigest()[:_HASH_CHARS]
    ascii_text = unicodedata.normalize("NFKD", normal).encode("ascii", "ignore").decode()
    words = re.findall(r"[a-z0-9]+", ascii_text)
    slug = "-".join(words[:5])[:_WORDS_PART].strip("-")
    answer = suggest_id(answer_id).replace(".", "-")[:_ANSWER_PART].strip("-_") or "answer"
    out = "-".join(part for part in (answer, slug, digest) if part)
    assert len(out) <= ID_MAX_LENGTH
    return out


# -- reading untrusted JSON -----------------------------------------------------------------


def either_case(mapping: dict[str, Any], name: str) -> Any:
    """``name`` (camelCase, as REST and protobuf JSON write it) or its snake_case twin
    (as SDK ``model_dump()`` and ``preserving_proto_field_name`` write it)."""
    if name in mapping:
        return mapping[name]
    return mapping.get(re.sub(r"(?<!^)([A-Z])", r"_\1", name).lower())


class Reader:
    """Reads one response's JSON with its path kept, so every problem names its place."""

    def __init__(self, response: str) -> None:
        self.response = response

    def fail(self, where: str, problem: str, fix: str) -> ResponseImportError:
        return ResponseImportError(self.response, where, problem, fix)

    def mapping(self, value: Any, where: str, fix: str = "") -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(
                where,
                f"expected an object, found {kind(value)}",
                fix or "pass the response body exactly as the API returned it",
            )
        return value

    def items(self, value: Any, where: str) -> list[Any]:
        if not isinstance(value, list):
            raise self.fail(
                where,
                f"expected a list, found {kind(value)}",
                "pass the response body exactly as the API returned it",
            )
        return value

    def optional_items(self, value: Any, where: str) -> list[Any]:
        """A list that may be absent (``null`` or no key): none. Any other value that is no
        list is refused: ``{}`` is not "no items"."""
        return [] if value is None else self.items(value, where)

    def text(self, value: Any, where: str) -> str:
        if not isinstance(value, str):
            raise self.fail(
                where,
                f"expected text, found {kind(value)}",
                "pass the response body exactly as the API returned it",
            )
        return value

    def optional_text(self, value: Any, where: str) -> str | None:
        return None if value is None else self.text(value, where)

    def document(
        self,
        documents: Sequence[str] | None,
        index: int | None,
        title: str | None,
        where: str,
        field: str,
        kind: str,
    ) -> str:
        """The request document a citation names by its place (``where.field``): the
        path given for it, else the provider's title for it."""
        if documents is not None:
            if index is None or index >= len(documents):
                raise self.fail(
                    f"{where}.{field}",
                    f"{field} {index} is not among the {len(documents)} document(s) given",
                    "list every document of the request, earlier turns included, in order",
                )
            return documents[index]
        if title and title.strip():
            return title.strip()
        raise self.fail(
            where,
            f"the {kind} citation names document {index} but no title",
            "pass the request's documents in order (documents=[...], "
            "or `documents:` in the claim file's answer)",
        )

    def index(self, value: Any, where: str) -> int | None:
        """An offset or index: a non-negative integer, or absent."""
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(
                where,
                f"expected a whole number, found {kind(value)}",
                "pass the response body exactly as the API returned it",
            )
        if value < 0:
            raise self.fail(
                where, f"the offset {value} is negative", "offsets count from 0 in the text"
            )
        return value
