"""uvicorn's configuration for the app: a deadline for request headers, connections
still waiting for them capped per client address and in all, the service's log lines,
an access log without query strings, a cap on requests being served."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from starlette.types import ASGIApp

from pytest_citecheck.frontends.service.config import ServiceConfig
from pytest_citecheck.frontends.service.defaults import (
    MAX_CONNECTIONS,
    MAX_WAITING,
    MAX_WAITING_PER_CLIENT,
)

if TYPE_CHECKING:
    import uvicorn


def uvicorn_config(app: ASGIApp, config: ServiceConfig, **kwargs: Any) -> uvicorn.Config:
    """uvicorn's configuration for ``app``: its HTTP protocol closes a connection whose
    request headers have not all arrived within ``config.read_timeout`` seconds, does
    not count such connections against the connection limit and caps them per client
    address; its access log shows no query string
    (:mod:`pytest_citecheck.frontends.service.http`)."""
    import uvicorn

    from pytest_citecheck.frontends.service.http import (
        HeaderWaits,
        drop_query_strings,
        protocol_class,
    )
    from pytest_citecheck.frontends.service.webhook_route import acks_unlogged

    timeout = config.read_timeout
    waits = HeaderWaits(per_client=MAX_WAITING_PER_CLIENT, total=MAX_WAITING)
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
    # Requests being served beyond this get uvicorn's immediate 503 (a connection
    # still waiting for its request headers is not counted: the waits' caps bound those).
    kwargs.setdefault("limit_concurrency", MAX_CONNECTIONS)
    uvicorn_settings = uvicorn.Config(app, http=protocol_class(timeout, waits), **kwargs)
    # After uvicorn configured logging: a key sent as ?key= never reaches the access log.
    access = logging.getLogger("uvicorn.access")
    access.addFilter(acks_unlogged)
    access.addFilter(drop_query_strings)
    return uvicorn_settings
