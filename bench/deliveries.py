"""Does ``citecheck serve`` acknowledge a storm of Crawler deliveries within 200 ms?

Crawlbase's Crawler wants every delivery answered (200/201/204) within 200 ms, and
crawls and delivers again (charged) when it is not. This starts the real
``citecheck serve --jobs-dir DIR`` (uvicorn, a service key, on 127.0.0.1) with one job
of ``rate x seconds`` pushed citations, then sends an open-loop storm: request *i*
is due at ``i / rate`` seconds, whether or not earlier ones were answered, over a
pool of keep-alive connections, and its ack latency is counted from when it was
due (so a server that falls behind shows it). Each delivery is what the Crawler
sends: a gzip-compressed page, ``rid``/``url``/status headers, the echoed job and
citation headers, the key in the webhook URL's query string.

Two baselines come first: the delivery storm against a trivial server (a process
that reads each request and answers 204, nothing else): what the client and the
machine can do at all; and, against the same ``citecheck serve``, the same storm
against ``GET /health``: what uvicorn and FastAPI cost without a delivery.

Prints each storm's p50/p99/max ack latency and how many acks took over 200 ms;
checks afterwards that the job's store holds every acknowledged delivery. Last line:
``deliveries: sent=<n> acked=<n> over_200ms=<n> p99_ms=<x>``.

    python bench/deliveries.py [--rate 1000] [--seconds 10] [--connections 64]
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from pytest_citecheck.core.providers import SERVICE_KEY_ENV
from pytest_citecheck.large_audit.job_store import (
    CITATION_HEADER,
    JOB_HEADER,
    JobState,
    JobStore,
    citation_id,
)

JOB = "storm"
KEY = "bench-deliveries-key-0123456789"
BUDGET_MS = 200.0
# The page's vocabulary: text that compresses about as well as a real page's.
VOCABULARY = (
    "water boils at one hundred degrees celsius sea level pressure the of and a in is that "
    "it was for on are as with his they at be this from have or by one had"
)


@dataclass
class Storm:
    """One storm's outcome."""

    name: str
    sent: int = 0
    statuses: dict[int, int] = field(default_factory=dict)
    latencies_ms: list[float] = field(default_factory=list)
    wall: float = 0.0

    @property
    def acked(self) -> int:
        return sum(n for status, n in self.statuses.items() if status in (200, 201, 204))

    def quantile(self, q: float) -> float:
        if not self.latencies_ms:
            return float("nan")
        ordered = sorted(self.latencies_ms)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    @property
    def over_budget(self) -> int:
        return sum(1 for ms in self.latencies_ms if ms > BUDGET_MS)

    def line(self) -> str:
        return (
            f"{self.name:<11} sent={self.sent} acked={self.acked} "
            f"statuses={dict(sorted(self.statuses.items()))} "
            f"throughput={self.acked / self.wall:.0f}/s p50_ms={self.quantile(0.5):.1f} "
            f"p99_ms={self.quantile(0.99):.1f} max_ms={max(self.latencies_ms, default=0):.1f} "
            f"over_200ms={self.over_budget}"
        )


def page_text(kb: int) -> str:
    rng = random.Random(0)
    vocabulary = VOCABULARY.split()
    words: list[str] = []
    while sum(len(w) + 1 for w in words) < kb * 1024:
        words.append(rng.choice(vocabulary))
    return "# A page\n\n" + " ".join(words)


def make_job(root: Path, n: int) -> None:
    """A job whose ``n`` citations were all pushed (their rids written down)."""
    store = JobStore.create(root, JOB)
    store.add((citation_id(f"c{i}", 1), f"https://example.com/{i}") for i in range(n))
    for citation, _ in store.take_for_push(n):
        store.mark_pushed(citation, f"rid-{citation}")
    store.close()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_server(jobs: Path, port: int, log: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, SERVICE_KEY_ENV: KEY}
    command = [sys.executable, "-m", "pytest_citecheck.frontends.cli", "serve"]
    command += ["--port", str(port), "--jobs-dir", str(jobs)]
    with log.open("wb") as out:
        server = subprocess.Popen(command, env=env, stdout=out, stderr=out)
    return listening(server, port, "citecheck serve", log)


def listening(
    server: subprocess.Popen[bytes], port: int, what: str, log: Path | None = None
) -> subprocess.Popen[bytes]:
    """``server`` once it accepts connections on ``port`` (or the bench stops, saying why)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if server.poll() is not None:
            said = log.read_text(errors="replace")[-2000:] if log is not None else ""
            sys.exit(f"{what} exited: {said}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return server
        except OSError:
            time.sleep(0.1)
    server.kill()
    sys.exit(f"{what} did not start within 60 s")


class _Trivial(asyncio.Protocol):
    """The least an HTTP/1.1 server can do: read each request (head and body, by its
    Content-Length) and answer 204. What the client alone can sustain is measured
    against it."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self.buffer = b""

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while (end := self.buffer.find(b"\r\n\r\n")) >= 0:
            length = 0
            for line in self.buffer[:end].split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            if len(self.buffer) < end + 4 + length:
                return
            self.buffer = self.buffer[end + 4 + length :]
            self.transport.write(b"HTTP/1.1 204 No Content\r\n\r\n")


async def serve_trivial(port: int) -> None:
    server = await asyncio.get_running_loop().create_server(_Trivial, "127.0.0.1", port)
    await server.serve_forever()


def start_trivial(port: int) -> subprocess.Popen[bytes]:
    """:class:`_Trivial` in a process of its own, like the real server."""
    server = subprocess.Popen([sys.executable, __file__, "--serve-trivial", str(port)])
    return listening(server, port, "the trivial server")


