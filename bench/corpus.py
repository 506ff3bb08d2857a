"""What the engine benchmarks record and replay: WiCE pages behind loopback doubles.

Pages are the ``source_text`` of WiCE records (/work/shared/data/wice_dev.jsonl,
or ``$CITECHECK_WICE``; see shared/data/README.md for the licences), served by
the Crawling API double of ``tests/doubles``; the judge is the LLM double (it
quotes the first passage it is shown). Both can add a fixed latency to every
request. Nothing here reaches the internet: the doubles listen on 127.0.0.1 and
recordings made against them are synthetic, not live.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pytest_citecheck.claims.models import Citation, Claim  # noqa: E402
from tests.doubles.crawlbase import CrawlbaseDouble, Page  # noqa: E402
from tests.doubles.llm import JudgeCall, LLMDouble, Scripted  # noqa: E402

WICE = Path(os.environ.get("CITECHECK_WICE", "/work/shared/data/wice_dev.jsonl"))
TOKENS = {"normal": "bench-normal-token-not-a-secret", "javascript": "bench-js-token-not-a-secret"}
KEY = "sk-bench-key-not-a-secret"


def _slow(handler: type[BaseHTTPRequestHandler], delay: float) -> type[BaseHTTPRequestHandler]:
    def wrap(name: str) -> object:
        original = getattr(handler, name, None)
        if original is None:
            return None

        def slow(self: BaseHTTPRequestHandler) -> None:
            time.sleep(delay)
            original(self)

        return slow

    methods = {n: wrap(n) for n in ("do_GET", "do_POST")}
    return type("Slow", (handler,), {k: v for k, v in methods.items() if v is not None})


class SlowCrawlbase(CrawlbaseDouble):
    def __init__(self, delay: float) -> None:
        super().__init__(tokens=TOKENS)
        self.delay = delay

    def handler(self) -> type[BaseHTTPRequestHandler]:
        return _slow(super().handler(), self.delay)


class SlowLLM(LLMDouble):
    """Numbers replies by content (stable ids whatever the order) and adds latency."""

    def __init__(self, delay: float) -> None:
        super().__init__(api_key=KEY)
        self.delay = delay

    def handler(self) -> type[BaseHTTPRequestHandler]:
        return _slow(super().handler(), self.delay)

    def _next(self, call: JudgeCall) -> tuple[Scripted, int]:
        item, _ = super()._next(call)
        return item, int(hashlib.sha256(call.body).hexdigest()[:4], 16)


def wice_pages(n: int) -> list[tuple[str, str, list[str]]]:
    """``n`` (url, markdown, claims) from WiCE: the record's claim and one of its sentences."""
    pages = []
    for line in WICE.read_text().splitlines():
        record = json.loads(line)
        sentences = [s for s in record["source_sentences"] if len(s.split()) >= 8]
        if len(sentences) < 6:
            continue
        # Three sentences a paragraph, blank lines between: a page of several passages.
        markdown = "\n\n".join(" ".join(sentences[i : i + 3]) for i in range(0, len(sentences), 3))
        url = f"https://example.org/wice/{record['id']}"
        pages.append((url, markdown, [record["claim"], sentences[len(sentences) // 2]]))
        if len(pages) == n:
            return pages
    raise SystemExit(f"{WICE} has fewer than {n} usable records")


def claims_for(pages: list[tuple[str, str, list[str]]], n: int) -> list[Claim]:
    """``n`` claims, cycling over the pages' claims (one URL citation each)."""
    pool = [(url, text) for url, _, texts in pages for text in texts]
    return [
        Claim(
            id=f"claim-{i:05d}",
            claim=pool[i % len(pool)][1] + ("" if i < len(pool) else f" ({i // len(pool)})"),
            citations=[Citation(url=pool[i % len(pool)][0])],
        )
        for i in range(n)
    ]


def serve(pages: list[tuple[str, str, list[str]]], delay: float) -> None:
    """Run the doubles until stdin closes; print the environment to record with."""
    with SlowCrawlbase(delay) as api, SlowLLM(delay) as llm:
        for url, markdown, _ in pages:
            api.add(url, Page(markdown=markdown))
        env = {
            "CRAWLBASE_TOKEN": TOKENS["normal"],
            "CRAWLBASE_JS_TOKEN": TOKENS["javascript"],
            "OPENAI_API_KEY": KEY,
            "CITECHECK_CRAWLBASE_URL": api.base_url,
            "OPENAI_BASE_URL": llm.base_url("openai"),
        }
        print(json.dumps(env), flush=True)
        sys.stdin.read()


@contextmanager
def doubles(
    pages: list[tuple[str, str, list[str]]], delay: float = 0.0
) -> Iterator[dict[str, str]]:
    """The doubles serving ``pages``, in a process of their own (as real services are:
    their work does not compete for the engine's interpreter); yields the
    environment the engine records with."""
    code = (
        "import json, sys\n"
        f"sys.path.insert(0, {str(ROOT)!r})\n"
        "from bench.corpus import serve\n"
        "serve(json.loads(sys.stdin.readline()), float(sys.argv[1]))\n"
    )
    with subprocess.Popen(
        [sys.executable, "-c", code, str(delay)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as proc:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(json.dumps(pages) + "\n")
        proc.stdin.flush()
        env: dict[str, str] = json.loads(proc.stdout.readline())
        try:
            yield env
        finally:
            proc.stdin.close()
            proc.wait(timeout=30)


@contextmanager
def doubles_process(
    module: str, payload: object, *argv: str, timeout: float = 120.0
) -> Iterator[tuple[Any, Callable[[str], Any]]]:
    """``module.serve(payload, *argv)`` in a process of its own (the doubles' work does
    not compete for the engine's interpreter). ``serve`` reads ``payload`` as one JSON
    line, prints one JSON line (what the benchmark needs to reach them), then answers
    each line it reads with one JSON line until stdin closes. Yields the first line and
    ``ask(line)``, which returns the answer to ``line``."""
    code = (
        "import json, sys\n"
        f"sys.path.insert(0, {str(ROOT)!r})\n"
        f"from {module} import serve\n"
        "serve(json.loads(sys.stdin.readline()), *sys.argv[1:])\n"
    )
    with subprocess.Popen(
        [sys.executable, "-c", code, *argv],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as proc:
        assert proc.stdin is not None and proc.stdout is not None
        stdin, stdout = proc.stdin, proc.stdout
        stdin.write(json.dumps(payload) + "\n")
        stdin.flush()
        first = json.loads(stdout.readline())

        def ask(line: str) -> Any:
            stdin.write(line + "\n")
            stdin.flush()
            return json.loads(stdout.readline())

        try:
            yield first, ask
        finally:
            stdin.close()
            proc.wait(timeout=timeout)
