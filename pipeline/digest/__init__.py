"""drsg.pipeline.digest."""
