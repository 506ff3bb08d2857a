"""A Crawler delivery's gzip body is measured in time linear in its size, however many
members it has, and still stopped at the decompressed cap."""

from __future__ import annotations

import gzip
import random
import time
import zlib

import pytest

from pytest_citecheck.large_audit.webhook import Refused as Rejected
from pytest_citecheck.large_audit.webhook import inflate

EMPTY_MEMBER = gzip.compress(b"", mtime=0)  # 20 bytes: the smallest member there is
LAST = gzip.compress(b"# the page", mtime=0)
CAP = 16 * 1024 * 1024


def members(size: int) -> bytes:
    """About ``size`` bytes of empty gzip members, then one holding the page."""
    return EMPTY_MEMBER * (size // len(EMPTY_MEMBER)) + LAST


def cpu_seconds(body: bytes) -> float:
    start = time.process_time()
    assert inflate(body, CAP, keep=True) == b"# the page"
    return time.process_time() - start


def test_a_body_of_many_members_is_read_in_linear_time() -> None:
    # Each member used to start a decompressor on a copy of the rest of the body:
    # 4 times the members took 16 times as long (8 MB: 47-160 s of CPU).
    small = min(cpu_seconds(members(512 * 1024)) for _ in range(2))
    large = cpu_seconds(members(2 * 1024 * 1024))
    assert large < 8 * small + 0.05, (small, large)


def test_every_member_counts_towards_the_cap() -> None:
    block = zlib.compress(bytes(1024 * 1024), 9, wbits=31)  # 1 MiB of zeros, ~1 KB sent
    with pytest.raises(Rejected) as refused:
        inflate(block * 20, CAP, keep=False)
    assert refused.value.status == 413
    assert inflate(block * 3 + LAST, CAP, keep=True) == bytes(3 * 1024 * 1024) + b"# the page"


@pytest.mark.parametrize(
    "body",
    [LAST[:-1], LAST + b"\x00", LAST + LAST[:10], b"", EMPTY_MEMBER + b"garbage"],
    ids=["truncated", "a trailing zero", "a truncated second member", "empty", "garbage"],
)
def test_a_body_that_is_not_whole_gzip_is_refused(body: bytes) -> None:
    with pytest.raises(Rejected) as refused:
        inflate(body, CAP, keep=False)
    assert refused.value.status == 400


def test_a_member_larger_than_a_slice_of_input_is_read_whole() -> None:
    page = random.Random(1).randbytes(300_000)  # gzip cannot shrink it: several slices
    body = gzip.compress(page, mtime=0) + gzip.compress(b"!", mtime=0)
    assert inflate(body, CAP, keep=True) == page + b"!"
