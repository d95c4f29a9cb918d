"""cfgmask.gc_pause: the collector is off inside, back as it was after (nested,
across threads, after an exception, in a forked child), and a compile runs
with it off."""

import gc
import os
import threading

import pytest

import cfgmask
from cfgmask import gc_pause


@pytest.fixture(autouse=True)
def collector_on():
    was = gc.isenabled()
    gc.enable()
    yield
    (gc.enable if was else gc.disable)()


def test_nested_pauses_and_an_exception_restore_the_collector():
    with gc_pause.paused():
        assert not gc.isenabled()
        with gc_pause.paused():
            assert not gc.isenabled()
        assert not gc.isenabled()          # the outer pause still runs
    assert gc.isenabled()
    with pytest.raises(ValueError):
        with gc_pause.paused():
            raise ValueError("inside")
    assert gc.isenabled()


def test_a_collector_the_caller_turned_off_stays_off():
    gc.disable()
    with gc_pause.paused():
        assert not gc.isenabled()
    assert not gc.isenabled()


def _pause_in_another_thread():
    """A thread inside ``gc_pause.paused()`` until the returned event is set."""
    entered, release = threading.Event(), threading.Event()

    def other():
        with gc_pause.paused():
            entered.set()
            release.wait(10)
    t = threading.Thread(target=other)
    t.start()
    entered.wait(10)
    return release, t


def test_overlapping_pauses_in_threads_end_with_the_last():
    release, t = _pause_in_another_thread()
    with gc_pause.paused():
        pass
    assert not gc.isenabled()              # the other thread's pause is still on
    release.set()
    t.join(10)
    assert gc.isenabled()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_child_forked_during_a_pause_gets_its_collector_back():
    release, t = _pause_in_another_thread()
    pid = os.fork()
    if pid == 0:
        os._exit(0 if gc.isenabled() else 1)
    _, status = os.waitpid(pid, 0)
    release.set()
    t.join(10)
    assert os.WEXITSTATUS(status) == 0


def test_compile_runs_with_the_collector_off(monkeypatch):
    seen = []
    real = gc_pause.paused

    def spy():
        seen.append(gc.isenabled())
        return real()
    monkeypatch.setattr(gc_pause, "paused", spy)
    v = cfgmask.Vocabulary([b"a", b"b", None], eos_token_ids=[2])
    cfgmask.compile(cfgmask.Grammar.from_lark('start: ("a" | "b")+  // gc pause test'), v)
    assert seen and gc.isenabled()
