"""A stretch of frequent GIL switches (kernel/gilswitch.py) shortens the switch interval while it
runs — nested and from several threads — and sets the one it found back when the last one ends."""

from __future__ import annotations

import sys
import threading

import pytest

from drsg.kernel.gilswitch import SHORT_INTERVAL, switching_often


@pytest.fixture(autouse=True)
def interval() -> object:
    before = sys.getswitchinterval()
    sys.setswitchinterval(0.004)
    yield
    sys.setswitchinterval(before)


def test_stretches_shorten_the_interval_and_the_last_sets_it_back() -> None:
    with switching_often():
        assert sys.getswitchinterval() == pytest.approx(SHORT_INTERVAL)
        inside = threading.Event()
        leave = threading.Event()

        def other() -> None:
            with switching_often():
                inside.set()
                leave.wait(5)

        thread = threading.Thread(target=other)
        thread.start()
        assert inside.wait(5)
        with switching_often():  # nested in this thread
            assert sys.getswitchinterval() == pytest.approx(SHORT_INTERVAL)
    assert sys.getswitchinterval() == pytest.approx(SHORT_INTERVAL)  # the other thread's runs on
    leave.set()
    thread.join(5)
    assert sys.getswitchinterval() == pytest.approx(0.004)


def test_a_shorter_interval_the_program_set_is_kept_and_an_error_ends_the_stretch() -> None:
    sys.setswitchinterval(0.0001)
    with pytest.raises(RuntimeError), switching_often():
        assert sys.getswitchinterval() == pytest.approx(0.0001, abs=2e-6)
        raise RuntimeError("the import failed")
    assert sys.getswitchinterval() == pytest.approx(0.0001, abs=2e-6)
