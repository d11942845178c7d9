"""Undo and redo of a big JSONL import in the window: how long the GUI thread stops.

Run (under the bench lock):
    flock /tmp/bench.lock python tests/perf/import_undo_bench.py [N] [--repeat 3]

The real main window (offscreen) on a new SQLite file with the hash embedder (no model to
load: undo and redo keep the vectors), N memories (default 2,000) imported from a JSONL
file, then Edit › Undo and Edit › Redo, each ``--repeat`` times. For each step it prints
the median wall time until the step has landed (the memories gone or back, the views
refreshed) and the median of the longest stop of the GUI thread meanwhile, measured by a
timer that asks to run every 5 ms (the gaps between its runs).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ["MNEMOSCOPE_EMBEDDER"] = "hash"
os.environ.setdefault("MNEMOSCOPE_HOME", tempfile.mkdtemp(prefix="mnemoscope-bench-home-"))

from mnemoscope.store import MemoryStore  # noqa: E402
from mnemoscope.ui.main_window import MainWindow  # noqa: E402
from PySide6.QtCore import QTimer  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402


class Stalls:
    """The longest gap between two runs of a 5 ms timer: how long the GUI thread stopped."""

    def __init__(self) -> None:
        self.timer = QTimer()
        self.timer.setInterval(5)
        self.timer.timeout.connect(self._beat)
        self.last = self.longest = 0.0

    def _beat(self) -> None:
        now = time.perf_counter()
        self.longest = max(self.longest, now - self.last)
        self.last = now

    def start(self) -> None:
        self.last, self.longest = time.perf_counter(), 0.0
        self.timer.start()

    def stop(self) -> float:
        self.timer.stop()
        self._beat()
        return self.longest


def until(app: QApplication, done, timeout: float = 120.0) -> None:
    end = time.perf_counter() + timeout
    while not done():
        if time.perf_counter() > end:
            raise TimeoutError("the step did not land")
        app.processEvents()
        time.sleep(0.001)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("n", nargs="?", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    app = QApplication.instance() or QApplication(sys.argv)
    folder = tempfile.mkdtemp(prefix="mnemoscope-undo-bench-")
    lines = os.path.join(folder, "many.jsonl")
    with open(lines, "w", encoding="utf-8") as fh:
        for i in range(args.n):
            fh.write(json.dumps({"id": f"imp-{i}", "text": f"Imported memory number {i} about tea and the harbour."})
                     + "\n")
    window = MainWindow(MemoryStore(os.path.join(folder, "memories.db")))
    window.show()
    session = window.session
    window.import_jsonl(lines)
    until(app, lambda: session.store.count() == args.n and not session.busy)
    stalls = Stalls()
    took: dict[str, list[float]] = {"undo": [], "redo": []}
    stopped: dict[str, list[float]] = {"undo": [], "redo": []}
    for _ in range(args.repeat):
        for step, action, count in (("undo", window.undo_action, 0), ("redo", window.redo_action, args.n)):
            app.processEvents()
            stalls.start()
            t = time.perf_counter()
            action.trigger()
            until(app, lambda c=count: session.store.count() == c and not session.busy
                  and window.table.model.rowCount() == c)
            took[step].append(time.perf_counter() - t)
            stopped[step].append(stalls.stop())
    print(f"{args.n:,} imported memories, medians of {args.repeat}:")
    for step in ("undo", "redo"):
        print(f"  {step}: {statistics.median(took[step]):.2f} s until it landed, the GUI thread stopped at most "
              f"{statistics.median(stopped[step]) * 1000:.0f} ms")
    print(f"load average: {os.getloadavg()[0]:.2f} (2 shared cores)")
    window.close()


if __name__ == "__main__":
    main()
