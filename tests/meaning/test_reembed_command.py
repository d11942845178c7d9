"""``mnemoscope reembed`` from the real command: hash → the default model and back, killed
midway and run again (it goes on from where it stopped), the database naming the model."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

from mnemoscope.store import MemoryStore
from mnemoscope.store.meaning.embedding import HashEmbedder, UseEmbedder

COUNT = 600  # three batches of 256


def _mnemoscope(db, *args, embedder=None):
    env = dict(os.environ)
    env.pop("MNEMOSCOPE_EMBEDDER", None)
    cmd = [sys.executable, "-m", "mnemoscope", "--db", db]
    if embedder:
        cmd += ["--embedder", embedder]
    return cmd + list(args), env


def _vectors(db):
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        count = con.execute("SELECT count(*) FROM vectors").fetchone()[0]
        by = con.execute("SELECT value FROM meta WHERE key = 'embedder_id'").fetchone()
        return count, by[0] if by else None
    finally:
        con.close()


def test_reembed_switches_models_and_resumes_after_being_killed(tmp_path):
    db = str(tmp_path / "m.db")
    with MemoryStore(db, embedder=HashEmbedder()) as s:
        s.import_jsonl("\n".join(json.dumps({"text": f"Note {i}: the {('red', 'blue', 'green')[i % 3]} folder "
                                                      f"holds draft {i * 7}."}) for i in range(COUNT)))
        s.remember("Usually stays up past two in the morning.")
    assert _vectors(db) == (COUNT + 1, HashEmbedder.id)

    cmd, env = _mnemoscope(db, "reembed")
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # killed once the first batch is in, before the last
        count, by = _vectors(db)
        if by == UseEmbedder.id and count > 0:
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    done, by = _vectors(db)
    assert by == UseEmbedder.id and 0 < done < COUNT + 1, (done, by)  # the record says whose they are

    cmd, env = _mnemoscope(db, "reembed", "--json")
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["embedded"] == COUNT + 1 - done  # what was done stays done
    assert report["vectors_by"] == UseEmbedder.id and report["with_vector"] == COUNT + 1
    assert _vectors(db) == (COUNT + 1, UseEmbedder.id)
    cmd, env = _mnemoscope(db, "recall", "What time do I go to bed at night?")
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert "stays up past two" in out.stdout  # by meaning: no word shared

    cmd, env = _mnemoscope(db, "reembed", embedder="hash")
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and f"embedded {COUNT + 1} memories" in out.stdout, out.stderr
    assert _vectors(db) == (COUNT + 1, HashEmbedder.id)
