"""A progress dialog for one background job (an import): what it does, how far it is,
and Cancel while cancelling is safe. It opens only once the job has run for
``PROGRESS_AFTER_MS`` and is not modal: the window keeps answering meanwhile (browsing,
the map, the preview), while the session lets nothing else write."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QProgressDialog, QPushButton, QWidget

from ..background import PROGRESS_AFTER_MS, Job


class JobProgressDialog(QProgressDialog):
    def __init__(self, job: Job, parent: QWidget) -> None:
        super().__init__(f"{job.title}…", "Cancel", 0, 0, parent)
        self.setObjectName("job_progress_dialog")
        self.setWindowTitle(job.title)
        self.setWindowModality(Qt.WindowModality.NonModal)
        self.setMinimumDuration(PROGRESS_AFTER_MS)
        self.setAutoClose(False)
        self.setAutoReset(False)
        self.setMinimumWidth(360)
        self.job = job
        job.shown_by = self
        self.cancel_button = QPushButton("Cancel", self)
        self.cancel_button.setObjectName("job_cancel")
        self.cancel_button.setToolTip("Stop it: nothing is written")
        self.setCancelButton(self.cancel_button)
        self.cancel_button.setEnabled(job.cancellable)
        self.canceled.disconnect()  # by default Cancel only hides the dialog: it must stop the job
        self.canceled.connect(self._cancel)
        job.progress.connect(self._progress)
        job.finished.connect(self._end)
        job.failed.connect(self._end)
        self.setValue(0)  # starts the minimum-duration clock

    def _progress(self, done: int, total: int) -> None:
        if self.maximum() != total:
            self.setMaximum(total)
        self.setValue(min(done, total))
        self.setLabelText(f"{self.job.title}… {done:,} of {total:,}")

    def _cancel(self) -> None:
        if not self.job.running:
            return
        self.job.cancel()
        self.setLabelText(f"{self.job.title}: cancelling… (nothing is written)")
        self.cancel_button.setEnabled(False)
        self.show()  # it stays until the job says it stopped

    def _end(self, *_args) -> None:
        self.hide()
        self.deleteLater()


def watch(job: Job | None, parent: QWidget) -> JobProgressDialog | None:
    """Show ``job``'s progress in a dialog of its own (None: it already ran, here)."""
    if job is None or not job.running:
        return None
    return JobProgressDialog(job, parent)