async def _exchange(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, request: bytes
) -> tuple[int, bool]:
    """Send one request, read its whole answer: the status and whether the
    connection stays open."""
    writer.write(request)
    await writer.drain()
    status = int((await reader.readline()).split()[1])
    length, keep = 0, True
    while (line := await reader.readline()) not in (b"\r\n", b""):
        name, _, value = line.partition(b":")
        name = name.strip().lower()
        if name == b"content-length":
            length = int(value)
        elif name == b"connection" and value.strip().lower() == b"close":
            keep = False
    if length:
        await reader.readexactly(length)
    return status, keep


async def storm(
    name: str, port: int, requests: list[bytes], rate: float, connections: int
) -> Storm:
    """Send ``requests`` open-loop at ``rate`` per second over ``connections``."""
    result = Storm(name)
    queue: asyncio.Queue[tuple[bytes, float] | None] = asyncio.Queue()

    async def worker() -> None:
        reader = writer = None
        while (item := await queue.get()) is not None:
            request, due = item
            status = 0
            try:
                if writer is None:
                    reader, writer = await asyncio.open_connection("127.0.0.1", port)
                assert reader is not None
                status, keep = await _exchange(reader, writer, request)
                if not keep:
                    writer.close()
                    writer = None
            except (OSError, asyncio.IncompleteReadError, ValueError, IndexError):
                if writer is not None:
                    writer.close()
                writer = None
            result.latencies_ms.append((time.perf_counter() - due) * 1000)
            result.statuses[status] = result.statuses.get(status, 0) + 1
        if writer is not None:
            writer.close()

    workers = [asyncio.create_task(worker()) for _ in range(connections)]
    start = time.perf_counter()
    for i, request in enumerate(requests):
        due = start + i / rate
        wait = due - time.perf_counter()
        if wait > 0:
            await asyncio.sleep(wait)
        queue.put_nowait((request, due))
        result.sent += 1
    for _ in workers:
        queue.put_nowait(None)
    await asyncio.gather(*workers)
    result.wall = time.perf_counter() - start
    return result


def delivery_requests(port: int, n: int, body: bytes) -> list[bytes]:
    out = []
    for i in range(n):
        citation = citation_id(f"c{i}", 1)
        head = (
            f"POST /crawler/deliveries?key={KEY} HTTP/1.1\r\n"
            f"Host: 127.0.0.1:{port}\r\n"
            "Content-Type: text/plain\r\n"
            "Content-Encoding: gzip\r\n"
            f"Content-Length: {len(body)}\r\n"
            "Original-Status: 200\r\nPC-Status: 200\r\n"
            f"rid: rid-{citation}\r\nurl: https://example.com/{i}\r\n"
            f"{JOB_HEADER}: {JOB}\r\n{CITATION_HEADER}: {citation}\r\n\r\n"
        )
        out.append(head.encode() + body)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=float, default=1000.0, help="requests per second")
    parser.add_argument("--seconds", type=float, default=10.0, help="how long each storm lasts")
    parser.add_argument("--connections", type=int, default=64, help="keep-alive connections")
    parser.add_argument("--page-kb", type=int, default=30, help="page size before gzip (KiB)")
    parser.add_argument("--serve-trivial", type=int, metavar="PORT", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_trivial:
        asyncio.run(serve_trivial(args.serve_trivial))
        return 0
    n = int(args.rate * args.seconds)
    body = gzip.compress(page_text(args.page_kb).encode())
    # The client's own capacity: the delivery storm against a server that does nothing.
    port = free_port()
    trivial = start_trivial(port)
    try:
        client = asyncio.run(
            storm("client", port, delivery_requests(port, n, body), args.rate, args.connections)
        )
    finally:
        trivial.terminate()
        trivial.wait(timeout=30)
    with tempfile.TemporaryDirectory(prefix="citecheck-deliveries-") as tmp:
        jobs = Path(tmp) / "jobs"
        make_job(jobs, n)
        port = free_port()
        server = start_server(jobs, port, Path(tmp) / "serve.log")
        try:
            health = f"GET /health HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode()
            print(
                f"{n} requests per storm at {args.rate:g}/s for {args.seconds:g} s over "
                f"{args.connections} connections; page {args.page_kb} KiB, {len(body)} bytes "
                f"gzip; {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}"
            )
            print(client.line())
            baseline = asyncio.run(storm("health", port, [health] * n, args.rate, args.connections))
            print(baseline.line())
            requests = delivery_requests(port, n, body)
            result = asyncio.run(storm("deliveries", port, requests, args.rate, args.connections))
            print(result.line())
        finally:
            server.terminate()
            server.wait(timeout=30)
        store = JobStore.open(jobs, JOB)
        assert store is not None
        kept = store.counts()[JobState.DELIVERED]
        print(f"kept in the job's store: {kept} (acknowledged: {result.acked})")
        if kept != result.acked:
            print("MISMATCH: an acknowledged delivery is missing from the store", file=sys.stderr)
    print(
        f"load average after: {os.getloadavg()[0]:.1f}; "
        f"p50 ratio to baseline: {result.quantile(0.5) / max(baseline.quantile(0.5), 1e-9):.1f}x; "
        f"median of baseline latencies {statistics.median(baseline.latencies_ms or [0]):.1f} ms"
    )
    print(
        f"deliveries: sent={result.sent} acked={result.acked} "
        f"over_200ms={result.over_budget} p99_ms={result.quantile(0.99):.1f}"
    )
    return 0 if kept == result.acked else 1


if __name__ == "__main__":
    sys.exit(main())
