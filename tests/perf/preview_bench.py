"""Budget-slider speed of the live preview with 1,000 recalled memories.

Run: python tests/perf/preview_bench.py
Builds a store where one question recalls 1,000 memories, compiles once, then moves the
budget through 60 values the way a drag does, timing each update (re-select, bars,
summary, compare, citations, repaint of the bars; the message text follows 120 ms after
the drag stops). Target: <= 16 ms per update. Baseline in the same process: the bare
CompileResult.rebudget.
"""

from __future__ import annotations

import json
import os
import random
import statistics
import tempfile
import time

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


def main() -> None:
    from PySide6.QtCore import QSettings

    QSettings.setDefaultFormat(QSettings.Format.IniFormat)
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, tempfile.mkdtemp())
    from mnemoscope.store import MemoryStore
    from mnemoscope.ui.launch import create_app
    from mnemoscope.ui.session import StoreSession

    rng = random.Random(9)
    words = "deploy release rollback config canary dashboard alert latency cache queue retry".split()
    kinds = ("fact", "lesson", "skill", "reflection", "event")
    lines = [json.dumps({"id": f"p{i:05d}", "kind": rng.choice(kinds), "importance": round(rng.random(), 2),
                         "text": "Lighthouse " + " ".join(rng.choice(words) for _ in range(rng.randint(8, 30)))
                                 + f" (note {i})"}) for i in range(1200)]
    store = MemoryStore(":memory:")
    store.import_jsonl("\n".join(lines))
    app, _ = create_app()
    from mnemoscope.ui.panes.prompt_preview import PromptPreview

    session = StoreSession(store)
    pv = PromptPreview(session)
    pv.resize(560, 900)
    pv.show()
    pv.k.setValue(1000)
    pv.budget_spin.setValue(8192)
    pv.user_message.setPlainText("Lighthouse deploy release rollback")
    pv.recompile()
    app.processEvents()
    offered = pv.result.metadata["memories_offered"]
    budgets = [int(8192 * (0.97 ** i)) for i in range(60)]
    per_update = []
    for b in budgets:
        t0 = time.perf_counter()
        pv.budget_spin.setValue(b)
        pv.bars.repaint()
        per_update.append((time.perf_counter() - t0) * 1000)
    base = pv.base
    bare = []
    for b in budgets:
        t0 = time.perf_counter()
        base.rebudget(b)
        bare.append((time.perf_counter() - t0) * 1000)
    t0 = time.perf_counter()
    pv.recompile()
    full = (time.perf_counter() - t0) * 1000
    print(f"memories recalled and offered: {offered}")
    print(f"budget update (median)      {statistics.median(per_update):7.2f} ms   target 16 ms")
    print(f"budget update (max)         {max(per_update):7.2f} ms")
    print(f"bare rebudget (median)      {statistics.median(bare):7.3f} ms")
    print(f"update / bare rebudget      {statistics.median(per_update) / statistics.median(bare):7.1f}x")
    print(f"full recall + compile       {full:7.1f} ms")
    os._exit(0)


if __name__ == "__main__":
    main()
