"""File › Open database URL…: a PostgreSQL memory by its URL, with the password in a field
of its own that is never shown back, never filled in from anywhere, and never stored (the
recent list, the settings and the title get the URL without it). A password typed or
pasted into the URL moves to that field as soon as the URL shows it, so it is not left
readable on the screen."""

from __future__ import annotations

from urllib.parse import quote, unquote, urlsplit

from mnemoscope.store import on_server, shown
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QFormLayout, QLabel, QLineEdit, QVBoxLayout


class DatabaseUrlDialog(QDialog):
    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.setObjectName("url_dialog")
        self.setWindowTitle("Open database URL")
        self.address = QLineEdit(self)
        self.address.setPlaceholderText("postgresql://user@host:5432/dbname")
        self.address.textChanged.connect(self._take_password)
        self.password = QLineEdit(self)
        self.password.setEchoMode(QLineEdit.EchoMode.Password)
        self.password.setPlaceholderText("or from PGPASSWORD / ~/.pgpass")
        self.problem = QLabel("", self)
        self.problem.setObjectName("url_problem")
        self.problem.setWordWrap(True)
        form = QFormLayout()
        form.addRow("&URL:", self.address)
        form.addRow("&Password:", self.password)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Open | QDialogButtonBox.StandardButton.Cancel,
                                   parent=self)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.problem)
        layout.addWidget(buttons)
        self.resize(520, self.sizeHint().height())

    def _take_password(self, text: str) -> None:
        try:
            password = urlsplit(text).password
        except ValueError:  # not a URL yet (a port still being typed): nothing to take
            return
        if password is None:
            return
        self.password.setText(unquote(password))
        self.address.setText(shown(text))  # emits textChanged again, with no password left

    def url(self) -> str:
        """The URL to connect with: what was typed, with the password field's password
        (when given) put in place of any in the URL."""
        text = self.address.text().strip()
        password = self.password.text()
        if not password:
            return text
        parts = urlsplit(text)
        bare = shown(text)
        user = parts.username or ""
        head, _, rest = bare.partition("://")
        host = rest.split("@", 1)[1] if "@" in rest.split("/", 1)[0] else rest
        return f"{head}://{user}:{quote(password, safe='')}@{host}"

    def accept(self) -> None:
        text = self.address.text().strip()
        if not on_server(text):
            self.problem.setText("A database URL starts with postgresql:// (open a file with File › Open…).")
            return
        super().accept()

    def done(self, result: int) -> None:
        super().done(result)
        self.password.clear()  # not kept in the dialog after use either
