"""How fast does the engine record? Concurrency 1 against N, in the same run.

40 claims (one URL citation each) over 40 WiCE pages, a page each (claims of a
run that cite one page share its crawl: a page each keeps the work per claim the
same), recorded with the engine against the loopback doubles, which add 200 ms to
every request (120 requests: one crawl and two judge calls per claim, the reading
and its confirmation). Each case records into a fresh folder; the table gives wall
time, effective concurrency (request latency spent / wall time) and the speed-up over concurrency 1.

- model-free ranker (word overlap): pure orchestration, concurrency 1 vs N;
- the real ranker before it embedded only BM25's candidates (the hybrid with
  every chunk embedded, ``HybridRanker(candidates=None)``): concurrency 1 vs N;
- the real ranker before it skipped the model where BM25's candidates settle the
  passages shown (``bench.retrieval.AlwaysAsks``): concurrency 1 vs N;
- the real ranker (what the engine builds by default): concurrency 1 vs N,
  then the same claims again in mode ``all`` with the same embedding cache
  directory. Texts the model encoded are counted for each run (each
  unique text once; none the second time when the persistent cache is there),
  with the seconds spent in the model's ``encode`` and in BM25: where ranking
  time goes.

The last line gives the figures the issue asks for: the real ranker's speed-up
(concurrency N vs 1), and its texts embedded and milliseconds ranked (encode +
BM25, at concurrency 1) per page against the all-chunks ranker's, in the same run.

    python bench/record.py [--delay 0.2] [--concurrency 4] [--no-model]

Recordings are synthetic (loopback doubles), written to a temporary folder.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.corpus import claims_for, doubles, wice_pages  # noqa: E402
from pytest_citecheck.claims.models import Claim  # noqa: E402
from pytest_citecheck.engine.core import Engine  # noqa: E402
from pytest_citecheck.engine.settings import EngineSettings, StageHooks  # noqa: E402
from pytest_citecheck.stages.passages import split_passages  # noqa: E402
from tests.doubles.ranking import WordOverlap  # noqa: E402

ENCODED: dict[str, float] = {"texts": 0, "encode_s": 0.0, "bm25_s": 0.0}


def count_encodes() -> None:
    """Count every text the embedding model encodes (whichever ranker calls it), and
    time the model and BM25."""
    from sentence_transformers import SentenceTransformer

    from pytest_citecheck.stages.retrieval import BM25Ranker

    original = SentenceTransformer.encode

    def encode(self: Any, sentences: Any, *args: Any, **kwargs: Any) -> Any:
        ENCODED["texts"] += 1 if isinstance(sentences, str) else len(sentences)
        started = time.perf_counter()
        try:
            return original(self, sentences, *args, **kwargs)
        finally:
            ENCODED["encode_s"] += time.perf_counter() - started

    SentenceTransformer.encode = encode  # type: ignore[method-assign]
    scores = BM25Ranker.scores

    def timed(self: BM25Ranker, claim: str, passages: Any) -> list[float]:
        started = time.perf_counter()
        try:
            return scores(self, claim, passages)
        finally:
            ENCODED["bm25_s"] += time.perf_counter() - started

    BM25Ranker.scores = timed  # type: ignore[method-assign]


def all_chunks_ranker(cache: Path) -> Callable[[], Any]:
    """The hybrid as it was: MiniLM scores every chunk of every passage."""
    from pytest_citecheck.stages.embedder import Embedder
    from pytest_citecheck.stages.retrieval import BM25Ranker, HybridRanker, MiniLMRanker

    return lambda: HybridRanker(BM25Ranker(), MiniLMRanker(Embedder(cache)), candidates=None)


def always_asks_ranker(cache: Path) -> Callable[[], Any]:
    """The shipped hybrid before it skipped the model where BM25's candidates settle
    the passages shown: MiniLM scores the candidates of every page not shown whole."""
    from bench.retrieval import AlwaysAsks
    from pytest_citecheck.core.defaults import DEFAULT_TOP_K
    from pytest_citecheck.stages.embedder import Embedder
    from pytest_citecheck.stages.retrieval import BM25Ranker, MiniLMRanker

    return lambda: AlwaysAsks(BM25Ranker(), MiniLMRanker(Embedder(cache)), shown=DEFAULT_TOP_K)


def run(
    claims: list[Claim],
    env: dict[str, str],
    folder: Path,
    concurrency: int,
    mode: str,
    ranker: Callable[[], Any] | None,
    cache: Path | None,
) -> tuple[float, tuple[int, float, float]]:
    settings = EngineSettings(record_mode=mode, concurrency=concurrency, cache_dir=cache)
    hooks = StageHooks(make_ranker=ranker)
    before = dict(ENCODED)
    with Engine.from_settings(settings, hooks, env) as engine:
        start = time.perf_counter()
        results = engine.verify_claims_sync(
            claims, cassette_for=lambda c: folder / "cassettes" / "bench" / f"{c.id}.yaml"
        )
        seconds = time.perf_counter() - start
    errors = [r for r in results if r.label == "error"]
    if errors:
        sys.exit(f"{len(errors)} claims failed: {errors[0].verdicts[0].detail}")
    spent = {k: ENCODED[k] - before[k] for k in ENCODED}
    return seconds, (int(spent["texts"]), spent["encode_s"], spent["bm25_s"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--delay", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--no-model", action="store_true", help="skip the real-ranker rows")
    args = parser.parse_args()
    pages = wice_pages(40)
    claims = claims_for([(url, text, said[:1]) for url, text, said in pages], 40)
    requests = 3 * len(claims)  # a crawl, the reading, the confirmation
    unique = len({p for _, markdown, _ in pages for p in split_passages(markdown)})
    rows: list[tuple[str, float, tuple[int, float, float] | None]] = []
    with tempfile.TemporaryDirectory() as name, doubles(pages, args.delay) as env:
        tmp = Path(name)
        for n in (1, args.concurrency):
            seconds, _ = run(claims, env, tmp / f"free{n}", n, "rewrite", WordOverlap, None)
            rows.append((f"model-free ranker, concurrency {n}", seconds, None))
        if not args.no_model:
            from pytest_citecheck.stages.embedder import load_model

            load_model()  # once, before any run is timed
            count_encodes()
            cache = tmp / "embedding-cache"
            for n in (1, args.concurrency):
                # A fresh cache per run, so every run embeds from scratch.
                where = cache / f"before{n}"
                seconds, spent = run(
                    claims, env, tmp / f"before{n}", n, "rewrite", all_chunks_ranker(where), None
                )
                rows.append((f"all-chunks ranker (before), concurrency {n}", seconds, spent))
            for n in (1, args.concurrency):
                where = cache / f"asks{n}"
                seconds, spent = run(
                    claims, env, tmp / f"asks{n}", n, "rewrite", always_asks_ranker(where), None
                )
                rows.append((f"always-asks ranker (before), concurrency {n}", seconds, spent))
            for n in (1, args.concurrency):
                seconds, spent = run(
                    claims, env, tmp / f"model{n}", n, "rewrite", None, cache / str(n)
                )
                rows.append((f"real ranker, concurrency {n}", seconds, spent))
            seconds, spent = run(
                claims,
                env,
                tmp / f"model{args.concurrency}",
                args.concurrency,
                "all",
                None,
                cache / str(args.concurrency),
            )
            rows.append(
                (f"real ranker, concurrency {args.concurrency}, again (all)", seconds, spent)
            )
    latency = requests * args.delay
    print(
        f"{len(claims)} claims, {len(pages)} pages ({unique} unique passages), "
        f"{requests} requests, {args.delay * 1000:.0f} ms added per request "
        f"({latency:.0f} s of latency)"
    )
    print(
        f"{'case':<52} {'wall s':>7} {'in flight':>9} {'speed-up':>9} {'embedded':>9} "
        f"{'per page':>8} {'encode s':>8} {'bm25 s':>7}"
    )
    base: dict[str, float] = {}
    for label, seconds, spent in rows:
        kind = label.split(",")[0]
        base.setdefault(kind, seconds)
        if spent is None:
            cells = f"{'-':>9} {'-':>8} {'-':>8} {'-':>7}"
        else:
            texts, encode_s, bm25_s = spent
            cells = f"{texts:>9} {texts / len(pages):>8.1f} {encode_s:>8.2f} {bm25_s:>7.2f}"
        print(
            f"{label:<52} {seconds:>7.2f} {latency / seconds:>9.2f} "
            f"{base[kind] / seconds:>8.2f}x {cells}"
        )
    if args.no_model:
        return
    # The Done-when figures: the shipped ranker against the all-chunks one, same run.
    by = {label: (seconds, spent) for label, seconds, spent in rows}
    n = args.concurrency
    real1, real_n = by["real ranker, concurrency 1"], by[f"real ranker, concurrency {n}"]
    all1 = by["all-chunks ranker (before), concurrency 1"]
    asks1, asks_n = (
        by["always-asks ranker (before), concurrency 1"],
        by[f"always-asks ranker (before), concurrency {n}"],
    )
    assert real1[1] is not None and all1[1] is not None and asks1[1] is not None
    texts_before, texts_now = all1[1][0] / len(pages), real1[1][0] / len(pages)
    ms_before = 1000 * (all1[1][1] + all1[1][2]) / len(pages)
    ms_now = 1000 * (real1[1][1] + real1[1][2]) / len(pages)
    ms_asks = 1000 * (asks1[1][1] + asks1[1][2]) / len(pages)
    print(
        f"always-asks ranker: speed-up={asks1[0] / asks_n[0]:.2f}x, "
        f"texts/page={asks1[1][0] / len(pages):.1f}, ms/page ranked={ms_asks:.0f}"
    )
    print(
        f"record: speed-up={real1[0] / real_n[0]:.2f}x (concurrency {n} vs 1, real ranker; "
        f"needs >= 3.5x) texts/page={texts_before:.1f}->{texts_now:.1f} "
        f"(x{texts_now / texts_before:.2f}) ms/page ranked={ms_before:.0f}->{ms_now:.0f} "
        f"(x{ms_now / ms_before:.2f}; encode + BM25 at concurrency 1, against the all-chunks "
        "ranker; one of the two must be <= x0.50)"
    )


if __name__ == "__main__":
    main()
