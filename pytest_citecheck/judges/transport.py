"""Sending one judge request with retries, sync or async.

The backoff itself is :class:`pytest_citecheck.retry.RetryPolicy` (capped
exponential, ``retry-after-ms``/``retry-after`` honoured, bounded attempts);
this module only adds what judges need on top of :func:`pytest_citecheck.retry.send`:

- a provider may say "do not retry this one" even on a transient status (a 429
  that means the account is out of quota, ``x-should-retry: false``);
- an async twin, so ``ajudge`` retries exactly like ``judge``;
- the number of tries made, for error messages.

Transport errors (timeouts, refused or dropped connections) are retried too;
when every try failed the last one is raised for the caller to classify.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import httpx

from pytest_citecheck.retry import RetryPolicy

log = logging.getLogger("pytest_citecheck.judges")

# Given a response with a transient status: True when it must not be retried.
IsFinal = Callable[[httpx.Response], bool]
AsyncSleep = Callable[[float], Awaitable[None]]


@dataclass(frozen=True)
class Sent:
    """The last response and how many tries it took."""

    response: httpx.Response
    attempts: int


class GaveUp(Exception):
    """Every try failed at the transport level; ``__cause__`` is the last error."""

    def __init__(self, attempts: int, error: BaseException) -> None:
        super().__init__(f"{type(error).__name__} after {attempts} attempt(s)")
        self.attempts = attempts
        self.error = error


def _wait_after_response(
    policy: RetryPolicy, attempt: int, response: httpx.Response, is_final: IsFinal
) -> float | None:
    """Seconds to wait before retrying ``response``, or None to return it."""
    should = response.headers.get("x-should-retry", "").lower()
    if should == "false":
        return None
    if response.status_code not in policy.retry_statuses and should != "true":
        return None
    if is_final(response):
        return None
    return policy.delay(attempt, response.headers)


def _never_final(response: httpx.Response) -> bool:
    return False


def _log_retry(request: httpx.Request, what: str, wait: float, attempt: int, total: int) -> None:
    log.info(
        "judge %s %s: %s; retrying in %.3g s (try %d of %d)",
        request.method, request.url.path, what, wait, attempt + 2, total,
    )


def send(
    client: httpx.Client,
    request: httpx.Request,
    policy: RetryPolicy,
    is_final: IsFinal = _never_final,
) -> Sent:
    """Send ``request``; retry transient statuses and transport errors.

    Returns the last response, which may still be an error status. Raises
    :class:`GaveUp` when the last try failed at the transport level.
    """
    attempt = 0
    while True:
        try:
            response = client.send(request)
        except (httpx.TransportError, OSError) as exc:
            wait = policy.delay(attempt, {})
            if wait is None:
                raise GaveUp(attempt + 1, exc) from exc
            _log_retry(request, type(exc).__name__, wait, attempt, policy.attempts)
        else:
            wait = _wait_after_response(policy, attempt, response, is_final)
            if wait is None:
                return Sent(response, attempt + 1)
            _log_retry(request, f"HTTP {response.status_code}", wait, attempt, policy.attempts)
            response.close()
        policy.sleep(wait)
        attempt += 1


def async_sleep_for(policy: RetryPolicy) -> AsyncSleep:
    """The async counterpart of ``policy.sleep``.

    The default (``time.sleep``) becomes ``asyncio.sleep``; an injected sleep
    (tests, replay) is called as is, so a no-op stays a no-op.
    """
    if policy.sleep is time.sleep:
        return asyncio.sleep
    sync_sleep = policy.sleep

    async def sleep(seconds: float) -> None:
        sync_sleep(seconds)

    return sleep


async def asend(
    client: httpx.AsyncClient,
    request: httpx.Request,
    policy: RetryPolicy,
    is_final: IsFinal = _never_final,
) -> Sent:
    """The async twin of :func:`send` (same decisions, same delays)."""
    sleep = async_sleep_for(policy)
    attempt = 0
    while True:
        try:
            response = await client.send(request)
        except (httpx.TransportError, OSError) as exc:
            wait = policy.delay(attempt, {})
            if wait is None:
                raise GaveUp(attempt + 1, exc) from exc
            _log_retry(request, type(exc).__name__, wait, attempt, policy.attempts)
        else:
            wait = _wait_after_response(policy, attempt, response, is_final)
            if wait is None:
                return Sent(response, attempt + 1)
            _log_retry(request, f"HTTP {response.status_code}", wait, attempt, policy.attempts)
            await response.aclose()
        await sleep(wait)
        attempt += 1
