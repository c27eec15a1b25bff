"""Option decorators shared by commands, so a flag means the same thing everywhere."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

import click

from drsg.kernel.asof import AsOf, parse_as_of
from drsg.kernel.errors import BadValue, DrsgError
from drsg.kernel.values import MAX_ID, from_json
from drsg.store.transaction import DEFAULT_PLANE

F = TypeVar("F", bound=Callable[..., Any])


def plane_option(fn: F) -> F:
    return click.option(
        "--plane", "-p", default=DEFAULT_PLANE, show_default=True, metavar="NAME", help="The plane to use."
    )(fn)


def json_option(fn: F) -> F:
    return click.option("--json", "as_json", is_flag=True, help="Print JSON (one object per line).")(fn)


class AsOfParam(click.ParamType):
    name = "SEQ|RFC3339"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> AsOf:
        if isinstance(value, AsOf):
            return value
        try:
            return parse_as_of(value)
        except DrsgError as exc:
            self.fail(exc.message, param, ctx)


def as_of_option(fn: F) -> F:
    return click.option(
        "--as-of",
        type=AsOfParam(),
        default=None,
        help='Read as of a commit seq, an RFC 3339 time, or "TIME <unix-ms>".',
    )(fn)


def prop_options(fn: F) -> F:
    fn = click.option(
        "--prop",
        "-P",
        "props",
        multiple=True,
        metavar="NAME=JSON",
        help="A property; the value is JSON (other text is a string, with a note if it looked like JSON): "
        "-P born=1815 -P name=Ada.",
    )(fn)
    return click.option(
        "--props", "props_json", default=None, metavar="JSON", help="All properties as one JSON object."
    )(fn)


#: how a JSON number, string, list or map starts: a value that starts so but does not parse was
#: meant as JSON (a plain word like `Ada` is a string by design, with no note)
_JSON_STARTS = frozenset('"[{-.0123456789')


def json_pairs(pairs: tuple[str, ...], flag: str, example: str) -> dict[str, Any]:
    """``NAME=VALUE`` flags (``--prop``, ``--param``) → {name: value}; a value is JSON, or else the text itself."""
    out: dict[str, Any] = {}
    for pair in pairs:
        name, sep, text = pair.partition("=")
        if not sep or not name:
            raise BadValue(f"{flag} {pair!r} is not NAME=VALUE; write e.g. {flag} {example}")
        try:
            out[name] = json.loads(text)
        except ValueError:
            out[name] = text
            if text.lstrip()[:1] in _JSON_STARTS:  # `18x15`, `[1,2`: meant as JSON, so say it is a string now
                click.echo(
                    f"note: {flag} {name}: {text} is not valid JSON, so it is stored as a string; "
                    f"write {flag} '{name}={json.dumps(text)}' to mean the string, or fix the JSON",
                    err=True,
                )
        except RecursionError:
            raise BadValue(f"{flag} {name}: lists and maps nest too deeply to read; flatten the value") from None
    return out


def parse_props(pairs: tuple[str, ...], props_json: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if props_json is not None:
        try:
            obj = json.loads(props_json)
        except (ValueError, RecursionError) as exc:
            raise BadValue(f"--props is not valid JSON ({exc}); pass an object like '{{\"a\": 1}}'") from None
        if not isinstance(obj, dict):
            raise BadValue("--props must be a JSON object like '{\"a\": 1}'")
        out.update(obj)
    out.update(json_pairs(pairs, "--prop", "born=1815"))
    return {k: from_json(v, f"property {k!r}") for k, v in out.items()}


def node_ref(text: str) -> int | str:
    """``42`` is an id, ``@ada`` (or any non-number) a key."""
    return record_id(text, "node") if text.isdigit() else text


def record_id(text: str | int, what: str) -> int:
    """A node or edge id as typed: a whole number that fits the store's 64-bit ids."""
    number = int(text)
    if not 0 <= number <= MAX_ID:
        hint = f"; for a key, write @{text}" if what == "node" else ""
        raise BadValue(f"{what} id {text} is out of range (ids are 0 to 2^64-1){hint}")
    return number


def embed_options(fn: F) -> F:
    """--embed, --embed-model, --embed-url, --embed-key-env: which embedder turns text into vectors."""
    fn = click.option(
        "--embed-key-env", default=None, metavar="VAR", help="Environment variable holding the embedder's API key."
    )(fn)
    fn = click.option("--embed-url", default=None, metavar="URL", help="Base URL of an OpenAI-compatible service.")(fn)
    fn = click.option("--embed-model", default=None, metavar="MODEL", help="The embedding model to ask for.")(fn)
    return click.option(
        "--embed",
        default=None,
        metavar="NAME",
        help="local, openai, qwen, ollama, url, or a base URL (default: the one that wrote the vectors, else "
        "[digest] embed_provider, else local).",
    )(fn)


def walk_options(fn: F) -> F:
    """--ignore-files, --tracked-only, --code-only: how a directory is walked (`digest`, `serve watch`,
    `init`). Each is None when not given, so the `[digest]` setting decides (digest's `tree_options_of`)."""
    fn = click.option(
        "--code-only", is_flag=True, default=None, help="Read only files a handler claims: no prose, no model."
    )(fn)
    fn = click.option(
        "--tracked-only", is_flag=True, default=None, help="Read only what git tracks (one `git ls-files`)."
    )(fn)
    return click.option(
        "--ignore-files",
        default=None,
        metavar="LIST",
        help="Ignore files a directory honours: gitignore (default), dockerignore, both comma-separated, "
        "or '' for none.",
    )(fn)


def tree_options(fn: F) -> F:
    """:func:`walk_options` and --handler: how a directory is walked and routed (`digest`, `serve watch`)."""
    return click.option(
        "--handler", default=None, metavar="NAME", help="Force one handler for a directory's code (`drsg plugin list`)."
    )(walk_options(fn))


def chat_options(fn: F) -> F:
    """--chat, --model, --chat-url, --chat-key-env: which chat model reads prose."""
    fn = click.option(
        "--chat-key-env", default=None, metavar="VAR", help="Environment variable holding the chat API key."
    )(fn)
    fn = click.option("--chat-url", default=None, metavar="URL", help="Base URL of an OpenAI-compatible chat service.")(
        fn
    )
    fn = click.option("--model", default=None, metavar="MODEL", help="The chat model to ask for.")(fn)
    return click.option(
        "--chat", default=None, metavar="NAME", help="openai (default), deepseek, qwen, ollama, url, or a base URL."
    )(fn)
