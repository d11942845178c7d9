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

A job's size is what it says it reads (``pause(job, memories)``), not only the collector's
count of new objects: that count is what was made minus what was freed, and the pool thread
that frees the previous read (``background.drop_elsewhere``) brings it under the threshold
while the young generation holds a whole new read. A pass over that on the GUI thread after
a time-travel press at 100,000 memories took 60-150 ms (ui_bench.py --stalls, py-spy).
"""

from __future__ import annotations

import gc
import threading

# Fewer new objects than this since the last collection: a pass over them takes a few
# milliseconds, so a job's cycles are collected before the rest is frozen.
COLLECT_BELOW = 50_000
OBJECTS_PER_MEMORY = 3  # at least: the memory read, the map's dot, the table's sort key
_lock = threading.Lock()
_running: set[int] = set()
_enabled_before = True
_expected = 0  # new objects the jobs since collection went off said they would make


def pause(job: object, memories: int = 0) -> None:
    """``job`` starts: no automatic full collection until it (and every other) has ended.
    ``memories``: how many memories it reads or builds objects for."""
    global _enabled_before, _expected
    with _lock:
        if not _running:
            _enabled_before = gc.isenabled()
            _expected = 0
            gc.disable()
        _running.add(id(job))
        _expected = max(_expected, memories * OBJECTS_PER_MEMORY)


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
        if max(gc.get_count()[0], _expected) < COLLECT_BELOW:
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
