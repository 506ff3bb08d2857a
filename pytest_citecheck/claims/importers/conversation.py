"""Import a whole conversation: one answer per assistant turn.

``import_conversation(data)`` cuts a saved conversation into its assistant turns
(:mod:`~pytest_citecheck.claims.importers.turns`) and imports each with the same
per-response importer a single response of that API goes through
(:func:`~pytest_citecheck.claims.importers.import_response`): one claim per cited
sentence of the turn (a turn whose API gave no citation annotation but whose text links
its sources, as agents answer with what their tools returned, is read as markdown).
Turn ``n`` of conversation ``c`` is the answer ``c-tn``, so its
claim ids are ``c-tn-<first words>-<hash>``: stable while earlier turns stay.

Each URL citation says whether a tool result of the conversation (up to and including
its turn) had returned the URL (:attr:`Citation.retrieved
<pytest_citecheck.claims.models.Citation.retrieved>`; what counts is in
:mod:`~pytest_citecheck.claims.importers.retrieved`). One nobody returned is verified on
its page like any other and its verdict is marked ``url_not_retrieved`` for review.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from pytest_citecheck.claims.importers import AUTO, import_response
from pytest_citecheck.claims.importers.answer import (
    ImportedAnswer,
    ImportedClaim,
    Reader,
    ResponseImportError,
)
from pytest_citecheck.claims.importers.draft import LINK, dedup_key
from pytest_citecheck.claims.importers.markdown import FORMAT as MARKDOWN
from pytest_citecheck.claims.importers.streams import stream_format
from pytest_citecheck.claims.importers.turns import (
    CONVERSATION_FORMATS,
    Turn,
    conversation_format,
    turns,
)
from pytest_citecheck.claims.models import suggest_id

__all__ = ["import_conversation", "is_conversation", "marked_turn", "turn_answer_id"]

# The answer id's part that claim ids keep (answer.claim_id cuts it at 40 characters):
# the conversation's part is shortened so the turn's number always survives.
_ANSWER_CHARS = 40


def is_conversation(data: object) -> bool:
    """Whether ``data`` (parsed JSON, or JSON text) is a conversation, not one response."""
    if isinstance(data, str):
        if not data.lstrip().startswith(("[", "{")):
            return False
        try:
            data = json.loads(data)
        except (ValueError, RecursionError):
            return False
    if isinstance(data, list) and stream_format(data) is not None:
        return False
    return conversation_format(data) is not None


def turn_answer_id(conversation: str, number: int) -> str:
    """``<conversation>-t<number>``, short enough that claim ids keep the number."""
    suffix = f"-t{number}"
    head = suggest_id(conversation).replace(".", "-")[: _ANSWER_CHARS - len(suffix)]
    return head.strip("-_") + suffix


def import_conversation(
    data: object,
    *,
    format: str = AUTO,
    conversation_id: str | None = None,
    documents: Sequence[str] | None = None,
    name: str | None = None,
) -> list[ImportedAnswer]:
    """One :class:`ImportedAnswer` per assistant turn of the conversation ``data`` (a
    list of messages or items, or a request body holding one; JSON text too), in order.

    ``format`` is the API (``auto`` detects it); ``conversation_id`` names the
    conversation (its turns are ``<id>-t1``, ``<id>-t2``...); ``name`` is how errors
    name it (a file).
    """
    label = name or conversation_id or "conversation"
    try:
        return _import(data, format, conversation_id, documents, label)
    except ResponseImportError:
        raise
    except RecursionError:
        raise ResponseImportError(
            label, "", "the conversation is nested too deeply", _SAVE
        ) from None
    except Exception as exc:  # one conversation's surprise must not cost the others
        raise ResponseImportError(
            label,
            "",
            f"the conversation cannot be imported ({type(exc).__name__}: {exc})",
            f"{_SAVE}; if it is, report it to citecheck's maintainers",
        ) from exc


def _import(
    data: object,
    format: str,
    conversation_id: str | None,
    documents: Sequence[str] | None,
    label: str,
) -> list[ImportedAnswer]:
    reader = Reader(label)
    if isinstance(data, str):
        try:
            data = json.loads(data)
        except (ValueError, RecursionError) as exc:
            raise reader.fail("", f"the conversation is not valid JSON ({exc})", _SAVE) from None
    detected = conversation_format(data)
    if format != AUTO and format not in CONVERSATION_FORMATS:
        raise reader.fail(
            "",
            f"{format} has no conversation shape this tool reads",
            f"a conversation is one of: {', '.join(CONVERSATION_FORMATS)} (or --from auto)",
        )
    fmt = detected if format == AUTO else format
    if fmt is None:
        raise reader.fail(
            "", "cannot tell which API this conversation is from", f"pass its format: {_FORMATS}"
        )
    conversation = conversation_id or "conversation"
    out: list[ImportedAnswer] = []
    cut = turns(data, fmt, reader)
    for turn in cut:
        if turn.empty:
            continue
        answer_id = turn_answer_id(conversation, turn.number)
        turn_name = f"{label} turn {turn.number} (items {turn.where})"
        answer = import_response(
            turn.body, format=fmt, answer_id=answer_id, documents=documents, name=turn_name
        )
        if not answer.claims and not answer.unattached and LINK.search(answer.text):
            # An agent's answer often cites what its tools returned as links it wrote
            # itself, with no annotation of the API's: read the turn's text as markdown.
            linked = import_response(
                answer.text, format=MARKDOWN, answer_id=answer_id, name=turn_name
            )
            if linked.claims:
                note = (
                    f"no {fmt} citation annotations: the links the answer wrote are its citations"
                )
                answer = linked.model_copy(update={"notes": [*linked.notes, note]})
        out.append(marked_turn(answer, turn, conversation))
    if not out:
        raise reader.fail(
            "",
            f"the conversation has no assistant answer ({len(cut)} turn(s), none with text)",
            "save the conversation after the assistant's reply",
        )
    return out


_SAVE = "save the conversation as the SDK keeps it (a JSON list of messages or items)"
_FORMATS = ", ".join(CONVERSATION_FORMATS)


def marked_turn(answer: ImportedAnswer, turn: Turn, conversation: str) -> ImportedAnswer:
    """The turn's answer with its conversation, turn and each URL's ``retrieved``."""
    claims: list[ImportedClaim] = []
    missing: list[str] = []
    for imported in answer.claims:
        citations = []
        for citation in imported.claim.citations:
            if citation.url is not None:
                returned = None if turn.unknown else dedup_key(citation.url) in turn.retrieved
                if returned is False:
                    missing.append(citation.url)
                citation = citation.model_copy(update={"retrieved": returned})
            citations.append(citation)
        claim = imported.claim.model_copy(update={"citations": citations})
        claims.append(imported.model_copy(update={"claim": claim}))
    notes = list(answer.notes)
    cites_urls = any(c.url for i in claims for c in i.claim.citations)
    if turn.unknown and cites_urls:
        notes.append(f"cited URLs not checked against the tool results: {turn.unknown}")
    elif missing:
        distinct = list(dict.fromkeys(missing))
        notes.append(
            f"{len(distinct)} cited URL(s) that no tool of the conversation returned "
            f"(url_not_retrieved): {', '.join(distinct[:3])}"
            + (" ..." if len(distinct) > 3 else "")
        )
    return answer.model_copy(
        update={
            "claims": claims,
            "notes": notes,
            "conversation": conversation,
            "turn": turn.number,
        }
    )
