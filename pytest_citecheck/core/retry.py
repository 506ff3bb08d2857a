"""Capped exponential backoff that honours ``Retry-After``, for the Crawling API and judges.

One loop, sync and async, for every HTTP call citecheck makes:

- transient statuses and transport errors (timeouts, refused or dropped
  connections) are retried with :class:`RetryPolicy`'s delays;
- ``retry-after-ms`` / ``retry-after`` / ``x-should-retry`` are honoured, and a
  caller may say "do not retry this one" even on a transient status (a 429
  that means the account is out of quota);
- when every try failed at the transport level, :class:`GaveUp` carries the last
  error for the caller to classify;
- a try whose request was written whole before its connection failed (a reset, a
  read timeout) reached the server, which may have done -- and billed -- the work:
  it is counted in :attr:`Sent.unanswered` (and :attr:`GaveUp.unanswered`), so a
  judge's usage counts it as billed ("billed, unanswered") instead of hiding it;
- ``deadline`` bounds one request, retries and every wait included -- for a
  free slot under the service's :class:`~pytest_citecheck.core.limits.AdaptiveLimit`
  and for a ``Retry-After`` pause: each try gets only the time that is left as
  its timeout, every read and write on the connection waits at most what is left
  (so a server that drips its headers a byte at a time is cut off too), the
  transport (:mod:`pytest_citecheck.recording.transport`) stops reading a body when
  it runs out, and no retry is started that could not finish in time. A
  ``Retry-After`` longer than what is left ends the request at once, the reason
  in :attr:`Sent.stopped` (``rate limited: retry after 30 s, beyond the 20 s
  deadline``) for the caller's message; only the request that received it waits
  a pause out.

Under replay the recorded sequence (e.g. 429 then 200) is played back as it
was recorded, so the plugin passes ``sleep=lambda s: None``: the retry logic
runs identically, the wall clock is not spent.
"""

from __future__ import annotations

import email.utils
import logging
import threading
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx

from pytest_citecheck.core.limits import AdaptiveLimit
from pytest_citecheck.core.terms import NEUTRAL, Terms

TRANSIENT_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504, 520, 522, 529, 599})


