"""The whole Crawler chain on loopback, for tests and benchmarks: real processes.

``citecheck batch --via-crawler`` (the pusher and verifier) and ``citecheck serve
--jobs-dir`` (the webhook receiver) each run as a process of their own, so either can
be killed with SIGKILL and started again; the Crawler itself is
:class:`~tests.doubles.crawler.CrawlerDouble`, which delivers to the receiver's
webhook URL (the service key in its query string, as a Crawler's webhook carries it).

:class:`Receiver` keeps its port across restarts, so the webhook URL the double was
given stays valid; while it is down the double's deliveries fail and are retried, as
Crawlbase retries them.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from pytest_citecheck.core.providers import SERVICE_KEY_ENV

CLI = [sys.executable, "-m", "pytest_citecheck.frontends.cli"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Receiver:
    """``citecheck serve --jobs-dir JOBS`` on ``127.0.0.1:<port>`` with a service key,
    its output appended to ``log``."""

    def __init__(self, jobs: Path, key: str, log: Path, port: int | None = None) -> None:
        self.jobs, self.key, self.log = jobs, key, log
        self.port = port if port is not None else free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def webhook(self) -> str:
        return f"http://127.0.0.1:{self.port}/crawler/deliveries?key={self.key}"

    def start(self, timeout: float = 60.0) -> Receiver:
        env = {**os.environ, SERVICE_KEY_ENV: self.key}
        command = [*CLI, "serve", "--port", str(self.port), "--jobs-dir", str(self.jobs)]
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(command, env=env, stdout=out, stderr=out)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"citecheck serve exited: {self.tail()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return self
            except OSError:
                time.sleep(0.05)
        self.kill()
        raise RuntimeError(f"citecheck serve did not start within {timeout:g} s: {self.tail()}")

    def kill(self) -> None:
        """SIGKILL: no shutdown, nothing flushed."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()

    def tail(self) -> str:
        return self.log.read_text(errors="replace")[-2000:] if self.log.is_file() else ""

    def __enter__(self) -> Receiver:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def crawler_env(crawler_base: str, token: str, judge_base: str, judge_key: str) -> dict[str, str]:
    """The environment a pusher runs with: its Crawling API (the Crawler double), its
    token, and an OpenAI judge on the LLM double."""
    return {
        **os.environ,
        "CRAWLBASE_TOKEN": token,
        "CITECHECK_CRAWLBASE_URL": crawler_base,
        "OPENAI_API_KEY": judge_key,
        "OPENAI_BASE_URL": judge_base,
    }


def without_secrets(environ: Mapping[str, str]) -> dict[str, str]:
    """``environ`` with no token or judge key: what an offline replay runs with."""
    secret = ("CRAWLBASE_TOKEN", "CRAWLBASE_JS_TOKEN", "OPENAI_API_KEY", "ANTHROPIC_API_KEY")
    return {k: v for k, v in environ.items() if k not in secret}


def start_batch(
    args: Sequence[str], env: Mapping[str, str], cwd: Path, log: Path, *, python: Sequence[str] = ()
) -> subprocess.Popen[bytes]:
    """``citecheck batch ARGS`` in a process of its own (``python``: another way to
    start the same command line, e.g. ``[sys.executable, "-c", CODE]``)."""
    command = [*python, "batch", *args] if python else [*CLI, "batch", *args]
    with log.open("ab") as out:
        return subprocess.Popen(command, env=dict(env), cwd=cwd, stdout=out, stderr=out)
