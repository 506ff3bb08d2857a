"""The domain: claims, citations, verdicts and claim results.

Everything here is plain data (pydantic models) so it crosses process boundaries
(pytest-xdist workers, the batch CLI, the service) as JSON without loss.
"""

from __future__ import annotations

import re
from enum import StrEnum
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    ValidationInfo,
    field_validator,
    model_serializer,
    model_validator,
)
from pydantic_core import PydanticCustomError

from pytest_citecheck.claims.fragments import text_fragment_quote
from pytest_citecheck.core.defaults import DEFAULT_MAX_CLAIM_CHARS
from pytest_citecheck.core.text import TEXT_FIX, text_problem


class Label(StrEnum):
    """What a citation (or a claim) turned out to be (docs/verification.md, "Labels")."""

    SUPPORTED = "supported"
    CONTRADICTED = "contradicted"
    NOT_FOUND = "not_found"
    UNREACHABLE = "unreachable"
    FABRICATED = "fabricated"
    # The run itself failed (judge down, unparseable reply, no recording).
    # Never counted as supported; always fails the session.
    ERROR = "error"


# The one order every report lists labels in (terminal, JSON totals, markdown, HTML).
LABEL_ORDER = (
    Label.SUPPORTED,
    Label.CONTRADICTED,
    Label.FABRICATED,
    Label.NOT_FOUND,
    Label.UNREACHABLE,
    Label.ERROR,
)
# The source is against the claim, or the quote was made up: a claim with one is
# contradicted, and the gate fails it unless contradicted citations are allowed.
BAD_LABELS = frozenset({Label.CONTRADICTED, Label.FABRICATED})


class Reason:
    """Reason strings that appear in verdicts and reports (stable: users grep for them)."""

    HTTP_404 = "http_404"
    HTTP_410 = "http_410"
    REDIRECTED_TO_HOMEPAGE = "redirected_to_homepage"
    SOFT_404 = "soft_404"
    # A bot challenge, captcha interstitial or an origin 401/403/429: not evidence
    # either way, and a person should look (the verdict carries the review flag).
    BLOCKED = "blocked"
    PDF_UNSUPPORTED = "pdf_unsupported"
    # The site answered with a server error (an origin 5xx, or a short "502 Bad
    # Gateway" page served with 200): not the page, and maybe not for long.
    ORIGIN_ERROR = "origin_error"
    EVIDENCE_QUOTE_NOT_IN_SOURCE = "evidence_quote_not_in_source"
    EVIDENCE_QUOTE_TOO_SHORT = "evidence_quote_too_short"
    QUOTE_NOT_IN_DOCUMENT = "quote_not_in_document"
    QUOTE_NOT_IN_PAGE = "quote_not_in_page"
    # A citation's own elided quote (not the provider's) whose pieces are in the source,
    # but an ellipsis skips a negation or a number the source has there ("The Eiffel
    # Tower is ... in Lyon" where the page says "is not in Lyon").
    QUOTE_ELISION_CHANGES_MEANING = "quote_elision_changes_meaning"
    # A provider's quote (Anthropic cited_text, a URL's text fragment) that the page
    # fetched today does not have: the judge read retrieval's passages instead. Not a
    # fabrication (the model cannot invent a provider's quote): a marker beside the label.
    PROVIDER_QUOTE_NOT_ON_PAGE = "provider_quote_not_on_page"
    SECTION_NOT_IN_DOCUMENT = "section_not_in_document"
    EMPTY_PAGE = "empty_page"
    CRAWL_FAILED = "crawl_failed"
    JUDGE_REFUSED = "judge_refused"
    JUDGE_TRUNCATED = "judge_truncated"
    JUDGE_INVALID_JSON = "judge_invalid_json"
    JUDGE_SCHEMA_MISMATCH = "judge_schema_mismatch"
    JUDGE_HTTP_ERROR = "judge_http_error"
    JUDGE_UNAVAILABLE = "judge_unavailable"
    # The provider's batch API gave no answer for this judge request: the item errored,
    # expired or was cancelled, or the batch did not end within the wait.
    JUDGE_BATCH_FAILED = "judge_batch_failed"
    CONFIGURATION = "configuration_error"
    NO_RECORDING = "no_recording"
    STALE_RECORDING = "stale_recording"
    WORKER_CRASHED = "worker_crashed"
    # The engine's own: a cassette that cannot be read; a page or judge reply over the cap.
    CORRUPT_RECORDING = "corrupt_recording"
    PAGE_TOO_LARGE = "page_too_large"
    JUDGE_REPLY_TOO_LARGE = "judge_reply_too_large"
    # The URL policy (pytest_citecheck.stages.url_policy) refused the URL (nothing was
    # fetched) or where its crawl landed (nothing of the page was used).
    URL_REFUSED = "url_refused"
    # Not recorded: the run's --citecheck-max-cost / --citecheck-max-credits ran out.
    BUDGET_EXHAUSTED = "budget_exhausted"
    INTERNAL = "internal_error"
    # The guard overruled the judge: the passages try to instruct a grader, or the
    # quote (read in its passage) is not about the claim.
    SUSPECTED_INJECTION = "suspected_injection"
    QUOTE_NOT_ABOUT_CLAIM = "quote_not_about_claim"
    # A judge panel that did not agree enough to decide (engine/panel.py).
    PANEL_NO_MAJORITY = "panel_no_majority"
    PANEL_NOT_UNANIMOUS = "panel_not_unanimous"
    PANEL_SPLIT = "panel_supported_and_contradicted"
    # Fewer members answered than the panel needs (citecheck_panel_min_votes).
    PANEL_INCOMPLETE = "panel_incomplete"
    # The confirmation (stages/confirm.py): a second judge call that read only the
    # sentence(s) holding the quote did not give the same label.
    UNCONFIRMED = "unconfirmed"
    # Replayed from a recording made without the confirmation: kept, not confirmed.
    RECORDED_WITHOUT_CONFIRMATION = "recorded_without_confirmation"
    # A supported verdict whose evidence lacks a number, date or quantity of the claim.
    EVIDENCE_LACKS_NUMBER = "evidence_lacks_number"


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

    @field_validator("quote", "section")
    @classmethod
    def _quote_or_section(cls, value: str | None, info: ValidationInfo) -> str | None:
        name = info.field_name
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
            raise _invalid(
                f"{name!r} is empty",
                f"give the {'quoted text' if name == 'quote' else 'section, e.g. 4.1.4'} "
                f"or remove {name!r}",
            )
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


