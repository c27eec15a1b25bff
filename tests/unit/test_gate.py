"""The store's Gate (shared/exclusive): an exclusive holder interrupted while it waits for the
readers must not leave the gate shut."""

from __future__ import annotations

import sys
import threading
import time

import pytest

from drsg.store.gate import Gate


def test_an_interrupted_exclusive_wait_opens_the_gate_again() -> None:
    gate = Gate()
    reading, release = threading.Event(), threading.Event()

    def reader() -> None:
        with gate.shared():
            reading.set()
            assert release.wait(60)

    thread = threading.Thread(target=reader, daemon=True)
    thread.start()
    assert reading.wait(20)

    def interrupted(timeout: float | None = None) -> bool:
        raise KeyboardInterrupt

    gate._cond.wait = interrupted  # type: ignore[method-assign]
    with pytest.raises(KeyboardInterrupt), gate.exclusive():  # waits for the reader: interrupted
        pass
    del gate._cond.wait
    release.set()
    thread.join(30)
    entered = threading.Event()

    def later_reader() -> None:
        with gate.shared():
            entered.set()

    threading.Thread(target=later_reader, daemon=True).start()
    assert entered.wait(20), "the gate stayed shut after an interrupted exclusive wait"
    with gate.exclusive(timeout=1) as alone:
        assert alone


@pytest.mark.parametrize("limit", [None, 2])
def test_no_reader_is_ever_inside_while_the_gate_is_held_alone(limit: int | None) -> None:
    """Readers (lock-free on an unlimited gate) and an exclusive holder hammer one gate with the
    interpreter switching threads every microsecond: the holder never sees a reader inside, no
    reader sees the holder, nobody waits forever, and a limited gate never has more readers in."""
    gate = Gate(limit)
    alone = threading.Event()  # set while the holder holds the gate alone
    inside: list[None] = []
    seen: list[str] = []
    stop = threading.Event()

    def reader() -> None:
        while not stop.is_set():
            with gate.shared():
                inside.append(None)
                if alone.is_set():
                    seen.append("a reader inside while the gate was held alone")
                if limit is not None and len(inside) > limit:
                    seen.append(f"{len(inside)} readers inside a gate of {limit}")
                with gate.shared():  # re-entering never waits, even behind a pending holder
                    pass
                inside.pop()

    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=reader, daemon=True) for _ in range(4)]
        for thread in threads:
            thread.start()
        for _ in range(300):
            with gate.exclusive(timeout=10) as held:
                assert held, "the readers never drained"
                alone.set()
                for _ in range(20):  # hold it a while: a reader let in by mistake shows up here
                    if inside:
                        seen.append("the holder found a reader inside")
                    time.sleep(0)
                alone.clear()
        stop.set()
        for thread in threads:
            thread.join(20)
            assert not thread.is_alive(), "a reader waited forever"
    finally:
        sys.setswitchinterval(switch)
    assert seen == []
    assert gate.readers == 0
