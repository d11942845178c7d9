"""The owner's tools in the window: File › Back up now…, Restore… and Write mirror…, and
the Privacy and Conflicts views in one dock (View menu)."""

from __future__ import annotations

from pathlib import Path

from mnemoscope.store import StoreError, on_server
from mnemoscope.store.curation import privacy
from mnemoscope.store.files import backup as backups
from mnemoscope.store.files.mirror import MirrorResult, shown_memories, write_mirror
from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtGui import QAction
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QDockWidget,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QMainWindow,
    QMenu,
    QMessageBox,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QVBoxLayout,
)

from .panes.conflicts_view import ConflictsView
from .panes.privacy_view import PrivacyView
from .preferences import picked, start_in
from .session import StoreSession

BACKUPS_ON_A_SERVER = ("A PostgreSQL memory is backed up from the command line: 'mnemoscope --db URL backup --to DIR' "
                    "takes a consistent snapshot file (or use pg_dump on its server).")

class RestoreDialog(QDialog):
    """What differs between the open database and a snapshot; Replace puts the snapshot back."""

    def __init__(self, comparison: backups.Comparison, snapshot: str, parent=None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Restore a snapshot")
        self.setObjectName("restore_dialog")
        self.comparison = comparison
        self.snapshot = snapshot
        layout = QVBoxLayout(self)
        intro = QLabel(f"Snapshot: {snapshot}\n{comparison.summary()}.", self)
        intro.setWordWrap(True)
        layout.addWidget(intro)
        rows = [("memories", comparison.current.memories, comparison.snapshot.memories)]
        for part in ("layers", "kinds"):
            rows += [(name, n, getattr(comparison.snapshot, part)[name])
                     for name, n in getattr(comparison.current, part).items()]
        self.counts = QTableWidget(len(rows), 3, self)
        self.counts.setHorizontalHeaderLabels(["", "current", "snapshot"])
        self.counts.verticalHeader().hide()
        self.counts.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.counts.setSelectionMode(QTableWidget.SelectionMode.NoSelection)
        for r, (name, a, b) in enumerate(rows):
            for c, value in enumerate((name, str(a), str(b))):
                item = QTableWidgetItem(value)
                item.setFlags(Qt.ItemFlag.ItemIsEnabled)
                if c:
                    item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                if c and a != b:  # what differs stands out
                    font = item.font()
                    font.setBold(True)
                    item.setFont(font)
                self.counts.setItem(r, c, item)
        self.counts.resizeColumnsToContents()
        self.counts.resizeRowsToContents()
        self.counts.setFixedWidth(self.counts.horizontalHeader().length() + 4)
        self.counts.setMinimumHeight(self.counts.verticalHeader().length() + self.counts.horizontalHeader().height()
                                     + 4)
        self.differences = QListWidget(self)
        self.differences.setWordWrap(True)
        for mid, text in comparison.only_current:
            self.differences.addItem(f"only in the current database: {mid}  {text}")
        for mid, text in comparison.only_snapshot:
            self.differences.addItem(f"only in the snapshot: {mid}  {text}")
        for mid in comparison.changed:
            self.differences.addItem(f"changed since: {mid}")
        if not self.differences.count():
            self.differences.addItem("no memory differs")
        side_by_side = QHBoxLayout()
        side_by_side.addWidget(self.counts)
        side_by_side.addWidget(self.differences, 1)
        layout.addLayout(side_by_side, 1)
        note = QLabel("Replacing keeps the current database as a snapshot too, so this can be undone by "
                      "restoring that one.", self)
        note.setWordWrap(True)
        layout.addWidget(note)
        self.buttons = QDialogButtonBox(self)
        self.replace_button = self.buttons.addButton("Replace the current database",
                                                     QDialogButtonBox.ButtonRole.AcceptRole)
        self.buttons.addButton(QDialogButtonBox.StandardButton.Cancel)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        layout.addWidget(self.buttons)
        self.resize(760, 440)


class OwnerTools(QObject):
    """Adds the owner's actions to ``window``'s File menu and the two views as a dock.

    It tells the window what happened through signals (``status_message``, ``failed``)
    and never reaches into it: the window decides how to show them."""

    status_message = Signal(str)
    failed = Signal(str, str)  # title, message

    def __init__(self, session: StoreSession, window: QMainWindow, file_menu: QMenu, view_menu: QMenu) -> None:
        super().__init__(window)
        self.session = session
        self.window = window  # the parent of the dialogs and the dock, nothing more
        self.privacy = PrivacyView(session, window)
        self.conflicts = ConflictsView(session, window)
        # Both views share one dock beside the prompt preview, a tab each; a view that is not shown
        # does no work (see their showEvent).
        self.tabs = QTabWidget(window)
        self.tabs.addTab(self.privacy, "Privacy")
        self.tabs.addTab(self.conflicts, "Conflicts")
        self.dock = QDockWidget("Privacy and conflicts", window)
        self.dock.setObjectName("owner_dock")
        self.dock.setWidget(self.tabs)
        window.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, self.dock)
        self.dock.hide()
        view_menu.addAction(self.dock.toggleViewAction())
        self.backup_action = QAction("&Back up now…", window)
        self.backup_action.triggered.connect(self._backup_dialog)
        self.restore_action = QAction("&Restore…", window)
        self.restore_action.triggered.connect(self._restore_dialog)
        self.mirror_action = QAction("Write &mirror…", window)
        self.mirror_action.setToolTip("Write the memory as markdown pages that open as an Obsidian vault")
        self.mirror_action.triggered.connect(self._mirror_dialog)
        quit_action = file_menu.actions()[-1] if file_menu.actions() else None  # they go above Quit
        file_menu.insertActions(quit_action, [self.backup_action, self.restore_action, self.mirror_action])
        file_menu.insertSeparator(quit_action)
        self.restore_dialog: RestoreDialog | None = None

    def show_view(self, view: PrivacyView | ConflictsView) -> None:
        """Show the dock with ``view`` in front."""
        self.tabs.setCurrentWidget(view)
        self.dock.show()
        self.dock.raise_()

    def _path(self) -> str | None:
        store = self.session.store
        if store is None or store.path == ":memory:":
            self.failed.emit("No database file", "This database lives in memory only; there is no file to "
                                   "back up or restore.")
            return None
        if on_server(store):
            self.failed.emit("Not on PostgreSQL", BACKUPS_ON_A_SERVER)
            return None
        return store.path

    def enable_actions(self) -> None:
        """Backup needs a file, Restore a file the window may write (the window calls this
        whenever that can change); on a PostgreSQL memory both are off, and say why."""
        store = self.session.store
        remote = store is not None and on_server(store)
        self.backup_action.setEnabled(not remote)
        self.restore_action.setEnabled(self.session.writable and not remote)
        for action in (self.backup_action, self.restore_action):
            action.setStatusTip(BACKUPS_ON_A_SERVER if remote else "")

    def _backup_dialog(self) -> None:
        path = self._path()
        if path is None:
            return
        folder = QFileDialog.getExistingDirectory(self.window, "Back up to folder",
                                                  str(backups.default_backup_dir(path)))
        if folder:
            self.back_up_now(folder)

    def back_up_now(self, folder: str | None = None) -> Path | None:
        """Snapshot the open database into ``folder`` (default: beside it)."""
        if self._path() is None:
            return None
        try:
            result = backups.backup(self.session.store, folder)
        except StoreError as exc:
            self.failed.emit("Backup failed", str(exc))
            return None
        removed = f"; {len(result.removed)} older removed" if result.removed else ""
        self.status_message.emit(f"Snapshot saved: {result.path}{removed}")
        return result.path

    def _mirror_dialog(self) -> None:
        folder = picked(QFileDialog.getExistingDirectory(self.window, "Write the mirror into folder", start_in()))
        if folder:
            self.write_mirror(folder)

    def write_mirror(self, folder: str) -> MirrorResult | None:
        """Write the mirror of the open database (archived memories, and those above medium, left out)
        into ``folder``."""
        session = self.session
        if session.store is None:
            return None
        shown = shown_memories(session.store)
        if not self.confirm_output([m.text for m in shown], "the mirror"):
            return None
        try:
            result = write_mirror(session.store, folder)
        except StoreError as exc:
            self.failed.emit("Cannot write the mirror", str(exc))
            return None
        self.status_message.emit(
            f"Mirror of {result.memories} memories in {result.out}: {len(result.written)} pages written, "
            f"{result.unchanged} unchanged")
        return result

    def confirm_output(self, texts: list[str], what: str) -> bool:
        """Ask before putting out ``texts`` when they hold something the privacy check flags."""
        warning = privacy.output_warning(texts, what)
        if not warning:
            return True
        answer = QMessageBox.question(self.window, "Sensitive content", f"{warning[0].upper()}{warning[1:]}.\n\n"
                                      "Go ahead anyway? (View › Privacy and conflicts lists what it found.)")
        return answer == QMessageBox.StandardButton.Yes

    def before_bulk_change(self) -> None:
        """The automatic snapshot before a bulk change the person starts (a long advance)."""
        store = self.session.store
        try:
            path = backups.snapshot_before_bulk_change(store) if store is not None else None
        except StoreError as exc:
            self.failed.emit("Snapshot before the change failed", str(exc))
            return
        if path is not None:
            self.status_message.emit(f"Snapshot before the change: {path}")

    def _restore_dialog(self) -> None:
        path = self._path()
        if path is None:
            return
        snapshot, _ = QFileDialog.getOpenFileName(self.window, "Restore a snapshot",
                                                  str(backups.default_backup_dir(path)), "Databases (*.db);;All (*)")
        if snapshot:
            self.open_restore(snapshot)

    def open_restore(self, snapshot: str) -> RestoreDialog | None:
        """Show what differs from ``snapshot``; the snapshot is put back only if the person accepts."""
        path = self._path()
        if path is None:
            return None
        try:
            comparison = backups.compare(path, snapshot)
        except StoreError as exc:
            self.failed.emit("Cannot restore this snapshot", str(exc))
            return None
        dialog = RestoreDialog(comparison, snapshot, self.window)
        dialog.accepted.connect(lambda: self._replace(snapshot))
        self.restore_dialog = dialog
        dialog.open()
        return dialog

    def _replace(self, snapshot: str) -> None:
        session = self.session
        try:
            result = backups.restore(session.store.path, snapshot, confirm=True)
        except StoreError as exc:
            self.failed.emit("Restore failed", str(exc))
            return
        session.undo_stack.clear()  # the undo history belongs to the replaced database
        session.notify(None)
        QMessageBox.information(self.window, "Restored",
                                f"The snapshot is back. The replaced database is kept as\n{result.safety_snapshot}")
        self.status_message.emit(f"Restored {snapshot}")
