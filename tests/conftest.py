import os
import sys
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("MNEMOSCOPE_HOME", str(Path(os.environ.get("TMPDIR", "/tmp")) / "mnemoscope-test-home"))

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import pytest  # noqa: E402

from store import MemoryStore  # noqa: E402
from store.demo import load_demo  # noqa: E402

DEMO_NOW = "2026-11-19T12:00:00Z"


@pytest.fixture
def db_path(tmp_path):
    return str(tmp_path / "memories.db")


@pytest.fixture
def store(db_path):
    s = MemoryStore(db_path)
    yield s
    s.close()


@pytest.fixture
def demo_store(db_path):
    s = MemoryStore(db_path)
    load_demo(s, now=DEMO_NOW)
    yield s
    s.close()
