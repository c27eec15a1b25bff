"""drsg.plan — the query language (pure: no I/O, imports only the kernel).

SEARCH, HYBRID and CALL statements, the logical plan they compile to (typed: ``logical.py`` and
``expr.py``, read once from upstream's serde shape and written back to it), and its validation.
Index search executes plans (``drsg.workers``); surfaces parse them.
"""
