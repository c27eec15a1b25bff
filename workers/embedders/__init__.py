"""drsg.workers.embedders — texts to vectors, locally (offline MiniLM) or through an OpenAI-compatible API.

from drsg.workers.embedders import get_embedder
embedder = get_embedder("local")            # or "openai", "qwen", "ollama", "url", a base URL
vectors = embedder.embed(["a text", "another"])
embedder.identity()                          # "local:all-MiniLM-L6-v2", recorded with the vectors
"""

from drsg.workers.embedders.base import (
    BadEmbeddingResponse,
    Embedder,
    EmbedderError,
    EmbedderUnavailable,
    ModelFileError,
)
from drsg.workers.embedders.local import LocalEmbedder
from drsg.workers.embedders.registry import NAMES, PROVIDERS, get_embedder
from drsg.workers.embedders.remote import RemoteEmbedder, RetryPolicy

__all__ = [
    "NAMES",
    "PROVIDERS",
    "BadEmbeddingResponse",
    "Embedder",
    "EmbedderError",
    "EmbedderUnavailable",
    "LocalEmbedder",
    "ModelFileError",
    "RemoteEmbedder",
    "RetryPolicy",
    "get_embedder",
]
