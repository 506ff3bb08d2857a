"""Where a ``document:`` citation really is, and whether it may be read.

A claims-layer rule (the loader checks it when it reads a claim file; the
``citecheck`` fixture when a test names a document): the resolved path must lie
inside the allowed roots, exist and be a regular file.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pytest_citecheck.core.errors import CitecheckError
from pytest_citecheck.core.terms import NEUTRAL, Terms


class DocumentPathError(CitecheckError):
    """A ``document:`` path that may not be read; the loader reports it with the fix."""

    def __init__(self, problem: str, fix: str) -> None:
        super().__init__(problem, fix)
        self.problem = problem
        self.fix = fix


def resolve_document(
    document: str,
    base: Path,
    roots: Sequence[Path] | None,
    terms: Terms = NEUTRAL,
    *,
    what: str = "document",
) -> Path:
    """Where ``document`` (relative to ``base``) really is, symlinks followed.

    A document's text goes to the judge, into the cassette and into the report,
    so it must resolve inside one of ``roots`` (the rootdir and the folders in
    the ``citecheck_document_roots`` ini option); ``None`` means no restriction
    (a caller that only wants claim text). ``what`` names the key in messages (a claim
    file's saved ``response:`` follows the same rule). Raises :class:`DocumentPathError`.
    """
    try:
        resolved = (base / document).resolve()
    except (OSError, RuntimeError, ValueError) as exc:  # a symlink loop, a NUL byte
        raise DocumentPathError(
            f"{what} {document!r} cannot be resolved: {exc}",
            f"point `{what}` at a regular file inside the project",
        ) from None
    if roots is not None:
        allowed = [root.resolve() for root in roots]
        if not any(resolved.is_relative_to(root) for root in allowed):
            raise DocumentPathError(
                f"{what} {document!r} resolves to {resolved}, outside the project "
                f"({', '.join(str(r) for r in allowed)}); its text would be sent to the "
                "judge and written into the cassette and the report",
                "copy the file into the project, or list its folder in "
                f"{terms.option('document_roots')} if it is meant to be read",
            )
    if not resolved.exists():
        raise DocumentPathError(
            f"{what} {document!r} not found: {resolved} does not exist",
            f"{what} paths are relative to the claim file's folder ({base}); "
            "correct the path or add the file",
        )
    if not resolved.is_file():
        raise DocumentPathError(
            f"{what} {document!r} is not a file: {resolved}",
            f"point `{what}` at a text file, not a folder or a device",
        )
    return resolved
