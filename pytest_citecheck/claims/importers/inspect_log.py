"""Inspect AI eval logs and samples: one answer per sample, its final output's citations.

A sample (``EvalSample``, or a running task's ``TaskState`` dumped as JSON) is one
conversation: its ``messages`` (system, user, the assistant's tool calls, the tools'
results) and its ``output``, the model's final message, which Inspect's scorers score. The
answer is that message (:mod:`~pytest_citecheck.claims.importers.inspect_message`), named
``<sample id>`` (``<sample id>-e<epoch>`` past the first epoch), so claim ids stay while
the sample does.

What the sample's tools returned (every URL in a ``tool`` message, in an assistant's
``tool_use`` part's result, or written by the user or a system message) is what a cited
URL may come from: one none of them returned is ``url_not_retrieved``
(:mod:`~pytest_citecheck.claims.importers.retrieved`). A sample with no tool result at all
says nothing about where its URLs came from (a provider's own search is not in the log),
so the check is off for it and a note says why.

An eval log is read without Inspect installed: a ``.json`` log (``samples``) or a ``.eval``
file (a zip whose ``samples/*.json`` are the samples), as ``inspect_ai.log`` writes them.
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_citecheck.claims.importers import import_response
from pytest_citecheck.claims.importers import retrieved as found
from pytest_citecheck.claims.importers.answer import ImportedAnswer, Reader, ResponseImportError
from pytest_citecheck.claims.importers.conversation import marked_turn
from pytest_citecheck.claims.importers.inspect_message import FORMAT
from pytest_citecheck.claims.importers.turns import Turn
from pytest_citecheck.claims.models import suggest_id

__all__ = [
    "EvalLogSamples",
    "eval_log_samples",
    "import_eval_log",
    "import_log_samples",
    "import_sample",
    "is_eval_log_value",
    "sample_answer_id",
]

# Caps on what a .eval file may hold, read before anything is inflated.
_MAX_SAMPLE_BYTES = 64 * 1024 * 1024
_SAMPLES = "samples/"


def sample_answer_id(sample_id: object, epoch: object = 1) -> str:
    """The answer id of a sample: its id, with ``-e<epoch>`` past the first epoch."""
    base = suggest_id(str(sample_id)).replace(".", "-").strip("-_") or "sample"
    return base if epoch in (None, 1) else f"{base}-e{epoch}"


def import_sample(
    sample: Any,
    *,
    answer_id: str | None = None,
    documents: Sequence[str] | None = None,
    name: str | None = None,
) -> ImportedAnswer:
    """The answer of one sample (its JSON, or an object with ``model_dump``): its final
    output's cited sentences as claims, each URL marked with whether a tool returned it."""
    dump = getattr(sample, "model_dump", None)
    if callable(dump) and not isinstance(sample, dict):
        sample = dump(mode="json", exclude_none=True)
    label = name or answer_id or "sample"
    reader = Reader(label)
    body = reader.mapping(sample, "sample", "pass the sample as Inspect saved it")
    answer = answer_id or sample_answer_id(body.get("id", "sample"), body.get("epoch", 1))
    messages = reader.optional_items(body.get("messages"), "messages")
    message, where = _final_message(reader, body, messages)
    imported = import_response(
        message, format=FORMAT, answer_id=answer, documents=documents, name=f"{label} {where}"
    )
    turn = _given(messages, message)
    return marked_turn(imported, turn, answer)


def _final_message(
    reader: Reader, body: dict[str, Any], messages: list[Any]
) -> tuple[dict[str, Any], str]:
    """The message scored: ``output.choices[0].message``, else the last assistant message."""
    output = body.get("output")
    if isinstance(output, dict):
        choices = output.get("choices")
        if isinstance(choices, list) and choices and isinstance(choices[0], dict):
            message = choices[0].get("message")
            if isinstance(message, dict):
                return message, "output.choices[0].message"
    for i in range(len(messages) - 1, -1, -1):
        item = messages[i]
        if isinstance(item, dict) and item.get("role") == "assistant":
            return item, f"messages[{i}]"
    raise reader.fail(
        "output", "the sample has no output and no assistant message", "score a finished sample"
    )


