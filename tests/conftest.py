import os
import sys
from pathlib import Path

# A test module may import another's fixtures or helpers by its name (from test_serve import
# http_server) from any folder of tests/: each folder is on the path whichever module ran
# first in this process (at the end: nothing installed is shadowed).
sys.path += [str(folder) for folder in sorted(Path(__file__).parent.iterdir())
             if folder.is_dir() and folder.name not in ("data", "perf", "support", "__pycache__")]

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("MNEMOSCOPE_HOME", str(Path(os.environ.get("TMPDIR", "/tmp")) / "mnemoscope-test-home"))

import pytest  # noqa: E402
from mnemoscope.store import MemoryStore  # noqa: E402
from mnemoscope.store.files.demo import load_demo  # noqa: E402

DEMO_NOW = "2026-11-19T12:00:00Z"


def pytest_collection_modifyitems(items):
    """Every test that builds Qt widgets (through qtbot, as the window fixtures do) is a
    ``gui`` test, so ``-m "not gui"`` runs the rest on a machine without a display."""
    for item in items:
        if "qtbot" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.gui)


def pytest_generate_tests(metafunc):
    """Every test whose database comes from ``db_path`` (``store``, ``store_target`` and
    ``demo_store`` do) or ``new_db`` runs once on SQLite and once on PostgreSQL (a server
    the run starts itself: tests/support/pg_server.py), unless it is marked ``sqlite_only("why")``: it reads
    SQLite's own file, catalogue or pragmas. The reason is required, so an opt-out says why."""
    if "db_path" not in metafunc.fixturenames and "new_db" not in metafunc.fixturenames:
        return
    only = metafunc.definition.get_closest_marker("sqlite_only")
    if only is None:
        metafunc.parametrize("backend", ["sqlite", "postgresql"])
    elif not (only.args and isinstance(only.args[0], str) and only.args[0].strip()):
        raise pytest.UsageError(f"{metafunc.definition.nodeid}: sqlite_only needs a reason, "
                                "e.g. @pytest.mark.sqlite_only(\"reads SQLite's own pragmas\")")


@pytest.fixture(scope="session")
def pg_server():
    """A throwaway PostgreSQL for the whole run, started on first use."""
    from support.pg_server import start

    server = start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def pgvector_server():
    """A second throwaway PostgreSQL, whose server has pgvector (tests/support/pg_server.py)."""
    from support.pg_server import start_with_pgvector

    server = start_with_pgvector()
    yield server
    server.stop()


_databases = iter(range(1, 1_000_000))


@pytest.fixture
def pg_url(pg_server):
    """A new, empty database on the test server, as the URL ``--db`` takes."""
    return pg_server.new_database(f"t{next(_databases)}")


@pytest.fixture
def backend():
    return "sqlite"


@pytest.fixture
def db_path(request, backend, tmp_path):
    """Where the test's database lives: a SQLite file, or (a test run on PostgreSQL) a new
    database on the test server, as the URL ``--db`` takes."""
    if backend == "postgresql":
        return request.getfixturevalue("pg_url")
    return str(tmp_path / "memories.db")


@pytest.fixture
def new_db(request, backend, tmp_path):
    """New, empty databases on the test's engine, one a call: for a test that compares
    stores (or one that would use ``":memory:"``) and runs on both engines."""
    files = iter(range(1, 1_000_000))

    def make() -> str:
        if backend == "postgresql":
            return request.getfixturevalue("pg_server").new_database(f"t{next(_databases)}")
        return str(tmp_path / f"new{next(files)}.db")

    return make


@pytest.fixture
def store_target(db_path):
    return db_path


@pytest.fixture
def store(store_target):
    s = MemoryStore(store_target)
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
    from support.helpers import closing_window

    with closing_window(MainWindow(MemoryStore(demo_db))) as w:
        w.resize(1280, 800)
        w.show()
        qtbot.waitExposed(w)
        yield w
