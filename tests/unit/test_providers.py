"""One list of model services (`drsg.models.providers`): the embedder and chat registries are
views of it, so a preset added or changed there is what both offer."""

from __future__ import annotations

import pytest

from drsg.kernel.errors import ConfigError
from drsg.models.chat.providers import CHAT_PRESETS, chat_identity
from drsg.models.embedders.registry import NAMES, PROVIDERS, get_embedder
from drsg.models.providers import PRESETS


def test_both_registries_are_views_of_the_one_list() -> None:
    assert list(CHAT_PRESETS) == list(PRESETS)
    assert ("local", *(name for name, p in PRESETS.items() if p.no_embeddings is None)) == NAMES
    for name, preset in PRESETS.items():
        chat = CHAT_PRESETS[name]
        assert (chat.base_url, chat.key_env, chat.model) == (preset.base_url, preset.key_env, preset.chat_model)
        if preset.no_embeddings is None:
            embed = PROVIDERS[name]
            assert (embed.base_url, embed.key_env, embed.model) == (preset.base_url, preset.key_env, preset.embed_model)
            assert embed.batch_size == preset.embed_batch


def test_a_service_without_embeddings_is_refused_as_an_embedder() -> None:
    assert chat_identity("deepseek") == "deepseek:deepseek-chat"
    with pytest.raises(ConfigError, match="DeepSeek has no embeddings API"):
        get_embedder("deepseek")
