"""drsg.store — the LMDB environment, the log, commits, the versioned graph projection, time travel.

Imports nothing above the kernel (drsg.kernel.errors, drsg.kernel.values, drsg.kernel.settings).
"""
