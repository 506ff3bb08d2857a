"""uvicorn's configuration for the app: a deadline for request headers, the service's
log lines, a cap on connections."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from starlette.types import ASGIApp

from pytest_citecheck.frontends.service.app import log
from pytest_citecheck.frontends.service.config import ServiceConfig
from pytest_citecheck.frontends.service_defaults import MAX_CONNECTIONS

if TYPE_CHECKING:
    import uvicorn


def uvicorn_config(app: ASGIApp, config: ServiceConfig, **kwargs: Any) -> uvicorn.Config:
    """uvicorn's configuration for ``app``: its HTTP protocol closes a connection whose
    request headers have not all arrived within ``config.read_timeout`` seconds."""
    import h11
    import uvicorn
    from uvicorn.protocols.http.h11_impl import H11Protocol

    timeout = config.read_timeout

    class HeaderDeadline(H11Protocol):
        _header_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._arm()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._arm()  # the next request on this connection gets its own deadline

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def _arm(self) -> None:
            self._disarm()
            if not self.transport.is_closing():
                self._header_timer = self.loop.call_later(timeout, self._headers_late)

        def _disarm(self) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None

        def _headers_late(self) -> None:
            self._header_timer = None
            # IDLE: the request line and headers have not all arrived.
            if self.conn.their_state is not h11.IDLE or self.transport.is_closing():
                return
            if self.conn.trailing_data[0]:
                client = f"{self.client[0]}:{self.client[1]}" if self.client else "a client"
                log.info("%s sent no complete request headers within %g s", client, timeout)
                self.transport.write(
                    b"HTTP/1.1 408 Request Timeout\r\ncontent-length: 0\r\n"
                    b"connection: close\r\n\r\n"
                )
            self.transport.close()

    if "log_config" not in kwargs:
        # The service's own lines (a client that hung up, an audit problem) beside uvicorn's.
        import copy

        from uvicorn.config import LOGGING_CONFIG

        logging_config = copy.deepcopy(LOGGING_CONFIG)
        logging_config["loggers"]["pytest_citecheck"] = {
            "handlers": ["default"],
            "level": "INFO",
            "propagate": False,
        }
        kwargs["log_config"] = logging_config
    kwargs.setdefault("timeout_keep_alive", max(1, min(5, int(timeout))))
    # Connections (idle ones included) beyond this get uvicorn's immediate 503.
    kwargs.setdefault("limit_concurrency", MAX_CONNECTIONS)
    return uvicorn.Config(app, http=HeaderDeadline, **kwargs)
