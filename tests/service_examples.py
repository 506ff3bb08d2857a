"""The ``/verify`` examples of the service documentation, as runnable requests.

The documentation shows each example as a ``console`` block: a ``curl`` command
that saves the reply and prints its status, then ``python -m json.tool`` on the
saved reply::

    $ curl -s -o reply.json -w 'HTTP %{http_code}\\n' http://127.0.0.1:8000/verify \\
        -H 'Content-Type: application/json' \\
        -d '{"claim": "...", "urls": ["..."]}'
    HTTP 200
    $ python -m json.tool reply.json
    {
        "id": "r000001",
        ...
    }

:func:`examples` reads them back (the request the curl line sends, the status and
JSON documented); :func:`with_replies` writes replies into the blocks, as
``python -m json.tool`` prints them. ``tests/integration/test_service_examples.py``
runs them against ``citecheck serve --record none``; ``scripts/record_examples.py
--service`` records them against the loopback doubles and writes the replies.
"""

from __future__ import annotations

import json
import re
import shlex
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import httpx

DOC_BASE_URL = "http://127.0.0.1:8000"
_BLOCK = re.compile(r"^```console\n(.*?)^```$", re.S | re.M)
_STATUS = re.compile(r"HTTP (\d{3})$")


@dataclass(frozen=True)
class Example:
    """One documented request and the reply the documentation gives for it."""

    command: str  # the curl command as written (continuation lines joined)
    method: str
    path: str
    headers: dict[str, str]
    body: bytes | None
    status: int
    reply: Any
    # Where the block's text is in the document (start, end).
    span: tuple[int, int]

    def send(self, base_url: str, timeout: float = 60) -> httpx.Response:
        """Send the request to a service at ``base_url`` instead of the documented one."""
        return httpx.request(
            self.method,
            base_url + self.path,
            headers=self.headers,
            content=self.body,
            timeout=timeout,
        )


def _commands(block: str) -> list[tuple[str, list[str]]]:
    """The block's ``$`` commands (continuations joined) and the lines each printed."""
    out: list[tuple[str, list[str]]] = []
    pending: str | None = None
    for line in block.splitlines():
        if pending is not None:
            pending += " " + line.strip()
            if not pending.endswith("\\"):
                out.append((pending, []))
                pending = None
            else:
                pending = pending[:-1].rstrip()
            continue
        if line.startswith("$ "):
            text = line[2:].rstrip()
            if text.endswith("\\"):
                pending = text[:-1].rstrip()
            else:
                out.append((text, []))
        elif out:
            out[-1][1].append(line)
    return out


def _request(command: str) -> tuple[str, str, dict[str, str], bytes | None]:
    argv = shlex.split(command)
    if argv[:1] != ["curl"]:
        raise ValueError(f"not a curl command: {command}")
    url: str | None = None
    headers: dict[str, str] = {}
    body: bytes | None = None
    args = iter(argv[1:])
    for arg in args:
        if arg in ("-s", "--silent"):
            continue
        if arg in ("-o", "-w"):
            next(args)
        elif arg in ("-H", "--header"):
            name, _, value = next(args).partition(":")
            headers[name.strip()] = value.strip()
        elif arg in ("-d", "--data"):
            body = next(args).encode()
        elif arg.startswith("http"):
            url = arg
        else:
            raise ValueError(f"{command}: the example parser does not know {arg!r}")
    if url is None or not url.startswith(DOC_BASE_URL):
        raise ValueError(f"{command}: the example must ask {DOC_BASE_URL}")
    return ("POST" if body is not None else "GET"), url[len(DOC_BASE_URL) :], headers, body


def examples(doc: str) -> list[Example]:
    """Every curl example of ``doc``, in order."""
    found = []
    for match in _BLOCK.finditer(doc):
        commands = _commands(match.group(1))
        curls = [(c, lines) for c, lines in commands if c.startswith("curl ")]
        if not curls:
            continue
        [(curl, printed)] = curls
        shown = [lines for c, lines in commands if c.startswith("python -m json.tool")]
        status = _STATUS.match(printed[0]) if printed else None
        method, path, headers, body = _request(curl)
        found.append(
            Example(
                command=curl,
                method=method,
                path=path,
                headers=headers,
                body=body,
                status=int(status.group(1)) if status else 0,
                reply=json.loads("\n".join(shown[0])) if shown and shown[0] else None,
                span=match.span(1),
            )
        )
    return found


def json_tool(value: Any) -> str:
    """``value`` as ``python -m json.tool`` prints it."""
    return json.dumps(value, indent=4)


def with_replies(doc: str, replies: list[tuple[int, Any]]) -> str:
    """``doc`` with each example's printed status and JSON replaced by ``replies``."""
    found = examples(doc)
    if len(found) != len(replies):
        raise ValueError(f"{len(found)} examples, {len(replies)} replies")
    out = doc
    for example, (status, reply) in reversed(list(zip(found, replies, strict=True))):
        start, end = example.span
        lines: list[str] = []
        for command, _ in _commands(doc[start:end]):
            lines.append("$ " + _wrapped(command))
            if command.startswith("curl "):
                lines.append(f"HTTP {status}")
            elif command.startswith("python -m json.tool"):
                lines.append(json_tool(reply))
        out = out[:start] + "\n".join(lines) + "\n" + out[end:]
    return out


def _wrapped(command: str) -> str:
    """A curl command on several lines: the URL, then each header and the body."""
    if not command.startswith("curl "):
        return command
    parts = re.split(r" (?=-H |-d )", command)
    return " \\\n    ".join(parts)


def free_port() -> int:
    """A port nothing listens on now (the service binds it a moment later)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def citecheck_serve(
    args: Sequence[str], env: Mapping[str, str], cwd: Path, timeout: float = 60
) -> Iterator[str]:
    """``citecheck serve ARGS`` as a process on a free 127.0.0.1 port; yields its base
    URL once ``/health`` answers, and stops the process afterwards."""
    port = free_port()
    command = [sys.executable, "-m", "pytest_citecheck.frontends.cli", "serve"]
    command += ["--host", "127.0.0.1", "--port", str(port), *args]
    # Its log goes to a file: a pipe nobody reads would stall a chatty server.
    with tempfile.TemporaryFile(mode="w+", encoding="utf-8") as log:
        process = subprocess.Popen(command, cwd=cwd, env=dict(env), stdout=log, stderr=log)
        try:
            url = f"http://127.0.0.1:{port}"
            _wait_until_up(process, url, log, timeout)
            yield url
        finally:
            process.terminate()
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _wait_until_up(
    process: subprocess.Popen[bytes], url: str, log: IO[str], timeout: float
) -> None:
    deadline = time.monotonic() + timeout
    while True:
        if process.poll() is not None:
            log.seek(0)
            raise RuntimeError(f"citecheck serve exited {process.returncode}:\n{log.read()}")
        try:
            if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError("citecheck serve did not answer /health in time")
        time.sleep(0.1)
