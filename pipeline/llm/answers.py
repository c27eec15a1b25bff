"""A chat model's answer read as one JSON object (pure; no I/O).

A model's text is untrusted input: code fences and prose around the object are tolerated (first
``{`` to last ``}``), trailing commas are repaired, and nesting is bounded like a stored value's.
What the object must hold is the asker's to check (``digest/schema.py``, ``ask/protocol.py``).
"""

from __future__ import annotations

import json
import re
from typing import Any

from drsg.kernel.values import MAX_DEPTH, json_depth

_TRAILING_COMMA = re.compile(r",\s*([}\]])")


class MalformedAnswer(ValueError):
    """The answer holds no JSON object drsg could read."""


def json_object(text: str) -> dict[str, Any]:
    """The JSON object in a model's answer (fences, prose and trailing commas tolerated)."""
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end <= start:
        raise MalformedAnswer("no JSON object in the answer")
    body = text[start : end + 1]
    deep = f"the JSON nests deeper than {MAX_DEPTH} levels"
    for candidate in (body, _TRAILING_COMMA.sub(r"\1", body)):
        try:
            value = json.loads(candidate)
        except RecursionError:  # deeper than Python's reader recurses: no answer needs that
            raise MalformedAnswer(deep) from None
        except ValueError as exc:
            problem = str(exc)
            continue
        if isinstance(value, dict):
            if json_depth(value) > MAX_DEPTH:  # what reads an answer walks it recursively
                raise MalformedAnswer(deep)
            return value
        problem = "the JSON is not an object"
    raise MalformedAnswer(problem)
