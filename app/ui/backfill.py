"""Recall by meaning in the window: what the open database's vectors allow, said in the
status bar, and the backfill of memories that have none (a database from before vectors).

The backfill starts with the person's first write in the window (opening and browsing
never write), or at once with "Embed now". It is a job (:mod:`.background`) with a store
of its own and the window's embedder, ``vectors.backfill``'s batches each in their own
transaction: what is done stays done, so a window closed or cancelled midway goes on from
there the next time. It is not the session's job: the window keeps browsing and writing
meanwhile; Stop ends it after the batch in hand.
"""

from __future__ import annotations

from mnemoscope.store import vectors
from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QHBoxLayout, QProgressBar, QPushButton, QStatusBar, QWidget

from .background import Job
from .session import StoreSession
from .widgets import ElidedLabel


class MeaningStatus(QObject):
    """The status bar's word on recall by meaning, and the backfill behind it."""

    finished = Signal(object)  # the BackfillReport (or exception) of a backfill that ended

    batch = vectors.BATCH

    def __init__(self, session: StoreSession, bar: QStatusBar, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.session = session
        self.widget = QWidget(bar)
        self.widget.setObjectName("meaning_status")
        layout = QHBoxLayout(self.widget)
        layout.setContentsMargins(0, 0, 0, 0)
        self.label = ElidedLabel("", self.widget)
        self.label.setObjectName("meaning_note")
        self.bar = QProgressBar(self.widget)
        self.bar.setFixedWidth(100)
        self.bar.setTextVisible(False)
        self.embed_button = QPushButton("Embed now", self.widget)
        self.embed_button.setObjectName("embed_now")
        self.embed_button.setToolTip("Give every memory without a vector one, in the background, so that recall "
                                     "finds it by meaning; it also starts with your first change")
        self.embed_button.clicked.connect(self.start)
        self.stop_button = QPushButton("Stop", self.widget)
        self.stop_button.setObjectName("stop_embedding")
        self.stop_button.setToolTip("Stop after the batch in hand; what is embedded stays, the rest follows later")
        self.stop_button.clicked.connect(self.cancel)
        for w in (self.label, self.bar, self.embed_button, self.stop_button):
            layout.addWidget(w)
        bar.addPermanentWidget(self.widget)
        self.job: Job | None = None
        self.status: vectors.Status | None = None
        self.last_note = ""
        session.store_replaced.connect(self._store_replaced)
        session.undo_stack.indexChanged.connect(self._first_write)
        self._store_replaced()

    @property
    def running(self) -> bool:
        return self.job is not None

    def needed(self) -> bool:
        """True when memories lack a vector this window could give them."""
        store, s = self.session.store, self.status
        return (store is not None and not store.read_only and store.path != ":memory:" and s is not None
                and s.memories > s.with_vector
                and (s.stored_by in (None, s.embedder) or not s.with_vector))

    def _store_replaced(self) -> None:
        self.cancel()
        self.job = None
        store = self.session.store
        self.status = None
        if store is not None:
            try:
                self.status = store.vector_status()
            except Exception:  # noqa: BLE001 - an unreadable table: say nothing rather than fail the window
                self.status = None
        self.last_note = ""
        self._show()

    def _first_write(self, index: int) -> None:
        if index > 0 and self.needed() and not self.running:  # a change was just made
            self.start()

    def start(self) -> None:
        store = self.session.store
        if self.running or store is None or not self.needed():
            return
        job = Job(store, "Embedding", lambda s, report: s.backfill(self.batch, progress=report,
                                                                   cancel=lambda: job.cancelled),
                  in_steps=True, reports=True, share_embedder=True, parent=self)
        job.progress.connect(lambda done, total: self._progressed(job, done, total))
        job.finished.connect(lambda report, _read: self._ended(job, report))
        job.failed.connect(lambda exc: self._ended(job, exc))
        self.job = job
        missing = self.status.memories - self.status.with_vector
        self.bar.setRange(0, max(1, missing))
        self.bar.setValue(0)
        self.label.setText(f"Embedding {missing:,} memories for recall by meaning…")
        self._show()
        job.start()

    def cancel(self) -> None:
        if self.job is not None:
            self.job.cancel()

    def _progressed(self, job: Job, done: int, total: int) -> None:
        if job is not self.job:  # one the window let go of (another database opened since)
            return
        self.bar.setRange(0, max(1, total))
        self.bar.setValue(done)
        self.label.setText(f"Embedding memories for recall by meaning: {done:,} / {total:,}")
        # Its commits are the window's own work, not an agent's write to read everything again for.
        self.session.own_write_elsewhere()

    def _ended(self, job: Job, report) -> None:
        if job is not self.job:
            return
        self.job = None
        store = self.session.store
        if store is not None:
            self.status = store.vector_status()
        if isinstance(report, Exception):
            self.last_note = f"Embedding stopped: {report}"
        elif report.cancelled:
            self.last_note = (f"Embedding stopped: {report.embedded:,} embedded, {report.remaining:,} left "
                              "for later (Embed now, or your next change, goes on from there)")
        else:
            skipped = f"; {len(report.skipped)} could not be embedded" if report.skipped else ""
            self.last_note = f"Embedded {report.embedded:,} memories in {report.seconds:.1f} s{skipped}"
        self._show()
        if store is not None:
            self.session.notify(None)  # recall and the map by meaning have more to go on
        self.finished.emit(report)

    def note(self) -> str:
        """What the status bar says about recall by meaning (empty when all is well)."""
        store, s = self.session.store, self.status
        if store is None or s is None or (s.usable and s.with_vector == s.memories) or not s.memories:
            return self.last_note
        if s.stored_by not in (None, s.embedder) and s.with_vector:
            return (f"Recall by meaning is off: the vectors are by {s.stored_by.split(':')[0]}, not "
                    f"{s.embedder.split(':')[0]} (keywords only; mnemoscope reembed switches)")
        missing = s.memories - s.with_vector
        if store.read_only:
            return (f"{missing:,} of {s.memories:,} memories have no vector: recall finds them by keywords only "
                    "(read-only: they are not embedded here)")
        return (self.last_note + " · " if self.last_note else "") + \
            f"{missing:,} of {s.memories:,} memories have no vector yet: recall finds them by keywords only"

    def _show(self) -> None:
        running = self.running
        if not running:
            self.label.setText(self.note())
        self.bar.setVisible(running)
        self.stop_button.setVisible(running)
        self.embed_button.setVisible(not running and self.needed())
        self.widget.setVisible(bool(self.label.text()) or running)

