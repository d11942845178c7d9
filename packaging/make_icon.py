"""Draw Mnemoscope's icon (rings of memories around a centre) into resources/.

Run: QT_QPA_PLATFORM=offscreen python packaging/make_icon.py
Writes icon.png (512 px) and, where Qt can write them, icon.ico.
"""

from __future__ import annotations

import math
import os
import sys
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
from PySide6.QtCore import QPointF, Qt  # noqa: E402
from PySide6.QtGui import QBrush, QColor, QGuiApplication, QImage, QPainter, QPen  # noqa: E402

COLOURS = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#D55E00"]
OUT = Path(__file__).resolve().parents[1] / "resources"


def draw(size: int) -> QImage:
    img = QImage(size, size, QImage.Format.Format_ARGB32)
    img.fill(Qt.GlobalColor.transparent)
    p = QPainter(img)
    p.setRenderHint(QPainter.RenderHint.Antialiasing)
    c = size / 2
    p.setPen(Qt.PenStyle.NoPen)
    p.setBrush(QBrush(QColor("#1e2430")))
    p.drawRoundedRect(0, 0, size, size, size * 0.2, size * 0.2)
    pen = QPen(QColor("#6f7a8c"))
    pen.setWidthF(size * 0.012)
    p.setPen(pen)
    p.setBrush(Qt.BrushStyle.NoBrush)
    for r in (0.14, 0.27, 0.40):
        p.drawEllipse(QPointF(c, c), r * size, r * size)
    p.setPen(Qt.PenStyle.NoPen)
    dots = [(0.07, 0.3, 0, 0.07), (0.2, 1.4, 1, 0.06), (0.22, 3.3, 2, 0.055), (0.33, 0.9, 3, 0.045),
            (0.35, 2.4, 4, 0.04), (0.36, 4.6, 0, 0.04), (0.44, 5.6, 1, 0.03), (0.1, 4.1, 2, 0.06)]
    for radius, angle, colour, dot in dots:
        x, y = c + radius * size * math.cos(angle), c + radius * size * math.sin(angle)
        p.setBrush(QBrush(QColor(COLOURS[colour])))
        p.drawEllipse(QPointF(x, y), dot * size, dot * size)
    p.end()
    return img


def main() -> int:
    QGuiApplication(sys.argv[:1])
    big = draw(512)
    if not big.save(str(OUT / "icon.png")):
        raise SystemExit("could not write icon.png")
    draw(256).save(str(OUT / "icon.ico"))  # needs Qt's ICO plugin; Windows builds use it
    print("wrote", *(p.name for p in OUT.glob("icon.*")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
