"""Any damage to a snapshot file — cut at any byte, any bit flipped, bytes inserted — is refused by
restore with one of drsg's errors and leaves nothing where the database would have gone
(store/backup.py); the undamaged file restores."""

from __future__ import annotations

import io
from pathlib import Path

import hypothesis.strategies as st
import pytest
from hypothesis import HealthCheck, given, settings

import drsg
from drsg.kernel.errors import DamagedDatabase, UsageError
from drsg.workers.backup import restore_snapshot, take_snapshot


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    folder = tmp_path_factory.mktemp("damage")
    with drsg.open(folder / "g.drsg") as db:
        db.write(lambda tx: tx.create_plane("p"))
        db.write(lambda tx: [tx.create_node(tx.plane("p"), f"k{i}", ["Doc"], {"i": i}) for i in range(50)])
        out = io.BytesIO()
        take_snapshot(db, out)
    return out.getvalue()


Damage = st.one_of(
    st.tuples(st.just("cut"), st.floats(0, 1, exclude_max=True), st.just(0)),
    st.tuples(st.just("flip"), st.floats(0, 1, exclude_max=True), st.integers(0, 7)),
    st.tuples(st.just("insert"), st.floats(0, 1), st.integers(0, 255)),
)


def damaged(data: bytes, damage: tuple[str, float, int]) -> bytes:
    kind, where, value = damage
    at = int(where * len(data))
    if kind == "cut":
        return data[:at]
    if kind == "flip":
        return data[:at] + bytes([data[at] ^ (1 << value)]) + data[at + 1 :]
    return data[:at] + bytes([value]) + data[at:]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(damage=Damage)
def test_any_damage_is_refused_and_nothing_is_written(
    snapshot: bytes, tmp_path: Path, damage: tuple[str, float, int]
) -> None:
    folder = tmp_path / f"t{abs(hash(damage))}"
    folder.mkdir()
    with pytest.raises((DamagedDatabase, UsageError)) as refused:
        restore_snapshot(io.BytesIO(damaged(snapshot, damage)), "bad.snap", folder / "t.drsg")
    assert "\n" not in refused.value.message
    assert list(folder.iterdir()) == []


def test_the_whole_file_restores(snapshot: bytes, tmp_path: Path) -> None:
    info = restore_snapshot(io.BytesIO(snapshot), "s.snap", tmp_path / "t.drsg")
    with drsg.open(tmp_path / "t.drsg", readonly=True) as db, db.snapshot() as snap:
        assert info.seq == db.head() and snap.counts(snap.plane("p").id) == (50, 0)
