"""Pause Python's cyclic garbage collector around a compile step.

A compile step allocates many objects that all live until it ends (Lark's
parse trees of the grammar, regex parse trees, NFA move lists), and every few
hundred allocations the collector walks the young ones, every so often all of
them: 6 full collections during javascript.lark's load, and the regex
pipeline ran 2-3x slower with the collector on (docs/compile.md, "Garbage
collection").  The steps make almost no cyclic garbage, so a pause loses
nothing but that time.

Invariants: pauses nest and may overlap across threads (a count under a
lock); the collector is enabled again when the last pause ends, and only if
it was enabled when the first began; an exception inside still ends the
pause; a forked child starts with no pause (its collector as the parent's
was before the first one).
"""

import gc
import os
import threading
from contextlib import contextmanager

__all__ = ["paused"]

_lock = threading.Lock()
_depth = 0
_was_enabled = False


@contextmanager
def paused():
    """``with paused():`` runs the block with the cyclic collector off (see the module doc)."""
    global _depth, _was_enabled
    with _lock:
        if _depth == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            if _depth > 0:
                _depth -= 1
                if _depth == 0 and _was_enabled:
                    gc.enable()


def _after_fork_in_child():
    # other threads' pauses did not survive the fork: none is running in the child
    global _depth, _lock
    _lock = threading.Lock()
    if _depth and _was_enabled:
        gc.enable()
    _depth = 0


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
