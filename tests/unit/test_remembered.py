"""What replay reads once: a passage-sized text is read once however many claims are
shown it, a page-sized one each time (nothing of it kept); and the stage client's
cookie jar, skipped for replies that set no cookie, still keeps the ones that do."""

from __future__ import annotations

from collections.abc import Callable

import httpx

from pytest_citecheck.claims.results import Passage
from pytest_citecheck.recording.transport import StageTransport, stage_client
from pytest_citecheck.stages.evidence import evidence_sentences
from pytest_citecheck.stages.text import REMEMBERED_CHARS, remembered


def _counting() -> tuple[list[str], Callable[..., str]]:
    calls: list[str] = []

    @remembered(maxsize=4)
    def upper(text: str, parts: tuple[str, ...] = ()) -> str:
        calls.append(text)
        return text.upper() + "".join(parts)

    return calls, upper


def test_a_passage_sized_text_is_read_once() -> None:
    calls, upper = _counting()
    text = "The Hostile widget weighs 3 kg."
    assert [upper(text) for _ in range(3)] == [text.upper()] * 3
    assert upper("".join(list(text))) == text.upper()
    assert calls == [text]  # an equal text built anew is the same question


def test_a_page_sized_text_is_read_each_time() -> None:
    calls, upper = _counting()
    page = "word " * (REMEMBERED_CHARS // 5 + 1)
    assert upper(page) == upper(page) == page.upper()
    assert len(calls) == 2
    # The texts of a tuple count together: many passages make a page.
    passage = "p" * (REMEMBERED_CHARS // 2)
    upper("x", (passage, passage, passage))
    upper("x", (passage, passage, passage))
    assert calls[2:] == ["x", "x"]


def test_the_memo_keeps_at_most_maxsize_texts() -> None:
    calls, upper = _counting()
    for text in ["a", "b", "c", "d", "e", "a"]:
        upper(text)
    assert calls == ["a", "b", "c", "d", "e", "a"]  # "a" was dropped for "e"


def test_evidence_sentences_are_the_same_for_every_claim_shown_the_passages() -> None:
    page = (
        "Widgets are made in Ohio. The Hostile widget weighs 3 kg. It ships in May.",
        "Prices start at 40 dollars. Dr. Smith designed it.",
    )

    def shown() -> list[Passage]:  # new objects each time, as for each claim
        return [Passage(index=4 + i, text="".join(list(t))) for i, t in enumerate(page)]

    first = evidence_sentences("Hostile widget weighs 3", shown())
    again = evidence_sentences("Hostile widget weighs 3", shown())
    across = evidence_sentences("It ships in May. Prices start", shown())
    assert first == again == "The Hostile widget weighs 3 kg."
    assert across == "It ships in May. Prices start at 40 dollars."
    # Another quote in the same passages reads its own sentence.
    assert evidence_sentences("Smith designed it", shown()) == "Dr. Smith designed it."


def _cookie_server(seen: list[str | None]) -> httpx.MockTransport:
    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers.get("cookie"))
        if request.url.path == "/login":
            return httpx.Response(200, headers={"set-cookie": "session=abc; Path=/"})
        return httpx.Response(200, headers={"content-type": "text/plain"}, text="ok")

    return httpx.MockTransport(answer)


def test_the_stage_client_keeps_a_cookie_a_reply_sets() -> None:
    seen: list[str | None] = []
    with stage_client(StageTransport(live=_cookie_server(seen))) as client:
        client.get("http://api.test/page")
        client.get("http://api.test/login")
        client.get("http://api.test/page")
        client.get("http://other.test/page")
        assert dict(client.cookies) == {"session": "abc"}
    assert seen == [None, None, "session=abc", None]