def _given(messages: list[Any], final: dict[str, Any]) -> Turn:
    """What the sample's tools returned, its users wrote, or the final message's own
    tool-use parts held: the URLs its citations may come from."""
    urls: set[str] = set()
    tool_results = 0
    for item in [*messages, final]:
        if not isinstance(item, dict):
            continue
        role = item.get("role")
        if role == "assistant":
            content = item.get("content")
            for part in content if isinstance(content, list) else []:
                if isinstance(part, dict) and part.get("type") == "tool_use":
                    tool_results += 1
                    urls |= found.urls_in(part.get("result"))
            continue
        if role == "tool":
            tool_results += 1
        urls |= found.urls_in(item.get("content"))
    unknown = (
        None
        if tool_results
        else "the sample has no tool result (a provider's own search is not in the log)"
    )
    users = sum(1 for m in messages if isinstance(m, dict) and m.get("role") == "user")
    return Turn(number=max(users, 1), where="", body={}, retrieved=urls, unknown=unknown)


# -- eval logs -----------------------------------------------------------------------------


def is_eval_log_value(value: object) -> bool:
    """Whether parsed JSON is an eval log (``version``, ``eval`` and ``samples``)."""
    return isinstance(value, dict) and {"version", "eval"} <= value.keys()


@dataclass(frozen=True)
class EvalLogSamples:
    """The samples of one eval log, as read from its file."""

    samples: list[dict[str, Any]]


def eval_log_samples(path: Path) -> list[dict[str, Any]]:
    """The samples of the eval log at ``path`` (``.eval`` or ``.json``), in its order."""
    name = path.name
    reader = Reader(name)
    if path.suffix == ".eval":
        out = []
        try:
            with zipfile.ZipFile(path) as archive:
                for info in sorted(archive.infolist(), key=lambda i: i.filename):
                    if not info.filename.startswith(_SAMPLES) or not info.filename.endswith(
                        ".json"
                    ):
                        continue
                    if info.file_size > _MAX_SAMPLE_BYTES:
                        raise reader.fail(
                            info.filename,
                            f"the sample is {info.file_size} bytes, over the "
                            f"{_MAX_SAMPLE_BYTES} this tool reads",
                            "import the samples in smaller logs",
                        )
                    data = json.loads(archive.read(info).decode("utf-8"))
                    out.append(reader.mapping(data, info.filename))
        except (zipfile.BadZipFile, ValueError) as exc:
            raise reader.fail("", f"the .eval file cannot be read ({exc})", _WRITE) from None
        return out
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise reader.fail("", f"the log is not valid JSON ({exc})", _WRITE) from None
    return log_value_samples(data, name)


def log_value_samples(data: object, name: str) -> list[dict[str, Any]]:
    """The samples of a parsed JSON eval log."""
    reader = Reader(name)
    body = reader.mapping(data, "")
    listed = reader.optional_items(body.get("samples"), "samples")
    return [reader.mapping(s, f"samples[{i}]") for i, s in enumerate(listed)]


_WRITE = "import the log as `inspect eval` wrote it (.eval, or .json with --log-format json)"


def import_eval_log(path: Path, *, documents: Sequence[str] | None = None) -> list[ImportedAnswer]:
    """One answer per sample of the eval log at ``path``, in the log's order; a sample
    whose citations cannot be mapped raises, naming the sample."""
    return import_log_samples(eval_log_samples(path), path.name, documents=documents)


def import_log_samples(
    samples: Sequence[dict[str, Any]], name: str, *, documents: Sequence[str] | None = None
) -> list[ImportedAnswer]:
    """One answer per sample (``name``: the log, in messages)."""
    answers = []
    if not samples:
        raise ResponseImportError(
            name,
            "samples",
            "the log holds no sample",
            "run the eval to its end (or with --log-samples), then import its log",
        )
    for sample in samples:
        sid = sample_answer_id(sample.get("id", "sample"), sample.get("epoch", 1))
        answers.append(
            import_sample(sample, answer_id=sid, documents=documents, name=f"{name} sample {sid}")
        )
    return answers
