import os
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("MNEMOSCOPE_HOME", str(Path(os.environ.get("TMPDIR", "/tmp")) / "mnemoscope-test-home"))

import pytest  # noqa: E402
from mnemoscope.store import MemoryStore  # noqa: E402
from mnemoscope.store.demo import load_demo  # noqa: E402

DEMO_NOW = "2026-11-19T12:00:00Z"


def pytest_collection_modifyitems(items):
    """Every test that builds Qt widgets (through qtbot, as the window fixtures do) is a
    ``gui`` test, so ``-m "not gui"`` runs the rest on a machine without a display."""
    for item in items:
        if "qtbot" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.gui)


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


@pytest.fixture
def qt_settings(tmp_path, monkeypatch):
    """Qt settings and the data folder in the test's own temporary directory."""
    from PySide6.QtCore import QSettings

    QSettings.setDefaultFormat(QSettings.Format.IniFormat)
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, str(tmp_path / "settings"))
    monkeypatch.setenv("MNEMOSCOPE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("MNEMOSCOPE_THEME", "light")


@pytest.fixture
def demo_db(tmp_path):
    """A database file holding the demo memories (ages relative to now)."""
    path = str(tmp_path / "demo.db")
    with MemoryStore(path) as s:
        load_demo(s)
    return path


@pytest.fixture
def window(qtbot, qt_settings, demo_db):
    """The real main window on the demo database, shown offscreen."""
    from mnemoscope.ui.main_window import MainWindow

    w = MainWindow(MemoryStore(demo_db))
    w.resize(1280, 800)
    w.show()
    qtbot.waitExposed(w)
    yield w
    # closed here, not by qtbot (which closes before this runs): with an edit left unsaved,
    # closing would wait on the "save your edit?" question
    w.editor.dirty = False
    w.close()
    w.session.close()
    w.deleteLater()
