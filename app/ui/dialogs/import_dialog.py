"""File › Import from…'s question, once the file is read: what it would bring in (and, for a
source imported before, what it would change), how sensitive what comes in is, and, when
the privacy check flags memories of it, whether to bring those in as sensitive as each
needs (an agent may be served an imported memory at once)."""

from __future__ import annotations

from dataclasses import dataclass

from mnemoscope.store import SENSITIVITIES
from mnemoscope.store.importers import ImportResult
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLabel,
    QPlainTextEdit,
    QVBoxLayout,
    QWidget,
)


@dataclass(frozen=True)
class ImportChoice:
    """What a person chose: every memory's sensitivity (None: as each comes, low unless a
    Mnemoscope export says), and whether the flagged ones come in as sensitive as they need."""

    sensitivity: str | None = None
    raise_flagged: bool = True


def flagged_text(preview: ImportResult) -> str:
    """The privacy check's findings in what comes in, a line a memory."""
    by_memory: dict[str, list] = {}
    for f in preview.findings:
        by_memory.setdefault(f.memory_id, []).append(f)
    lines = [f"{mid}: " + ", ".join(sorted({f"{f.what} ({f.where}) needs {f.needed}" for f in found}))
             for mid, found in list(by_memory.items())[:50]]
    if len(by_memory) > 50:
        lines.append(f"… and {len(by_memory) - 50} more")
    return "\n".join(lines)


class ImportDialog(QDialog):
    """Import or Cancel, with the sensitivity of what comes in."""

    def __init__(self, preview: ImportResult, details: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Import")
        self.preview = preview
        summary = QLabel(preview.summary())
        summary.setWordWrap(True)
        text = QPlainTextEdit(details.removeprefix(preview.summary()).lstrip("\n"))  # (the summary is above)
        text.setReadOnly(True)
        self.sensitivity = QComboBox()
        self.sensitivity.addItem("as each comes (low)", None)
        for level in SENSITIVITIES:
            self.sensitivity.addItem(level, level)
        form = QFormLayout()
        form.addRow("Sensitivity of what comes in", self.sensitivity)
        layout = QVBoxLayout(self)
        layout.addWidget(summary)
        layout.addWidget(text)
        layout.addLayout(form)
        self.raise_flagged = QCheckBox()
        flagged = len({f.memory_id for f in preview.findings})
        if flagged:
            self.raise_flagged.setText(f"Bring in the {flagged} flagged {'memory' if flagged == 1 else 'memories'} "
                                       "as sensitive as each needs")
            self.raise_flagged.setChecked(True)
            warning = QLabel(f"The privacy check found what should be more sensitive in {flagged} "
                             f"{'memory' if flagged == 1 else 'memories'} of this file:")
            warning.setWordWrap(True)
            found = QPlainTextEdit(flagged_text(preview))
            found.setReadOnly(True)
            found.setMaximumHeight(90)
            layout.addWidget(warning)
            layout.addWidget(found)
            layout.addWidget(self.raise_flagged)
        else:
            self.raise_flagged.hide()
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Cancel)
        self.import_button = buttons.addButton("Import", QDialogButtonBox.ButtonRole.AcceptRole)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)
        self.resize(640, 480)

    def choice(self) -> ImportChoice:
        return ImportChoice(self.sensitivity.currentData(), self.raise_flagged.isChecked())
