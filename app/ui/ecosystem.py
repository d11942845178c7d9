"""Other tools' memory in the window: File › Import from… (the MCP memory server,
basic-memory, Letta, mem0: a preview of the counts and changes, the sensitivity of what
comes in, then one undoable import) and Help ›
Connect an agent… (the same function as ``mnemoscope connect``)."""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING

from mnemoscope.connect import CLIENTS, config_text, connect
from mnemoscope.store import SENSITIVITIES, StoreError
from mnemoscope.store.importers import (
    ImportPlan,
    ImportResult,
    apply,
    detect,
    formats,
    plan_import,
    set_sensitivity,
)
from mnemoscope.store.meaning import embedding_workers
from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QAction
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QLabel,
    QLineEdit,
    QMenu,
    QMessageBox,
    QPlainTextEdit,
    QVBoxLayout,
    QWidget,
)

from .commands.imports import ForeignImportCommand
from .dialogs.import_dialog import ImportChoice, ImportDialog
from .dialogs.job_dialog import watch
from .preferences import picked, start_in

if TYPE_CHECKING:
    from .session import StoreSession



def sources() -> list[tuple[str, str, str | None]]:
    """(format, menu label, file filter or None for a folder) of each other tool's format,
    from the formats' one list (Mnemoscope's own JSONL is File › Import)."""
    return [(f.name, f.label, f.file_filter) for f in formats.FORMATS if f.read is not None]


class OtherFormat(StoreError):
    """The file picked under one format of File › Import from looks like another."""

    def __init__(self, path: str, wanted: str, seen: str) -> None:
        wanted_noun, seen_noun = formats.by_name(wanted).noun, formats.by_name(seen).noun
        super().__init__(f"{path} is not {wanted_noun}: it looks like {seen_noun}.")
        self.path, self.seen = path, seen


def _plan(store, path: str, fmt: str | None) -> tuple[ImportPlan, ImportResult]:
    """The file read into a plan and what it would add (writes nothing); a file that looks
    like another format than ``fmt`` is :class:`OtherFormat`, for the window to offer it."""
    seen = detect(path) if fmt is not None and os.path.exists(path) else None
    if seen is not None and seen != fmt:
        raise OtherFormat(path, fmt, seen)
    plan = plan_import(store, path, fmt)
    return plan, apply(store, plan, dry_run=True)


_FORMAT_OPTION = re.compile(r"(?:use|import it with) --format ([\w-]+)")


def in_window_words(message: str) -> str:
    """A store message as the window says it: the command line's ``--format NAME`` is the
    File › Import from entry of that format."""
    labels = {f.name: f.label.rstrip("…") for f in formats.FORMATS}
    message = _FORMAT_OPTION.sub(lambda m: f"use File › Import from › {labels.get(m.group(1), m.group(1))}"
                                 if m.group(1) in labels else "use File › Import", message)
    return message.replace("name one with --format", "choose its format in File › Import from")


def preview_text(result: ImportResult) -> str:
    lines = [result.summary(), ""]
    lines += [f"{n:>7,}  {what}" for what, n in result.placed.items()]
    if result.changes:  # the source was imported before: what comes in step with it
        lines += ["", "In step with the source (retired memories are forgotten, and can be restored):"]
        lines += [f"  {c}" for c in result.changes[:100]]
        if len(result.changes) > 100:
            lines.append(f"  … and {len(result.changes) - 100} more")
    if result.left_out:
        lines += ["", "Left out:"] + [f"  {x}" for x in result.left_out[:100]]
        if len(result.left_out) > 100:
            lines.append(f"  … and {len(result.left_out) - 100} more")
    return "\n".join(lines)


class ConnectDialog(QDialog):
    """Pick a client, scopes and trust; see the entry and its file; Connect writes it."""

    def __init__(self, db: str, parent=None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Connect an agent")
        self.db = db
        self.client = QComboBox()
        for key, (label, _, _) in CLIENTS.items():
            self.client.addItem(label, key)
        self.scopes = QLineEdit()
        self.scopes.setPlaceholderText("global")
        self.trust = QComboBox()
        self.trust.addItems(SENSITIVITIES)
        self.trust.setCurrentText("medium")
        self.preview = QPlainTextEdit()
        self.preview.setReadOnly(True)
        form = QFormLayout()
        form.addRow("Client", self.client)
        form.addRow("Scopes (space separated)", self.scopes)
        form.addRow("Trust", self.trust)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Cancel)
        self.connect_button = buttons.addButton("Connect", QDialogButtonBox.ButtonRole.AcceptRole)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(QLabel("This entry goes in the client's configuration (the file is merged, the old one kept "
                                "as .bak):"))
        layout.addWidget(self.preview)
        layout.addWidget(buttons)
        for signal in (self.client.currentIndexChanged, self.trust.currentIndexChanged, self.scopes.textChanged):
            signal.connect(self.refresh)
        self.refresh()

    def options(self) -> dict:
        return {"client": self.client.currentData(), "db": self.db, "scopes": self.scopes.text().split(),
                "trust": self.trust.currentText()}

    def refresh(self) -> None:
        try:
            result = connect(**self.options(), dry_run=True)
        except StoreError as exc:
            self.preview.setPlainText(str(exc))
            self.connect_button.setEnabled(False)
            return
        self.preview.setPlainText(f"{result.path}\n\n" + config_text(result.client, result.entry))
        self.connect_button.setEnabled(True)