def retry_after_seconds(headers: Mapping[str, str]) -> float | None:
    """Delay asked for by ``retry-after-ms`` or ``retry-after`` (seconds or HTTP date)."""
    lowered = {k.lower(): v for k, v in headers.items()}
    if "retry-after-ms" in lowered:
        try:
            return max(0.0, float(lowered["retry-after-ms"]) / 1000)
        except ValueError:
            pass
    value = lowered.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        parsed = email.utils.parsedate_to_datetime(value) if value else None
        if parsed is None:
            return None
        return max(0.0, parsed.timestamp() - time.time())


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long to retry a transient failure."""

    attempts: int = 4  # total tries, the first included
    base: float = 0.5
    cap: float = 8.0
    # A server asking for more than this is not retried (the SDKs do the same at 120 s).
    max_retry_after: float = 60.0
    retry_statuses: Collection[int] = TRANSIENT_STATUSES
    sleep: Callable[[float], None] = field(default=time.sleep, compare=False)
    # Seconds one request may take, every try and wait included (None: no limit).
    deadline: float | None = None
    # The service's adaptive limit on requests in flight (None: unlimited; replay).
    limiter: AdaptiveLimit | None = field(default=None, compare=False)
    # How a message names the deadline's option (the front end's words).
    terms: Terms = field(default=NEUTRAL, compare=False)

    def delay(self, attempt: int, headers: Mapping[str, str]) -> float | None:
        """Seconds to wait before try ``attempt + 1`` (0-based), or None to give up."""
        if attempt + 1 >= self.attempts:
            return None
        asked = retry_after_seconds(headers)
        if asked is not None:
            return asked if asked <= self.max_retry_after else None
        return min(self.cap, self.base * 2.0**attempt)


log = logging.getLogger("pytest_citecheck")

# Given a response with a transient status: True when it must not be retried.
IsFinal = Callable[[httpx.Response], bool]


@dataclass(frozen=True)
class Sent:
    """The last response and how many tries it took; ``stopped`` says why a
    response the server asked to be retried was not (None: nothing to say)."""

    response: httpx.Response
    attempts: int
    stopped: str | None = None
    # Tries written whole before their connection failed: received, maybe billed,
    # never answered (the retry that followed sent the same request again).
    unanswered: int = 0


class GaveUp(Exception):
    """Every try failed at the transport level; ``__cause__`` is the last error."""

    def __init__(self, attempts: int, error: BaseException, unanswered: int = 0) -> None:
        super().__init__(f"{type(error).__name__} after {attempts} attempt(s)")
        self.attempts = attempts
        self.error = error
        # Tries written whole before their connection failed (see Sent.unanswered).
        self.unanswered = unanswered


# How resolvers word "this name has no address" when there is no DNS answer at all.
_NO_NAME = (
    "name or service not known",
    "temporary failure in name resolution",
    "nodename nor servname",
    "getaddrinfo failed",
    "no address associated with hostname",
)


def unresolved_host(error: BaseException) -> str | None:
    """The host whose name did not resolve when ``error`` (or what caused it) is a
    name-resolution failure; None for any other error."""
    import socket

    seen: BaseException | None = error
    resolved = True
    while seen is not None and resolved:
        resolved = not (
            isinstance(seen, socket.gaierror) or any(s in str(seen).lower() for s in _NO_NAME)
        )
        seen = seen.__cause__ or seen.__context__
    if resolved:
        return None
    host = None
    if isinstance(error, httpx.RequestError):
        try:
            host = error.request.url.host
        except RuntimeError:  # raised without a request
            host = None
    return host or "the host"


def transport_text(error: BaseException) -> str:
    """A transport error in words: ``ConnectError: ...``; a name that does not
    resolve names its host and says the machine looks offline."""
    host = unresolved_host(error)
    if host is not None:
        return f"cannot resolve {host} ({error}): you look offline"
    return f"{type(error).__name__}: {error}"


def _wait_after_response(
    policy: RetryPolicy,
    attempt: int,
    response: httpx.Response,
    is_final: IsFinal,
    deadline: _Deadline,
) -> tuple[float | None, str | None]:
    """Seconds to wait before retrying ``response`` (None: return it), and why a
    ``Retry-After`` the server asked for is not waited out (None: nothing to say)."""
    should = response.headers.get("x-should-retry", "").lower()
    if should == "false":
        return None, None
    if response.status_code not in policy.retry_statuses and should != "true":
        return None, None
    if is_final(response) or attempt + 1 >= policy.attempts:
        return None, None
    asked = retry_after_seconds(response.headers)
    if asked is not None and asked > policy.max_retry_after:
        why = f"more than the {policy.max_retry_after:g} s citecheck waits at most"
        return None, f"rate limited: retry after {asked:g} s, {why}"
    wait = policy.delay(attempt, response.headers)
    if wait is None or deadline.allows(wait):
        return wait, None
    if asked is not None:
        # Failing now beats waiting for a retry that cannot finish in time.
        return None, f"rate limited: retry after {asked:g} s, {deadline.beyond()}"
    return None, None


def _never_final(response: httpx.Response) -> bool:
    return False


def _log_retry(request: httpx.Request, what: str, wait: float, attempt: int, total: int) -> None:
    log.info(
        "%s %s: %s; retrying in %.3g s (try %d of %d)",
        request.method,
        request.url.path,
        what,
        wait,
        attempt + 2,
        total,
    )


# Where a try's deadline (a ``_Deadline``) travels to the transport.
DEADLINE_EXTENSION = "citecheck.deadline"
# httpcore's trace events that hand over a new connection's network stream.
_NEW_STREAM_EVENTS = frozenset({"connection.connect_tcp.complete", "connection.start_tls.complete"})
# httpcore's trace events that say a request's body was written whole.
_WRITTEN_EVENTS = frozenset(
    {"http11.send_request_body.complete", "http2.send_request_body.complete"}
)
# The deadline of the try this thread is sending (read by the streams' reads and writes).
_sending = threading.local()


def _deadline_bound(operation: Callable[[Any, float | None], Any]) -> Callable[..., Any]:
    def bounded(data: Any, timeout: float | None = None) -> Any:
        deadline: _Deadline | None = getattr(_sending, "deadline", None)
        left = None if deadline is None else deadline.left()
        if left is not None:
            # Past the deadline, the next read or write times out at once.
            left = max(left, 0.001)
            timeout = left if timeout is None else min(timeout, left)
        return operation(data, timeout)

    return bounded


def _bound_stream(stream: Any) -> None:
    """Every read and write on ``stream`` waits at most what is left of the deadline of
    the request using it (a pooled connection serves later requests too).

    httpx's timeouts are per socket operation: a server that drips its headers or
    body a byte at a time would otherwise keep a request going far past its deadline."""
    if stream is None or getattr(stream, "_citecheck_bounded", False):
        return
    try:
        for name in ("read", "write"):
            setattr(stream, name, _deadline_bound(getattr(stream, name)))
        stream._citecheck_bounded = True
    except AttributeError:  # a stream that cannot be wrapped keeps httpx's own timeouts
        return


class _BoundNewStreams:
    """httpcore's ``trace`` extension: bounds each new connection's stream
    (:func:`_bound_stream`), notes when the request was written whole, then passes
    the event on to a caller's own tracer."""

    def __init__(self, previous: Callable[[str, dict[str, Any]], Any] | None) -> None:
        self.previous = previous

    def __call__(self, name: str, info: dict[str, Any]) -> Any:
        if name in _NEW_STREAM_EVENTS:
            _bound_stream(info.get("return_value"))
        elif name in _WRITTEN_EVENTS:
            _sending.written = True
        return None if self.previous is None else self.previous(name, info)


class DeadlineExceeded(httpx.TimeoutException):
    """The request's overall deadline (``RetryPolicy.deadline``) ran out."""


