"""The memory editor: the selected memory's fields, with New, Save and Delete as
undoable commands. Invalid input is shown next to its field and nothing is written."""

from __future__ import annotations

import html
import json
from typing import Any

from mnemoscope.store import KINDS, SENSITIVITIES, NotFound, StoreError, ValidationError
from mnemoscope.store.model.memory import validate_fields
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMessageBox,
    QPlainTextEdit,
    QPushButton,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from ..commands.memories import DeleteMemoryCommand, EditMemoryCommand, NewMemoryCommand
from ..session import StoreSession
from ..widgets import UndoKeysFallThrough

FIELDS = ("text", "kind", "importance", "who", "topic", "entities", "scope", "sensitivity", "tags", "pinned",
          "reason_to_remember", "context")
LABELS = {"pinned": "", "reason_to_remember": "Reason"}  # the others: the field's name, capitalised


def _split(text: str) -> list[str]:
    return [p.strip() for p in text.split(",") if p.strip()]


def context_text(context: Any) -> str:
    """A memory's context as the editor shows it: indented JSON, one key a line ("" for none)."""
    return "" if context is None else json.dumps(context, ensure_ascii=False, indent=2, sort_keys=True)


def parse_context(text: str) -> Any:
    """The context box back to a value: empty is none; JSON that does not parse is refused."""
    if not text.strip():
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValidationError("context", f"is not valid JSON: {exc.msg} (line {exc.lineno}, column "
                                         f"{exc.colno})") from None


