"""Test doubles of the suite: the model services, nothing else.

``fake_openai`` is a scripted OpenAI-compatible server on loopback, for tests of the real ``openai``
client (remote embedders and chat models, digest end to end); ``scripted_model`` answers digest's
prompts on it. In-process doubles of the model ports ship in the package: ``drsg.models.testing``.
"""

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