class Fetch(BaseModel):
    """One billed (or attempted) Crawling API call made for a citation."""

    token: str  # which token kind was used: "normal" or "javascript" (never the value)
    readability: bool
    status_code: int
    original_status: int | None = None
    cb_status: int | None = None
    final_url: str | None = None
    rid: str | None = None
    non_whitespace_chars: int = 0
    credits: float = 0.0


class Passage(BaseModel):
    """A block of page text shown to the judge, with its retrieval score."""

    index: int
    text: str
    score: float | None = None


class Usage(BaseModel):
    """Tokens one judge call cost."""

    input_tokens: int = 0
    output_tokens: int = 0
    # Answered through the provider's batch API (billed at its price); shown only when so.
    batch: bool = False
    # Tries the provider received whole but whose answer never came (the connection
    # failed after the request was written, and the retry sent it again): billed,
    # unanswered. Each is counted in the tokens above as the answered try's tokens
    # (the same request); shown only when there is one.
    unanswered: int = 0

    @model_serializer(mode="wrap")
    def _batch_only_when_set(self, handler: SerializerFunctionWrapHandler) -> Any:
        # A synchronous call's usage serialises as it always did: two token counts.
        data = handler(self)
        if isinstance(data, dict):
            if not self.batch:
                data.pop("batch", None)
            if not self.unanswered:
                data.pop("unanswered", None)
        return data

    def with_unanswered(self, tries: int) -> Usage:
        """This usage with ``tries`` billed, unanswered tries of the same request added
        (each as many tokens as the answered one)."""
        if tries <= 0:
            return self
        return self.model_copy(
            update={
                "input_tokens": self.input_tokens * (1 + tries),
                "output_tokens": self.output_tokens * (1 + tries),
                "unanswered": self.unanswered + tries,
            }
        )


class JudgeReply(BaseModel):
    """What a judge answered, already parsed and schema-checked (not yet guarded).

    Plain data, here rather than in ``judges``, so the guard and the documents
    module read it without importing an HTTP client or any provider.
    """

    label: Literal["supported", "contradicted", "not_found"]
    quote: str | None
    # In [0, 1]. A judge that graded on another scale (10, 2.0, 85) gets 0 here and its
    # number in ``confidence_raw``: the verdict then reports the confidence as unknown.
    confidence: float = Field(ge=0.0, le=1.0)
    usage: Usage | None = None
    confidence_raw: float | None = None
    # What the judge's server refused and how the call was asked again (a feature the
    # server does not take), for the run's summary; None: asked once.
    fallback: str | None = None


class Confirmation(BaseModel):
    """The second judge call that checked a ``supported``/``contradicted`` answer on the
    sentence(s) holding its quote alone (:mod:`pytest_citecheck.stages.confirm`)."""

    # confirmed: the same label; unconfirmed: another one; not_recorded: replayed from a
    # recording made without the confirmation, so nothing was asked.
    status: Literal["confirmed", "unconfirmed", "not_recorded"]
    # The only text the call read: the sentence(s) holding the quote.
    evidence: str
    # What the call answered (None: not asked): its label, confidence and quote, and
    # the guard's reason when it refused that answer (the quote not in ``evidence``,
    # too short...), as the first reading is guarded.
    label: Label | None = None
    confidence: float | None = None
    quote: str | None = None
    reason: str | None = None
    usage: Usage | None = None


