"""The defaults every front end shares, in one place.

Plain constants (and one enum) importing only the standard library, so the pytest
entry module, the engine, the batch CLI and the service read the same numbers
without loading each other.
"""

from __future__ import annotations

from enum import StrEnum

# The judge when neither flag, ini nor the claim file names one.
DEFAULT_JUDGE = "openai:gpt-4o-mini"
# A verdict below this confidence is marked for review.
DEFAULT_REVIEW_BELOW = 0.8
# VCR.py's record modes plus ``rewrite`` (delete, then record).
RECORD_MODES = ("none", "once", "new_episodes", "all", "rewrite")
# ``citecheck batch --record live``: fetch and judge live, with no cassette at all.
BATCH_LIVE = "live"
# The passage rankers; the default fuses BM25 and MiniLM.
RANKERS = ("hybrid", "minilm", "bm25")
DEFAULT_RANKER = "hybrid"
# The passages of a page the judge is shown (the best by the ranker, in page order).
DEFAULT_TOP_K = 3
# Claims verified at once (each its own thread), one request's overall deadline
# (retries included) in seconds, and the largest page (bytes of markdown) that is
# judged. A claim holds its slot through its crawl, its reading and the reading's
# confirmation, one after another, so keeping the Crawling API's 20 concurrent crawls
# busy takes 20 x (crawl + 2 judge calls) / crawl claims in flight: 36 at 2-8 s a
# crawl and 1-3 s a judge call (32 left crawl slots idle once the confirmation call
# came: 1.29x the floor where 48 gives 1.15x); 48 leaves room for a slower judge.
# bench/scale.py measures it. Per-service limits: pytest_citecheck.core.limits.
DEFAULT_CONCURRENCY = 48
DEFAULT_TIMEOUT = 120.0
DEFAULT_MAX_PAGE_BYTES = 2_000_000
# A cited PDF's caps besides the page-size cap on its bytes (stages/pdf.py): more pages
# or a longer extraction than this is ``pdf_too_large`` (a 117-page lecture script is
# read in 2-5 s on one core; a 50,000-page file is refused before any page is read).
DEFAULT_PDF_MAX_PAGES = 2000
DEFAULT_PDF_MAX_SECONDS = 30.0
# How a cited PDF is fetched: through the Crawling API like any page (its proxies, its
# billing), or downloaded directly under the URL policy (stages/pdf_fetch.py).
PDF_FETCHES = ("crawling-api", "direct")
DEFAULT_PDF_FETCH = "crawling-api"
# The least free space a recording run starts with on the disk of its cassette
# folder (bytes): a claim's cassette holds its pages (each up to
# DEFAULT_MAX_PAGE_BYTES) and judge exchanges, so 64 MiB is a few dozen full
# pages. Checked before the first paid request (engine/preflight.py): a full disk
# found when saving would have been paid for.
MIN_CASSETTE_FREE_BYTES = 64 * 1024 * 1024
# The longest claim text accepted (characters): a claim is one sentence or a few,
# and its text goes into every judge prompt. 0 lifts the cap.
DEFAULT_MAX_CLAIM_CHARS = 2000
# How a judge panel decides (engine/panel.py): a majority of its members, or all.
PANEL_RULES = ("majority", "unanimous")
# What a run of a part of the suite (-k, a claim file named) is gated on: the subset
# (the suite's floors are shown, not applied) or the full rules.
GATE_SCOPES = ("subset", "full")
DEFAULT_GATE_SCOPE = "subset"
DEFAULT_PANEL_RULE = "majority"
# The largest drop in citation precision from the baseline a run may show.
DEFAULT_MAX_DROP = 0.0
# Which cited URLs may be fetched (pytest_citecheck.stages.url_policy): ``off``
# refuses none; ``public`` refuses internal addresses, local names and credentials.
URL_POLICIES = ("off", "public")
DEFAULT_URL_POLICY = "off"


class RecheckStatus(StrEnum):
    """What ``citecheck recheck`` can find of one recorded citation."""

    SAME = "same"
    CHANGED = "changed"
    EVIDENCE_GONE = "evidence_gone"
    PAGE_GONE = "page_gone"
    MOVED = "moved"
    BLOCKED = "blocked"
    ERROR = "error"


# The statuses' names, as option values spell them.
RECHECK_STATUSES = tuple(status.value for status in RecheckStatus)
# What fails a recheck unless told otherwise: the evidence or the page is gone, or
# the recheck could not tell (a failure never counts as a pass).
DEFAULT_RECHECK_FAIL_ON = ("evidence_gone", "page_gone", "error")
# How the guard matches a judge's quote against the passages, and how close a fuzzy
# match must be (pytest_citecheck.stages.quote_policy).
QUOTE_MATCH_MODES = ("exact", "fuzzy")
DEFAULT_QUOTE_SIMILARITY = 0.9
# The OpenAI wire's ``response_format`` choices (pytest_citecheck.stages.judges.openai).
RESPONSE_FORMATS = ("auto", "json_schema", "json_object")
# The claim files pytest collects (ini citecheck_patterns).
DEFAULT_PATTERNS = ("citecheck_*.yaml", "citecheck_*.yml", "citecheck_*.jsonl")
# ``citecheck serve``'s request caps: URLs per request, body bytes, seconds a request
# waits for a verification slot (then 503 with Retry-After), and seconds a client has
# to send its request headers, and again its body.
DEFAULT_MAX_URLS = 20
DEFAULT_MAX_BODY_BYTES = 65_536
DEFAULT_QUEUE_WAIT = 2.0
DEFAULT_READ_TIMEOUT = 10.0

# --judge-batch: how often a batch's status is read, and how long it is waited for (the
# providers' 24 h completion window and an hour's margin).
DEFAULT_JUDGE_BATCH_POLL = 60.0
DEFAULT_JUDGE_BATCH_WAIT = 25 * 3600.0

# Crawler jobs (large audits): where each job's state folder goes, and how long a run
# waits with no delivery arriving before it stops (the job is resumed by running again).
DEFAULT_JOBS_DIR = ".citecheck/jobs"
DEFAULT_CRAWLER_WAIT = 3600.0
# The Crawler's default push limit (its pushing page): 30 URLs each second per account.
DEFAULT_CRAWLER_PUSH_RATE = 30.0
# ``citecheck serve``: where it listens, the names a loopback service answers to by
# default (the Host header's, port aside), and the shortest service key it accepts.
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
MIN_KEY_CHARS = 16
