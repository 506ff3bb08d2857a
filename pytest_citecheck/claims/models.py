"""The claim schema: claims, their citations and the rules an id, a URL or a text must keep.

Everything here is plain data (pydantic models) so it crosses process boundaries
(pytest-xdist workers, the batch CLI, the service) as JSON without loss.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from pytest_citecheck.claims.fragments import text_fragment_quote
from pytest_citecheck.claims.labels import LABEL_ORDER, Label
from pytest_citecheck.core.defaults import DEFAULT_MAX_CLAIM_CHARS
from pytest_citecheck.core.text import TEXT_FIX, text_problem

# -- the claim schema ------------------------------------------------------
#
# One schema for claim files, the ``citecheck`` fixture, the batch CLI and the
# service: what a claim or a citation may be is decided here, by the validators.
# Each rule raises :func:`_invalid` with the problem and the fix; the loader maps the
# error's location to a file line (``pytest_citecheck.claims.loader.parse_claim`` turns a
# ``ValidationError`` into per-field messages for everyone else).

# What a claim as a whole can be expected to be: a fabricated citation makes its
# claim contradicted, and `error` is what a broken run gets.
# What a claim's ``expect:`` may name (a claim label; never fabricated or error).
EXPECTABLE_LABELS = tuple(
    label.value for label in LABEL_ORDER if label not in (Label.FABRICATED, Label.ERROR)
)

ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")

ID_MAX_LENGTH = 100

JUDGE_PATTERN = re.compile(r"[A-Za-z][A-Za-z0-9_-]*:\S+")

# Windows refuses these as file names whatever the extension (con.yaml included).
_WINDOWS_DEVICE_NAMES = frozenset(
    ["con", "prn", "aux", "nul"]
    + [f"com{i}" for i in range(1, 10)]
    + [f"lpt{i}" for i in range(1, 10)]
)

# Fields the loader fills in; user input (a claim file, a fixture call, an HTTP
# body) may not set them (``loader.parse_claim`` refuses them as unknown keys).
INTERNAL_FIELDS = {"claim": ("judge", "judges", "line", "answer"), "citation": ("document_path",)}


def _invalid(problem: str, fix: str) -> PydanticCustomError:
    """A schema violation: ``problem`` is the message, ``fix`` travels in the context."""
    return PydanticCustomError("citecheck", "{problem}", {"problem": problem, "fix": fix})


# The validation context key that sets the claim length cap (``parse_claim``,
# the loader); absent, DEFAULT_MAX_CLAIM_CHARS applies; 0 or None lifts it.
MAX_CLAIM_CHARS = "max_claim_chars"

# ... and the key of the front end's Terms, which name the option in the fix.
TERMS = "terms"


def _max_claim_chars_fix(context: Any) -> str:
    terms = context.get(TERMS) if isinstance(context, dict) else None
    options = getattr(terms, "options", None) or {}
    option = options.get("max_claim_chars") or "the claim length cap"
    return (
        "cite the sentence the LLM wrote, or split a long answer into several claims "
        f"(or raise {option}; 0 lifts the cap)"
    )


# How to fix an optional text field of a citation written empty.
_EMPTY_FIX = {
    "quote": "give the quoted text or remove 'quote'",
    "section": "give the section, e.g. 4.1.4 or remove 'section'",
    "paywall": "say who reported the paywall (as `citecheck import` writes it), or remove "
    "'paywall' to crawl the page",
}


def check_text(name: str, value: str) -> str:
    """Refuse lone surrogates and control characters (but tab, newline, CR) in ``value``."""
    problem = text_problem(value)
    if problem is not None:
        raise _invalid(f"{name} is not usable text: {problem}", TEXT_FIX)
    return value


def max_claim_chars(context: Any) -> int | None:
    if isinstance(context, dict) and MAX_CLAIM_CHARS in context:
        cap = context[MAX_CLAIM_CHARS]
        return int(cap) if cap else None
    return DEFAULT_MAX_CLAIM_CHARS


def check_judge(judge: str) -> str:
    """``provider:model``, as a claim file's ``judge:`` or an HTTP body's judge."""
    judge = check_text("judge", judge.strip())
    if not JUDGE_PATTERN.fullmatch(judge):
        raise _invalid(
            f"judge {judge!r} is not of the form provider:model",
            "write e.g. `judge: openai:gpt-4o-mini` or `judge: ollama:llama3.1:8b`",
        )
    return judge


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")

_WHITESPACE = re.compile(r"\s")


def url_problem(url: str) -> str | None:
    """Why ``url`` cannot be fetched, or None."""
    if not url:
        return "it is empty"
    surrogate = _LONE_SURROGATE.search(url)
    if surrogate is not None:
        return (
            f"it holds a lone surrogate U+{ord(surrogate.group()):04X} (half of a surrogate "
            "pair: the text was cut inside a character)"
        )
    if not url.isprintable() or _WHITESPACE.search(url):
        return "it contains whitespace or control characters"
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 -- raises ValueError on a malformed port
    except ValueError as exc:
        return str(exc)
    if parts.scheme.lower() not in ("http", "https"):
        if not parts.scheme:
            return "it has no scheme (http:// or https://)"
        return f"only http and https URLs can be fetched, not {parts.scheme}:"
    if not parts.hostname:
        return "it has no host"
    return None


def _url_fix(url: str) -> str:
    spaced = any(ch.isspace() for ch in url)
    parts = None if spaced else urlsplit(url)
    if parts is not None and parts.scheme.lower() == "file":
        return "cite a local file with `document: <path relative to this claim file>` instead"
    if parts is not None and not parts.scheme and url and "." in url.split("/", 1)[0]:
        return f"write the full URL, e.g. 'https://{url}'"
    if spaced:
        return "remove the spaces, or percent-encode them as %20"
    return "cite an http(s) URL with a host, e.g. https://example.com/page"


def suggest_id(claim_id: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", claim_id).strip("-._")
    return slug[:ID_MAX_LENGTH] or "claim-1"


# Who wrote a citation's quote. A provider's quote (Anthropic ``cited_text``, the
# ``#:~:text=`` fragment of a URL the provider's API produced...) was extracted by the
# provider from what it read: the model could not invent it, so one missing from today's
# page says the page changed, not that the answer lied. A quote the model or a person
# wrote is fabricated when absent; a URL's fragment is a quote of whoever wrote the URL
# (a link the model printed: the model; a URL in a claim file: the person).
QuoteBy = Literal["provider", "model", "user"]

QUOTE_BY_VALUES: tuple[QuoteBy, ...] = ("provider", "model", "user")


class Citation(BaseModel):
    """One source an LLM gave for a claim: a web URL or a local document.

    A bare string is a URL. Exactly one of ``url``/``document``. ``quote`` is the text
    the LLM (or its provider: Anthropic's ``cited_text``) says it read in the source,
    on either kind; ``quote_by`` says who wrote it (:data:`QuoteBy`: a claim file's
    ``quote:`` is the user's unless it says otherwise). Without ``quote``, a URL's text
    fragment is the quote (:meth:`own_quote`) and ``quote_by`` says who wrote the URL
    (the user's unless it says otherwise); ``section`` only with ``document`` (a web
    page has no sections).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    url: str | None = None
    # The document path as the user wrote it (relative to the claim file).
    document: str | None = None
    quote: str | None = None
    quote_by: QuoteBy = "user"
    section: str | None = None
    # The page of a PDF the quote is on (1-based: a claim file's ``page:``, Anthropic's
    # ``page_location``, Bedrock's ``documentPage``): the quote is looked for there first.
    page: int | None = Field(default=None, ge=1)
    # Who said the page is behind a paywall (a provider's own retrieval status, written
    # by `citecheck import`): the page is not crawled, the verdict is `paywalled`
    # (stages/paywall.py). Only with `url`.
    paywall: str | None = None
    # Whether a tool result of the answer's conversation returned this URL (search
    # results, fetched pages, the provider's source lists): False marks the verdict
    # ``url_not_retrieved`` for review, found without a request; None: not known (no
    # conversation, or one whose searches do not show their results).
    retrieved: bool | None = None
    # Where the document really is; resolved by the loader, never reported.
    document_path: Path | None = Field(default=None, exclude=True, repr=False)

    @property
    def target(self) -> str:
        """What the citation points at, as the user wrote it."""
        return self.url or self.document or ""

    def own_quote(self) -> tuple[str | None, QuoteBy]:
        """The quote the citation brings and who wrote it: its ``quote``, else the text
        fragment of its URL, a quote of whoever wrote the URL (``quote_by``: the
        provider only where its API produced the URL, a native citation annotation)."""
        if self.quote is not None or self.url is None:
            return self.quote, self.quote_by
        return text_fragment_quote(self.url), self.quote_by

    @model_validator(mode="before")
    @classmethod
    def _shape(cls, data: Any) -> Any:
        if data is None:
            raise _invalid(
                "empty citation",
                "write a URL (`- https://...`) or `- document: <path>`, or remove the dash",
            )
        if isinstance(data, str):
            return {"url": data}
        if (
            isinstance(data, dict)
            and data.get("quote") is None
            and "quote_by" in data
            and not (isinstance(data.get("url"), str) and text_fragment_quote(data["url"]))
        ):
            # Who wrote a quote that is not there says nothing: one citation, one form.
            # (A URL's text fragment is a quote: quote_by says who wrote it.)
            return {key: value for key, value in data.items() if key != "quote_by"}
        if not isinstance(data, dict | Citation):
            raise _invalid(
                f"a citation must be a URL or a mapping with url/document, not {kind(data)}",
                "write `- https://...`, `- url: https://...` or `- document: <path>`",
            )
        return data

    @field_validator("url")
    @classmethod
    def _url(cls, url: str | None) -> str | None:
        if url is None:
            return None
        url = url.strip()
        problem = url_problem(url)
        if problem is not None:
            raise _invalid(f"{url!r} is not a usable URL: {problem}", _url_fix(url))
        return url

    @field_validator("document")
    @classmethod
    def _document(cls, document: str | None) -> str | None:
        if document is None:
            return None
        document = document.strip()
        if not document or not document.isprintable():
            raise _invalid(
                "`document` is empty" if not document else "`document` has control characters",
                "give the path of the source file, relative to this claim file",
            )
        return document

    @field_validator("quote", "section", "paywall")
    @classmethod
    def _optional_text(cls, value: str | None, info: ValidationInfo) -> str | None:
        """An optional text field: null is none; stripped, it must be usable, non-empty text."""
        name = str(info.field_name)
        if value is None:  # null means "no quote" (generators write it)
            return None
        if name == "section" and info.data.get("url") is not None:
            raise _invalid(
                "'section' is only read for `document` citations; a web page is read "
                "through the passages retrieval finds on it",
                "remove 'section' from this citation (a `quote` may stay)",
            )
        value = check_text(repr(name), value.strip())
        if not value:
            raise _invalid(f"{name!r} is empty", _EMPTY_FIX[name])
        return value

    @field_validator("quote_by", mode="before")
    @classmethod
    def _quote_by(cls, value: Any) -> Any:
        raw = value.strip().lower() if isinstance(value, str) else value
        if raw in QUOTE_BY_VALUES:
            return raw
        raise _invalid(
            f"quote_by {value!r} is not one of {', '.join(QUOTE_BY_VALUES)}",
            "write `quote_by: provider` for a quote the provider extracted from the page "
            "(Anthropic cited_text), `quote_by: model` for one the model wrote, or leave it "
            "out (a quote you wrote yourself)",
        )

    @model_validator(mode="after")
    def _one_target(self) -> Citation:
        if self.url is not None and self.document is not None:
            raise _invalid(
                "a citation has both `url` and `document`",
                "keep one: split it into two citations if the LLM cited both",
            )
        if self.url is None and self.document is None:
            raise _invalid(
                "a citation has neither `url` nor `document`",
                "add `url: https://...` or `document: <path relative to this file>`",
            )
        if self.paywall is not None and self.url is None:
            raise _invalid(
                "'paywall' is only read for `url` citations: a local document has no paywall",
                "remove 'paywall' from this citation",
            )
        if self.retrieved is not None and self.url is None:
            raise _invalid(
                "'retrieved' is only read for `url` citations (whether a tool of the "
                "conversation returned the URL)",
                "remove 'retrieved' from this citation",
            )
        return self


class OutlineSentence(BaseModel):
    """One sentence of an answer and the id of the claim made from it (None: uncited)."""

    model_config = ConfigDict(frozen=True)

    text: str
    claim_id: str | None = None


class AnswerOutline(BaseModel):
    """An imported answer as the reports show it: every sentence, cited or not.

    Claims made from an answer carry it (``Claim.answer``, ``ClaimResult.answer``), so
    the answer-level figures (:func:`pytest_citecheck.engine.aggregate.answer_figures`)
    come from the results wherever the claims ran (an xdist worker included).
    ``origin`` tells answers with the same id apart: the claim file or the test.
    """

    model_config = ConfigDict(frozen=True)

    id: str
    format: str | None = None
    origin: str = ""
    sentences: list[OutlineSentence] = Field(default_factory=list)
    # A turn of a conversation: the conversation's id and the turn's number (1-based,
    # counting the assistant's turns); None for a single response.
    conversation: str | None = None
    turn: int | None = None
    # The response the answer is (the API's id), and the span it came from when it was
    # read from a trace (hex trace and span ids): the OpenTelemetry export names the one
    # and parents its evaluation events to the other (reports/otel.py).
    response_id: str | None = None
    trace_id: str | None = None
    span_id: str | None = None

    @property
    def key(self) -> tuple[str, str]:
        return self.origin, self.id


class Claim(BaseModel):
    """A claim an LLM made, with the citations it gave for it."""

    model_config = ConfigDict(extra="forbid")

    id: str
    claim: str
    citations: list[Citation]
    expect: Label | None = None
    # File-level judge spec (``provider:model``); CLI and ini override it.
    judge: str | None = None
    # File-level judge panel (``judges:``, several specs); CLI and ini override it.
    judges: tuple[str, ...] | None = None
    # Where the claim starts in its file (1-based), for error messages.
    line: int | None = None
    # The imported answer the claim was made from (set by the loader and the fixture).
    answer: AnswerOutline | None = Field(default=None, exclude=True, repr=False)

    @field_validator("id", mode="before")
    @classmethod
    def _id(cls, value: Any) -> Any:
        if isinstance(value, int) and not isinstance(value, bool):
            value = str(value)  # JSONL batch records may number their ids
        if value is None:
            value = ""
        if not isinstance(value, str):
            return value  # the type check says what is wrong
        claim_id = value.strip()
        if not claim_id:
            raise _invalid(
                "claim id is empty",
                "give the claim a short unique id, e.g. `id: water-boiling-point`",
            )
        if len(claim_id) > ID_MAX_LENGTH:
            raise _invalid(
                f"claim id is {len(claim_id)} characters long (at most {ID_MAX_LENGTH})",
                f"shorten it, e.g. {claim_id[:40].rstrip('._-')!r}; ids become cassette "
                "file names and test ids",
            )
        if not ID_PATTERN.fullmatch(claim_id):
            raise _invalid(
                f"claim id {claim_id!r} cannot be used as a file name or test id",
                "use letters, digits, '.', '_' and '-', starting with a letter or digit, "
                f"e.g. {suggest_id(claim_id)!r}",
            )
        if claim_id.split(".", 1)[0].lower() in _WINDOWS_DEVICE_NAMES:
            raise _invalid(
                f"claim id {claim_id!r} is a reserved file name on Windows "
                "(its cassette could not be written there)",
                f"rename it, e.g. {claim_id + '-claim'!r}",
            )
        return claim_id

    @field_validator("claim", mode="before")
    @classmethod
    def _text(cls, value: Any, info: ValidationInfo) -> Any:
        if value is None or (isinstance(value, str) and not value.strip()):
            raise _invalid(
                "claim text is empty",
                "write the sentence the LLM claimed, e.g. `claim: Water boils at 100 °C.`",
            )
        if not isinstance(value, str):
            return value  # the type check says what is wrong
        text = check_text("claim text", value.strip())
        cap = max_claim_chars(info.context)
        if cap is not None and len(text) > cap:
            raise _invalid(
                f"claim text is {len(text):,} characters long (at most {cap:,})",
                _max_claim_chars_fix(info.context),
            )
        return text

    @field_validator("citations", mode="before")
    @classmethod
    def _citations(cls, value: Any) -> Any:
        if value is None:
            raise _invalid(
                "`citations:` has no value",
                "list the citations under it, or write `citations: []` if the LLM cited nothing",
            )
        if isinstance(value, str | dict):
            raise _invalid(
                f"`citations:` must be a list, not {kind(value)}",
                "write each citation as a list item: `- https://...` or `- document: <path>`",
            )
        return value

    @field_validator("expect", mode="before")
    @classmethod
    def _expect(cls, value: Any) -> Any:
        if isinstance(value, Label):
            value = value.value
        if not isinstance(value, str):
            return value  # the type check says what is wrong
        raw = value.strip()
        if raw in EXPECTABLE_LABELS:
            return Label(raw)
        if raw == Label.FABRICATED.value:
            raise _invalid(
                "expect 'fabricated' can never happen: a claim with a fabricated quote "
                "is contradicted as a whole",
                "write expect: contradicted",
            )
        import difflib

        close = difflib.get_close_matches(raw.replace(" ", "_").lower(), EXPECTABLE_LABELS, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise _invalid(
            f"expect {raw!r} is not a label{hint}", f"use one of: {', '.join(EXPECTABLE_LABELS)}"
        )

    @field_validator("judge")
    @classmethod
    def _judge(cls, value: str | None) -> str | None:
        return None if value is None else check_judge(value)

    @field_validator("judges")
    @classmethod
    def _judges(cls, value: tuple[str, ...] | None) -> tuple[str, ...] | None:
        return None if value is None else tuple(check_judge(v) for v in value)


def kind(value: object) -> str:
    """How a wrong value is named in a message: "a list", "the value 5"."""
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list | tuple):
        return "a list"
    if value is None:
        return "an empty value"
    text = repr(value)
    return f"the value {text[:40] + '...' if len(text) > 40 else text}"