class _Deadline:
    """The time left for one request under ``policy.deadline``."""

    def __init__(self, seconds: float | None, name: str = "the timeout") -> None:
        self.seconds = seconds
        self.name = name
        self.end = None if seconds is None else time.monotonic() + seconds

    def left(self) -> float | None:
        return None if self.end is None else self.end - time.monotonic()

    def left_or_none(self) -> float | None:
        """What is left, never negative (None: no deadline)."""
        left = self.left()
        return None if left is None else max(0.0, left)

    def arm(self, request: httpx.Request, attempt: int) -> None:
        """Give this try only the time that is left (raises when none is); watch
        whether its request is written whole."""
        trace = request.extensions.get("trace")
        if not isinstance(trace, _BoundNewStreams):
            request.extensions["trace"] = _BoundNewStreams(trace)
        left = self.left()
        if left is None:
            return
        if left <= 0:
            raise GaveUp(attempt, self.exceeded(request))
        timeout = request.extensions.get("timeout") or {}
        request.extensions["timeout"] = {
            k: left if v is None else min(v, left)
            for k, v in {**dict.fromkeys(("connect", "read", "write", "pool")), **timeout}.items()
        }
        request.extensions[DEADLINE_EXTENSION] = self

    def expired(self) -> bool:
        left = self.left()
        return left is not None and left <= 0.05

    def check(self, request: httpx.Request) -> None:
        """Raise :class:`DeadlineExceeded` when the time is up (the transport calls
        this while it reads a body)."""
        if self.end is not None and time.monotonic() > self.end:
            raise self.exceeded(request)

    def blame(self, request: httpx.Request, exc: BaseException) -> BaseException:
        """A timeout when the deadline is (nearly) up is the deadline's doing."""
        if isinstance(exc, httpx.TimeoutException) and self.expired():
            return self.exceeded(request)
        return exc

    def allows(self, wait: float) -> bool:
        left = self.left()
        return left is None or wait < left

    def beyond(self) -> str:
        """``beyond the 20 s deadline (citecheck_timeout; 12 s left)``."""
        left = self.left()
        spent = self.seconds is not None and left is not None and self.seconds - left >= 1
        still = f"; {max(0.0, left or 0.0):.0f} s left" if spent else ""
        return f"beyond the {self.seconds:g} s deadline ({self.name}{still})"

    def no_slot(self, request: httpx.Request, limiter: AdaptiveLimit) -> httpx.TimeoutException:
        most = int(limiter.limit)
        return DeadlineExceeded(
            f"no free slot within the {self.seconds:g} s deadline ({self.name}): "
            f"{most} request{'' if most == 1 else 's'} in flight to {limiter.name} at most",
            request=request,
        )

    def exceeded(self, request: httpx.Request) -> httpx.TimeoutException:
        return DeadlineExceeded(
            f"no complete answer within the {self.seconds:g} s deadline ({self.name})",
            request=request,
        )


def send(
    client: httpx.Client,
    request: httpx.Request,
    policy: RetryPolicy,
    is_final: IsFinal = _never_final,
) -> Sent:
    """Send ``request``; retry transient statuses and transport errors.

    Returns the last response, which may still be an error status. Raises
    :class:`GaveUp` when the last try failed at the transport level or the
    deadline ran out before any answer.
    """
    deadline = _Deadline(policy.deadline, policy.terms.option("timeout"))
    limiter = policy.limiter
    attempt = 0
    unanswered = 0
    while True:
        # Waiting for a slot is part of the request: the deadline bounds it too.
        if limiter is not None and not limiter.acquire(deadline.left_or_none()):
            raise GaveUp(attempt, deadline.no_slot(request, limiter), unanswered)
        try:
            deadline.arm(request, attempt)
            _sending.deadline = deadline
            _sending.written = False
            try:
                response = client.send(request)
            finally:
                _sending.deadline = None
        except (httpx.TransportError, OSError) as exc:
            if limiter is not None:
                limiter.release(None)
            # Written whole, then cut: the server has it (and may bill it).
            unanswered += bool(getattr(_sending, "written", False))
            wait = policy.delay(attempt, {})
            if wait is None or not deadline.allows(wait):
                raise GaveUp(attempt + 1, deadline.blame(request, exc), unanswered) from exc
            _log_retry(request, type(exc).__name__, wait, attempt, policy.attempts)
        except BaseException:
            if limiter is not None:
                limiter.release(None)
            raise
        else:
            if limiter is not None:
                limiter.release(response.status_code)
            wait, stopped = _wait_after_response(policy, attempt, response, is_final, deadline)
            if wait is None:
                return Sent(response, attempt + 1, stopped, unanswered)
            _log_retry(request, f"HTTP {response.status_code}", wait, attempt, policy.attempts)
            response.close()
        if limiter is not None and wait > 0:
            # Only this request waits the pause out, holding no slot.
            with limiter.pausing(wait):
                policy.sleep(wait)
        else:
            policy.sleep(wait)
        attempt += 1
