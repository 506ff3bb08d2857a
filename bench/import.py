"""How long importing one OpenAI Responses answer with many url_citation annotations
takes: each annotation cites its own sentence through the marker printed after it.

Prints a table (annotations, seconds, claims) and a last line
``import: annotations=<n> seconds=<x>`` for the largest answer. No network.

    python bench/import.py [N ...]        # default: 1000 10000
"""

from __future__ import annotations

import sys
import time
from typing import Any

from pytest_citecheck.claims.importers import import_response


def response(annotations: int) -> dict[str, Any]:
    """One answer of ``annotations`` cited sentences, each with its own page."""
    parts: list[str] = []
    listed: list[dict[str, Any]] = []
    length = 0
    for n in range(annotations):
        url = f"https://example{n % 97}.org/page/{n}"
        sentence = f"Fact number {n} is stated here."
        marker = f" ([example{n % 97}.org]({url}))"
        start = length + len(sentence)
        listed.append(
            {
                "type": "url_citation",
                "url": url,
                "title": f"Page {n}",
                "start_index": start,
                "end_index": start + len(marker),
            }
        )
        piece = sentence + marker + " "
        parts.append(piece)
        length += len(piece)
    text = "".join(parts)
    content = [{"type": "output_text", "text": text, "annotations": listed}]
    return {"id": "resp_bench", "output": [{"type": "message", "content": content}]}


def main(argv: list[str]) -> int:
    sizes = [int(a) for a in argv] or [1000, 10000]
    print(f"{'annotations':>12} {'seconds':>9} {'claims':>8}")
    last = (0, 0.0)
    for size in sizes:
        data = response(size)
        began = time.perf_counter()
        answer = import_response(data, answer_id="bench")
        seconds = time.perf_counter() - began
        if len(answer.claims) != size:
            print(f"wrong: {size} annotations gave {len(answer.claims)} claims", file=sys.stderr)
            return 1
        print(f"{size:>12} {seconds:>9.2f} {len(answer.claims):>8}")
        last = (size, seconds)
    print(f"import: annotations={last[0]} seconds={last[1]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
