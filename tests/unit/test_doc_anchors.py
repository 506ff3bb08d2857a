"""Every link to a heading in README and docs/ lands on it, on GitHub and on the MkDocs site.

pyproject's Documentation URL points at docs/ on GitHub, and ``mkdocs build`` makes the
site; the two make a heading's id by different rules. GitHub (github-slugger) lowercases
the heading's text, drops punctuation and symbols, and turns each space into a hyphen,
so ``Running `--citecheck-dry-run`: costs`` becomes ``running---citecheck-dry-run-costs``;
MkDocs (Python-Markdown's toc) also folds the text to ASCII and collapses each run of
spaces and hyphens into one hyphen: ``running-citecheck-dry-run-costs``. A link must name
an id both give. Python-Markdown itself gives the MkDocs ids (the site's extensions);
GitHub's are computed here from the heading's text as markdown-it (CommonMark) reads it.
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
PAGES = (REPO / "README.md", *sorted(DOCS.glob("*.md")))
# [text](target): the target up to its closing parenthesis (none of ours has one inside).
LINK = re.compile(r"\]\(([^)\s]+)\)")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.M | re.S)
INLINE_CODE = re.compile(r"`[^`\n]*`")


def github_slug(text: str) -> str:
    """github-slugger: lowercase; keep letters, marks, digits, ``_``, ``-`` and spaces;
    each space a hyphen."""
    kept = "".join(ch for ch in text.lower() if ch in "-_ " or unicodedata.category(ch)[0] in "LMN")
    return kept.replace(" ", "-")


def heading_texts(source: str) -> list[str]:
    """The plain text of each heading as GitHub renders it: code spans keep their
    content; emphasis, link markup and inline HTML tags go."""
    tokens = MarkdownIt("commonmark").enable("table").parse(source)
    return [
        "".join(c.content for c in inline.children or [] if c.type in ("text", "code_inline"))
        for opening, inline in itertools.pairwise(tokens)
        if opening.type == "heading_open"
    ]


def github_ids(source: str) -> set[str]:
    ids: set[str] = set()
    seen: dict[str, int] = {}
    for text in heading_texts(source):
        slug = github_slug(text)
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        ids.add(slug if count == 0 else f"{slug}-{count}")
    return ids


def mkdocs_ids(source: str) -> set[str]:
    """The ids the site gives, by Python-Markdown with the site's extensions."""
    markdown = pytest.importorskip("markdown")
    md = markdown.Markdown(extensions=["tables", "toc", "admonition", "pymdownx.superfences"])
    md.convert(source)
    ids: set[str] = set()
    stack = list(md.toc_tokens)  # type: ignore[attr-defined]
    while stack:
        token = stack.pop()
        ids.add(token["id"])
        stack.extend(token["children"])
    return ids


def links(page: Path) -> list[tuple[Path, str]]:
    """Each (target page, anchor) that ``page`` links to, outside code."""
    body = INLINE_CODE.sub("", FENCE.sub("", page.read_text(encoding="utf-8")))
    found = []
    for target in LINK.findall(body):
        if "#" not in target or "://" in target:
            continue
        path, anchor = target.split("#", 1)
        if path and not path.endswith(".md"):
            continue
        found.append(((page.parent / path).resolve() if path else page, anchor))
    return found


def test_the_two_slug_rules_differ_where_the_docs_used_to_break() -> None:
    # A heading with a flag in code and a colon: GitHub keeps the flag's two hyphens.
    heading = "## Running `--citecheck-dry-run`: what it costs\n"
    assert github_ids(heading) == {"running---citecheck-dry-run-what-it-costs"}
    assert mkdocs_ids(heading) == {"running-citecheck-dry-run-what-it-costs"}
    # Without the flag's hyphens both agree, the colon dropped by both.
    agree = "## `citecheck validate` and pre-commit: in CI\n"
    assert github_ids(agree) == mkdocs_ids(agree) == {"citecheck-validate-and-pre-commit-in-ci"}


def test_every_heading_link_in_readme_and_docs_resolves_on_github_and_on_the_site() -> None:
    github: dict[Path, set[str]] = {}
    site: dict[Path, set[str]] = {}
    broken = []
    checked = 0
    for page in PAGES:
        for target, anchor in links(page):
            assert target.is_file(), f"{page.name} links to a missing page {target}"
            if target not in github:
                source = target.read_text(encoding="utf-8")
                github[target], site[target] = github_ids(source), mkdocs_ids(source)
            checked += 1
            if anchor not in github[target] or anchor not in site[target]:
                where = [
                    name
                    for name, ids in (("GitHub", github[target]), ("MkDocs", site[target]))
                    if anchor not in ids
                ]
                broken.append(
                    f"{page.relative_to(REPO)} -> {target.name}#{anchor} ({', '.join(where)})"
                )
    assert checked > 50  # the docs link to their headings a lot: the scan found them
    assert broken == []


def test_every_docs_heading_gets_the_same_id_on_github_and_on_the_site() -> None:
    # A heading whose two ids differ is a link waiting to break on one of them.
    differ = []
    for page in PAGES[1:]:
        source = page.read_text(encoding="utf-8")
        only_github = github_ids(source) - mkdocs_ids(source)
        differ += [f"{page.name}: {slug}" for slug in sorted(only_github)]
    assert differ == []
