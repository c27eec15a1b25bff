"""Helpers the tests share: the model services' doubles, servers, data, waits.

``fake_openai`` is a scripted OpenAI-compatible server on loopback, for tests of the real ``openai``
client (remote embedders and chat models, digest end to end); ``scripted_model`` answers digest's
prompts on it. In-process doubles of the model ports ship in the package: ``drsg.models.testing``.

Import each module by name (``from tests.support.fake_openai import FakeOpenAI``): this package
imports nothing, so a child process that needs one helper does not load the openai client.
"""
