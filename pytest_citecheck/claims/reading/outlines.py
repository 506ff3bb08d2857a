"""``outlines:``: the answers a written claim file came from, attached to its claims."""

from __future__ import annotations

from typing import Any

from pytest_citecheck.claims.models import AnswerOutline, Claim, OutlineSentence, kind
from pytest_citecheck.claims.reading.base import _Broken, _has_broken
from pytest_citecheck.claims.reading.claims import ClaimChecks
from pytest_citecheck.claims.schema import OUTLINE_KEYS, OUTLINE_SENTENCE_KEYS, Loc, unknown_key

# The span an answer came from: hex ids of OpenTelemetry's lengths (not all zero).
_ID_DIGITS = {"trace_id": 32, "span_id": 16}


class OutlineReading(ClaimChecks):
    """Read ``outlines:`` (what ``citecheck import`` writes beside the claims)."""

    _OUTLINE_EXAMPLE = "- {answer: water, format: markdown, sentences: [{claim: ID}, {text: ...}]}"

    def _outlines(self, value: Any, claims: list[Claim], listed: int) -> list[Claim]:
        """Attach each outline to the claims its sentences name (the answer figures)."""
        if isinstance(value, _Broken) or _has_broken(value):
            return claims
        if not isinstance(value, list):
            self.add(
                self.lines[("outlines",)],
                f"`outlines:` must be a list, not {kind(value)}",
                f"regenerate the file with `citecheck import`, or write {self._OUTLINE_EXAMPLE}",
            )
            return claims
        by_id = {c.id: c for c in claims}
        owner: dict[str, AnswerOutline] = {}
        first_line: dict[str, int | None] = {}
        for i, item in enumerate(value):
            outline = self._outline(item, ("outlines", i), by_id, listed == len(claims))
            if outline is None:
                continue
            if outline.id in first_line:
                self.add(
                    self.lines.get(("outlines", i, "answer")),
                    f"duplicate answer {outline.id!r} in `outlines:` (first on line "
                    f"{first_line[outline.id]})",
                    "each answer is outlined once: regenerate the file with `citecheck import`",
                )
                continue
            first_line[outline.id] = self.lines.get(("outlines", i, "answer"))
            for n, sentence in enumerate(outline.sentences):
                if sentence.claim_id is None:
                    continue
                if sentence.claim_id in owner:
                    self.add(
                        self.line_of(("outlines", i, "sentences", n)),
                        f"claim {sentence.claim_id!r} is a sentence of two outlined answers",
                        "a claim comes from one answer: regenerate the file with "
                        "`citecheck import`",
                    )
                    continue
                owner[sentence.claim_id] = outline
        return [
            c.model_copy(update={"answer": owner[c.id]}) if c.id in owner else c for c in claims
        ]

    def _outline(
        self, item: Any, loc: Loc, by_id: dict[str, Claim], claims_valid: bool
    ) -> AnswerOutline | None:
        line = self.lines.get(loc)
        fix = f"regenerate the file with `citecheck import`, or write {self._OUTLINE_EXAMPLE}"
        if not isinstance(item, dict):
            self.add(line, f"an outline must be a mapping, not {kind(item)}", fix)
            return None
        problems = len(self.problems)
        for key in item:
            if key not in OUTLINE_KEYS:
                self.add(
                    self.lines[(*loc, key)], *unknown_key(key, "written outline", OUTLINE_KEYS)
                )
        answer = item.get("answer")
        if not isinstance(answer, str) or not answer.strip():
            self.add(
                self.lines.get((*loc, "answer"), line),
                f"an outline's `answer` must be non-empty text, not {kind(answer)}",
                fix,
            )
        fmt = item.get("format")
        if fmt is not None and not isinstance(fmt, str):
            self.add(self.lines[(*loc, "format")], f"`format` must be text, not {kind(fmt)}", fix)
        sentences = item.get("sentences")
        if not isinstance(sentences, list):
            self.add(
                self.lines.get((*loc, "sentences"), line),
                f"an outline's `sentences` must be a list, not {kind(sentences)}",
                fix,
            )
            return None
        out: list[OutlineSentence] = []
        for n, sentence in enumerate(sentences):
            where = (*loc, "sentences", n)
            if not isinstance(sentence, dict) or not sentence:
                self.add(
                    self.line_of(where),
                    f"a sentence must be `{{claim: ID}}` or `{{text: ...}}`, not {kind(sentence)}",
                    fix,
                )
                continue
            for key in sentence:
                if key not in OUTLINE_SENTENCE_KEYS:
                    self.add(
                        self.lines[(*where, key)],
                        *unknown_key(key, "sentence of an outline", OUTLINE_SENTENCE_KEYS),
                    )
            claim_id, text = sentence.get("claim"), sentence.get("text")
            if claim_id is not None and not isinstance(claim_id, str):
                self.add(self.lines[(*where, "claim")], "`claim` must be a claim id", fix)
                continue
            if text is not None and not isinstance(text, str):
                self.add(self.lines[(*where, "text")], "`text` must be text", fix)
                continue
            if claim_id is None:
                if not text:
                    self.add(self.line_of(where), "an uncited sentence needs its `text`", fix)
                    continue
                out.append(OutlineSentence(text=text))
                continue
            claim = by_id.get(claim_id)
            if claim is None:
                # A claim that failed its own checks is reported there, not twice.
                if claims_valid:
                    self.add(
                        self.lines[(*where, "claim")],
                        f"the outline names claim {claim_id!r}, which is not in `claims:`",
                        "regenerate the file with `citecheck import` (or remove the sentence)",
                    )
                continue
            out.append(OutlineSentence(text=text or claim.claim, claim_id=claim_id))
        conversation, turn = self._turn(item, loc, fix)
        ids = self._answer_ids(item, loc, fix)
        if len(self.problems) > problems or not isinstance(answer, str):
            return None
        return AnswerOutline(
            id=answer.strip(),
            format=fmt if isinstance(fmt, str) else None,
            origin=str(self.path),
            sentences=out,
            conversation=conversation,
            turn=turn,
            **ids,
        )

    def _answer_ids(self, item: dict[str, Any], loc: Loc, fix: str) -> dict[str, str]:
        """The outline's response id and, for an answer read from a trace, its span."""
        out: dict[str, str] = {}
        for key in ("response_id", *_ID_DIGITS):
            value = item.get(key)
            if value is None:
                continue
            digits = _ID_DIGITS.get(key)
            if not isinstance(value, str) or not value.strip():
                self.add(self.lines[(*loc, key)], f"`{key}` must be text, not {kind(value)}", fix)
            elif digits is not None and not _is_hex_id(value, digits):
                self.add(
                    self.lines[(*loc, key)],
                    f"`{key}` must be {digits} hex digits (not all zero), not {value!r}",
                    fix,
                )
            else:
                out[key] = value.strip().lower() if digits else value.strip()
        return out

    def _turn(self, item: dict[str, Any], loc: Loc, fix: str) -> tuple[str | None, int | None]:
        """An outlined turn of a conversation: its conversation and number, both or none."""
        conversation, turn = item.get("conversation"), item.get("turn")
        if conversation is None and turn is None:
            return None, None
        if not isinstance(conversation, str) or not conversation.strip():
            self.add(
                self.lines.get((*loc, "conversation"), self.lines.get(loc)),
                "an outlined turn needs its `conversation` (non-empty text) beside `turn`",
                fix,
            )
            return None, None
        if not isinstance(turn, str) or not turn.isdigit() or int(turn) < 1:
            self.add(
                self.lines.get((*loc, "turn"), self.lines.get(loc)),
                f"an outline's `turn` must be a whole number from 1, not {kind(turn)}",
                fix,
            )
            return None, None
        return conversation.strip(), int(turn)


def _is_hex_id(value: str, digits: int) -> bool:
    text = value.strip()
    return (
        len(text) == digits
        and all(c in "0123456789abcdefABCDEF" for c in text)
        and int(text, 16) != 0
    )