class EcosystemTools(QObject):
    """The menu entries, added to the window's File (before ``before``) and Help menus. It
    knows the session and a widget to put its dialogs over, not the window: what it has to
    say goes out through ``failed`` and ``status_message``, as OwnerTools' does."""

    failed = Signal(str, str)       # title, message
    status_message = Signal(str)

    def __init__(self, session: StoreSession, widget: QWidget, file_menu: QMenu, help_menu: QMenu,
                 before: QAction) -> None:
        super().__init__(widget)
        self.session = session
        self.widget = widget
        self.import_menu = QMenu("Import &from", widget)
        for fmt, label, _ in sources():
            self.import_menu.addAction(label, lambda f=fmt: self.import_dialog(f))
        file_menu.insertMenu(before, self.import_menu)
        self.connect_action = help_menu.addAction("&Connect an agent…", self.connect_dialog)

    def import_dialog(self, fmt: str) -> None:
        pattern = {f: p for f, _, p in sources()}[fmt]
        if pattern is None:
            path = picked(QFileDialog.getExistingDirectory(self.widget, "Import a basic-memory folder", start_in()))
        else:
            path = picked(QFileDialog.getOpenFileName(self.widget, "Import", start_in(), pattern)[0])
        if path:
            self.import_path(path, fmt)

    def import_path(self, path: str, fmt: str | None, *, confirm: bool = True) -> ImportResult | None:
        """Read the file and count what it would add, ask, then import as one undoable step,
        all or nothing. In a big store both run off the GUI thread (the import with a
        progress dialog and Cancel) and None is returned: the window shows the result when
        it lands. Here, the result (None if refused or cancelled)."""
        session = self.session
        if not session.writable or not session.leave_guard():
            return None
        landed: list[ImportResult] = []

        def planned(found: tuple[ImportPlan, ImportResult]) -> None:
            plan, preview = found
            choice = self.ask_import(preview) if confirm else ImportChoice()
            if choice is None:
                return
            set_sensitivity(plan, choice.sensitivity, preview.findings if choice.raise_flagged else None)
            job = session.start(f"Importing {plan.format}", lambda store, report: apply(store, plan, progress=report),
                                lambda result: landed.append(self._imported(ForeignImportCommand(session, plan, result))),
                                "Import failed", reports=True,
                                refused=lambda exc: self.failed.emit("Import failed", in_window_words(str(exc))))
            watch(job, self.widget)

        def refused(exc: Exception) -> None:
            if isinstance(exc, OtherFormat) and self.offer_other_format(exc) == QMessageBox.StandardButton.Yes:
                self.import_path(exc.path, exc.seen, confirm=confirm)
            elif not isinstance(exc, OtherFormat):
                self.failed.emit("Import refused", in_window_words(str(exc)))

        session.start(f"Reading {os.path.basename(path) or path}", lambda store: _plan(store, path, fmt), planned,
                      "Import refused", writes=False, refused=refused)
        return landed[0] if landed and landed[0] is not None else None

    def offer_other_format(self, exc: OtherFormat):
        """The file looks like another format than the one picked: import it as that?"""
        label = formats.by_name(exc.seen).label.rstrip("…")
        box = QMessageBox(QMessageBox.Icon.Question, "Import", str(exc),
                          QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.Cancel, self.widget)
        box.setInformativeText(f"Import it as a {label}?")
        box.button(QMessageBox.StandardButton.Yes).setText(f"Import as {label}")
        return box.exec()

    def _imported(self, command: ForeignImportCommand) -> ImportResult | None:
        try:
            self.session.push(command)
        except (StoreError, OSError) as exc:
            self.failed.emit("Import failed", str(exc))
            return None
        self.status_message.emit(f"{command.result.summary()}. Edit › Undo takes it back.")
        return command.result

    def ask(self, preview):
        """What an import of Mnemoscope's own JSONL would add, and Yes or Cancel."""
        box = QMessageBox(QMessageBox.Icon.Question, "Import", preview.summary(),
                          QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.Cancel, self.widget)
        box.setDetailedText(preview_text(preview))
        box.setInformativeText("Import it?")
        self._warm(preview)
        return box.exec()

    def ask_import(self, preview: ImportResult) -> ImportChoice | None:
        """What another tool's file would add or change and how sensitive it comes in: the
        choice, or None (Cancel)."""
        dialog = ImportDialog(preview, preview_text(preview), self.widget)
        self._warm(preview)
        return dialog.choice() if dialog.exec() == QDialog.DialogCode.Accepted else None

    def _warm(self, preview) -> None:
        warm = getattr(self.session.store.embedder, "warm", None)
        if warm is not None and preview.memories_new >= embedding_workers.WORKERS_FROM:
            warm()  # the embedding's workers load the model while the person reads the question

    def connect_dialog(self) -> None:
        dialog = ConnectDialog(self.session.store.path, self.widget)
        if dialog.exec() != QDialog.DialogCode.Accepted:
            return
        try:
            result = connect(**dialog.options())
        except StoreError as exc:
            self.failed.emit("Connect failed", str(exc))
            return
        self.status_message.emit(result.message())
