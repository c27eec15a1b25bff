"""Test doubles shipped with the suite. The only one allowed is the language model: ``fake_openai``."""

from tests.support.fake_openai import (
    FakeOpenAI,
    Reply,
    Request,
    chat_completion,
    chat_stream,
    count_tokens,
    embeddings_body,
    error,
    fake_vector,
    malformed,
)

__all__ = [
    "FakeOpenAI",
    "Reply",
    "Request",
    "chat_completion",
    "chat_stream",
    "count_tokens",
    "embeddings_body",
    "error",
    "fake_vector",
    "malformed",
]
