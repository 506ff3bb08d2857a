"""A Crawler delivery's handling lives in the large-audit wing with no web framework:
its body is read from plain headers and bytes, and a refusal carries its status."""

from __future__ import annotations

import ast
import gzip
import json
from pathlib import Path

import pytest

from pytest_citecheck.large_audit import webhook

WING = Path(webhook.__file__)


def test_the_wing_reads_a_delivery_from_plain_headers_and_bytes() -> None:
    page = json.dumps({"rid": "r1", "url": "https://a.example/", "pc_status": "200", "body": "hi"})
    delivery = webhook.parse_delivery(
        {"content-type": "gzip/json", "original-status": "404"},
        gzip.compress(page.encode()),
        page_limit=1024,
    )
    assert (delivery.rid, delivery.url, delivery.pc_status) == ("r1", "https://a.example/", 200)
    assert delivery.original_status == 404
    assert gzip.decompress(delivery.body_gzip) == b"hi"


def test_a_delivery_without_a_rid_is_refused_with_its_status() -> None:
    with pytest.raises(webhook.Refused) as refused:
        webhook.parse_delivery({}, gzip.compress(b"<html>"), page_limit=1024)
    assert refused.value.status == 422
    assert "rid" in refused.value.detail


def test_the_wing_imports_no_web_framework() -> None:
    tree = ast.parse(WING.read_text(encoding="utf-8"))
    imported = {
        name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for name in (
            [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
        )
    }
    assert not imported & {"fastapi", "starlette", "uvicorn"}, imported
