"""Provider quotes on real Anthropic responses: the quote rule before and after, one run.

The experiment of the native-citations issue, rebuilt (``tests/native_quotes.py`` says
how): the real recorded Anthropic responses (``tests/data/native/anthropic_messages`` and
the recorded streams of ``--native2 PATH``, a folder of saved event lists) imported as a user
would, every cited URL served a page that holds the full text of every quote cited from
it (markdown: links, emphasis, list items, table rows, entities), an honest judge, the
loopback doubles. Two scenarios:

- **pages hold the quotes**: what the provider quoted is on the page;
- **pages changed**: the page no longer has it (the case a provider quote can be in
  months after the answer: the page changed, renders differently, or served a wall).

Each is verified twice in the same run:

- **before**: every quote matched in the markdown as it is (normalised, no ellipsis read)
  and every quote absent from the page ``fabricated``, whoever wrote it;
- **after**: quotes matched as a reader sees the page (rendered markdown, entities,
  ellipses), and a provider quote the page lacks judged on retrieval's passages and
  marked ``provider_quote_not_on_page``.

    python bench/native_quotes.py [--native2 PATH]

Nothing leaves the machine: the doubles listen on 127.0.0.1.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pytest_citecheck.claims.labels import Label  # noqa: E402
from pytest_citecheck.claims.results import Verdict  # noqa: E402
from tests.native_quotes import (  # noqa: E402
    RECORDED,
    as_if_written_by_the_user,
    exact_markdown_matching,
    experiment,
    load,
    served,
    verify,
)

# shared/ beside the checkout (main), or beside the folder of worktrees.
DEFAULT_NATIVE2 = next(
    (
        path
        for base in (ROOT.parent, ROOT.parents[1])
        if (path := base / "shared" / "reference" / "native2" / "anthropic_stream").is_dir()
    ),
    ROOT.parent / "shared" / "reference" / "native2" / "anthropic_stream",
)
COLUMNS = ("fabricated", "supported", "not_found", "other", "provider_quote_not_on_page")


def counts(verdicts: list[Verdict]) -> dict[str, int]:
    labels = Counter(v.label for v in verdicts)
    known = labels[Label.FABRICATED] + labels[Label.SUPPORTED] + labels[Label.NOT_FOUND]
    return {
        "fabricated": labels[Label.FABRICATED],
        "supported": labels[Label.SUPPORTED],
        "not_found": labels[Label.NOT_FOUND],
        "other": len(verdicts) - known,
        "provider_quote_not_on_page": sum(v.provider_quote_not_on_page for v in verdicts),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--native2", type=Path, default=DEFAULT_NATIVE2)
    args = parser.parse_args()
    paths = sorted(RECORDED.glob("*.json"))
    if args.native2.is_dir():
        paths += sorted(args.native2.glob("*.json"))
    exp = experiment(load(paths))
    cut = sum("..." in c.quote or "…" in c.quote for c in exp.citations if c.quote)
    print(
        f"{len(paths)} responses, {len(exp.claims)} claims, {len(exp.citations)} citations "
        f"with a provider quote ({cut} cut or elided with ...), {len(exp.quotes)} URLs"
    )
    for skipped in exp.skipped:
        print(f"  not imported: {skipped}")
    rows = []
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for scenario, stale in (("pages hold the quotes", False), ("pages changed", True)):
            with served(exp, stale=stale) as (api, llm):
                with exact_markdown_matching():
                    before = verify(
                        as_if_written_by_the_user(exp.claims), api, llm, Path(tmp, "b", scenario)
                    )
                after = verify(exp.claims, api, llm, Path(tmp, "a", scenario))
            rows.append((scenario, "before", counts(before)))
            rows.append((scenario, "after", counts(after)))
    elapsed = time.perf_counter() - started
    head = ("scenario", "rule", *COLUMNS)
    widths = [max(len(head[0]), *(len(r[0]) for r in rows)), 6, *(len(c) for c in COLUMNS)]
    print("  ".join(h.ljust(w) for h, w in zip(head, widths, strict=True)))
    for scenario, rule, figures in rows:
        cells = [scenario, rule, *(str(figures[c]) for c in COLUMNS)]
        print("  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)))
    print(f"({elapsed:.1f} s for {4 * len(exp.citations)} verifications)")


if __name__ == "__main__":
    main()
