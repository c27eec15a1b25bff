"""The keyword (BM25) index: one tantivy index per (plane, label, string property).

Text is analysed in Python (analysis.py, THE analyser) and indexed as space-joined terms under
tantivy's whitespace tokenizer, so tantivy never re-analyses anything; queries are analysed the same
way and become OR'ed term queries (user text never meets tantivy's query parser). tantivy scores with
BM25, k1=1.2, b=0.75, IDF = ln(1 + (N - df + 0.5) / (df + 0.5)) — upstream's formula. Document
lengths go through tantivy's one-byte field norms: exact up to ~40 terms, within a few percent
beyond, so long documents score slightly differently from an exact BM25.

Exact statistics. tantivy keeps a deleted document in its segment (still counted in N, df and the
average length) until the segment is merged. So a flush that replaces or removes committed documents
rewrites every segment holding one: the survivors are deleted and added again, the old segment then
holds only deleted documents and tantivy drops it at commit. After every flush no segment holds a
deleted document, and scores equal those of an index built from scratch (a property test holds
this). The price is re-adding the survivors of the touched segments; an update whose analysed text is
unchanged (any other property of the node changed) costs nothing — a hash of the terms is kept in a
fast field and compared first.

The working copy is an in-memory tantivy index: a flush costs ~4 ms, where an on-disk working copy
paid ~70 ms of tantivy's fsyncs per commit on this project's machines. The sidecar is therefore not
tantivy's segment files but the index's content — ``docs.msgpack``, a header then one ``[node id,
terms]`` record per document in id order — from which ``read_files`` rebuilds the same index (same
documents, so the same statistics and scores). Loading never hands a file to tantivy, so even a
crafted sidecar cannot crash the process; its cost is re-indexing (~10-20 µs per document).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, ClassVar, cast

import msgpack
import numpy as np
import tantivy

from drsg.store.records import IndexDecl
from drsg.workers.analysis import ANALYZER_VERSION, analyzer, canonical_language
from drsg.workers.base import IndexWorker, Pool, pairs, pool_of

LAYOUT = 1  # the tantivy schema below and the sidecar file; bump when either changes
DOCS_FILE = "docs.msgpack"
_WRITER_HEAP = 64_000_000
_FEW = 32  # hits ranked in Python below this many, in numpy above (each way is cheaper on its side)


def _schema() -> tantivy.Schema:
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("body", stored=True, tokenizer_name="whitespace", index_option="freq")
    builder.add_integer_field("id", indexed=True, fast=True)  # i64: tantivy-py cannot delete by a u64 term
    builder.add_integer_field("hash", fast=True)
    return builder.build()


def _libraries(language: str) -> str:
    """The libraries whose upgrade may change terms or the file format (a sidecar records them)."""
    names = ["tantivy", "snowballstemmer"] + (["jieba"] if language == "chinese" else [])
    return ", ".join(f"{name} {importlib.metadata.version(name)}" for name in names)


def _digest(terms: str) -> int:
    return int.from_bytes(hashlib.blake2b(terms.encode(), digest_size=8).digest(), "little", signed=True)


class KeywordIndex(IndexWorker):
    """BM25 over the analysed text of one string property of one label."""

    kind: ClassVar[str] = "keyword"
    suffix: ClassVar[str] = ".bm25"

    def __init__(self, decl: IndexDecl, db_path: str | os.PathLike[str], db_uuid: str) -> None:
        super().__init__(decl, db_path, db_uuid)
        self.language = canonical_language(decl.language)
        self._analyze = analyzer(self.language)
        self._libraries = _libraries(self.language)
        self.schema = _schema()
        self._lock = threading.RLock()
        self._pending: dict[int, str] = {}  # node id -> analysed terms ("" = remove)
        self._index = tantivy.Index(self.schema)
        self._searcher = self._index.searcher()

    # ------------------------------------------------------------------ IndexWorker

    def accepts(self, value: Any) -> bool:
        return isinstance(value, str) and value != ""

    def meta(self) -> dict[str, Any]:
        return {
            **super().meta(),
            "analyzer": ANALYZER_VERSION,
            "layout": LAYOUT,
            "libraries": self._libraries,
        }

    def reset(self) -> None:
        with self._lock:
            self._pending.clear()
            self._index = tantivy.Index(self.schema)
            self._searcher = self._index.searcher()

    def upsert(self, node_id: int, value: Any) -> None:
        # Empty documents are not stored: text that analyses to nothing is a removal.
        terms = " ".join(self._analyze(value)) if self.accepts(value) else ""
        with self._lock:
            self._pending[node_id] = terms

    def remove(self, node_id: int) -> None:
        with self._lock:
            self._pending[node_id] = ""

    def flush(self) -> None:
        with self._lock:
            if not self._pending:
                return
            pending, self._pending = self._pending, {}
            try:
                self._commit(pending)
            except BaseException:
                self._pending = {**pending, **self._pending}
                raise

    def write_files(self, folder: Path) -> None:
        with self._lock:
            searcher = self._searcher
            docs = self._all_docs(searcher)
            with (folder / DOCS_FILE).open("wb") as fh:
                packer = msgpack.Packer()
                fh.write(packer.pack({"format": LAYOUT, "count": len(docs)}))
                for node_id, terms, _ in docs:
                    fh.write(packer.pack([node_id, terms]))

    def read_files(self, folder: Path) -> None:
        index = tantivy.Index(self.schema)
        with (folder / DOCS_FILE).open("rb") as fh:
            records = msgpack.Unpacker(fh, raw=False, strict_map_key=True)
            header = next(records, None)
            if not isinstance(header, dict) or header.get("format") != LAYOUT:
                raise ValueError(f"{DOCS_FILE} has no valid header")
            count = _write(index, _checked(records))
        if count != header.get("count"):
            raise ValueError(f"{DOCS_FILE} holds {count} documents, its header says {header.get('count')}")
        index.reload()
        with self._lock:
            self._pending.clear()
            self._index, self._searcher = index, index.searcher()

    # ------------------------------------------------------------------ queries

    def search(self, query: str, k: int) -> list[tuple[int, float]]:
        """The ``k`` best nodes by BM25 as ``(node id, score)`` pairs, as :meth:`search_arrays` ranks
        them: a single search reads records for its pairs, and a few need no arrays on the way."""
        scores, ids, k = self._candidates(query, k)
        return _ranked(scores, ids, k) if len(ids) <= _FEW else pairs(_ranked_arrays(scores, ids, k))

    def search_arrays(self, query: str, k: int) -> Pool:
        """The ``k`` best nodes by BM25 as arrays (hybrid fusion works on arrays): score descending,
        then node id ascending."""
        scores, ids, k = self._candidates(query, k)
        return pool_of(_ranked(scores, ids, k)) if len(ids) <= _FEW else _ranked_arrays(scores, ids, k)

    def _candidates(self, query: str, k: int) -> tuple[list[float], list[int], int]:
        """The hits that can be in the top ``k`` (every hit scoring at least the k-th, best first) as
        their scores and node ids, and ``k`` cut to the hits there are."""
        terms: dict[str, int] = {}
        for term in self._analyze(query):  # a dict, not a Counter: a third of its cost here
            terms[term] = terms.get(term, 0) + 1
        searcher = self._searcher
        if not terms or k <= 0 or searcher is None or searcher.num_docs == 0:
            return [], [], 0
        hits = _top_with_ties(searcher, _or_query(self.schema, terms), k)
        if not hits:
            return [], [], 0
        k = min(k, len(hits))
        # Only hits scoring at least the k-th can be in the top k: the rest need no id.
        kth = hits[k - 1][0]
        keep = k
        while keep < len(hits) and hits[keep][0] >= kth:
            keep += 1
        top = hits[:keep]
        # The id field is i64: tantivy hands back ints, which need no _ints copy on a query's path.
        ids = cast("list[int]", searcher.fast_field_values("id", [address for _, address in top]))
        return [score for score, _ in top], ids, k

    def __len__(self) -> int:
        """Documents searchable now (flushed)."""
        searcher = self._searcher
        return 0 if searcher is None else searcher.num_docs

    def node_ids(self) -> set[int]:
        searcher = self._searcher
        return set(_ints(searcher.fast_field_values("id", self._addresses(searcher))))

    # ------------------------------------------------------------------ internals

    def _commit(self, pending: dict[int, str]) -> None:
        searcher = self._searcher
        current = self._lookup(searcher, list(pending))  # id -> (hash, segment ord)
        adds: dict[int, tuple[str, int]] = {}
        gone: set[int] = set()
        for node_id, terms in pending.items():
            digest = _digest(terms) if terms else None
            old = current.get(node_id)
            if old is not None and old[0] == digest:
                continue  # same terms: nothing to do
            if old is not None:
                gone.add(node_id)
            if terms and digest is not None:
                adds[node_id] = (terms, digest)
        if not adds and not gone:
            return
        doomed = set(gone)
        if gone:  # rewrite the touched segments so no deleted document lingers in the statistics
            touched = {current[node_id][1] for node_id in gone}
            for node_id, terms, digest in self._all_docs(searcher, touched):
                doomed.add(node_id)
                if node_id not in gone:
                    adds[node_id] = (terms, digest)
        delete = tantivy.Query.term_set_query(self.schema, "id", sorted(doomed)) if doomed else None
        _write(self._index, ((node_id, *adds[node_id]) for node_id in sorted(adds)), delete)
        self._index.reload()
        self._searcher = self._index.searcher()

    def _lookup(self, searcher: tantivy.Searcher, ids: list[int]) -> dict[int, tuple[int, int]]:
        """``id -> (hash, segment ord)`` for the ids that are indexed."""
        if searcher.num_docs == 0 or not ids:
            return {}
        q = tantivy.Query.term_set_query(self.schema, "id", ids)
        addresses = [address for _, address in searcher.search(q, len(ids), count=False).hits]
        found = _ints(searcher.fast_field_values("id", addresses))
        digests = _ints(searcher.fast_field_values("hash", addresses))
        return {i: (h, a.segment_ord) for i, h, a in zip(found, digests, addresses, strict=True)}

    def _addresses(self, searcher: tantivy.Searcher, segments: set[int] | None = None) -> list[Any]:
        """The address of every document (of the given segments), in id order."""
        if searcher.num_docs == 0:
            return []
        everything = searcher.search(
            tantivy.Query.all_query(), searcher.num_docs, count=False, order_by_field="id", order=tantivy.Order.Asc
        ).hits
        return [a for _, a in everything if segments is None or a.segment_ord in segments]

    def _all_docs(self, searcher: tantivy.Searcher, segments: set[int] | None = None) -> list[tuple[int, str, int]]:
        """``(id, terms, hash)`` of every document (of the given segments), in id order."""
        addresses = self._addresses(searcher, segments)
        ids = _ints(searcher.fast_field_values("id", addresses))
        digests = _ints(searcher.fast_field_values("hash", addresses))
        return [(i, str(searcher.doc(a)["body"][0]), h) for i, h, a in zip(ids, digests, addresses, strict=True)]


# Looked up once: every query builds its clauses from these.
_term_query, _boost_query = tantivy.Query.term_query, tantivy.Query.boost_query
_boolean_query, _SHOULD = tantivy.Query.boolean_query, tantivy.Occur.Should


def _or_query(schema: tantivy.Schema, terms: dict[str, int]) -> tantivy.Query:
    """An OR of term queries; a repeated query term counts once per occurrence, as in a sum over the query."""
    clauses = []
    for term, count in sorted(terms.items()):
        clause = _term_query(schema, "body", term)
        if count > 1:
            clause = _boost_query(clause, float(count))
        clauses.append((_SHOULD, clause))
    return _boolean_query(clauses)


def _ranked(scores: list[float], ids: list[int], k: int) -> list[tuple[int, float]]:
    """The best ``k`` of a few hits, score descending, then node id ascending: (-score, id) pairs
    sort in Python at a third of numpy's cost (lexsort, negation, two gathers); negating twice is exact."""
    return [(node_id, -score) for score, node_id in sorted(zip([-score for score in scores], ids, strict=True))[:k]]


