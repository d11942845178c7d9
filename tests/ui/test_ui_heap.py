"""After a job the collector looks only at what was made while it ran: a small job's
garbage is collected without a pass over every older object not yet frozen (a full pass
holds the interpreter lock, and so the GUI thread, for as long as it walks them)."""

import gc
import weakref

import pytest

pytest.importorskip("PySide6")

from mnemoscope.ui import heap  # noqa: E402


class _Node:
    pass


@pytest.fixture
def generations():
    seen = []

    def watch(phase, info):
        if phase == "start":
            seen.append(info["generation"])

    gc.callbacks.append(watch)
    yield seen
    gc.callbacks.remove(watch)
    assert heap.running() == 0


def test_a_small_jobs_cycles_are_collected_by_a_young_pass_only(generations):
    old = [[_Node()] for _ in range(5000)]  # older objects, never frozen: a full pass would walk them
    gc.collect()
    job = object()
    heap.pause(job)
    a, b = _Node(), _Node()
    a.other, b.other = b, a  # garbage only the cycle collector frees
    gone = weakref.ref(a)
    del a, b
    generations.clear()
    heap.resume(job)
    assert gone() is None  # collected, not frozen into the permanent generation
    assert generations == [0]
    assert gc.isenabled()
    del old


def test_a_big_jobs_objects_are_frozen_without_any_pass(generations):
    job = object()
    heap.pause(job)
    built = [[i] for i in range(heap.COLLECT_BELOW + 1000)]
    frozen = gc.get_freeze_count()
    generations.clear()
    heap.resume(job)
    assert generations == []
    assert gc.get_freeze_count() >= frozen + len(built)
    gc.unfreeze()


def test_a_job_dropped_with_its_window_before_its_end_turns_collection_back_on(qtbot, tmp_path):
    """A window closed while its job ran never hears the job end: collection must not stay
    off for the rest of the session (the heap would only grow)."""
    import threading

    from mnemoscope.store import MemoryStore
    from mnemoscope.ui.background import Job
    from PySide6.QtCore import QObject

    path = str(tmp_path / "m.db")
    MemoryStore(path).close()
    release, started = threading.Event(), threading.Event()

    def slow(store):
        started.set()
        release.wait(10)

    owner = QObject()
    with MemoryStore(path) as store:
        job = Job(store, "slow", slow, writes=False, parent=owner)
    job.start()
    assert started.wait(10) and heap.running() == 1 and not gc.isenabled()
    del job
    owner.deleteLater()  # the window goes, and its job with it
    qtbot.waitUntil(lambda: heap.running() == 0, timeout=5000)
    release.set()
    assert gc.isenabled()


def test_a_big_jobs_young_objects_are_not_walked_though_frees_brought_the_count_down(generations):
    """The collector's count is what was made minus what was freed: while a job read a
    hundred thousand memories, the pool thread freeing the previous read brought it under
    the threshold, and the pass over the young generation it then allowed took 60-150 ms
    of the GUI thread after a time-travel press. A job that says it reads many memories
    is frozen without a pass."""
    previous = [[i] for i in range(heap.COLLECT_BELOW + 1000)]  # the read before, frozen by its own job
    gc.freeze()
    job = object()
    heap.pause(job, memories=heap.COLLECT_BELOW)
    built = [[i] for i in range(heap.COLLECT_BELOW + 1000)]  # this job's read
    del previous  # freed meanwhile: the count falls back under the threshold
    assert gc.get_count()[0] < heap.COLLECT_BELOW
    generations.clear()
    heap.resume(job)
    assert generations == [], "a pass walked the job's new objects on the GUI thread"
    assert gc.isenabled()
    del built
    gc.unfreeze()
