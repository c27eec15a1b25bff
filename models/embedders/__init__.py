"""drsg.models.embedders — texts to vectors, locally (offline MiniLM) or through an OpenAI-compatible API.

from drsg.models.embedders import get_embedder
embedder = get_embedder("local")            # or "openai", "qwen", "ollama", "url", a base URL
vectors = embedder.embed(["a text", "another"])
embedder.identity()                          # "local:all-MiniLM-L6-v2", recorded with the vectors
"""

from drsg.models.embedders.base import (
    BadEmbeddingResponse,
    Embedder,
    EmbedderError,
    EmbedderUnavailable,
    ModelFileError,
)
from drsg.models.embedders.local import LocalEmbedder
from drsg.models.embedders.registry import NAMES, PROVIDERS, get_embedder
from drsg.models.embedders.remote import RemoteEmbedder, RetryPolicy

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