def _ranked_arrays(scores: list[float], ids: list[int], k: int) -> Pool:
    """:func:`_ranked` for many hits, in numpy."""
    score_array = np.array(scores, dtype=np.float64)
    id_array = np.array(ids, dtype=np.int64)
    order = np.lexsort((id_array, -score_array))[:k]
    return id_array[order], score_array[order]


def _top_with_ties(searcher: tantivy.Searcher, q: tantivy.Query, k: int) -> list[tuple[float, Any]]:
    """tantivy's best hits ``(score, address)``, score descending, through every hit tied with the
    k-th, so ties can then be broken by node id. (The limit never exceeds the number of documents:
    tantivy sizes its heap by it.)"""
    total = searcher.num_docs
    k = min(k, total)
    # Past k, as a hit scoring below the k-th shows no tie at the cut; ties there are usually a few
    # hits, so a quarter more (at least 16 more) is fetched first, twice as many each time that
    # falls short. (For k = 10 on real prose, 13 hits fell short for 31% of queries, a second search
    # each; 27 fall short for ~2%, and fetching 27 costs ~1 µs more than 13.)
    limit = min(k + max(k // 4, 16) + 1, total)
    while True:
        hits: list[tuple[float, Any]] = searcher.search(q, limit, count=False).hits
        if len(hits) < limit or limit >= total or hits[-1][0] < hits[k - 1][0]:
            return hits
        limit = min(2 * limit, total)


def _write(index: tantivy.Index, docs: Iterable[tuple[int, str, int]], delete: tantivy.Query | None = None) -> int:
    """One tantivy commit: ``delete`` (documents already there), then add ``(id, terms, hash)``.

    The writer is finished with ``wait_merging_threads``, so no merge runs between flushes: the
    segments a flush inspects are the ones it rewrites.
    """
    writer = index.writer(_WRITER_HEAP, 1)
    count = 0
    try:
        if delete is not None:
            writer.delete_documents_by_query(delete)
        for node_id, terms, digest in docs:
            doc = tantivy.Document()
            doc.add_integer("id", node_id)
            doc.add_integer("hash", digest)
            doc.add_text("body", terms)
            writer.add_document(doc)
            count += 1
        writer.commit()
    except BaseException:
        writer.rollback()
        raise
    finally:
        writer.wait_merging_threads()
    return count


def _checked(records: Iterable[Any]) -> Iterable[tuple[int, str, int]]:
    """``(id, terms, hash)`` from sidecar records, which must be ``[id, terms]`` in ascending id order."""
    last = -1
    for record in records:
        if not (
            isinstance(record, list) and len(record) == 2 and type(record[0]) is int and isinstance(record[1], str)
        ):
            raise ValueError(f"malformed record in {DOCS_FILE}")
        node_id, terms = record
        if not last < node_id < 2**63 or not terms:
            raise ValueError(f"bad node id or empty document in {DOCS_FILE}")
        last = node_id
        yield node_id, terms, _digest(terms)


def _ints(values: Sequence[Any]) -> list[int]:
    return [int(v) for v in values]
