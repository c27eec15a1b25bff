"""drsg.pipeline.llm."""
