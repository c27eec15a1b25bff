"""Digest cost on a real ~20-page document set: chat calls and tokens per mode, and the wall time
of everything except the model.

The documents are real text every Debian machine and this repository have: the GNU GPL v3
(``/usr/share/common-licenses/GPL-3``), the "AI Native" chapter of the Dr Strange manual and the
dbgraph README (``tests/data``) — about 63 kB, some 20 pages — digested as one directory. The
model is the scripted OpenAI-compatible server on loopback (capitalised phrases become entities),
which counts tokens with its stand-in tokenizer. Time inside chat calls (as the client sees them)
is subtracted from the wall time; embedding with the local MiniLM is included and reported apart.

    .venv/bin/python -m tests.bench.bench_digest [--no-record]
"""

from __future__ import annotations

import argparse
import datetime as dt
import shutil
import sys
import time
from pathlib import Path
from typing import ClassVar

import drsg
from drsg.models.chat.remote import RemoteChatModel
from drsg.models.embedders import get_embedder
from drsg.pipeline.digest.run import DigestOptions, digest
from drsg.pipeline.digest.sources import read_source
from drsg.pipeline.llm.calls import ModelCalls
from tests.bench.common import OUT, REPO, RESULTS, machine
from tests.support.fake_openai import FakeOpenAI
from tests.support.scripted_model import ScriptedModel

SOURCES = [
    Path("/usr/share/common-licenses/GPL-3"),
    REPO / "tests/data/ai_native_en.txt",
    REPO / "tests/data/dbgraph_readme.txt",
]


class TimedChat(RemoteChatModel):
    """The real chat client, remembering when each call waited on the model."""

    spans: ClassVar[list[tuple[float, float]]] = []

    def complete(self, messages, *, max_tokens=None):  # type: ignore[no-untyped-def]
        start = time.perf_counter()
        try:
            return super().complete(messages, max_tokens=max_tokens)
        finally:
            TimedChat.spans.append((start, time.perf_counter()))


def waiting(spans: list[tuple[float, float]]) -> float:
    """Wall time during which at least one call was waiting (calls overlap under concurrency)."""
    total, end = 0.0, float("-inf")
    for a, b in sorted(spans):
        if b > end:
            total += b - max(a, end)
            end = b
    return total


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args()
    folder = OUT / "digest-docs"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    for path in SOURCES:
        shutil.copy(path, folder / f"{path.name}.txt" if path.suffix != ".txt" else folder / path.name)
    chars = sum(len(p.read_text()) for p in folder.iterdir())
    embedder = get_embedder("local")
    embedder.embed(["warm up"])
    rows = []
    with FakeOpenAI() as fake:
        ScriptedModel().install(fake)
        for mode in ("coarse", "fine", "super"):
            db_path = OUT / f"digest-{mode}.drsg"
            for leftover in OUT.glob(f"digest-{mode}.drsg*"):
                shutil.rmtree(leftover) if leftover.is_dir() else leftover.unlink()
            fake.reset()
            TimedChat.spans = []
            db = drsg.open(db_path)
            start = time.perf_counter()
            doc = read_source(str(folder))
            chat = TimedChat("url", "scripted", fake.base_url, None)
            calls = ModelCalls(chat.identity(), lambda chat=chat: chat, None)
            proposal = digest(db, doc, "docs", DigestOptions(mode=mode, concurrency=4), calls, embedder)
            total = time.perf_counter() - start
            db.close()
            r = proposal.report.to_json()
            rows.append(
                (
                    mode,
                    r["chunks"],
                    r["chat_requests"],
                    r["input_tokens"],
                    r["output_tokens"],
                    r["entities"],
                    r["relations"],
                    total - waiting(TimedChat.spans),
                    total,
                )
            )
    lines = [
        f"Digest of a ~20-page document set ({chars:,} characters: GPL-3, the AI Native chapter, the dbgraph README;"
        " a directory, 3 sources), scripted model on loopback, local MiniLM embeddings, concurrency 4.",
        "",
        "| mode | chunks | chat calls | tokens in | tokens out | entities | relations | without the model | total |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for mode, chunks, n, tin, tout, ents, rels, own, total in rows:
        lines.append(
            f"| {mode} | {chunks} | {n} | {tin:,} | {tout:,} | {ents} | {rels} | {own:.2f} s | {total:.2f} s |"
        )
    when = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    text = "\n".join(
        [
            f"## Digest (AIgest): calls, tokens and time per mode — {when}",
            "",
            f"Machine: {machine()}. Command: `{' '.join([Path(sys.executable).name, *sys.argv])}`",
            "",
            *lines,
            "",
        ]
    )
    print(text)
    if not args.no_record:
        with RESULTS.open("a") as out:
            out.write(text + "\n")


if __name__ == "__main__":
    main()
