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