class PanelVote(BaseModel):
    """What one member of a judge panel answered for a citation, after the guard."""

    judge: str
    label: Label  # supported, contradicted, not_found, or error (the member failed)
    evidence_quote: str | None = None
    confidence: float | None = None
    reason: str | None = None
    detail: str | None = None
    # Set when the guard overruled this member (its own answer).
    judge_label: Label | None = None
    judge_quote: str | None = None
    usage: Usage | None = None
    # The member's confidence on another scale than [0, 1] (``confidence`` is then None).
    confidence_raw: float | None = None
    # How the member's server was asked again (JudgeReply.fallback).
    judge_fallback: str | None = None
    # The member's own confirmation of a supported/contradicted answer.
    confirmation: Confirmation | None = None


class Verdict(BaseModel):
    """The outcome for one citation (field names as in the service's ``/verify`` reply)."""

    url: str  # the citation target: URL or document path as written
    label: Label
    evidence_quote: str | None = None
    # Fuzzy quote matching (citecheck_quote_match = fuzzy): evidence_quote is then
    # the page's own span, judge_quote what the judge wrote, with their similarity.
    judge_quote: str | None = None
    quote_similarity: float | None = None
    confidence: float | None = None
    final_url: str | None = None
    original_status: int | None = None
    rid: str | None = None
    reason: str | None = None
    # A sentence for humans (error text, what the judge said); never holds a secret.
    detail: str | None = None
    # Below the confidence gate: a human should look at it.
    review: bool = False
    section: str | None = None
    fetches: list[Fetch] = Field(default_factory=list)
    credits: float = 0.0
    passages: list[Passage] = Field(default_factory=list)
    judge: str | None = None
    usage: Usage | None = None
    # Set when the guard overruled the judge (suspected_injection, quote_not_about_claim,
    # a refused quote): what the judge itself answered. A quote the guard refused is
    # always in evidence_quote (the reason says why it is no evidence); judge_quote is
    # only the judge's own wording of a quote fuzzy matching replaced by the page's span.
    judge_label: Label | None = None
    judge_confidence: float | None = None
    # The judge's confidence when it was not in [0, 1] (10, 2.0, 85): kept as said,
    # read as unknown (``confidence`` None) and sent to review.
    confidence_raw: float | None = None
    # How the judge's server was asked again, without a feature it refused
    # (JudgeReply.fallback); the summary shows it once per judge.
    judge_fallback: str | None = None
    # A judge panel's members, in panel order (None: one judge). ``confidence`` is
    # then the share of members that voted ``label``.
    panel: list[PanelVote] | None = None
    # The citation's quote was the provider's and the page does not have it (the
    # page changed, renders differently, or served something else): the judge read
    # retrieval's passages. Never a label of its own and never a gate failure.
    provider_quote_not_on_page: bool = False
    # The confirmation of a supported/contradicted answer (one judge; a panel's are
    # its members'). ``usage`` above is the first reading's; the confirmation's is here.
    confirmation: Confirmation | None = None

    def confirmations(self) -> list[Confirmation]:
        """Every confirmation behind this verdict: its own, or its panel members'."""
        own = [self.confirmation] if self.confirmation is not None else []
        return own + [v.confirmation for v in self.panel or () if v.confirmation is not None]


class ClaimResult(BaseModel):
    """The outcome for one claim: its verdicts and the aggregated label."""

    id: str
    claim: str
    label: Label
    verdicts: list[Verdict]
    expect: Label | None = None
    file: str | None = None
    # Every exchange came from its recording (nothing was billed in this run): how the
    # summary tells this run's spend from the recordings'. Not part of the result's
    # JSON (a replay reports what the recording did); an xdist worker sends it along.
    replayed: bool = Field(default=False, exclude=True, repr=False)
    # The imported answer the claim was made from; reports show it once, as an answer
    # (an xdist worker sends it along: ``dump_with_answer``).
    answer: AnswerOutline | None = Field(default=None, exclude=True, repr=False)

    def dump_with_answer(self) -> dict[str, Any]:
        """The JSON of this result with its answer, for another process."""
        data = self.model_dump(mode="json")
        if self.answer is not None:
            data["answer"] = self.answer.model_dump(mode="json")
        if self.replayed:
            data["replayed"] = True
        return data

    @property
    def labels(self) -> list[Label]:
        return [v.label for v in self.verdicts]
