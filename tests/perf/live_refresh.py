"""How soon the inspector window shows another process's write: PostgreSQL (LISTEN/NOTIFY)
against SQLite (the window polls the file's data version every 700 ms).

Run: flock /tmp/bench.lock python tests/perf/live_refresh.py [WRITES]   (default: 20)
The window (offscreen) opens a memory of the demo's 65 memories; a second process
remembers one memory at a time, at a random moment, and says when its commit returned
(CLOCK_MONOTONIC, which both processes share). The time counted is from that commit to the
window's table holding the new row. PostgreSQL runs on a throwaway server
(tests/support/pg_server.py) started here. Prints the median and the slowest per backend.
"""

from __future__ import annotations

import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mnemoscope.store import MemoryStore  # noqa: E402
from mnemoscope.store.files.demo import load_demo  # noqa: E402

WRITER = """
import sys, time
from mnemoscope.store import MemoryStore
with MemoryStore(sys.argv[1]) as s:
    for line in sys.stdin:
        s.remember(line.strip(), kind="event")
        print(time.monotonic(), flush=True)
"""


def measure(target: str, writes: int) -> list[float]:
    from mnemoscope.ui.main_window import MainWindow
    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QApplication

    # The window remembers its recent files and last database: into a folder of the run's own,
    # never the user's settings (a benchmark's throwaway URL would open at their next start).
    QSettings.setDefaultFormat(QSettings.Format.IniFormat)
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, tempfile.mkdtemp())
    app = QApplication.instance() or QApplication([])
    window = MainWindow()
    assert window.open_path(target)
    window.show()
    writer = subprocess.Popen([sys.executable, "-c", WRITER, target], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    rng = random.Random(7)
    out = []
    try:
        for i in range(writes):
            rows = window.table.model.rowCount()
            settle = time.monotonic() + rng.uniform(0.2, 1.0)  # out of step with any timer
            while time.monotonic() < settle:
                app.processEvents()
                time.sleep(0.001)
            writer.stdin.write(f"Write number {i} from another process.\n")
            writer.stdin.flush()
            deadline = time.monotonic() + 10
            while window.table.model.rowCount() == rows:
                app.processEvents()
                time.sleep(0.0005)
                if time.monotonic() > deadline:
                    raise SystemExit(f"write {i} was not shown within 10 s on {target}")
            shown = time.monotonic()
            committed = float(writer.stdout.readline())
            out.append(shown - committed)
    finally:
        writer.stdin.close()
        writer.wait(30)
        window.close()
        window.session.close()
    return out


def main() -> None:
    writes = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    from support.pg_server import start

    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "memories.db")
        server = start()
        try:
            url = server.new_database("live")
            for target in (path, url):
                with MemoryStore(target) as s:
                    load_demo(s)
            results = {"SQLite (polling)": measure(path, writes), "PostgreSQL (LISTEN/NOTIFY)": measure(url, writes)}
        finally:
            server.stop()
    print(f"commit in another process -> the window's table shows it, {writes} writes each")
    for name, times in results.items():
        ms = sorted(t * 1000 for t in times)
        print(f"  {name:28s} median {statistics.median(ms):7.1f} ms   slowest {ms[-1]:7.1f} ms")


if __name__ == "__main__":
    main()
