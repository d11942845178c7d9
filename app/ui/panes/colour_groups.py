"""Colour groups on the map (Obsidian's graph has them): up to four queries, each with a
colour; a memory a query finds is drawn in its colour (the first group that finds it),
the others dimmed in their kind's. A query names a field (``topic:cooking``,
``entity:Mara``, ``kind:event``, ``layer:edge``, ``scope:…``: every memory that has it) or
is looked for by meaning, as the search box does (the hits that stand out)."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QGridLayout, QLabel, QLineEdit, QVBoxLayout

GROUP_COLOURS = ("#EE6677", "#AA3377", "#228833", "#4477AA")  # Paul Tol's bright: apart from the kinds' hues
GROUPS_MAX = len(GROUP_COLOURS)


class ColourGroupsDialog(QDialog):
    """The queries of the colour groups, each beside its colour."""

    applied = Signal(list)  # the queries, in order ("" for an empty row)

    def __init__(self, queries: list[str], parent=None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Colour groups")
        self.setObjectName("colour_groups_dialog")
        grid = QGridLayout()
        self.edits: list[QLineEdit] = []
        for i, colour in enumerate(GROUP_COLOURS):
            swatch = QLabel(f"<span style='color:{colour}; font-size:18px'>●</span>", self)
            edit = QLineEdit(queries[i] if i < len(queries) else "", self)
            edit.setPlaceholderText("topic:cooking, entity:Mara, kind:event… or words, by meaning")
            edit.returnPressed.connect(self.apply)
            grid.addWidget(swatch, i, 0)
            grid.addWidget(edit, i, 1)
            self.edits.append(edit)
        note = QLabel("A memory takes the colour of the first group that finds it; the others are dimmed.", self)
        note.setWordWrap(True)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Apply | QDialogButtonBox.StandardButton.Reset
                                   | QDialogButtonBox.StandardButton.Close, self)
        buttons.button(QDialogButtonBox.StandardButton.Apply).clicked.connect(self.apply)
        buttons.button(QDialogButtonBox.StandardButton.Reset).setText("Clear")
        buttons.button(QDialogButtonBox.StandardButton.Reset).clicked.connect(self.clear)
        buttons.rejected.connect(self.close)
        layout = QVBoxLayout(self)
        layout.addLayout(grid)
        layout.addWidget(note)
        layout.addWidget(buttons)
        self.setWindowModality(Qt.WindowModality.NonModal)
        self.resize(520, self.sizeHint().height())

    def apply(self) -> None:
        self.applied.emit([e.text().strip() for e in self.edits])

    def clear(self) -> None:
        for edit in self.edits:
            edit.clear()
        self.apply()
