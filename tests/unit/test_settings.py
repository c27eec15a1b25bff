"""The one settings registry and loader: every drsg.toml section checked, precedence, `drsg config`."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import date
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from drsg.kernel.errors import ConfigError
from drsg.kernel.setting_parsers import _size, _strings
from drsg.kernel.settings import MASK, REGISTRY, SECTIONS, Settings, load
from drsg.surfaces.server.config import server_config
from tests.support.cli import Ran


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A clean directory with no drsg.toml, and no drsg variable set."""
    monkeypatch.chdir(tmp_path)
    for var in ("DRSG_CONFIG", "DRSG_TOKEN", "DRSG_ALLOWED_ORIGINS", "OPENAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    for setting in REGISTRY:
        for var in (setting.env, setting.old_env):
            if var:
                monkeypatch.delenv(var, raising=False)
    return tmp_path


def load_toml(text: str, environ: dict[str, str] | None = None) -> Settings:
    Path("drsg.toml").write_text(text)
    return load("drsg.toml", environ={} if environ is None else environ)


def refusal(text: str, environ: dict[str, str] | None = None) -> str:
    with pytest.raises(ConfigError) as caught:
        load_toml(text, environ)
    message = str(caught.value)
    assert "\n" not in message and caught.value.exit_code == 2
    return message


TYPOS = [
    ("[store]\nmapsize = 1", "store.mapsize", "store.map_size"),
    ("[index]\nef_serch = 100", "index.ef_serch", "index.ef_search"),
    ('[logging]\nlevle = "info"', "logging.levle", "logging.level"),
    ("[digest]\nchunk_char = 10", "digest.chunk_char", "digest.chunk_chars"),
    ("[ask]\nmax_attempt = 3", "ask.max_attempt", "ask.max_attempts"),
    ('[server]\nadr = "127.0.0.1:1"', "server.adr", "server.addr"),
    ('[server.tlz]\ncert = "c.pem"', "server.tlz", "server.tls"),
    ("[fetch]\nmax_pagez = 3", "fetch.max_pagez", "fetch.max_pages"),
    ("[plugins]\nfuell = 5", "plugins.fuell", "plugins.fuel"),
    ("[catalog]\nrow_limt = 5", "catalog.row_limt", "catalog.row_limit"),
    ('[log]\nurll = "kafka://b:9092/t"', "log.urll", "log.url"),
    ("[query]\nmax_row = 5", "query.max_row", "query.max_rows"),
]


@pytest.mark.parametrize(("toml", "typo", "nearest"), TYPOS)
def test_a_typo_in_any_section_is_refused_with_the_nearest_key(here: Path, toml: str, typo: str, nearest: str) -> None:
    assert refusal(toml) == f"drsg.toml: unknown setting {typo}; did you mean {nearest}?"


def test_the_typo_cases_cover_every_section_with_declared_keys() -> None:
    # [llm] has free names: test_llm_holds_string_secrets_under_free_names covers it
    assert {typo.split(".")[0] for _, typo, _ in TYPOS} == set(SECTIONS) - {"llm"}


def test_unknown_sections_and_stray_keys_are_refused(here: Path) -> None:
    assert refusal('[serer]\naddr = "x"') == "drsg.toml: unknown section [serer]; did you mean [server]?"
    assert refusal('addr = "x"') == "drsg.toml: addr is outside any [section]; did you mean server.addr?"
    no_match = refusal("[fetch]\nzzz = 1")
    assert no_match.startswith("drsg.toml: unknown setting fetch.zzz; [fetch] takes enabled, max_pages,")


def test_a_value_of_the_wrong_kind_is_refused_naming_the_setting_and_where_it_came_from(here: Path) -> None:
    assert "setting store.group_max (config drsg.toml) is invalid: True is not a whole number" in refusal(
        "[store]\ngroup_max = true"
    )
    assert "setting digest.chat (config drsg.toml) is invalid: 3 is not text" in refusal("[digest]\nchat = 3")
    assert "server.tls" in refusal('[server.tls]\ncert = "c.pem"')  # a key is needed too
    assert "'10.0.0.0/33' is not a CIDR range" in refusal('[fetch]\nallow_private = ["10.0.0.0/33"]')
    assert "setting fetch.enabled (env DRSG_FETCH_ENABLED) is invalid: 'maybe'" in refusal(
        "", {"DRSG_FETCH_ENABLED": "maybe"}
    )
    assert load_toml("", {"DRSG_FETCH_ENABLED": "off"})["fetch.enabled"] is False
    assert load_toml('[fetch]\nallow_private = ["10.0.0.0/8", "fd00::1"]')["fetch.allow_private"] == (
        "10.0.0.0/8",
        "fd00::1",
    )


def test_ef_search_below_64_is_refused_once_for_the_cli_and_the_server(here: Path) -> None:
    assert "setting index.ef_search (config drsg.toml) is invalid: must be 64 or more" in refusal(
        "[index]\nef_search = 10"
    )
    assert server_config(load_toml("[index]\nef_search = 200")).ef_search == 200


def test_precedence_flag_over_env_over_file_over_default(here: Path) -> None:
    for name, in_file, in_env, flag, parsed in (
        ("server.addr", '"127.0.0.1:1"', "127.0.0.1:2", "127.0.0.1:3", ("127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3")),
        ("store.map_size", '"1M"', "2M", "3M", (1 << 20, 2 << 20, 3 << 20)),
    ):
        section, key = name.split(".")
        env = next(s.env for s in REGISTRY if s.name == name)
        assert env is not None
        default = load_toml("")
        assert (default.sources[name], default[name]) == (
            "default",
            next(s.default for s in REGISTRY if s.name == name),
        )
        from_file = load_toml(f"[{section}]\n{key} = {in_file}")
        assert (from_file.sources[name], from_file[name]) == ("config drsg.toml", parsed[0])
        from_env = load_toml(f"[{section}]\n{key} = {in_file}", {env: in_env})
        assert (from_env.sources[name], from_env[name]) == (f"env {env}", parsed[1])
        from_flag = from_env.with_flags({name: flag})
        assert (from_flag.sources[name], from_flag[name]) == ("flag", parsed[2])
        assert from_env.with_flags({name: None}) is from_env  # a flag not given changes nothing
    served = server_config(load_toml('[server]\naddr = "127.0.0.1:1"', {"DRSG_SERVER_ADDR": "127.0.0.1:2"}), "[::1]:4")
    assert (served.host, served.port) == ("::1", 4)


def test_a_renamed_variable_is_still_read_below_its_current_name(here: Path) -> None:
    renamed = [s for s in REGISTRY if s.old_env]
    assert [(s.name, s.old_env, s.env) for s in renamed] == [
        ("log.kafka_client", "DRSG_KAFKA_CLIENT", "DRSG_LOG_KAFKA_CLIENT")
    ]
    toml = '[log]\nkafka_client = "confluent-kafka"'
    old = load_toml(toml, {"DRSG_KAFKA_CLIENT": "kafka-python"})
    assert (old["log.kafka_client"], old.sources["log.kafka_client"]) == ("kafka-python", "env DRSG_KAFKA_CLIENT")
    both = load_toml(toml, {"DRSG_KAFKA_CLIENT": "kafka-python", "DRSG_LOG_KAFKA_CLIENT": "auto"})
    assert (both["log.kafka_client"], both.sources["log.kafka_client"]) == ("auto", "env DRSG_LOG_KAFKA_CLIENT")
    assert "setting log.kafka_client (env DRSG_KAFKA_CLIENT) is invalid: 'x' is not auto, confluent-kafka" in refusal(
        "", {"DRSG_KAFKA_CLIENT": "x"}
    )


def test_an_empty_variable_counts_as_unset(here: Path) -> None:
    settings = load_toml('[server]\ntoken = "from-file"', {"DRSG_TOKEN": "", "DRSG_STORE_MAP_SIZE": ""})
    assert settings["server.token"] == "from-file" and settings.sources["store.map_size"] == "default"


@pytest.mark.parametrize("token", [" ", "  \t", " secret", "secret ", "sec\nret"])
def test_a_blank_or_padded_token_is_refused(here: Path, token: str) -> None:
    """A token of spaces protected a public bind before (it is no secret, and a header could not carry it)."""
    with pytest.raises(ConfigError, match=r"^setting server.token \(env DRSG_TOKEN\) is invalid: a token is not blank"):
        load_toml("", {"DRSG_TOKEN": token})


def test_the_servers_special_keys(here: Path) -> None:
    text = '[server]\ntoken = "t-file"\nallowed_origins = ["http://a:1/", "http://b:2"]\nsource_root = "/src"\n'
    text += '[server.tls]\ncert = "c.pem"\nkey = "k.pem"\n'
    served = server_config(load_toml(text))
    assert (served.token, served.allowed_origins) == ("t-file", ("http://a:1", "http://b:2"))
    assert (served.tls_cert, served.tls_key, served.scheme) == ("c.pem", "k.pem", "https")
    env = {"DRSG_TOKEN": "t-env", "DRSG_ALLOWED_ORIGINS": "http://c:3, http://d:4/"}
    served = server_config(load_toml(text, env))
    assert (served.token, served.allowed_origins) == ("t-env", ("http://c:3", "http://d:4"))
    with pytest.raises(ConfigError, match=r"^server.addr \(config drsg.toml\) 'nowhere' is not HOST:PORT"):
        server_config(load_toml('[server]\naddr = "nowhere"'))


def test_the_servers_embedder_comes_from_digest_settings_only_when_set(here: Path) -> None:
    assert server_config(load_toml("")).embed.explicit is False  # the plane's recorded embedder then
    from_file = server_config(load_toml('[digest]\nembed_provider = "qwen"\nembed_model = "m"'))
    assert (from_file.embed.name, from_file.embed.model, from_file.embed.key_env) == ("qwen", "m", None)
    from_env = server_config(load_toml("", {"DRSG_DIGEST_EMBED_PROVIDER": "ollama"}))
    assert from_env.embed.name == "ollama"


def test_a_drsg_variable_in_a_settings_namespace_must_name_a_setting(here: Path) -> None:
    assert refusal("", {"DRSG_SERVER_ADR": "127.0.0.1:1"}) == (
        "environment: unknown setting variable DRSG_SERVER_ADR; did you mean DRSG_SERVER_ADDR? (see `drsg config`)"
    )
    assert "did you mean DRSG_TOKEN?" in refusal("", {"DRSG_SERVER_TOKEN": "t"})
    for unrelated in ("DRSG_DB", "DRSG_CONFIG_X", "DRSG_BENCH_NO_RECORD", "DRSG_LLM_ANYTHING"):
        load_toml("", {unrelated: "1"})  # not a setting's namespace: left alone


def test_plugin_tables_pass_through_uninterpreted(here: Path) -> None:
    text = '[plugins]\nfuel = 0\nstore_dir = "/p"\n[plugins.rust]\ninclude_source = true\ndepth = 2\n'
    text += "[plugins.go]\nwhen = 1979-05-27\nnested = { a = [1, 2] }\n"
    settings = load_toml(text)
    assert (settings["plugins.fuel"], settings["plugins.store_dir"], settings["plugins.memory_mb"]) == (0, "/p", 3072)
    assert dict(settings.plugin_tables) == {
        "rust": {"include_source": True, "depth": 2},
        "go": {"when": date(1979, 5, 27), "nested": {"a": [1, 2]}},
    }
    assert "plugins.fule" in refusal("[plugins]\nfule = 1\n[plugins.rust]\nx = 1")


def test_llm_holds_string_secrets_under_free_names(here: Path) -> None:
    settings = load_toml('[llm]\nOPENAI_API_KEY = "sk-1"\nMY_OWN_KEY = "sk-2"', {"OPENAI_API_KEY": "sk-env"})
    assert dict(settings.llm) == {"OPENAI_API_KEY": "sk-1", "MY_OWN_KEY": "sk-2"}
    assert settings.sources["llm.OPENAI_API_KEY"] == "env OPENAI_API_KEY"  # the environment wins
    assert settings.sources["llm.MY_OWN_KEY"] == "config drsg.toml"
    assert (
        refusal("[llm]\nOPENAI_API_KEY = 3")
        == 'drsg.toml: [llm] OPENAI_API_KEY must be a string: OPENAI_API_KEY = "the secret"'
    )
    assert refusal('llm = "sk"') == "drsg.toml: llm must be a [llm] table"


def test_drsg_config_lists_every_setting_and_never_a_secret(
    here: Path, drsg: Callable[..., Ran], monkeypatch: pytest.MonkeyPatch
) -> None:
    Path("drsg.toml").write_text(
        '[server]\ntoken = "tok-secret"\n[llm]\nDEEPSEEK_API_KEY = "sk-secret"\n[plugins.rust]\nwhen = 2024-01-02\n'
    )
    monkeypatch.setenv("DRSG_FETCH_MAX_PAGES", "7")
    listed = drsg("config", "--json")
    assert listed.code == 0, listed.err
    rows = {row["name"]: row for row in listed.json_lines()}
    expected = {s.name for s in REGISTRY} | {"llm.DEEPSEEK_API_KEY", "plugins.rust.when"}
    assert set(rows) == expected
    pages = rows["fetch.max_pages"]
    assert (pages["env"], pages["value"], pages["source"]) == ("DRSG_FETCH_MAX_PAGES", 7, "env DRSG_FETCH_MAX_PAGES")
    assert rows["server.token"]["value"] == MASK and rows["llm.DEEPSEEK_API_KEY"]["value"] == MASK
    assert rows["server.tls"]["env"] is None and rows["plugins.rust.when"]["value"] == "2024-01-02"
    text = drsg("config")
    assert text.code == 0 and len(text.lines()) == len(expected)
    for output in (text.out, listed.out):
        assert "tok-secret" not in output and "sk-secret" not in output
    assert {line.split(" = ", 1)[0] for line in text.lines()} == expected
    assert json.loads(listed.lines()[0])["name"] == REGISTRY[0].name  # the registry's order


UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


@given(
    st.integers(min_value=1, max_value=1 << 70),
    st.sampled_from(sorted(UNITS)),
    st.sampled_from(["", "B", "iB"]),
    st.booleans(),
    st.sampled_from(["", " "]),
)
@example(9_007_199_254_740_993, "K", "", False, "")  # 2**53 + 1: a float would round it
@example(1, "T", "", False, "")  # T: the server's old parser had no T
def test_size_is_n_times_the_unit(number: int, unit: str, suffix: str, lower: bool, space: str) -> None:
    text = f"{number}{space}{unit}{suffix if unit else suffix.removeprefix('i')}"
    assert _size(text.lower() if lower else text) == number * UNITS[unit]
    assert _size(number) == number


@given(st.lists(st.text(st.characters(blacklist_characters=",", blacklist_categories=("Cs",)))))
def test_a_comma_separated_variable_is_the_same_list(items: list[str]) -> None:
    assert _strings(",".join(items)) == _strings(items) == tuple(i.strip() for i in items if i.strip())
