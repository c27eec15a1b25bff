"""drsg.plan — the query language (pure: no I/O, imports only the kernel).

SEARCH and HYBRID statements, the logical-plan JSON they compile to (upstream's serde shape), and
their validation. Index search executes plans (``drsg.workers``); surfaces parse them.
"""
