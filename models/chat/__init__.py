"""drsg.models.chat — chat models: an OpenAI-compatible service and its provider presets."""
