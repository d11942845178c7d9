"""Small widgets shared by the panes: a label that elides instead of widening the window,
a label whose height never changes with its text, tabs the mouse wheel does not flip, a
scroll area that lets a pane shrink below its natural height, the time-travel slider, and
the base of the panes' small read-only tables."""

from __future__ import annotations

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QSize, Qt
from PySide6.QtGui import QPainter
from PySide6.QtWidgets import (
    QFrame,
    QLabel,
    QProxyStyle,
    QScrollArea,
    QSizePolicy,
    QSlider,
    QStyle,
    QTabBar,
    QTabWidget,
    QWidget,
)


class ElidedLabel(QLabel):
    """One line of plain text that shortens with "…" when there is no room (the whole
    text is then its tooltip), so a long caption never makes the window wider."""

    def __init__(self, text: str = "", parent: QWidget | None = None,
                 mode: Qt.TextElideMode = Qt.TextElideMode.ElideRight) -> None:
        super().__init__(text, parent)
        self._mode = mode
        self.setTextFormat(Qt.TextFormat.PlainText)

    def minimumSizeHint(self) -> QSize:
        return QSize(self.fontMetrics().horizontalAdvance("…") * 4, super().minimumSizeHint().height())

    def shown_text(self) -> str:
        """The text as it is drawn at the current width."""
        return self.fontMetrics().elidedText(self.text(), self._mode, self.contentsRect().width())

    def paintEvent(self, _event) -> None:
        shown = self.shown_text()
        self.setToolTip(self.text() if shown != self.text() else "")
        painter = QPainter(self)
        painter.setPen(self.palette().color(self.foregroundRole()))
        painter.drawText(self.contentsRect(), int(self.alignment() | Qt.AlignmentFlag.AlignVCenter), shown)


class SteadyLabel(QLabel):
    """A word-wrapped (rich) text of at most ``lines`` lines whose height is fixed, so that
    a note that comes and goes ("Topic shift", "unsaved") never moves what is under it;
    what does not fit is in its tooltip."""

    def __init__(self, lines: int = 1, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.lines = lines
        self.setWordWrap(True)  # a line that does not fit goes under, out of sight (and in the tooltip)
        # its text never widens the pane: what does not fit is cut, and in the tooltip
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
        self.setMinimumWidth(1)
        self.setAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)
        self.setFixedHeight(self.fontMetrics().lineSpacing() * lines + 4)

    def setText(self, text: str) -> None:  # noqa: N802 (Qt's name)
        super().setText(text)
        self.setToolTip(text if text else "")

    def changeEvent(self, event) -> None:
        super().changeEvent(event)
        if event.type() == event.Type.FontChange:
            self.setFixedHeight(self.fontMetrics().lineSpacing() * self.lines + 4)


class _StillTabBar(QTabBar):
    def wheelEvent(self, event) -> None:
        # The wheel scrolls what the tabs are in; it does not flip the tab under the pointer
        # as the pane scrolls past it.
        event.ignore()


class StillTabs(QTabWidget):
    """Tabs that a click or the keyboard changes, never the mouse wheel."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setTabBar(_StillTabBar(self))
        self.tabBar().setUsesScrollButtons(True)
        self.tabBar().setElideMode(Qt.TextElideMode.ElideNone)


def scrolling(widget: QWidget, parent: QWidget | None = None) -> QScrollArea:
    """``widget`` in a frameless scroll area that follows its width and scrolls vertically."""
    area = QScrollArea(parent)
    area.setWidget(widget)
    area.setWidgetResizable(True)
    area.setFrameShape(QFrame.Shape.NoFrame)
    area.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)
    return area


class _JumpToClick(QProxyStyle):
    def styleHint(self, hint, option=None, widget=None, returnData=None) -> int:  # noqa: N802 (Qt's name)
        if hint == QStyle.StyleHint.SH_Slider_AbsoluteSetButtons:
            return Qt.MouseButton.LeftButton.value
        return super().styleHint(hint, option, widget, returnData)


class PreviewSlider(QSlider):
    """A slider whose value is a preview: it stays where it is put, by the mouse (a drag,
    or a click on the track, which jumps there), the keys or the wheel, so what it shows
    can be looked at (a memory picked, the map zoomed) until Esc or the window's "Now"
    button brings it back to the minimum."""

    def __init__(self, orientation: Qt.Orientation, parent: QWidget | None = None) -> None:
        super().__init__(orientation, parent)
        style = _JumpToClick()  # its own copy of the application style: a given one would be owned
        style.setParent(self)
        self.setStyle(style)
        self.setFocusPolicy(Qt.FocusPolicy.WheelFocus)

    def return_to_start(self) -> None:
        self.setValue(self.minimum())

    def keyPressEvent(self, event) -> None:
        if event.key() == Qt.Key.Key_Escape and self.value() != self.minimum():
            self.return_to_start()
            return
        super().keyPressEvent(event)

    def wheelEvent(self, event) -> None:
        self.setFocus(Qt.FocusReason.MouseFocusReason)  # so Esc works next
        super().wheelEvent(event)


class RowsModel(QAbstractTableModel):
    """A table of ``self.rows`` under the header ``columns``: what every table model of the
    window shares (the memory table, the activity log, the records panels, the Why and Future
    tabs); each says how a row reads in ``data``."""

    columns: tuple[str, ...] = ()

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.rows: list = []

    def rowCount(self, parent=QModelIndex()) -> int:  # noqa: B008 (Qt's signature)
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent=QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self.columns)

    def headerData(self, section, orientation, role=Qt.ItemDataRole.DisplayRole):
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole \
                and 0 <= section < len(self.columns):
            return self.columns[section]
        return None
