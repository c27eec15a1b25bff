"""The `drsg` command line: a thin layer over drsg.store (and, later, workers, feed, pipeline)."""
