"""Threads and executors are started only by the engine's run loop (and the service's
server, its own): a module that starts one elsewhere schedules claims beside the run
loop, which owns the pool, the stop, resume and the end of a run.

The check walks every module's AST for a call of ``Thread``, ``ThreadPoolExecutor``,
``ProcessPoolExecutor``, ``Timer`` or ``start_new_thread`` (by any spelling:
``threading.Thread(...)``, a name imported from ``threading``, ...). Each kind of
violation is planted in a throwaway package below, so the check is shown to catch it.
"""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "pytest_citecheck"
STARTERS = frozenset(
    {"Thread", "ThreadPoolExecutor", "ProcessPoolExecutor", "Timer", "start_new_thread"}
)
# The run loop, and the service's server (its request and webhook writer threads).
# The service's own: its server, and the webhook's per-job writers (large_audit/webhook.py,
# the delivery handling that the service's route hands each body to).
ALLOWED = ("engine/run_loop.py", "frontends/service/", "large_audit/webhook.py")


def thread_starts(root: Path) -> list[str]:
    """``path:line: call`` of every thread or executor started outside ``ALLOWED``."""
    found: list[str] = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if any(rel == allowed or rel.startswith(allowed) for allowed in ALLOWED):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            if called in STARTERS:
                found.append(f"{rel}:{node.lineno}: {ast.unparse(func)}(")
    return found


def test_only_the_run_loop_starts_threads() -> None:
    starts = thread_starts(PACKAGE)
    assert not starts, (
        "threads and executors are started only by pytest_citecheck/engine/run_loop.py "
        "(start_worker, RunLoop) and the service's "
        "server; move these there:\n" + "\n".join(starts)
    )


PLANTED = {
    "a.py": "import threading\nthreading.Thread(target=print).start()\n",
    "b.py": (
        "from concurrent.futures import ThreadPoolExecutor\n"
        "with ThreadPoolExecutor(2) as pool:\n    pass\n"
    ),
    "c.py": "import concurrent.futures as cf\ncf.ProcessPoolExecutor()\n",
    "d.py": "import _thread\n_thread.start_new_thread(print, ())\n",
    "e.py": "from threading import Timer\nTimer(1.0, print).start()\n",
}


@pytest.mark.parametrize("name", sorted(PLANTED))
def test_a_planted_thread_start_is_caught(tmp_path: Path, name: str) -> None:
    root = tmp_path / "pkg"
    (root / "engine").mkdir(parents=True)
    (root / "core.py").write_text("x = 1\n", encoding="utf-8")
    (root / name).write_text(textwrap.dedent(PLANTED[name]), encoding="utf-8")
    starts = thread_starts(root)
    assert len(starts) == 1
    assert starts[0].startswith(f"{name}:2: ")


def test_the_run_loop_and_the_server_may_start_threads(tmp_path: Path) -> None:
    root = tmp_path / "pkg"
    (root / "engine").mkdir(parents=True)
    (root / "frontends" / "service").mkdir(parents=True)
    body = "import threading\nthreading.Thread(target=print).start()\n"
    (root / "engine" / "run_loop.py").write_text(body, encoding="utf-8")
    (root / "frontends" / "service" / "server.py").write_text(body, encoding="utf-8")
    assert thread_starts(root) == []
    (root / "engine" / "pool.py").write_text(body, encoding="utf-8")
    assert thread_starts(root) == ["engine/pool.py:2: threading.Thread("]
