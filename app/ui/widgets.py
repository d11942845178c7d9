"""Small widgets shared by the panes: a label that elides instead of widening the window,
a label whose height never changes with its text, tabs the mouse wheel does not flip, a
scroll area that lets a pane shrink below its natural height, the time-travel slider, the
base of the panes' small read-only tables, and undo keys that reach the window from a field."""

from __future__ import annotations

from PySide6.QtCore import QAbstractTableModel, QEvent, QModelIndex, QObject, QPoint, QRect, QRectF, QSize, Qt
from PySide6.QtGui import QColor, QKeySequence, QPainter, QPalette
from PySide6.QtWidgets import (
    QFrame,
    QLabel,
    QLayout,
    QLineEdit,
    QProxyStyle,
    QScrollArea,
    QSizePolicy,
    QSlider,
    QStyle,
    QStyleOptionSlider,
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


class SliderStyle(QProxyStyle):
    """A slider's look with a groove a person can see on the light and the dark theme
    (Fusion's is the window's colour a shade darker: on dark, all but invisible), the part
    before the handle in the highlight colour; ``jump``: a click on the groove moves the
    handle there instead of a page."""

    def __init__(self, jump: bool = False) -> None:
        super().__init__()  # its own copy of the application style: a given one would be owned
        self.jump = jump

    def styleHint(self, hint, option=None, widget=None, returnData=None) -> int:  # noqa: N802 (Qt's name)
        if self.jump and hint == QStyle.StyleHint.SH_Slider_AbsoluteSetButtons:
            return Qt.MouseButton.LeftButton.value
        return super().styleHint(hint, option, widget, returnData)

    def drawComplexControl(self, control, option, painter, widget=None) -> None:  # noqa: N802 (Qt's name)
        if control != QStyle.ComplexControl.CC_Slider or not isinstance(option, QStyleOptionSlider) \
                or option.orientation != Qt.Orientation.Horizontal:
            super().drawComplexControl(control, option, painter, widget)
            return
        groove = self.subControlRect(control, option, QStyle.SubControl.SC_SliderGroove, widget)
        handle = self.subControlRect(control, option, QStyle.SubControl.SC_SliderHandle, widget)
        track = QRectF(groove.left() + 1, groove.center().y() - 2, groove.width() - 2, 4)
        line = QColor(option.palette.color(QPalette.ColorRole.WindowText))
        line.setAlphaF(0.38 if option.state & QStyle.StateFlag.State_Enabled else 0.18)
        painter.save()
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(line)
        painter.drawRoundedRect(track, 2, 2)
        if option.sliderPosition > option.minimum:
            painter.setBrush(option.palette.color(QPalette.ColorRole.Highlight))
            painter.drawRoundedRect(QRectF(track.left(), track.top(), handle.center().x() - track.left(), 4), 2, 2)
        painter.restore()
        rest = QStyleOptionSlider(option)
        rest.subControls = option.subControls & ~QStyle.SubControl.SC_SliderGroove
        super().drawComplexControl(control, rest, painter, widget)


def visible_groove(slider: QSlider, jump: bool = False) -> QSlider:
    """Give ``slider`` a :class:`SliderStyle` of its own; returns it."""
    style = SliderStyle(jump)
    style.setParent(slider)
    slider.setStyle(style)
    return slider


class PreviewSlider(QSlider):
    """A slider whose value is a preview: it stays where it is put, by the mouse (a drag,
    or a click on the track, which jumps there), the keys or the wheel, so what it shows
    can be looked at (a memory picked, the map zoomed) until Esc or the window's "Now"
    button brings it back to the minimum."""

    def __init__(self, orientation: Qt.Orientation, parent: QWidget | None = None) -> None:
        super().__init__(orientation, parent)
        visible_groove(self, jump=True)
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


class UndoKeysFallThrough(QObject):
    """Ctrl+Z and the redo keys in a text field that has nothing of its own to undo or
    redo reach the window's Edit › Undo and Redo (the last edit of a memory), instead of
    being swallowed by the field and doing nothing; a field with typing of its own still
    undoes that first. Install it on the fields with :meth:`watch`."""

    def watch(self, *fields: QWidget) -> None:
        for field in fields:
            field.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt's name)
        if event.type() != QEvent.Type.ShortcutOverride:
            return False
        undo = event.matches(QKeySequence.StandardKey.Undo)
        redo = event.matches(QKeySequence.StandardKey.Redo) or (
            event.key() == Qt.Key.Key_Y and event.modifiers() == Qt.KeyboardModifier.ControlModifier)
        if not (undo or redo):
            return False
        document = getattr(watched, "document", None)
        if callable(document):
            own = document().isUndoAvailable() if undo else document().isRedoAvailable()
        else:
            edit = watched if isinstance(watched, QLineEdit) else watched.findChild(QLineEdit)
            own = edit is not None and (edit.isUndoAvailable() if undo else edit.isRedoAvailable())
        if own:
            return False  # the field's own typing first
        event.ignore()  # not overridden: the window's shortcut runs
        return True


class FlowLayout(QLayout):
    """Widgets left to right, wrapping onto another row when the width runs out (a row of
    buttons in a narrow dock that would otherwise be cut or scroll away)."""

    def __init__(self, parent: QWidget | None = None, spacing: int = 6) -> None:
        super().__init__(parent)
        self._items: list = []
        self.setSpacing(spacing)
        self.setContentsMargins(0, 0, 0, 0)

    def addItem(self, item) -> None:  # noqa: N802 (Qt's name)
        self._items.append(item)

    def count(self) -> int:
        return len(self._items)

    def itemAt(self, index: int):  # noqa: N802 (Qt's name)
        return self._items[index] if 0 <= index < len(self._items) else None

    def takeAt(self, index: int):  # noqa: N802 (Qt's name)
        return self._items.pop(index) if 0 <= index < len(self._items) else None

    def expandingDirections(self) -> Qt.Orientation:  # noqa: N802 (Qt's name)
        return Qt.Orientation(0)

    def hasHeightForWidth(self) -> bool:  # noqa: N802 (Qt's name)
        return True

    def heightForWidth(self, width: int) -> int:  # noqa: N802 (Qt's name)
        return self._arrange(QRect(0, 0, width, 0), move=False)

    def setGeometry(self, rect) -> None:  # noqa: N802 (Qt's name)
        super().setGeometry(rect)
        self._arrange(rect, move=True)

    def sizeHint(self) -> QSize:  # noqa: N802 (Qt's name)
        return self.minimumSize()

    def minimumSize(self) -> QSize:  # noqa: N802 (Qt's name)
        size = QSize()
        for item in self._items:
            size = size.expandedTo(item.minimumSize())
        margins = self.contentsMargins()
        return size + QSize(margins.left() + margins.right(), margins.top() + margins.bottom())

    def _arrange(self, rect, move: bool) -> int:
        margins = self.contentsMargins()
        area = rect.adjusted(margins.left(), margins.top(), -margins.right(), -margins.bottom())
        x, y, row = area.x(), area.y(), 0
        for item in self._items:
            if item.isEmpty():
                continue
            hint = item.sizeHint()
            if x > area.x() and x + hint.width() > area.right() + 1:  # wrap
                x, y, row = area.x(), y + row + self.spacing(), 0
            if move:
                item.setGeometry(QRect(QPoint(x, y), hint))
            x += hint.width() + self.spacing()
            row = max(row, hint.height())
        return y + row - rect.y() + margins.bottom()
