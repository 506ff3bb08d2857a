"""One crawl of a page per run, however many claims cite it.

Each claim records into its own cassette, so a claim's replay needs no other file. While
recording, though, several claims of one run often cite the same page (an answer's
sentences share their sources; a deep-research report cites a source a dozen times), and
crawling it once per claim bills it once per claim. :class:`SharedReads` is the run's
memory of what it has read: the first claim to ask for a page sends the request; a claim
asking for the same GET (the same :func:`~pytest_citecheck.recording.matching.match_key`:
the token replaced by its placeholder) while it is in flight waits for that answer, and
one asking later gets it at once. Each claim still records the whole exchange into its own
cassette, the same bytes whichever claim sent it, so a recording does not depend on the
order the claims ran in (concurrency 4 writes what concurrency 1 does). Each claim's
``credits`` therefore stay what its recording costs alone; the Crawling API bills a shared
crawl once.

Only a successful reply read whole is shared
(:func:`pytest_citecheck.recording.transport.shared_size`): an error, a page over the size
cap or a picture is never handed to another claim (it asks for itself, as before). POSTs
(judge calls) are never shared: a judge asked the same question twice may answer
differently (samples), and that is the judge's to bill. The memory holds at most
:data:`MAX_SHARED_BYTES` of bodies; the oldest are forgotten first (a claim asking for one
of those crawls it again). A Crawler job shares nothing: it pushes, and is billed for,
every citation itself.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

# How much page text a run keeps for the claims still to come.
MAX_SHARED_BYTES = 256 * 1024 * 1024

R = TypeVar("R")


class SharedReads(Generic[R]):
    """The run's replies by request key, for every claim of the run (thread-safe).
    ``size(reply)``: the bytes a reply holds, None when it is not to be shared."""

    def __init__(self, size: Callable[[R], int | None], max_bytes: int = MAX_SHARED_BYTES) -> None:
        self.max_bytes = max_bytes
        self._size_of = size
        self._done: OrderedDict[Hashable, tuple[R, int]] = OrderedDict()
        self._size = 0
        self._in_flight: dict[Hashable, threading.Event] = {}
        self._lock = threading.Lock()

    def read(self, key: Hashable, fetch: Callable[[], R], wait: float | None = None) -> R:
        """The reply to ``key``: one this run already read, else ``fetch()``. A request
        already in flight is waited for at most ``wait`` seconds (None: as long as it
        takes), then ``fetch`` is called after all."""
        with self._lock:
            found = self._found(key)
            if found is not None:
                return found
            flight = self._in_flight.get(key)
            if flight is None:
                self._in_flight[key] = threading.Event()
        if flight is not None:
            flight.wait(wait)
            with self._lock:
                found = self._found(key)
            # None: it failed, or took too long: this claim asks itself.
            return fetch() if found is None else found
        try:
            reply = fetch()
            size = self._size_of(reply)
            if size is not None:
                with self._lock:
                    self._keep(key, reply, size)
            return reply
        finally:
            with self._lock:
                self._in_flight.pop(key).set()

    def _found(self, key: Hashable) -> R | None:
        kept = self._done.get(key)
        if kept is None:
            return None
        self._done.move_to_end(key)
        return kept[0]

    def _keep(self, key: Hashable, reply: R, size: int) -> None:
        if size > self.max_bytes:
            return
        self._done[key] = (reply, size)
        self._size += size
        while self._size > self.max_bytes:
            _, (_, oldest) = self._done.popitem(last=False)
            self._size -= oldest