class MemoryEditor(QWidget):
    saved = Signal(str)
    dirty_changed = Signal(bool)  # the editor holds an edit that is not saved yet

    def __init__(self, session: StoreSession, parent=None) -> None:
        super().__init__(parent)
        self.session = session
        self.memory_id: str | None = None
        self._loading = False
        self._dirty = False
        self._heading = "<b>New memory</b>"
        self.text = QPlainTextEdit(self)
        self.text.setPlaceholderText("What should the agent remember?")
        self.text.setFixedHeight(70)
        self.kind = QComboBox(self)
        self.kind.addItems(KINDS)
        self.importance = QDoubleSpinBox(self)
        # wider than the valid 0–1 so a typed 1.5 is refused next to the field, not clamped
        self.importance.setRange(-9.99, 9.99)
        self.importance.setSingleStep(0.05)
        self.importance.setDecimals(2)
        self.who = QLineEdit(self)
        self.topic = QLineEdit(self)
        self.entities = QLineEdit(self)
        self.entities.setPlaceholderText("comma-separated names")
        self.scope = QLineEdit(self)
        self.scope.setPlaceholderText("global, group:ID or private:ID")
        self.sensitivity = QComboBox(self)
        self.sensitivity.addItems(SENSITIVITIES)
        self.tags = QLineEdit(self)
        self.tags.setPlaceholderText("comma-separated")
        self.pinned = QCheckBox("pinned (never fades)", self)
        self.reason_to_remember = QLineEdit(self)
        self.reason_to_remember.setPlaceholderText("why the agent should remember this")
        self.reason_to_remember.setToolTip("reason_to_remember: why this was captured")
        # Editable, so the owner can strip from it what should not be kept (a path, a token);
        # checked as JSON before anything is written.
        self.context = QPlainTextEdit(self)
        self.context.setPlaceholderText("none — a capture's execution context, as JSON")
        self.context.setToolTip("The execution context the memory was captured with, as JSON")
        self.context.setFixedHeight(90)
        self.context.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.errors: dict[str, QLabel] = {}
        form = QFormLayout()
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        for name in FIELDS:
            widget = getattr(self, name)
            box = QVBoxLayout()
            box.setSpacing(1)
            box.addWidget(widget)
            err = QLabel(self)
            err.setObjectName(f"error_{name}")
            err.setStyleSheet("color: #D55E00;")
            err.setWordWrap(True)
            _wraps_in_any_width(err)
            err.hide()
            box.addWidget(err)
            self.errors[name] = err
            form.addRow(LABELS.get(name, name.capitalize()), box)
        self.status = QLabel(self)
        self.status.setWordWrap(True)
        _wraps_in_any_width(self.status)
        self.new_button = QPushButton("New", self)
        self.save_button = QPushButton("Save", self)
        self.delete_button = QPushButton("Delete", self)
        self.save_button.setDefault(True)
        # Under the form's scroll area, not at its end: with every field shown, Save and
        # Delete were below the fold at 1366×768 and at 1920×1080 (the window places it).
        self.button_bar = QWidget(self)
        bar = QVBoxLayout(self.button_bar)
        bar.setContentsMargins(6, 2, 6, 4)
        buttons = QHBoxLayout()
        for b in (self.new_button, self.save_button, self.delete_button):
            buttons.addWidget(b)
        bar.addLayout(buttons)
        bar.addWidget(self.status)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 6)
        self.heading = QLabel("<b>New memory</b>", self)
        self.heading.setWordWrap(True)
        _wraps_in_any_width(self.heading)
        layout.addWidget(self.heading)
        layout.addLayout(form)
        layout.addStretch(1)
        self.new_button.clicked.connect(self.start_new)
        self.save_button.clicked.connect(self.save)
        self.delete_button.clicked.connect(self.delete)
        line_edits = (self.who, self.topic, self.entities, self.scope, self.tags, self.reason_to_remember)
        for w in line_edits:
            w.textEdited.connect(self._mark_dirty)
        for w in (self.text, self.context):
            w.textChanged.connect(self._mark_dirty)
        self.kind.currentIndexChanged.connect(self._mark_dirty)
        self.sensitivity.currentIndexChanged.connect(self._mark_dirty)
        self.importance.valueChanged.connect(self._mark_dirty)
        self.pinned.toggled.connect(self._mark_dirty)
        for w in line_edits:
            w.textEdited.connect(lambda _t, name=w: self._clear_error_of(name))
        for w in (self.text, self.context):
            w.textChanged.connect(lambda w=w: self._clear_error_of(w))
        self.importance.valueChanged.connect(lambda _v: self._clear_error_of(self.importance))
        self.undo_keys = UndoKeysFallThrough(self)
        self.undo_keys.watch(*(getattr(self, name) for name in FIELDS))
        session.selection_changed.connect(self.load)
        session.changed.connect(self._on_changed)
        session.store_replaced.connect(self._on_store_replaced)
        session.leave_guard = self.confirm_leave
        self.start_new()
        self._on_store_replaced()

    # -- unsaved edits -------------------------------------------------------------
    @property
    def dirty(self) -> bool:
        return self._dirty

    @dirty.setter
    def dirty(self, value: bool) -> None:
        if value != self._dirty:
            self._dirty = value
            self._show_heading()
            self.dirty_changed.emit(value)

    def _mark_dirty(self, *_args) -> None:
        if not self._loading:
            self.dirty = True

    def _show_heading(self) -> None:
        mark = " <span style='color:#D55E00'>● unsaved</span>" if self._dirty else ""
        self.heading.setText(self._heading + mark)

    def confirm_leave(self) -> bool:
        """Before the edited memory is left: save, discard, or stay (False)."""
        if not self._dirty:
            return True
        box = QMessageBox(QMessageBox.Icon.Question, "Unsaved edit",
                          f"The edit of {self.memory_id or 'the new memory'} is not saved.",
                          QMessageBox.StandardButton.Save | QMessageBox.StandardButton.Discard
                          | QMessageBox.StandardButton.Cancel, self)
        box.setObjectName("unsaved_dialog")
        box.setInformativeText("Save it before moving on?")
        box.setDefaultButton(QMessageBox.StandardButton.Save)
        answer = box.exec()
        if answer == QMessageBox.StandardButton.Save:
            return self.save()
        if answer == QMessageBox.StandardButton.Discard:
            self.dirty = False
            return True
        return False

    def _on_store_replaced(self) -> None:
        """Nothing can be written with no database open, or one open read-only: the form
        then shows the selected memory without letting it be edited."""
        writable = self.session.writable
        for w in (self.new_button, self.save_button):
            w.setEnabled(writable)
        self.delete_button.setEnabled(writable and self.memory_id is not None)
        for name in FIELDS:
            widget = getattr(self, name)
            if hasattr(widget, "setReadOnly"):
                widget.setReadOnly(not writable)
            else:  # combo boxes and the check box have no read-only state
                widget.setEnabled(writable)
        if self.session.store is None:
            self.status.setText("No database open: File › Open or File › New.")
        elif not writable:
            self.status.setText("This database is open read-only: it can be browsed, previewed and exported, "
                                "not changed.")
        else:
            self.status.clear()

    # -- loading -------------------------------------------------------------------

    def _on_changed(self, ids) -> None:
        # Keep an unsaved edit; otherwise show the stored state of the selected memory.
        if self.memory_id and not self.dirty and (ids is None or self.memory_id in ids):
            self.load(self.memory_id, keep_status=True)

    def load(self, memory_id: str | None, keep_status: bool = False) -> None:
        if memory_id is None:
            if self.memory_id is not None:
                self.start_new()
            return
        if memory_id == self.memory_id and self.dirty:
            return
        try:
            m = self.session.store.get(memory_id)
        except NotFound:
            self.start_new()
            return
        self._loading = True
        try:
            self.memory_id = m.id
            self._heading = (f"<b>{breakable(html.escape(m.id))}</b> · {m.layer} · strength {m.strength:.2f} · "
                             f"{m.recall_count} recall{'' if m.recall_count == 1 else 's'}")
            self.text.setPlainText(m.text)
            self.kind.setCurrentText(m.kind)
            self.importance.setValue(m.importance)
            self.who.setText(m.who)
            self.topic.setText(m.topic)
            self.entities.setText(", ".join(m.entities))
            self.scope.setText(m.scope)
            self.sensitivity.setCurrentText(m.sensitivity)
            self.tags.setText(", ".join(m.tags))
            self.pinned.setChecked(m.pinned)
            self.reason_to_remember.setText(m.reason_to_remember)
            self.context.setPlainText(context_text(m.context))
            self.delete_button.setEnabled(self.session.writable)
            self._clear_errors()
            if not keep_status and self.session.writable:
                self.status.clear()
        finally:
            self._loading = False
        self.dirty = False
        self._show_heading()

    def start_new(self) -> None:
        if not self.confirm_leave():
            return
        self._loading = True
        try:
            self.memory_id = None
            self._heading = "<b>New memory</b>"
            self.text.clear()
            self.kind.setCurrentText("fact")
            self.importance.setValue(0.5)
            for w in (self.who, self.topic, self.entities, self.tags, self.reason_to_remember, self.context):
                w.clear()
            self.scope.setText("global")
            self.sensitivity.setCurrentText("low")
            self.pinned.setChecked(False)
            self.delete_button.setEnabled(False)
            self._clear_errors()
        finally:
            self._loading = False
        self.dirty = False
        self._show_heading()
        if self.session.selected_id is not None:
            self.session.select(None)

    # -- saving --------------------------------------------------------------------
    def values(self) -> dict[str, Any]:
        """The form as memory fields; a context that is not JSON raises ValidationError."""
        return {
            "text": self.text.toPlainText(), "kind": self.kind.currentText(),
            "importance": round(self.importance.value(), 2), "who": self.who.text(), "topic": self.topic.text(),
            "entities": _split(self.entities.text()), "scope": self.scope.text().strip() or "global",
            "sensitivity": self.sensitivity.currentText(), "tags": _split(self.tags.text()),
            "pinned": self.pinned.isChecked(), "reason_to_remember": self.reason_to_remember.text().strip(),
            "context": parse_context(self.context.toPlainText()),
        }

    def _clear_error_of(self, widget) -> None:
        for name, label in self.errors.items():
            if getattr(self, name) is widget and label.isVisibleTo(self):
                label.hide()
                label.clear()
                self.status.clear()

    def _clear_errors(self) -> None:
        for label in self.errors.values():
            label.hide()
            label.clear()

    def _show_error(self, exc: ValidationError) -> None:
        name = exc.field.split(".")[0]
        label = self.errors.get(name)
        message = str(exc).split(": ", 1)[-1]
        if label is None:
            self.status.setText(f"Not saved: {exc}")
        else:
            label.setText(message)
            label.show()
            self.status.setText("Not saved: fix the field marked above.")

    def save(self) -> bool:
        """Write the form (a new memory, or the changed fields); False when nothing was
        written, with the reason next to its field or under the buttons."""
        if not self.session.writable:
            return False
        self._clear_errors()
        try:
            values = self.values()
            validate_fields(values, self.session.store.config, partial=False)
        except ValidationError as exc:
            self._show_error(exc)
            return False
        if self.memory_id is None:
            command = NewMemoryCommand(self.session, values)
        else:
            current = self.session.store.get(self.memory_id)
            changes = {k: v for k, v in values.items() if getattr(current, k) != v}
            if not changes:
                self.dirty = False
                self.status.setText("Nothing changed.")
                return True
            command = EditMemoryCommand(self.session, self.memory_id, changes)
        self.dirty = False  # the command selects what it wrote: no "unsaved edit?" question
        try:
            self.session.push(command)
        except ValidationError as exc:
            self.dirty = True
            self._show_error(exc)
            return False
        except StoreError as exc:
            self.dirty = True
            self.status.setText(f"Not saved: {exc}")
            return False
        self.status.setText(getattr(command, "message", "") or "Saved.")
        self.saved.emit(self.memory_id or "")
        self.load(self.session.selected_id or self.memory_id, keep_status=True)
        return True

    def delete(self) -> None:
        if self.memory_id is None or not self.session.writable:
            return
        memory_id = self.memory_id
        self.dirty = False
        try:
            self.session.push(DeleteMemoryCommand(self.session, memory_id))
        except StoreError as exc:
            self.status.setText(f"Not deleted: {exc}")
            return
        self.start_new()
        self.status.setText(f"Deleted {memory_id}. Edit › Undo brings it back.")

    def keyPressEvent(self, event) -> None:  # Ctrl+Enter saves
        if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and event.modifiers() & \
                Qt.KeyboardModifier.ControlModifier:
            self.save()
            return
        super().keyPressEvent(event)


def _wraps_in_any_width(label: QLabel) -> None:
    """A label that wraps to the pane's width instead of widening the pane (with a
    horizontal scroll bar that cuts every field's right edge)."""
    label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
    label.setMinimumWidth(1)


def breakable(text: str, every: int = 12) -> str:
    """``text`` with a zero-width space every ``every`` characters: a long id can wrap."""
    return "\u200b".join(text[i:i + every] for i in range(0, len(text), every))
