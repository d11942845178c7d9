"""Small widgets shared by the panes: a label that elides instead of widening the window,
and a scroll area that lets a pane shrink below its natural height."""

from __future__ import annotations

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QPainter
from PySide6.QtWidgets import QFrame, QLabel, QProxyStyle, QScrollArea, QSlider, QStyle, QWidget


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


def jump_to_click(slider: QSlider) -> None:
    """A click on the track moves the handle there and holds it, as a drag does, so
    pressing and letting go behave the same wherever the slider is grabbed."""
    style = _JumpToClick()  # its own copy of the application style: a given one would be owned
    style.setParent(slider)
    slider.setStyle(style)
