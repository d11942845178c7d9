"""Python's cycle collector while a background job reads a hundred thousand memories.

A job builds a million small objects (memories, the map's dots, the table's sort keys).
Building them makes the collector run a full pass over every object in the process, and
that pass holds the interpreter lock: measured at 100,000 memories, 0.7–2.9 s during which
the GUI thread could not run a line of Python (tests/perf/ui_bench.py --stalls). So while
any job runs, automatic collection is off; when the last one has been applied, what the
views now hold is frozen (``gc.freeze``: long-lived, never traversed again; objects frozen
earlier are still freed as soon as nothing refers to them) and collection is on again.
After a small job the new objects (the youngest generation, nothing older) are collected
first; after a big one, only garbage in reference cycles made during it stays uncollected
(a few objects a job).
"""

from __future__ import annotations

import gc
import threading

# Fewer new objects than this since the last collection: a pass over them takes a few
# milliseconds, so a job's cycles are collected before the rest is frozen.
COLLECT_BELOW = 50_000
_lock = threading.Lock()
_running: set[int] = set()
_enabled_before = True


def pause(job: object) -> None:
    """``job`` starts: no automatic full collection until it (and every other) has ended."""
    global _enabled_before
    with _lock:
        if not _running:
            _enabled_before = gc.isenabled()
            gc.disable()
        _running.add(id(job))


def resume(job: object) -> None:
    """``job`` ended and its result was applied (or dropped); once none runs, freeze what
    is alive now and collect automatically again. Safe to call twice, from any thread."""
    resume_key(id(job))


def resume_key(key: int) -> None:
    """:func:`resume` for the job whose ``id`` was ``key``: called as it is destroyed (a
    window closed while its job ran never hears the job end, and collection would stay off
    for the rest of the session)."""
    with _lock:
        if key not in _running:
            return
        _running.discard(key)
        if _running:
            return
        if gc.get_count()[0] < COLLECT_BELOW:
            # A small job's garbage (a small store's): collected, not frozen. Only the
            # youngest generation, which is what the count above measures: everything made
            # since collection went off is in it. A full pass would also walk every older
            # object not yet frozen (a hundred thousand memories read on the GUI thread
            # before any job ran: a second and more), however small the job was.
            gc.collect(0)
        gc.freeze()
        if _enabled_before:
            gc.enable()


def running() -> int:
    """How many jobs hold collection off (for tests)."""
    return len(_running)
