"""drsg.pipeline.llm — talking to a chat model, shared by ``digest``, ``ask`` and the rest of the pipeline.

``calls.py``: :class:`~drsg.pipeline.llm.calls.ModelCalls`, the chat model behind the answer cache,
connected on the first call the cache cannot answer; ``cache.py``: the answer cache on disk;
``answers.py``: a model's answer read as one JSON object (:class:`MalformedAnswer` when it is not).
Prompts belong to the package that asks; the one thing the cache must know of them is their version
(``cache.PROMPT_VERSION``, bumped when a prompt whose answers are cached changes).
"""
