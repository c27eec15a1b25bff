"""drsg.store — the LMDB environment, the log, commits, the versioned graph projection, time travel.

Imports nothing above the kernel (drsg.errors, drsg.values, drsg.settings).
"""
