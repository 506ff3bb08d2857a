"""Hypothesis: the hybrid that skips the model where BM25 settles the passages shown
shows exactly the passages the hybrid that always asks the model shows."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from pytest_citecheck.stages import embedder, retrieval
from pytest_citecheck.stages.embedder import Embedder
from pytest_citecheck.stages.retrieval import BM25Ranker, HybridRanker, MiniLMRanker

pytest.importorskip("bm25s")


class HashModel:
    """Any opinion at all: each text's vector comes from a hash of it and a seed."""

    seed = 0
    calls = 0

    def encode(self, sentences: list[str], **kwargs: Any) -> Any:
        HashModel.calls += 1
        rows = []
        for text in sentences:
            digest = hashlib.sha256(f"{self.seed}\x1f{text}".encode()).digest()
            rows.append(np.frombuffer(digest[:16], dtype=np.uint8).astype(np.float32) - 127.5)
        out = np.array(rows, dtype=np.float32)
        return out / np.linalg.norm(out, axis=1, keepdims=True)


@pytest.fixture(autouse=True)
def hash_model(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(embedder, "_models", {None: HashModel()})
    yield


# A small vocabulary: BM25 ties between passages are common.
WORDS = ["water", "boils", "ice", "melts", "salt", "river", "sea", "heat", "cold", "rain"]
sentence = st.lists(st.sampled_from(WORDS), min_size=1, max_size=6).map(
    lambda ws: " ".join(ws).capitalize() + "."
)
passage = st.lists(sentence, min_size=1, max_size=4).map(" ".join)


def build(fusion: str, candidates: int, shown: int | None) -> HybridRanker:
    # 6-word chunks: a passage of several sentences has several chunks.
    semantic = MiniLMRanker(Embedder(), chunk_words=6)
    return HybridRanker(BM25Ranker(), semantic, fusion, candidates, shown)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    claim=st.lists(st.sampled_from(WORDS), min_size=1, max_size=5).map(" ".join),
    page=st.lists(passage, min_size=1, max_size=10),
    k=st.integers(min_value=1, max_value=4),
    candidates=st.integers(min_value=1, max_value=6),
    fusion=st.sampled_from(retrieval.FUSIONS),
    seed=st.integers(min_value=0, max_value=10**6),
)
# A tie in BM25 the model breaks: passages 0 and 2 hold the same words, and the
# model prefers passage 2's candidate chunk to passage 1's. BM25 alone would show 0.
@example(
    claim="water boils",
    page=[
        "Water heat rain sea salt. Boils cold river ice melts.",
        "Water boils water boils.",
        "Boils water heat rain sea. Salt cold river ice melts.",
    ],
    k=2,
    candidates=2,
    fusion="minmax",
    seed=0,
)
def test_skipping_the_model_never_changes_the_passages_shown(
    claim: str, page: list[str], k: int, candidates: int, fusion: str, seed: int
) -> None:
    HashModel.seed = seed
    always = build(fusion, candidates, shown=None)
    skipping = build(fusion, candidates, shown=k)
    shown_always = {i for i, _ in always.rank(claim, page, k)}
    HashModel.calls = 0
    needs = skipping.embeds(claim, page)
    shown_skipping = {i for i, _ in skipping.rank(claim, page, k)}
    assert shown_skipping == shown_always
    # Ranking embeds exactly what it said it would: nothing when settled.
    assert (HashModel.calls == 0) == (needs == [])


def test_a_page_whose_candidates_settle_the_top_embeds_nothing() -> None:
    # Passages of two 96-word chunks each; two of them hold the claim's words, so
    # BM25's four candidate chunks come from those two alone.
    filler = " ".join(["Rivers flow to the sea and carry salt."] * 12)  # 96 words
    page = [
        f"Water boils at one hundred degrees. {filler}",
        f"{filler} Rain falls in autumn.",
        f"Ice melts at zero; water boils when heated. {filler}",
        f"{filler} Mountains are cold.",
        f"{filler} Snow stays all year.",
    ]
    skipping = retrieval.shows(retrieval.make_ranker("hybrid"), 3)
    assert len(skipping.semantic.chunks(page[0])) == 2
    HashModel.calls = 0
    ranked = skipping.rank("water boils", page, 3)
    assert HashModel.calls == 0
    assert skipping.embeds("water boils", page) == []
    assert {0, 2} <= {i for i, _ in ranked}  # BM25's two, whatever the model thinks
    assert "where BM25's candidates settle the 3 shown" in skipping.version
    # Asked for the top 1, the model must choose between the two: it is asked.
    assert skipping.rank("water boils", page, 1) and HashModel.calls == 1


def test_a_settled_page_never_loads_the_model(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_model(device: str | None = None) -> Any:
        raise AssertionError("the model was loaded")

    monkeypatch.setattr(embedder, "load_model", no_model)
    filler = " ".join(["Rivers flow to the sea and carry salt."] * 12)
    page = [f"Water boils. {filler}", f"{filler} Boils.", f"{filler} Snow.", f"{filler} Ice."]
    ranker = retrieval.shows(retrieval.make_ranker("hybrid"), 3)
    ranker.prepare([("water boils", page)])
    assert ranker.rank("water boils", page, 3)[0][0] == 0
    assert ranker.embedding_stats.computed == 0
