"""The main window: the radial map in the centre, the table and editor on the left, the
prompt preview on the right, agents' activity and the selected memory's fading under the
map; ticks and time travel in the toolbar."""

from __future__ import annotations

import logging
import os

from mnemoscope.store import MemoryStore, StoreError, on_server, shown
from mnemoscope.store.files.backup import is_bulk_change
from mnemoscope.store.files.demo import rebased_demo
from mnemoscope.store.importers.jsonl_export import count_lines
from mnemoscope.store.importers.jsonl_preview import preview_jsonl
from mnemoscope.store.model.errors import ImportRefused
from PySide6.QtCore import QByteArray, Qt, QTimer
from PySide6.QtGui import QAction, QActionGroup, QKeySequence
from PySide6.QtWidgets import (
    QApplication,
    QDockWidget,
    QFileDialog,
    QInputDialog,
    QLabel,
    QMainWindow,
    QMenu,
    QMessageBox,
    QProgressBar,
    QPushButton,
    QSplitter,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from ..default_database import default_database, remember_opened
from . import theme
from .backfill import MeaningStatus
from .background import PROGRESS_AFTER_MS
from .commands.imports import ImportCommand
from .commands.ticks import TickCommand, days_label
from .dialogs.about import about_html, shortcuts_html
from .dialogs.job_dialog import watch
from .dialogs.url_dialog import DatabaseUrlDialog
from .ecosystem import EcosystemTools
from .owner_tools import OwnerTools
from .panes.activity_dock import ActivityDock
from .panes.decay_plot import DecayPlot
from .panes.editor import MemoryEditor
from .panes.memory_map import RadialMap
from .panes.memory_table import MemoryTable
from .panes.prompt_preview import PromptPreview
from .preferences import picked, settings, start_in
from .session import StoreSession
from .widgets import ElidedLabel, PreviewSlider, scrolling

log = logging.getLogger(__name__)
MAX_RECENT = 8


def recent_files() -> list[str]:
    """File › Open Recent, newest first. A settings file gives a list of one back as a
    string (and a hand-edited one may hold anything): read as a list of paths either way."""
    recent = settings().value("recent", []) or []
    if isinstance(recent, str):
        recent = [recent]
    return [p for p in recent if isinstance(p, str) and p] if isinstance(recent, (list, tuple)) else []
PREVIEW_MAX_DAYS = 365
# Keys that no menu action holds, listed by Help › Keyboard shortcuts after the menus' own
KEYS_OUTSIDE_MENUS = (
    ("Esc", "Cancel the running job; bring time travel back to now"),
    ("Ctrl+Enter", "Save the memory (in the editor)"),
    ("←, →, Page Up, Page Down", "Time travel by a day or 30 days (slider in focus; Esc or Now: back)"),
)


class MainWindow(QMainWindow):
    def __init__(self, store: MemoryStore | None = None, dark: bool = False) -> None:
        super().__init__()
        self.setWindowTitle("Mnemoscope[*]")
        room = self.screen().availableGeometry()
        # a first start fills a small screen and most of a big one (1600x960 left a 1920x1080
        # screen's edges black); a layout saved on quitting takes over from then on
        self.resize(min(room.width(), max(1600, room.width() * 92 // 100)),
                    min(room.height(), max(960, room.height() * 92 // 100)))
        self.session = StoreSession(parent=self)
        self.map = RadialMap(self.session, dark=dark, parent=self)
        # The map has the centre to itself; under it, agents' activity and, beside it, how
        # the selected memory fades. The side docks run the full height.
        self.setCentralWidget(self.map)
        self.decay = DecayPlot(self.session, dark=dark, parent=self)
        self.decay_dock = QDockWidget("Fading", self)
        self.decay_dock.setObjectName("decay_dock")
        self.decay_dock.setWidget(self.decay)
        self.table = MemoryTable(self.session, self)
        self.editor = MemoryEditor(self.session, self)
        left = QSplitter(Qt.Orientation.Vertical, self)
        left.addWidget(self.table)
        editing = QWidget(self)  # the form scrolls; its Save and Delete stay in sight under it
        editing_layout = QVBoxLayout(editing)
        editing_layout.setContentsMargins(0, 0, 0, 0)
        editing_layout.setSpacing(0)
        editing_layout.addWidget(scrolling(self.editor, self), 1)
        editing_layout.addWidget(self.editor.button_bar)
        left.addWidget(editing)
        left.setSizes([480, 420])
        left.setMinimumWidth(280)
        self.memory_dock = QDockWidget("Memories", self)
        self.memory_dock.setObjectName("memories_dock")
        self.memory_dock.setWidget(left)
        self.addDockWidget(Qt.DockWidgetArea.LeftDockWidgetArea, self.memory_dock)
        self.preview = PromptPreview(self.session, self)
        self.preview_dock = QDockWidget("Prompt preview", self)
        self.preview_dock.setObjectName("preview_dock")
        self.preview_dock.setWidget(self.preview)  # its inputs scroll; its output stays in view
        self.preview_dock.setMinimumWidth(320)
        self.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, self.preview_dock)
        self._build_activity()
        self._build_actions()
        self._build_toolbar()
        self._build_menus()
        self.status_path = ElidedLabel("", self, Qt.TextElideMode.ElideMiddle)
        # Whether agents started without --db (mnemoscope mcp, serve) use this database too.
        self.status_default = QLabel(self)
        self.status_default.setObjectName("status_default")
        self.status_counts = QLabel(self)
        self.status_clock = QLabel(self)
        self.read_only_badge = QLabel("read-only", self)
        self.read_only_badge.setObjectName("read_only_badge")
        self.read_only_badge.setStyleSheet("QLabel { color: white; background: #D55E00; border-radius: 3px; "
                                           "padding: 0 6px; font-weight: bold; }")
        self.read_only_badge.setToolTip("This database is open read-only (you may not write the file or its "
                                        "folder, or it was opened read-only): browse, preview and export it; "
                                        "to change it, copy it somewhere you may write")
        self.read_only_badge.hide()
        self._build_progress()
        # the path as long as it fits, then whether agents use it, right after it: the stretch
        # is the second's, or it floats halfway along the bar
        self.statusBar().addWidget(self.status_path)
        self.statusBar().addWidget(self.status_default, 1)
        self.statusBar().addPermanentWidget(self.read_only_badge)
        self.meaning = MeaningStatus(self.session, self.statusBar(), self)
        self.statusBar().addPermanentWidget(self.status_counts)
        self.statusBar().addPermanentWidget(self.status_clock)
        self.session.changed.connect(lambda _ids: self._update_status())
        self.session.undo_stack.indexChanged.connect(lambda _i: self._update_status())
        self.session.failed.connect(self.show_error)
        self.preview.status_message.connect(lambda text: self.statusBar().showMessage(text, 8000))
        self.session.store_replaced.connect(self._enable_writes)
        self.session.busy_changed.connect(self._busy_changed)
        self.session.add_preparer("status", lambda store, _memories: store.stats())
        self.session.said.connect(lambda text: self.statusBar().showMessage(text, 8000))
        self.editor.dirty_changed.connect(self.setWindowModified)
        self._enable_writes()
        self.activity.setWidget(scrolling(self.activity.widget(), self))  # under the map: scroll, not widen it
        self._default_state = self.saveState()
        self._placed = False
        self._layout_saved_at_width = self._restore_settings()
        self._set_corners()
        if store is not None:
            self.set_store(store)

    # -- building --------------------------------------------------------------------
    def _build_progress(self) -> None:
        """What a long job shows past PROGRESS_AFTER_MS: what it does, a busy bar, Cancel."""
        self.progress_label = QLabel(self)
        self.progress_bar = QProgressBar(self)
        self.progress_bar.setRange(0, 0)  # busy: the store does not say how far it is
        self.progress_bar.setFixedWidth(120)
        self.progress_bar.setTextVisible(False)
        self.cancel_button = QPushButton("Cancel", self)
        self.cancel_button.setObjectName("cancel_job")
        self.cancel_button.setToolTip("Stop it: nothing is written (Esc)")
        self.cancel_button.setShortcut(QKeySequence(Qt.Key.Key_Escape))
        self.cancel_button.clicked.connect(self.cancel_job)
        for widget in (self.progress_label, self.progress_bar, self.cancel_button):
            self.statusBar().addPermanentWidget(widget)
            widget.hide()
        self._progress_timer = QTimer(self)
        self._progress_timer.setSingleShot(True)
        self._progress_timer.setInterval(PROGRESS_AFTER_MS)
        self._progress_timer.timeout.connect(self._show_progress)

    def _busy_changed(self, job) -> None:
        self._enable_writes()
        if job is not None:
            self.progress_bar.setRange(0, 0)  # busy until the job says how far it is
            job.progress.connect(self._job_progress)
            self._progress_timer.start()
            return
        self._progress_timer.stop()
        for widget in (self.progress_label, self.progress_bar, self.cancel_button):
            widget.hide()

    def _job_progress(self, done: int, total: int) -> None:
        self.progress_bar.setRange(0, max(total, 1))
        self.progress_bar.setValue(done)

    def _show_progress(self) -> None:
        job = self.session.job
        if job is None or job.shown_by is not None:  # an import shows its own progress dialog
            return
        self.progress_label.setText(f"{job.title}…")
        self.cancel_button.setEnabled(job.cancellable)
        for widget in (self.progress_label, self.progress_bar, self.cancel_button):
            widget.show()

    def cancel_job(self) -> None:
        """Cancel the running job where that is safe: before its write commits."""
        job = self.session.job
        if job is not None and job.cancellable:
            job.cancel()
            self.cancel_button.setEnabled(False)
            self.progress_label.setText(f"{job.title}: cancelling…")

    def _build_actions(self) -> None:
        stack = self.session.undo_stack
        # The stack's own actions (their text names the step, they are enabled when there is
        # one), but a step goes through the session: a long one runs off the GUI thread.
        self.undo_action = stack.createUndoAction(self, "&Undo")
        self.undo_action.triggered.disconnect()
        self.undo_action.triggered.connect(self.session.undo)
        self.undo_action.setShortcut(QKeySequence.StandardKey.Undo)
        self.undo_action.setProperty("plain_name", "Undo")  # its text names the last edit
        self.redo_action = stack.createRedoAction(self, "&Redo")
        self.redo_action.triggered.disconnect()
        self.redo_action.triggered.connect(self.session.redo)
        self.redo_action.setProperty("plain_name", "Redo")
        # Ctrl+Y as well as the platform's own (Ctrl+Shift+Z here): people reach for either
        redo_keys = QKeySequence.keyBindings(QKeySequence.StandardKey.Redo)
        self.redo_action.setShortcuts([*redo_keys, *([QKeySequence("Ctrl+Y")] if QKeySequence("Ctrl+Y") not in
                                                      redo_keys else [])])
        self.new_memory_action = QAction("&New memory", self)
        self.new_memory_action.setShortcut(QKeySequence("Ctrl+Shift+N"))
        self.new_memory_action.setToolTip("Write a new memory in the editor (Ctrl+N makes a new database)")
        self.new_memory_action.triggered.connect(self._new_memory)
        self.tick_action = QAction("Tick", self)
        self.tick_action.setShortcut(QKeySequence("Ctrl+T"))
        self.tick_action.setToolTip("Run the forgetting clock now: write every memory's strength and layer (Ctrl+T)")
        self.tick_action.triggered.connect(lambda: self.advance(0))
        # Time › Advance and the toolbar's Advance… button share these actions (and their keys)
        self.advance_actions = []
        for days, key in ((1, "Ctrl+D"), (7, "Ctrl+Shift+D"), (30, None)):
            action = QAction(f"Advance +{days} day{'s' if days > 1 else ''}", self)
            if key:
                action.setShortcut(QKeySequence(key))
            action.triggered.connect(lambda _checked=False, d=days: self.advance(d))
            self.advance_actions.append(action)
        other = QAction("Advance by other…", self)
        other.triggered.connect(self._advance_other)
        self.advance_actions.append(other)
        self.save_action = QAction("&Save memory", self)
        self.save_action.setShortcut(QKeySequence.StandardKey.Save)
        self.save_action.setToolTip("Save the memory in the editor")
        self.save_action.triggered.connect(self.editor.save)
        self.delete_action = QAction("&Delete memory", self)
        self.delete_action.setShortcut(QKeySequence.StandardKey.Delete)
        self.delete_action.setToolTip("Delete the selected memory (Edit › Undo brings it back)")
        self.delete_action.triggered.connect(self.editor.delete)
        self.find_action = QAction("&Find on the map", self)
        self.find_action.setShortcut(QKeySequence.StandardKey.Find)
        self.find_action.triggered.connect(self._find)

    def _build_activity(self) -> None:
        """Agents' calls under the map; the side docks keep the full height."""
        self.activity = ActivityDock(self.session, self)
        self.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, self.activity)
        self.splitDockWidget(self.activity, self.decay_dock, Qt.Orientation.Horizontal)
        self.activity.call_picked.connect(self.map.show_call)
        self.activity.memories_arrived.connect(self.map.mark_arrivals)
        self.activity.replay_requested.connect(self._replay)

    def _replay(self, arguments: dict) -> None:
        self.preview_dock.show()
        self.preview_dock.raise_()
        self.preview.replay(**arguments)

    def _build_toolbar(self) -> None:
        bar = self.addToolBar("Time")
        bar.setObjectName("time_toolbar")
        bar.addAction(self.tick_action)
        self.advance_button = QToolButton(self)
        self.advance_button.setText("Advance…")
        self.advance_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        self.advance_button.setToolTip("Move the store's clock forward and tick (Ctrl+D: one day)")
        menu = QMenu(self.advance_button)
        menu.addActions(self.advance_actions)
        self.advance_button.setMenu(menu)
        bar.addWidget(self.advance_button)
        bar.addSeparator()
        bar.addWidget(QLabel(" Time travel ", self))
        self.preview_slider = PreviewSlider(Qt.Orientation.Horizontal, self)
        self.preview_slider.setRange(0, PREVIEW_MAX_DAYS)
        self.preview_slider.setPageStep(30)
        self.preview_slider.setFixedWidth(260)
        self.preview_slider.setToolTip(
            "Preview the map up to a year ahead; nothing is written.\n"
            "Drag, click on the track, arrow keys, Page Up/Down (30 days) or the wheel:\n"
            "the preview stays where you put it until Now or Esc brings it back.")
        self.preview_slider.valueChanged.connect(self._preview_moved)
        bar.addWidget(self.preview_slider)
        self.preview_label = QLabel(" now ", self)
        self.preview_label.setFixedWidth(self.preview_label.fontMetrics().horizontalAdvance(" +365 days ") + 8)
        bar.addWidget(self.preview_label)
        self.now_button = QToolButton(self)
        self.now_button.setObjectName("back_to_now")
        self.now_button.setText("Now")
        self.now_button.setToolTip("Back to now: end the time-travel preview (Esc on the slider)")
        self.now_button.setEnabled(False)
        self.now_button.clicked.connect(self.preview_slider.return_to_start)
        bar.addWidget(self.now_button)
        bar.addSeparator()
        self.tick_summary = ElidedLabel("", self)
        self.tick_summary.setMaximumWidth(520)
        self.tick_summary.setObjectName("tick_summary")
        bar.addWidget(self.tick_summary)

    def _build_menus(self) -> None:
        file_menu = self.menuBar().addMenu("&File")
        file_menu.addAction("&Open…", QKeySequence.StandardKey.Open, self._open_dialog)
        file_menu.addAction("Open &read-only…", lambda: self._open_dialog(read_only=True))
        file_menu.addAction("&New…", QKeySequence.StandardKey.New, self._new_dialog)
        file_menu.addAction("Open database &URL…", self._open_url_dialog)
        file_menu.addAction(self.save_action)
        file_menu.addSeparator()
        self.import_action = file_menu.addAction("&Import JSONL…", self._import_dialog)
        self.export_action = file_menu.addAction("&Export JSONL…", self._export_dialog)
        file_menu.addSeparator()
        self.recent_menu = file_menu.addMenu("Open &Recent")
        file_menu.addSeparator()
        file_menu.addAction("&Quit", QKeySequence.StandardKey.Quit, self.close)
        edit_menu = self.menuBar().addMenu("&Edit")
        edit_menu.addAction(self.undo_action)
        edit_menu.addAction(self.redo_action)
        edit_menu.addSeparator()
        edit_menu.addAction(self.new_memory_action)
        edit_menu.addAction(self.delete_action)
        edit_menu.addAction(self.find_action)
        view_menu = self.menuBar().addMenu("&View")
        view_menu.addAction(self.memory_dock.toggleViewAction())
        view_menu.addAction(self.preview_dock.toggleViewAction())
        view_menu.addAction(self.activity.toggleViewAction())
        view_menu.addAction(self.decay_dock.toggleViewAction())
        self.owner = OwnerTools(self.session, self, file_menu, view_menu)  # backups, privacy and conflicts
        self.owner.failed.connect(self.show_error)
        self.owner.status_message.connect(lambda text: self.statusBar().showMessage(text, 10000))
        self.preview.confirm_output = self.owner.confirm_output  # a copied prompt is asked about too
        # a tab beside Activity, not squeezed beside it (its conflicts need the width)
        self.owner.dock.visibilityChanged.connect(self._tab_owner_dock)
        view_menu.addSeparator()
        theme_menu = view_menu.addMenu("&Theme")
        self.theme_actions = QActionGroup(self)
        for choice in theme.THEMES:
            action = theme_menu.addAction(choice.capitalize(), lambda c=choice: self.set_theme(c))
            action.setCheckable(True)
            action.setChecked(choice == theme.chosen())
            action.setObjectName(f"theme_{choice}")
            self.theme_actions.addAction(action)
        view_menu.addSeparator()
        view_menu.addAction("&Fit map view", QKeySequence(Qt.Key.Key_Home), self.map.fit_view)
        view_menu.addAction(self.map.meaning_action)
        view_menu.addAction(self.map.local_action)
        view_menu.addAction("&Reset layout", self.reset_layout)
        time_menu = self.menuBar().addMenu("&Time")
        time_menu.addAction(self.tick_action)
        time_menu.addActions(self.advance_actions)
        help_menu = self.menuBar().addMenu("&Help")
        help_menu.addAction("&Keyboard shortcuts", QKeySequence.StandardKey.HelpContents, self.show_shortcuts)
        help_menu.addAction("&About Mnemoscope", self.show_about)
        # other tools' memory; connect an agent
        self.ecosystem = EcosystemTools(self.session, self, file_menu, help_menu, before=self.export_action)
        self.ecosystem.failed.connect(self.show_error)
        self.ecosystem.status_message.connect(lambda text: self.statusBar().showMessage(text, 10000))
        self._refresh_recent()

    # -- the database ----------------------------------------------------------------
    def set_store(self, store: MemoryStore) -> None:
        self.session.set_store(store)
        mode = " (read-only)" if store.read_only else ""
        remote = on_server(store)  # the path of a server's database is its URL, already without its password
        self.setWindowTitle(f"Mnemoscope — {store.path if remote else os.path.basename(store.path)}{mode}[*]")
        if store.path != ":memory:":
            self._remember_recent(store.path if remote else os.path.abspath(store.path))
        self._update_status()

    def open_path(self, path: str, *, create: bool = False, read_only: bool = False) -> bool:
        """Open a database (read-only when asked, or when the file or its folder may not be
        written); a refused file is explained in a dialog and the current one stays, as it
        does when the user keeps an unsaved edit."""
        if not self.editor.confirm_leave():
            return False
        try:
            store = MemoryStore(path, create=create, read_only=read_only)
        except StoreError as exc:
            log.warning("refused to open %s: %s", shown(path), exc)
            self.show_error("Cannot open this database", str(exc))
            return False
        self.set_store(store)
        return True

    def _tab_owner_dock(self, visible: bool) -> None:
        """Privacy and conflicts open as a tab beside the prompt preview: the window's tall
        side, where a conflict's two texts and every button fit (under the map, at 1366×768,
        they had a strip 150 px high)."""
        dock = self.owner.dock
        if visible and not dock.isFloating() and self.preview_dock.isVisible() \
                and dock not in self.tabifiedDockWidgets(self.preview_dock):
            self.tabifyDockWidget(self.preview_dock, dock)
            dock.raise_()

    def _new_memory(self) -> None:
        """Edit › New memory: the editor, empty, with the text field in focus."""
        if self.editor.confirm_leave():
            self.memory_dock.show()
            self.session.select(None)
            self.editor.start_new()
            self.editor.text.setFocus()

    def _find(self) -> None:
        self.map.search_box.setFocus()
        self.map.search_box.selectAll()

    def _show_text(self, name: str, title: str, text: str) -> QMessageBox:
        box = QMessageBox(QMessageBox.Icon.NoIcon, title, text, QMessageBox.StandardButton.Close, self)
        box.setObjectName(name)
        box.setTextFormat(Qt.TextFormat.RichText)
        box.open()
        return box

    def show_about(self) -> QMessageBox:
        store = self.session.store
        return self._show_text("about_dialog", "About Mnemoscope",
                               about_html(store.embedder_id() if store is not None else None))

    def show_shortcuts(self) -> QMessageBox:
        actions = [a for menu in self.menuBar().findChildren(QMenu) for a in menu.actions()]
        return self._show_text("shortcuts_dialog", "Keyboard shortcuts", shortcuts_html(actions, KEYS_OUTSIDE_MENUS))

    def show_error(self, title: str, message: str) -> None:
        box = QMessageBox(QMessageBox.Icon.Warning, title, message, QMessageBox.StandardButton.Ok, self)
        box.setObjectName("error_dialog")
        box.open()
        self.last_error = message

    def _open_dialog(self, read_only: bool = False) -> None:
        title = "Open memory database read-only" if read_only else "Open memory database"
        path = picked(QFileDialog.getOpenFileName(self, title, start_in(), "Databases (*.db *.sqlite);;All (*)")[0])
        if path:
            self.open_path(path, read_only=read_only)

    def _open_url_dialog(self) -> DatabaseUrlDialog:
        """A PostgreSQL memory: the URL and, apart, its password (never shown back or kept)."""
        dialog = DatabaseUrlDialog(self)
        dialog.accepted.connect(lambda: self.open_path(dialog.url(), create=True))
        self.url_dialog = dialog
        dialog.open()
        return dialog

    def _new_dialog(self) -> None:
        path = picked(QFileDialog.getSaveFileName(self, "New memory database", start_in("memories.db"),
                                                   "Databases (*.db)")[0])
        if path:
            if os.path.exists(path):
                self.show_error("File exists", f"{path} already exists; choose a new name.")
                return
            if self.open_path(path, create=True) and QMessageBox.question(
                    self, "Demo memories", "Fill the new database with the demo memories?") == \
                    QMessageBox.StandardButton.Yes:
                self.import_jsonl(rebased_demo(self.session.store.now()), label="Load the demo memories")

    def _import_dialog(self) -> None:
        path = picked(QFileDialog.getOpenFileName(self, "Import JSONL", start_in(), "JSON Lines (*.jsonl);;All (*)")[0])
        if path:
            self.import_jsonl(path, confirm=True)

    def import_jsonl(self, source, label: str = "Import JSONL", *, confirm: bool = False) -> None:
        """Import as one undoable step (off the GUI thread in a big store, all or nothing,
        with a progress dialog and Cancel); the first imported memory is selected and shown.
        ``confirm``: first count the lines against the store (off the GUI thread too) and ask."""
        if not self.session.writable or not self.editor.confirm_leave():
            return
        if not confirm:
            self._import(source, label, partial=False)
            return

        def counted(preview) -> None:
            if self.ecosystem.ask(preview) == QMessageBox.StandardButton.Yes:
                self._import(source, label, partial=False)

        self.session.start(f"Reading {os.path.basename(str(source))}", lambda store: preview_jsonl(store, source),
                           counted, "Import refused", writes=False, refused=self._refused(source, label))

    def _refused(self, source, label: str):
        def refused(exc: Exception) -> None:
            if isinstance(exc, ImportRefused):
                self._offer_good_lines(source, label, str(exc), exc.good != 0)
            else:
                self.show_error("Import failed", str(exc))

        return refused

    def _import(self, source, label: str, partial: bool) -> None:
        job = self.session.start(label, lambda store, report: store.import_jsonl(source, partial=partial,
                                                                                  progress=report),
                                 lambda report: self._imported(ImportCommand(self.session, source, label, report)),
                                 "Import failed", reports=True, refused=self._refused(source, label))
        watch(job, self)

    def _offer_good_lines(self, source, label: str, message: str, any_good: bool = True) -> QMessageBox:
        """The refused import's bad lines, and the choice the message names: import only the
        good ones (when there is one: else only Close)."""
        box = QMessageBox(QMessageBox.Icon.Warning, "Import refused", message,
                          QMessageBox.StandardButton.Cancel if any_good else QMessageBox.StandardButton.Close, self)
        box.setObjectName("import_refused_dialog")
        if any_good:
            good = box.addButton("Import the good lines", QMessageBox.ButtonRole.AcceptRole)
            good.setObjectName("import_good_lines")
            box.setDefaultButton(QMessageBox.StandardButton.Cancel)
            good.clicked.connect(lambda: self._import(source, label, partial=True))
        self.last_error = message
        box.open()
        self.import_refused_box = box
        return box

    def _imported(self, command: ImportCommand) -> None:
        report = command.report
        if not report.ids:  # nothing came in (every line bad, or already there): nothing to undo
            detail = "\n".join(f"line {n}: {why}" for n, why in report.errors[:20])
            if report.errors:
                self.show_error("Nothing was imported", f"{report.summary()}\n\n{detail}")
            self.statusBar().showMessage(f"{command.text()}: nothing was imported ({report.summary()}).", 10000)
            return
        try:
            self.session.push(command)
        except (StoreError, OSError) as exc:
            self.show_error("Import failed", str(exc))
            return
        label = command.text()
        report = command.report
        summary = report.summary()
        # through the table's index of the memories (prepared off the GUI thread), not a walk
        # over all of them: at 100,000 that walk was 25-35 ms of the import's longest stall
        table = self.table.model
        rows = (table.row_of(mid) for mid in report.ids)
        archived = sum(1 for row in rows if row is not None and table.memory_at(row).layer == "archived")
        if archived:
            summary += f"; {archived} in the archived layer, hidden on the map (the table lists them)"
        detail = "\n".join(f"line {n}: {why}" for n, why in report.errors[:20])
        if report.errors:
            self.show_error("Import finished with bad lines", f"{summary}\n\n{detail}")
        self.statusBar().showMessage(f"{label}: {summary}. Edit › Undo takes it back.", 10000)

    def _export_dialog(self) -> None:
        path = picked(QFileDialog.getSaveFileName(self, "Export JSONL", start_in("memories.jsonl"),
                                                   "JSON Lines (*.jsonl)")[0])
        if path and self.owner.confirm_output([m.text for m in self.session.memories()], "the export"):
            try:
                data = self.session.store.export_jsonl(path)
            except (StoreError, OSError) as exc:
                self.show_error("Export failed", str(exc))
                return
            memories, entities, relations = count_lines(data)
            self.statusBar().showMessage(f"Exported {memories} memories, {entities} entities and {relations} "
                                         f"relations to {path}", 8000)

    def _remember_recent(self, path: str) -> None:
        s = settings()
        recent = [p for p in recent_files() if p != path]
        recent.insert(0, path)
        s.setValue("recent", recent[:MAX_RECENT])
        s.remove("last_db")  # kept by versions before the default database was shared with the doors
        self._refresh_recent()
        try:
            remember_opened(path)
        except StoreError as exc:  # a link where the record goes: the doors keep their default
            log.warning("cannot make %s the default database: %s", path, exc)
            self.statusBar().showMessage(f"Agents without --db keep their database: {exc}", 10000)

    def _refresh_recent(self) -> None:
        self.recent_menu.clear()
        recent = recent_files()
        for path in recent:
            self.recent_menu.addAction(path, lambda p=path: self.open_path(p))
        self.recent_menu.setEnabled(bool(recent))

    # -- time ------------------------------------------------------------------------
    def advance(self, days: float) -> None:
        """Tick (``days`` 0) or move the clock forward and tick, as one undoable step; in a
        big store off the GUI thread, with progress and Cancel."""
        if not self.session.writable:
            return
        self.preview_slider.setValue(0)
        if is_bulk_change(advance_days=days):
            self.owner.before_bulk_change()
        title = f"Advancing {days_label(days)}" if days else "Ticking"
        self.session.start(title, lambda store: store.tick(advance_days=days or None),
                           lambda report: self._ticked(TickCommand(self.session, days, report)), "Tick failed")

    def _ticked(self, cmd: TickCommand) -> None:
        try:
            self.session.push(cmd)
        except StoreError as exc:
            self.show_error("Tick failed", str(exc))
            return
        days = cmd.advance_days
        summary = cmd.report.summary()
        prefix = f"+{days_label(days)}: " if days else "Tick: "
        self.tick_summary.setText(f" {prefix}{summary} ")
        self.statusBar().showMessage(prefix + summary, 8000)

    def _advance_other(self) -> None:
        days, ok = QInputDialog.getDouble(self, "Advance the clock", "Days to move forward:", 90, 0, 36500, 1)
        if ok:
            self.advance(days)

    def _preview_moved(self, days: int) -> None:
        self.session.set_preview_days(float(days))
        self.preview_label.setText(" now " if days == 0 else f" +{days} days ")
        self.now_button.setEnabled(days != 0)

    # -- status and settings ---------------------------------------------------------
    def _enable_writes(self) -> None:
        """Actions that write are offered only while a database is open and writable;
        reading, previewing and exporting only need one open."""
        writable = self.session.writable
        for control in (self.tick_action, self.save_action, self.delete_action, self.import_action,
                        self.advance_button, *self.advance_actions):
            control.setEnabled(writable)
        self.owner.enable_actions()
        has_store = self.session.store is not None
        for control in (self.export_action, self.preview_slider):
            control.setEnabled(has_store)
        # the file's state, not a job's: while a tick runs the window writes nothing, but may again after
        self.read_only_badge.setVisible(has_store and self.session.store.read_only)

    def _update_status(self) -> None:
        store = self.session.store
        if store is None:
            self.status_path.setText("no database open")
            return
        stats = self.session.prepared("status") or store.stats()
        self.status_path.setText(store.path)
        self._show_default(store)
        self.status_counts.setText(" · ".join(f"{k} {v}" for k, v in stats["layers"].items()) + "  ")
        from datetime import datetime

        clock = datetime.fromtimestamp(stats["now"]).strftime("%Y-%m-%d %H:%M")
        offset = stats["clock_offset_days"]
        self.status_clock.setText(f"clock {clock}" + (f" (+{offset:g} d)" if offset else ""))

    def _show_default(self, store: MemoryStore) -> None:
        """Say whether agents started without --db use this database (the one the window
        last opened is every door's default), and if not, which one they use."""
        chosen = default_database()
        path = store.path if on_server(store) else os.path.abspath(store.path)
        here = path == (chosen.path if on_server(chosen.path) else os.path.abspath(chosen.path))
        self.status_default.setText("· agents' default" if here else "· not the agents' default")
        self.status_default.setToolTip(
            "Agents started without --db (mnemoscope mcp, mnemoscope serve, as README says) use this "
            f"database: {chosen.why}." if here else
            f"Agents started without --db (mnemoscope mcp, mnemoscope serve) use {chosen.path} ({chosen.why}); "
            "Help › Connect an agent… connects one to this database")

    def set_theme(self, choice: str) -> None:
        """Light, dark or the system's: applied now and remembered for the next start."""
        theme.choose(choice)
        dark = theme.apply(QApplication.instance(), choice)
        self.map.set_dark(dark)
        self.decay.set_dark(dark)

    def _set_corners(self) -> None:
        # After any restore: a layout saved before the Activity dock existed would undo it.
        self.setCorner(Qt.Corner.BottomLeftCorner, Qt.DockWidgetArea.LeftDockWidgetArea)
        self.setCorner(Qt.Corner.BottomRightCorner, Qt.DockWidgetArea.RightDockWidgetArea)

    def reset_layout(self) -> None:
        """Docks and toolbar back where they start, sized to fit the window."""
        self.restoreState(self._default_state)
        self._set_corners()
        for dock in (self.memory_dock, self.preview_dock, self.activity, self.decay_dock):
            dock.setFloating(False)
            dock.show()
        self._size_docks()

    def _size_docks(self) -> None:
        # the preview as wide as its form needs (it scrolls below that), the table a little less
        preview = max(self.preview.minimumSizeHint().width() + 20, self.width() // 4)
        memories = max(300, self.width() // 5)
        self.resizeDocks([self.memory_dock, self.preview_dock], [memories, preview], Qt.Orientation.Horizontal)
        # the map keeps most of the height; the strip under it a quarter, Activity the wider part of it
        self.resizeDocks([self.activity], [max(150, self.height() // 4)], Qt.Orientation.Vertical)
        centre = self.width() - memories - preview
        self.resizeDocks([self.activity, self.decay_dock], [centre * 3 // 5, centre * 2 // 5],
                         Qt.Orientation.Horizontal)

    def showEvent(self, event) -> None:
        super().showEvent(event)
        if not self._placed:
            self._placed = True
            for ms in (0, 400):  # once the window manager has framed it (it may take a moment)
                QTimer.singleShot(ms, self._place)

    def _place(self) -> None:
        """After the first show: the window on the screen, and the docks sharing its width on
        a first start, or when the layout was saved in a wider window (another screen: the
        docks kept their share of a width that is gone); otherwise the saved widths stay."""
        self._fit_screen()
        if self._layout_saved_at_width is None or self.width() < self._layout_saved_at_width:
            self._size_docks()

    def _fit_screen(self) -> None:
        """The whole window on the screen: on a first start it was sized to the screen's free
        room, but a window manager adds a title bar and borders, and a geometry saved on a
        bigger screen is bigger than this one; shrink it so that the status bar is on the
        screen (at 1366×768 it fell below it)."""
        room = self.screen().availableGeometry()
        frame, inner = self.frameGeometry(), self.geometry()
        extra_w, extra_h = frame.width() - inner.width(), frame.height() - inner.height()
        if extra_h <= extra_w:  # no title bar (yet, or no window manager): nothing to make room for
            return
        if frame.width() <= room.width() and frame.height() <= room.height() and room.contains(frame):
            return
        self.resize(min(inner.width(), room.width() - extra_w), min(inner.height(), room.height() - extra_h))
        self.move(room.left() + max(0, (room.width() - self.frameGeometry().width()) // 2),
                  room.top() + max(0, (room.height() - self.frameGeometry().height()) // 2))

    def _restore_settings(self) -> int | None:
        """Restore the saved geometry and docks; the window's width when they were saved, or
        None when there were none."""
        s = settings()
        geometry = s.value("geometry")
        if isinstance(geometry, QByteArray):
            self.restoreGeometry(geometry)
        state = s.value("window_state")
        if not (isinstance(state, QByteArray) and self.restoreState(state)):
            return None
        return int(s.value("window_width", 0) or 0)  # 0: saved before the width was kept

    def closeEvent(self, event) -> None:
        if not self.editor.confirm_leave():
            event.ignore()
            return
        s = settings()
        s.setValue("geometry", self.saveGeometry())
        s.setValue("window_state", self.saveState())
        s.setValue("window_width", self.width())
        self.session.close()
        super().closeEvent(event)
