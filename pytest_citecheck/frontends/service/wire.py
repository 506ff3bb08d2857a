"""The wire: request and response models (they are the OpenAPI schema)."""

from __future__ import annotations

from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
)

from pytest_citecheck.claims.labels import Label
from pytest_citecheck.claims.models import check_judge
from pytest_citecheck.claims.results import ClaimResult, page_only_when_set
from pytest_citecheck.frontends.service.terms import public_detail


class VerifyRequest(BaseModel):
    """``POST /verify``: one claim and the URLs an LLM cited for it."""

    model_config = ConfigDict(extra="forbid")

    claim: str = Field(description="The sentence the LLM claimed.")
    urls: list[str] = Field(description="The http(s) URLs it cited for the claim (at least one).")
    judge: str | None = Field(
        default=None,
        description="PROVIDER:MODEL; default: the server's --judge. Only judges the operator "
        "allows (--allow-judge).",
    )

    @field_validator("urls")
    @classmethod
    def _urls(cls, urls: list[str]) -> list[str]:
        if not urls:
            raise ValueError("no URLs: cite at least one http(s) URL for the claim")
        return urls

    @field_validator("judge")
    @classmethod
    def _judge(cls, judge: str | None) -> str | None:
        return None if judge is None else check_judge(judge)


class CitationVerdict(BaseModel):
    """The outcome for one URL."""

    url: str
    label: Label
    reason: str | None = None
    evidence_quote: str | None = None
    confidence: float | None = None
    final_url: str | None = None
    original_status: int | None = None
    rid: str | None = Field(
        default=None, description="Re-read the page with `citecheck audit page RID`."
    )
    review: bool = False
    detail: str | None = None
    page: int | None = Field(
        default=None,
        description="The page of a PDF the evidence is on (absent for a web page).",
    )

    @model_serializer(mode="wrap")
    def _page_only_when_set(self, handler: SerializerFunctionWrapHandler) -> Any:
        # A web page's verdict is answered as it always was.
        return page_only_when_set(handler(self), self.page)


class VerifyResponse(BaseModel):
    """The claim label and one verdict per URL, in request order."""

    id: str = Field(description="The request id (the claim id in the audit index).")
    claim: str
    label: Label
    verdicts: list[CitationVerdict]
    audit_problem: str | None = Field(
        default=None,
        description="Set when the verdicts could not be written to the audit index "
        "(they are answered all the same).",
    )


class Health(BaseModel):
    """``status`` for anyone; the rest only with the key (or on a service without one)."""

    status: str
    version: str | None = None
    judge: str | None = None
    allowed_judges: list[str] | None = None
    concurrency: int | None = None
    busy: int | None = Field(default=None, description="Verification slots in use.")
    audit: bool | None = None
    url_policy: str | None = None
    record: str | None = Field(
        default=None,
        description="The record mode of --record (none: replays only); absent: live.",
    )
    configured: dict[str, bool] | None = Field(
        default=None,
        description="Environment variables the service can use: set or not (never values).",
    )


class Problem(BaseModel):
    """An error body: FastAPI's shape, ``detail`` a sentence or a list of problems."""

    detail: str | list[dict[str, Any]]


def to_response(request_id: str, result: ClaimResult) -> VerifyResponse:
    # A verdict's fields the reply shows, as the verdict has them (the detail aside).
    shown = set(CitationVerdict.model_fields) - {"detail"}
    return VerifyResponse(
        id=request_id,
        claim=result.claim,
        label=result.label,
        verdicts=[
            CitationVerdict(
                **v.model_dump(include=shown),
                detail=public_detail(v.detail) if v.detail else None,
            )
            for v in result.verdicts
        ],
    )
