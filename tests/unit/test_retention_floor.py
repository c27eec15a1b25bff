"""Where the retention horizon lands: `retain_commits` keeps the last N commits, `retain_days` the
state as of any moment in the last N days, both set keep what either keeps (the older floor), and
the horizon never moves back. A read by time before it is refused like one by seq."""

from __future__ import annotations

from pathlib import Path

import pytest

from drsg.kernel.asof import AsOf
from drsg.kernel.errors import BadAsOf
from drsg.store.database import Database
from drsg.store.retention import DAY_MS, Retention

DAY = DAY_MS / 1000


class Clock:
    def __init__(self) -> None:
        self.now = 1_000 * DAY

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def daily(tmp_path: Path) -> tuple[Database, Clock]:
    """A database with one commit a day for 10 days (seq 1, the bootstrap, on day 0; seq 2..11 on
    days 1..10), its clock then on day 10 plus an hour."""
    clock = Clock()
    db = Database(tmp_path / "g.drsg", clock=clock)
    for _ in range(10):
        clock.now += DAY
        db.write(lambda tx: tx.create_node(tx.plane("startup"), None, ["Day"], {}))
    clock.now += 3600
    return db, clock


def test_days_keep_the_state_as_of_the_cutoff(daily: tuple[Database, Clock]) -> None:
    db, _ = daily
    with db:
        assert db.compact_history(Retention(days=3)).horizon == 8  # day 7's commit: in force 3 days ago
        with db.snapshot(AsOf(ms=int((1_007 * DAY + 60) * 1000))) as snap:  # day 7 and a minute
            assert snap.at == 8
        with pytest.raises(BadAsOf, match=r"^AS OF .* is older than the retained history \(it starts at commit 8: "):
            db.resolve_as_of(AsOf(ms=int((1_006 * DAY + 60) * 1000)))
        assert "[log] retain_days = 3" in str(db.retained().refuse(1))


def test_both_settings_keep_what_either_keeps_and_the_horizon_never_moves_back(
    daily: tuple[Database, Clock],
) -> None:
    db, clock = daily
    with db:
        assert db.compact_history(Retention(commits=2, days=5)).horizon == 6  # days: 6; commits: 9
        assert db.compact_history(Retention(commits=5, days=2)).horizon == 6  # commits: 6, days: 9; the older
        assert db.compact_history(Retention(commits=1)).horizon == 10
        assert db.compact_history(Retention(commits=8)).horizon == 10  # never back
        clock.now += 30 * DAY
        assert db.compact_history(Retention(days=1)).horizon == 11  # nothing new: the head stays readable
        assert db.retained().setting() == "[log] retain_days = 1"
