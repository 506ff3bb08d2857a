"""``citecheck serve``: verification over HTTP, a thin front end over the engine.

- ``GET /health`` -- 200 ``{"status": "ok"}``; with the key (or when the
  service runs without one), also the version, the judge, the slots in use and
  which tokens and keys are configured, by variable name only (never a value);
- ``POST /verify {"claim", "urls", "judge"?}`` -- the claim label and one
  verdict per URL (url, label, reason, evidence_quote, confidence, final_url,
  original_status, rid);
- ``POST /crawler/deliveries`` -- with ``jobs_dir`` (``--jobs-dir``), the webhook of
  Crawlbase's Crawler: each delivered page is kept in its job's store
  (:mod:`pytest_citecheck.frontends.service.webhook_route` lists its checks);
- OpenAPI at ``/docs`` (and ``/openapi.json``).

The service spends the operator's credits, so every request is checked before
anything is spent, in this order:

1. the ``Host`` header is one of ``allowed_hosts`` (400): a DNS-rebinding page
   cannot reach a loopback service under its own name;
2. ``Authorization: Bearer <key>`` when the service has a key (401, compared in
   constant time); :func:`binding_problem` makes a key mandatory off loopback;
3. the body is ``application/json`` (415): a cross-site form or ``text/plain``
   post cannot be sent without a CORS preflight, which this service never grants;
4. the body arrives within ``read_timeout`` (408) and is at most
   ``max_body_bytes`` (413);
5. the JSON has no duplicate keys and no deep nesting, the claim and URLs
   follow the claim files' schema, at most ``max_urls`` URLs and
   ``max_claim_chars`` characters (422);
6. the judge is one a provider serves (422) and one the operator allows (403);
7. every URL passes the URL policy (422, ``url_refused``;
   :mod:`pytest_citecheck.stages.url_policy`);
8. tokens and keys are configured (503 naming the variable; replaying a recorded
   request needs none) and the audit index can be written now (503);
9. a verification slot frees up within ``queue_wait`` seconds (503 with
   ``Retry-After``; at most ``concurrency`` claims are verified at once).

With ``record_mode`` and ``cassettes`` (``--record MODE --cassettes DIR``) each
request records into or replays from its own cassette, named by what it verifies
(:func:`~pytest_citecheck.recording.recorder.request_cassette_name`); requests for
one cassette take turns (:mod:`pytest_citecheck.recording.lock`), so it is recorded
once. A request with no recording to replay is 404, one whose recording does not fit
it 409, the detail naming the cassette inside the folder and the fix.

A failure after the spending (the audit index locked meanwhile) still answers
the verdicts, with ``audit_problem`` saying what was not recorded. Details
never show an internal URL (:func:`~pytest_citecheck.stages.url_policy.hide_internal_urls`).
Slow request headers are cut off by :func:`uvicorn_config`'s protocol; a client
that hangs up mid-body is one log line. With ``audit`` set, each request's
citations are appended to the audit index (one run id per server process; the
claim id is the request id returned in the response).

Needs the ``service`` extra (FastAPI, uvicorn); nothing here is imported by
the plugin.
"""

from __future__ import annotations

import importlib
from typing import Any

# What the console script, tests and docs reach through the package, by the module
# that holds it. Imported on first use: ``citecheck --help`` and the start-up rules
# read service.defaults without FastAPI.
_HOMES = {
    "HEALTH_ENV_VARS": "app",
    "create_app": "app",
    "claim_from_body": "checks",
    "ServiceConfig": "config",
    "uvicorn_config": "server",
    "SERVICE_TERMS": "terms",
}
__all__ = sorted(_HOMES)


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)
