"""drsg.models.chat — the chat model port (``base.py``), an OpenAI-compatible backend and its provider presets."""
