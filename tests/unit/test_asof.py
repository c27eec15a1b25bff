"""Time-travel targets: parsing (drsg/asof.py) and resolving them against the log (Database)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import hypothesis.strategies as st
import pytest
from hypothesis import example, given

import drsg
from drsg.kernel.asof import AsOf, format_ms, parse_as_of, parse_rfc3339_ms
from drsg.kernel.errors import BadAsOf, UsageError
from drsg.store.database import Database

JAN31_NOON_MS = 1769860800000  # 2026-01-31T12:00:00Z


# --------------------------------------------------------------------------- parsing


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (42, AsOf(seq=42)),
        ("42", AsOf(seq=42)),
        (" 42 ", AsOf(seq=42)),
        ('"42"', AsOf(seq=42)),
        ("TIME 1700000000000", AsOf(ms=1700000000000)),
        ("time   5", AsOf(ms=5)),
        ("  TIME 0  ", AsOf(ms=0)),
        ("TIME -5", AsOf(ms=-5)),
        ("2026-01-31T12:00:00Z", AsOf(ms=JAN31_NOON_MS)),
        ("2026-01-31T12:00:00z", AsOf(ms=JAN31_NOON_MS)),
        ('"2026-01-31T12:00:00Z"', AsOf(ms=JAN31_NOON_MS)),
        ("2026-01-31T20:00:00+08:00", AsOf(ms=JAN31_NOON_MS)),
        ("2026-01-31T07:30:00-04:30", AsOf(ms=JAN31_NOON_MS)),
        ("2026-01-31T12:00:00.123Z", AsOf(ms=JAN31_NOON_MS + 123)),
        ("2026-01-31T12:00:00.123999Z", AsOf(ms=JAN31_NOON_MS + 123)),  # at or before: floor
        ("1970-01-01T00:00:00Z", AsOf(ms=0)),
    ],
)
def test_parse_as_of(text: str | int, expected: AsOf) -> None:
    assert parse_as_of(text) == expected


@pytest.mark.parametrize(
    "text",
    [0, -1, "0", "00", "", "   ", '""', "abc", "TIME", "TIME x", "TIME 1.5", "1e3", "12abc", "-3", True, 4.0],
)
def test_parse_as_of_rejects(text: object) -> None:
    with pytest.raises(BadAsOf):
        parse_as_of(text)  # type: ignore[arg-type]


def test_a_time_without_an_offset_says_how_to_fix_it() -> None:
    with pytest.raises(BadAsOf, match="UTC offset"):
        parse_as_of("2026-01-31T12:00:00")


def test_seq_zero_explains_the_forms() -> None:
    with pytest.raises(BadAsOf, match="RFC 3339"):
        parse_as_of(0)


@pytest.mark.parametrize("text", ["²", "١٢", "٣"])  # str.isdigit() is True for these; int() is not ASCII-only
def test_non_ascii_digits_are_bad_as_of_not_value_errors(text: str) -> None:
    try:
        parsed = parse_as_of(text)
    except BadAsOf:
        return
    # Accepting Unicode digits would be a choice; crashing with ValueError is not.
    assert parsed.seq is not None and parsed.seq >= 1


def test_bad_as_of_is_a_usage_error() -> None:
    with pytest.raises(UsageError) as info:
        parse_as_of("yesterday")
    assert info.value.exit_code == 2


def test_format_ms() -> None:
    assert format_ms(0) == "1970-01-01T00:00:00.000Z"
    assert format_ms(1700000000123) == "2023-11-14T22:13:20.123Z"
    assert format_ms(-1) == "1969-12-31T23:59:59.999Z"
    assert str(AsOf(seq=3)) == "seq 3"
    assert str(AsOf(ms=1700000000123)) == "time 2023-11-14T22:13:20.123Z"


@given(st.integers(-(10**12), 4 * 10**12))
@example(1097446001064)  # 2004-10-10T22:06:41.064Z: float seconds * 1000 lands on ...063.99999
@example(1700000000001)
def test_rfc3339_round_trips_to_the_millisecond(ms: int) -> None:
    # The log prints commit times with format_ms; reading one back must name the same millisecond,
    # or `AS OF "<a commit's time>"` resolves to the commit before it.
    assert parse_rfc3339_ms(format_ms(ms)) == ms


# --------------------------------------------------------------------------- resolving


class Clock:
    """A settable wall clock for the writer (seconds, as time.time returns)."""

    def __init__(self, start: float) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    database = drsg.open(tmp_path / "g.drsg")
    yield database
    database.close()


def _commit(db: Database, clock: Clock, at: float, key: str) -> tuple[int, int]:
    clock.now = at
    result = db.write(lambda tx: tx.create_node(tx.plane("startup"), key))
    assert result.seq is not None and result.ts is not None
    return result.seq, result.ts


def test_as_of_time_resolves_to_the_last_commit_at_or_before_it(db: Database) -> None:
    base = float(int(time.time()) + 1000)  # whole seconds after the bootstrap commit: exact in ms
    base_ms = int(base) * 1000
    clock = Clock(base)
    db.writer.clock = clock
    seqs = [_commit(db, clock, base + dt, f"k{i}") for i, dt in enumerate([0, 1, 1, 2.5])]
    assert [ts for _, ts in seqs] == [base_ms, base_ms + 1000, base_ms + 1000, base_ms + 2500]
    s1, s2, s3, s4 = (seq for seq, _ in seqs)
    assert [s2, s3, s4] == [s1 + 1, s1 + 2, s1 + 3]

    assert db.resolve_as_of(f"TIME {base_ms}") == s1
    assert db.resolve_as_of(f"TIME {base_ms + 999}") == s1
    assert db.resolve_as_of(f"TIME {base_ms + 1000}") == s3  # two commits share the ms: the later
    assert db.resolve_as_of(f"TIME {base_ms + 2499}") == s3
    assert db.resolve_as_of(f"TIME {base_ms + 2500}") == s4
    assert db.resolve_as_of(f"TIME {base_ms + 10**9}") == s4 == db.head()
    assert db.resolve_as_of(f"TIME {base_ms - 1}") == s1 - 1  # the bootstrap commit
    assert db.resolve_as_of(AsOf(ms=base_ms + 1000)) == s3
    assert db.resolve_as_of(format_ms(base_ms + 1000)) == s3
    with db.snapshot(format_ms(base_ms + 999)) as snap:
        assert snap.at == s1
        assert snap.node_by_key(0, "k0") is not None
        assert snap.node_by_key(0, "k1") is None


def test_timestamps_never_decrease_when_the_clock_steps_back(db: Database) -> None:
    base = float(int(time.time()) + 1000)
    base_ms = int(base) * 1000
    clock = Clock(base)
    db.writer.clock = clock
    stamps = [_commit(db, clock, at, f"k{i}")[1] for i, at in enumerate([base, base - 30, base + 2, base - 3600])]
    assert stamps == [base_ms, base_ms, base_ms + 2000, base_ms + 2000]
    logged = [c.ts for c in db.commits()]
    assert logged == sorted(logged)
    assert logged[-4:] == stamps
    # A time the clock "went back to" resolves by the log's own (clamped) timestamps.
    assert db.resolve_as_of(f"TIME {base_ms - 30_000}") == 1
    assert db.resolve_as_of(f"TIME {base_ms}") == 3


def test_timestamps_stay_non_decreasing_across_reopen(tmp_path: Path) -> None:
    path = tmp_path / "g.drsg"
    future = float(int(time.time()) + 5000)
    with drsg.open(path) as db:
        db.writer.clock = lambda: future
        db.write(lambda tx: tx.create_node(tx.plane("startup"), "a"))
    with drsg.open(path) as db:  # a fresh writer with the real (earlier) clock
        db.write(lambda tx: tx.create_node(tx.plane("startup"), "b"))
        assert [c.ts for c in db.commits()][-2:] == [int(future) * 1000] * 2


def test_a_time_before_the_first_commit_is_bad_as_of(db: Database) -> None:
    first = next(iter(db.commits())).ts
    for target in (f"TIME {first - 1}", "TIME 0", "1970-01-01T00:00:00Z", AsOf(ms=first - 1)):
        with pytest.raises(BadAsOf, match="before the first commit"):
            db.resolve_as_of(target)
    with pytest.raises(BadAsOf), db.snapshot("TIME 0"):
        pass
    assert db.resolve_as_of(f"TIME {first}") == 1


@pytest.mark.parametrize("target", ["TIME -99999999999999999", "0001-01-01T00:00:00Z"])
def test_a_time_far_before_the_log_is_still_bad_as_of(db: Database, target: str) -> None:
    # The error message formats the target time; a year outside datetime's range must not turn
    # the BadAsOf into a ValueError/OverflowError.
    with pytest.raises(BadAsOf):
        db.resolve_as_of(target)


def test_a_seq_beyond_the_head_is_bad_as_of(db: Database) -> None:
    db.write(lambda tx: tx.create_node(tx.plane("startup"), "a"))
    head = db.head()
    assert head == 2
    assert db.resolve_as_of(head) == head
    assert db.resolve_as_of(str(head)) == head
    for target in (head + 1, str(head + 1), AsOf(seq=head + 1), "99999999999999999999999"):
        with pytest.raises(BadAsOf, match="beyond the head"):
            db.resolve_as_of(target)
    with pytest.raises(BadAsOf), db.snapshot(as_of=head + 1):
        pass


def test_as_of_seq_reads_that_commit(db: Database) -> None:
    plane = db.plane("startup")
    db.write(lambda tx: tx.create_node(plane, "a", [], {"v": 1}))
    db.write(lambda tx: tx.update_node(plane, "a", {"v": 2}))
    for as_of, expected in ((2, 1), ("2", 1), (3, 2), (AsOf(seq=3), 2)):
        with db.snapshot(as_of=as_of) as snap:
            node = snap.node_by_key(plane.id, "a")
            assert node is not None and node.props == {"v": expected}
    with db.snapshot(as_of=1) as snap:
        assert snap.node_by_key(plane.id, "a") is None


# --------------------------------------------------------------------------- the API's as_of


def test_the_api_reads_a_seq_as_one_shared_as_of_and_refuses_what_parse_refuses() -> None:
    """An as-of read by seq costs a current read's plus a lookup: the API keeps one (frozen) AsOf per
    recent seq instead of making one per read (issue #37: the as-of lookup was 1.26× the current)."""
    from drsg.api.points import as_of_of

    assert as_of_of(7) == AsOf(seq=7)
    assert as_of_of(7) is as_of_of(7)
    assert as_of_of("7") == AsOf(seq=7)
    assert as_of_of(None) is None
    given_as_of = AsOf(seq=3)
    assert as_of_of(given_as_of) is given_as_of
    for bad in (0, -1, True, False):  # a bool hashes as 1 / 0: it must not find seq 1's AsOf
        as_of_of(1)
        with pytest.raises(BadAsOf):
            as_of_of(bad)


def test_a_bare_seq_reads_without_a_reader_and_refuses_as_before(db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    """``db.snapshot(seq)`` takes the seq path an AsOf takes (a Reader per read made it 1.5× the
    current read); what it refuses, and with which message, is the Reader's."""
    plane = db.plane("startup")
    db.write(lambda tx: tx.create_node(plane, "a", [], {"v": 1}))
    db.write(lambda tx: tx.update_node(plane, "a", {"v": 2}))
    with db.read() as reader:  # the Reader's own refusals, to compare with
        refusals = {}
        for bad in (0, -1, True, 4):
            with pytest.raises(BadAsOf) as info:
                reader.resolve(bad)
            refusals[bad] = str(info.value)
    import drsg.store.database as store_database

    def no_reader(*args: object) -> None:
        raise AssertionError("a seq read made a Reader")

    monkeypatch.setattr(store_database, "Reader", no_reader)
    for seq, expected in ((2, 1), (3, 2)):
        with db.snapshot(seq) as snap:
            node = snap.node_by_key(plane.id, "a")
            assert node is not None and node.props == {"v": expected}
    monkeypatch.undo()
    for bad, message in refusals.items():
        with pytest.raises(BadAsOf) as info, db.snapshot(bad):
            pass
        assert str(info.value) == message, bad
