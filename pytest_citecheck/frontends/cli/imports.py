"""``citecheck import``: saved LLM responses with native citations as a claim file."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TextIO

from pytest_citecheck.frontends.cli.common import EXIT_GATE_FAILED, EXIT_OK, UsageError


def run_import(args: argparse.Namespace, out: TextIO | None = None) -> int:
    import shlex

    from pytest_citecheck.claims.importers import ImportedAnswer, ResponseImportError
    from pytest_citecheck.claims.importers.files import (
        check_writable,
        claim_file_text,
        expand,
        import_saved_answers,
        missing_documents,
        one_line_each,
        read_saved,
        written_by_import,
    )

    out = out or sys.stdout
    output: Path = args.output
    if output.suffix.lower() not in (".yaml", ".yml"):
        raise UsageError(f"-o {output}: a claim file is written as YAML (citecheck_NAME.yaml)")
    if output.is_dir():
        raise UsageError(f"-o {output}: is a folder; give the claim file's name")
    if output.exists() and not args.force and not written_by_import(output):
        raise UsageError(
            f"-o {output}: the file exists and was not written by `citecheck import`; "
            "give another name, or --force to replace it"
        )
    missing = [str(p) for p in args.responses if not p.exists()]
    if missing:
        raise UsageError(f"no such file or folder: {', '.join(missing)}")
    files = expand(args.responses)
    if not files:
        raise UsageError(
            "no saved responses found (.json, .jsonl, .md, .markdown; folders are read "
            f"with their subfolders) in {', '.join(map(str, args.responses))}"
        )
    answers: list[tuple[ImportedAnswer, str]] = []
    failures: list[ResponseImportError] = []
    seen: dict[str, str] = {}
    for path in files:
        for saved in read_saved(path):
            if isinstance(saved, ResponseImportError):
                failures.append(saved)
                continue
            folded = saved.answer_id.casefold()
            if folded in seen:
                failures.append(
                    ResponseImportError(
                        saved.name,
                        "",
                        f"answer id {saved.answer_id!r} is also the id of {seen[folded]}",
                        'rename one file, or name the answers: {"id": ..., "response": {...}}',
                    )
                )
                continue
            try:
                # One answer, or each assistant turn of a saved conversation.
                turns = import_saved_answers(
                    saved, format=args.source_format, documents=args.documents
                )
                for answer in turns:
                    check_writable(answer, saved.name)
            except ResponseImportError as exc:
                failures.append(exc)
                continue
            seen[folded] = saved.name
            answers += [(answer, saved.name) for answer in turns]
    documents = [a for d in args.documents or [] for a in ("--document", d)]
    command = "citecheck import " + shlex.join(
        ["--from", args.source_format, *map(str, args.responses), *documents, "-o", str(output)]
    )
    failures = one_line_each(failures)  # a file's responses failing alike: one line
    if failures:
        print(
            f"citecheck import: {len(failures)} response(s) could not be imported:", file=sys.stderr
        )
    for failure in failures:
        # One line each, however many events a response has.
        place = f"{failure.response}: {failure.where}" if failure.where else failure.response
        print(f"  {place}: {failure.problem} (fix: {failure.fix})", file=sys.stderr)
    if not answers:
        # A claim file with no claim would pass every run: none is written (an older
        # file of this name is left as it was).
        print(
            f"citecheck import: no claim file written: none of the responses could be "
            f"imported; {output} was not {'changed' if output.exists() else 'created'}",
            file=sys.stderr,
        )
        return EXIT_GATE_FAILED
    held = missing_documents(answers, output.parent)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(claim_file_text(answers, command, held), encoding="utf-8")
    for answer, name in answers:
        uncited = len(answer.uncited)
        print(
            f"{answer.id}: {len(answer.claims)} claim(s), {uncited} uncited sentence(s)"
            f" ({answer.format}, {name})",
            file=out,
        )
        for note in answer.notes:
            print(f"  note: {note}", file=out)
        for warning in answer.warnings:
            print(f"  warning: {warning}", file=out)
    claims = sum(len(a.claims) for a, _ in answers)
    print(
        f"wrote {output}: {claims - len(held)} claim(s) from {len(answers)} response(s)"
        + (f"; {len(failures)} could not be imported (shown above)" if failures else ""),
        file=out,
    )
    if held:
        names = sorted({d for docs in held.values() for d in docs})
        print(
            f"not checked: {len(held)} claim(s) cite document(s) that are no file beside "
            f"{output.name} ({', '.join(names)}): written as comments. Fix: import again "
            "with the request's documents in order (--document PATH, once each), or put "
            "the files there and import again",
            file=out,
        )
    if not output.name.startswith("citecheck_"):
        print(
            f"note: pytest --citecheck collects citecheck_*.yaml; {output.name} is not collected "
            "unless citecheck_patterns lists it",
            file=out,
        )
    return EXIT_GATE_FAILED if failures else EXIT_OK
