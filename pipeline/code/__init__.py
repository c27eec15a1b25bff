"""drsg.pipeline.code: reading a codebase — the Handler port, the built-in handlers, the walk."""
