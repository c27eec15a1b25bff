"""drsg.models — the two model ports and their backends (imports only the kernel).

``Embedder`` (texts to vectors: the offline local MiniLM, or an OpenAI-compatible service) and
``ChatModel`` (an OpenAI-compatible chat service), both on one retrying ``Service`` client; keys
come from the environment or ``[llm]``, never from a request. ``testing`` ships an in-memory double
of each port for tests (drsg's and yours); ``tests/contract`` holds what every backend must do.
"""
