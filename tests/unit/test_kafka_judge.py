"""The materialiser's judge (store/kafka/materialiser.py), on random streams of records: writers'
commits on the right or a stale base, groups finished or cut short by another record, facts with no
base, and poison (not a commit, a gap). Whatever the stream: one local commit per record, in seq
order, except the records of a group still open at the end; a group is applied whole or not at all;
a commit applies only on the right base; poison is counted and never applied.
"""

from __future__ import annotations

from dataclasses import dataclass

import hypothesis.strategies as st
import pytest
from hypothesis import given

from drsg.kernel.errors import DamagedDatabase
from drsg.store.kafka.log import Record
from drsg.store.kafka.materialiser import BASE, GROUP, PREV, REST, Judge, crc_of, u64_header
from drsg.store.log import encode
from drsg.store.mutations import NodePut


@dataclass(frozen=True)
class Planned:
    kind: str  # "fact", "good", "stale", "group", "poison", "gap"
    size: int = 1  # records in a group
    cut: int | None = None  # a group cut short after this many records (another record follows)


plans = st.one_of(
    st.sampled_from([Planned("fact"), Planned("good"), Planned("stale"), Planned("poison"), Planned("gap")]),
    st.integers(2, 4).flatmap(
        lambda n: st.builds(Planned, st.just("group"), st.just(n), st.none() | st.integers(1, n - 1))
    ),
)


def stream(planned: list[Planned]) -> tuple[list[Record], dict[int, str]]:
    """The records the plan makes, and the intent (a label) of each seq."""
    records: list[Record] = []
    intent: dict[int, str] = {}

    def add(value: bytes | None, headers: dict[str, bytes], label: str) -> None:
        seq = len(records) + 1
        records.append(Record(seq, value, headers))
        intent[seq] = label

    def commit(label: str) -> bytes:
        return encode(1, {"label": label}, [NodePut(0, len(records) + 1, None, [], {})])

    for number, plan in enumerate(planned):
        seq = len(records) + 1
        if plan.kind == "fact":
            add(commit("fact"), {}, "fact")
        elif plan.kind == "good":
            add(commit("good"), {BASE: u64_header(seq - 1)}, "good")
        elif plan.kind == "stale":
            add(commit("stale"), {BASE: u64_header(seq + number % 3)}, "stale")  # never seq - 1
        elif plan.kind == "poison":
            add(b"not a commit", {}, "poison")
        elif plan.kind == "gap":
            add(None, {}, "poison")
        else:
            label, first = f"group{number}", u64_header(seq - 1)
            for i in range(plan.size if plan.cut is None else plan.cut):
                rest = plan.size - 1 - i
                headers = {BASE: u64_header(len(records)), GROUP: first} | ({REST: u64_header(rest)} if rest else {})
                add(commit(label), headers, label)
    return records, intent


@given(st.lists(plans, max_size=25))
def test_a_stream_becomes_one_local_commit_per_record_groups_whole_or_not_at_all(planned: list[Planned]) -> None:
    records, intent = stream(planned)
    judge = Judge()
    out = [entry for record in records for entry in judge.feed(record)]
    pending = {entry.seq for entry in judge.pending}
    assert [e.seq for e in out] == [r.seq for r in records if r.seq not in pending]  # in order, once each
    assert all(intent[seq].startswith("group") for seq in pending)  # only an open group is held back
    applied = {e.seq for e in out if e.mutations}
    for entry in out:
        label = intent[entry.seq]
        if label in ("fact", "good"):
            assert entry.seq in applied, entry
        elif label in ("stale", "poison"):
            assert entry.seq not in applied and not entry.mutations and "skipped" in entry.origin
    for label in {label for label in intent.values() if label.startswith("group")}:
        seqs = {seq for seq, what in intent.items() if what == label}
        assert seqs <= applied or not seqs & applied, label  # whole or not at all
        finished = len(seqs) == next(p.size for n, p in enumerate(planned) if f"group{n}" == label)
        assert (seqs <= applied) == (finished and not seqs & pending)
    assert {e.seq for e in out if e.poison} == {seq for seq, what in intent.items() if what == "poison"}


def test_a_commit_made_on_another_record_than_this_copys_is_refused_not_taken() -> None:
    first = Record(1, encode(1, {}, [NodePut(0, 1, "a", [], {})]), {})
    judge = Judge()
    assert [e.seq for e in judge.feed(first)] == [1]
    on_ours = {BASE: u64_header(1), PREV: u64_header(crc_of(first))}
    assert judge.feed(Record(2, encode(2, {}, [NodePut(0, 2, "b", [], {})]), on_ours))[0].mutations
    other_history = {BASE: u64_header(2), PREV: u64_header(crc_of(first))}  # on a record 2 we do not hold
    with pytest.raises(DamagedDatabase, match="was made on another commit 2 than the one this copy holds"):
        judge.feed(Record(3, encode(3, {}, [NodePut(0, 3, "c", [], {})]), other_history))
    stale = {BASE: u64_header(1), PREV: u64_header(12345)}  # a stale commit: its base is not ours to check
    assert judge.feed(Record(3, encode(3, {}, [NodePut(0, 3, "c", [], {})]), stale))[0].origin["skipped"]
