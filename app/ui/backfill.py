"""Recall by meaning in the window: what the open database's vectors allow, said in the
status bar, and the backfill of memories that have none (a database from before vectors),
then of the recall vectors an import left to the background (store/meaning/catch_up.py: until a
memory has one, recall compares it by its similarity vector).

The backfill starts with the person's first write in the window (opening and browsing
never write), or at once with "Embed now". It is a job (:mod:`.background`) with a store
of its own and the window's embedder, ``vectors.backfill``'s batches each in their own
transaction: what is done stays done, so a window closed or cancelled midway goes on from
there the next time. It is not the session's job: the window keeps browsing and writing
meanwhile; Stop ends it after the batch in hand.
"""

from __future__ import annotations

from mnemoscope.store.meaning import vectors
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
        self.phase = "similarity"  # which vectors the job is making: "similarity", then "recall"
        self.status: vectors.Status | None = None
        self.recall: vectors.Status | None = None  # the recall set's, when the store keeps one
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
        r = self.recall
        return (store is not None and not store.read_only and store.path != ":memory:" and s is not None
                and ((s.memories > s.with_vector and (s.stored_by in (None, s.embedder) or not s.with_vector))
                     or (r is not None and r.memories > r.with_vector and not r.unavailable
                         and (r.stored_by in (None, r.embedder) or not r.with_vector))))

    def _store_replaced(self) -> None:
        self.cancel()
        self.job = None
        store = self.session.store
        self.status = self.recall = None
        if store is not None:
            try:
                self.status, self.recall = store.vector_status(), store.recall_status()
            except Exception:  # noqa: BLE001 - an unreadable table: say nothing rather than fail the window
                self.status = self.recall = None
        self.last_note = ""
        self._show()

    def _first_write(self, index: int) -> None:
        if index > 0 and self.needed() and not self.running:  # a change was just made
            self.start()

    def start(self) -> None:
        store = self.session.store
        if self.running or store is None or not self.needed():
            return
        def both(s, report):
            done = s.backfill(self.batch, progress=lambda d, t: self._which(job, "similarity") or report(d, t),
                              cancel=lambda: job.cancelled)
            if done.cancelled or done.failed or s.recall_status() is None:
                return done
            later = s.backfill(self.batch, progress=lambda d, t: self._which(job, "recall") or report(d, t),
                               cancel=lambda: job.cancelled, of="recall")
            return later if later.embedded or later.remaining or later.failed else done

        job = Job(store, "Embedding", both, in_steps=True, reports=True, share_embedder=True, parent=self)
        job.progress.connect(lambda done, total: self._progressed(job, done, total))
        job.finished.connect(lambda report, _read: self._ended(job, report))
        job.failed.connect(lambda exc: self._ended(job, exc))
        self.job = job
        self.phase = "similarity"
        missing = self.status.memories - self.status.with_vector
        if not missing and self.recall is not None:
            missing = self.recall.memories - self.recall.with_vector
        self.bar.setRange(0, max(1, missing))
        self.bar.setValue(0)
        self.label.setText(f"Embedding {missing:,} memories for recall by meaning…")
        self._show()
        job.start()

    def cancel(self) -> None:
        if self.job is not None:
            self.job.cancel()

    def _which(self, job: Job, phase: str) -> None:
        """From the job's thread: which vectors it is making now (read by :meth:`_progressed`)."""
        if job is self.job:
            self.phase = phase

    def _progressed(self, job: Job, done: int, total: int) -> None:
        if job is not self.job:  # one the window let go of (another database opened since)
            return
        self.bar.setRange(0, max(1, total))
        self.bar.setValue(done)
        what = "Embedding memories for recall by meaning" if self.phase == "similarity" else \
            f"Making recall vectors ({self.recall.embedder.split(':')[1] if self.recall else 'recall'})"
        self.label.setText(f"{what}: {done:,} / {total:,}")
        # Its commits are the window's own work, not an agent's write to read everything again for.
        self.session.own_write_elsewhere()

    def _ended(self, job: Job, report) -> None:
        if job is not self.job:
            return
        self.job = None
        store = self.session.store
        if store is not None:
            self.status, self.recall = store.vector_status(), store.recall_status()
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
        store, s, r = self.session.store, self.status, self.recall
        if store is not None and s is not None and s.usable and s.with_vector == s.memories and r is not None \
                and r.with_vector < r.memories and not store.read_only:
            return (self.last_note + " · " if self.last_note else "") + \
                (f"{r.memories - r.with_vector:,} of {r.memories:,} memories wait for their recall vectors: recall "
                 "compares them by their similarity vectors meanwhile")
        if store is None or s is None or (s.usable and s.with_vector == s.memories) or not s.memories:
            return self.last_note
        if s.stored_by not in (None, s.embedder) and s.with_vector:
            other = f"the vectors are by {s.stored_by.split(':')[0]}, not {s.embedder.split(':')[0]}"
            if r is None:
                return f"Recall by meaning is off: {other} (keywords only; mnemoscope reembed switches)"
            waiting = f"; {r.memories - r.with_vector:,} memories wait for their recall vectors" \
                if r.with_vector < r.memories else ""
            return (f"Duplicates, conflicts and the map by meaning are off: {other} (mnemoscope reembed "
                    f"switches){waiting}")
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

