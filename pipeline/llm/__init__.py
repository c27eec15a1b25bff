"""drsg.pipeline.llm — talking to a chat model, shared by ``digest``, ``ask`` and the rest of the pipeline.

``calls.py``: :class:`~drsg.pipeline.llm.calls.ModelCalls`, the chat model behind the answer cache,
connected on the first call the cache cannot answer; ``cache.py``: the answer cache on disk;
``answers.py``: a model's answer read as one JSON object (:class:`MalformedAnswer` when it is not).
Nothing here knows what a digest or a question is: prompts belong to the package that asks.
"""
