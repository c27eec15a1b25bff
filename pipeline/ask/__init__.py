"""drsg.pipeline.ask — natural-language questions turned into read-only plans (the loop in ``loop.py``)."""
