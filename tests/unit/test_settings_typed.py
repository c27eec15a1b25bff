"""Settings read by type: the registry knows each key's type from its parser's declared return, a
typed read returns the value of that type, and a read of the wrong type is refused, naming the
read that fits; a parser declaring a type no read serves is refused when the registry loads."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from drsg.kernel import settings as registry
from drsg.kernel.setting_parsers import KINDS, kind_of
from drsg.kernel.settings import REGISTRY, Settings, load

CHECKS: dict[str, Callable[[object], bool]] = {
    "str": lambda v: isinstance(v, str),
    "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "int | None": lambda v: v is None or (isinstance(v, int) and not isinstance(v, bool)),
    "float": lambda v: isinstance(v, float),
    "float | None": lambda v: v is None or isinstance(v, float),
    "bool": lambda v: isinstance(v, bool),
    "tuple[str, ...]": lambda v: isinstance(v, tuple) and all(isinstance(item, str) for item in v),
    "dict[str, str]": lambda v: isinstance(v, dict) and all(isinstance(item, str) for item in v.values()),
}


def spelled(setting: registry.Setting) -> str | None:
    """The setting as a variable may spell it: 0 for a limit that 0 turns off, the other truth value."""
    kind = kind_of(setting.parse)
    if kind in ("int | None", "float | None"):
        return "0"
    if kind == "bool":
        return "no" if setting.default else "yes"
    return str(setting.default) if kind in ("int", "float") else None


def test_every_type_the_registry_holds_has_a_read_and_a_check() -> None:
    assert set(KINDS) == set(CHECKS) and all(callable(getattr(Settings, read)) for read in KINDS.values())
    assert {kind_of(setting.parse) for setting in REGISTRY} <= set(KINDS)


@pytest.mark.parametrize("setting", REGISTRY, ids=lambda s: s.name)
def test_each_setting_is_read_by_its_type(setting: registry.Setting) -> None:
    kind = kind_of(setting.parse)
    settings = load(environ={})
    value = getattr(settings, KINDS[kind])(setting.name)
    assert CHECKS[kind](value) and value == settings[setting.name]
    text = spelled(setting)
    if setting.env and text is not None:  # the value a variable gives, parsed, is read the same way
        read = getattr(load(environ={setting.env: text}), KINDS[kind])(setting.name)
        assert CHECKS[kind](read) and read == setting.parse(text)


def test_a_read_of_another_type_is_refused_naming_the_one_that_fits() -> None:
    settings = load(environ={})
    assert settings.integer("catalog.row_limit") == 100 and settings.optional_number("server.write_timeout_secs") == 30
    with pytest.raises(TypeError, match=r"catalog.row_limit holds int: read it with Settings.integer\(\)"):
        settings.text("catalog.row_limit")
    with pytest.raises(TypeError, match=r"holds float \| None: read it with Settings.optional_number\(\)"):
        settings.number("server.write_timeout_secs")  # 0 means no limit: a plain float read would lose that
    with pytest.raises(TypeError, match=r"holds bool: read it with Settings.flag\(\)"):
        settings.integer("fetch.enabled")  # a bool is an int to Python, not to the registry
    with pytest.raises(KeyError):
        settings.text("catalog.no_such_setting")


def test_a_parser_of_an_undeclared_type_is_refused() -> None:
    def loose(value: object) -> list[int]:
        return [1]

    def unannotated(value):  # type: ignore[no-untyped-def]  # the planted violation: no declared type
        return value

    for parse in (loose, unannotated, lambda value: value):
        with pytest.raises(TypeError, match="declare one of str, int"):
            kind_of(parse)
