"""The store's Gate (shared/exclusive): an exclusive holder interrupted while it waits for the
readers must not leave the gate shut."""

from __future__ import annotations

import threading

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
