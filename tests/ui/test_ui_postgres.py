"""The inspector window on a PostgreSQL memory: it opens a postgresql:// URL (its password
never shown or kept), shows and edits the memories as on a file, and hears another
process's write through LISTEN/NOTIFY at once, without polling."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("PySide6")
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from mnemoscope.store import MemoryStore  # noqa: E402
from mnemoscope.store.files.demo import load_demo  # noqa: E402
from support.helpers import closing_window  # noqa: E402
from support.pg_server import PASSWORD, PASSWORD_USER  # noqa: E402

WRITER = ("import sys\nfrom mnemoscope.store import MemoryStore\n"
          "with MemoryStore(sys.argv[1]) as s:\n    s.remember(sys.argv[2], kind='event')\n")


@pytest.fixture
def pg_demo(pg_url):
    with MemoryStore(pg_url) as s:
        load_demo(s)
        count = s.count()
    return pg_url, count


@pytest.fixture
def pg_window(qtbot, qt_settings, pg_demo):
    from mnemoscope.ui.main_window import MainWindow

    url, _ = pg_demo
    with closing_window(MainWindow()) as w:
        w.resize(1280, 800)
        assert w.open_path(url)
        w.show()
        qtbot.waitExposed(w)
        yield w


def _password_url(url):
    return url.replace("postgresql://postgres@", f"postgresql://{PASSWORD_USER}:{PASSWORD}@")


def _stored_settings(tmp_path):
    """Everything the window has written to its settings (qt_settings keeps them under tmp_path)."""
    from mnemoscope.ui.preferences import settings

    settings().sync()
    return "".join(Path(root, f).read_text(errors="replace")
                   for root, _, files in os.walk(tmp_path / "settings") for f in files)


def _write_elsewhere(url, text):
    """Another process commits one memory; returns when it has committed."""
    subprocess.run([sys.executable, "-c", WRITER, url, text], check=True, timeout=60)


def test_the_window_shows_a_postgres_memory_and_hears_another_process_within_a_second(pg_window, pg_demo,
                                                                                      qtbot):
    url, count = pg_demo
    session = pg_window.session
    qtbot.waitUntil(lambda: pg_window.table.model.rowCount() == count, timeout=5000)
    assert len(pg_window.map.dots) == count
    assert session.listening and not session._watch.isActive()  # heard, not polled for
    _write_elsewhere(url, "Mara booked a flight to Lisbon.")
    committed = time.monotonic()
    qtbot.waitUntil(lambda: pg_window.table.model.rowCount() == count + 1, timeout=1000)
    assert time.monotonic() - committed < 1.0
    assert len(pg_window.map.dots) == count + 1


def test_an_edit_in_the_window_is_written_and_undone_on_postgres(pg_window, pg_demo, qtbot):
    url, count = pg_demo
    qtbot.waitUntil(lambda: pg_window.table.model.rowCount() == count, timeout=5000)
    memory_id = pg_window.session.memories()[0].id
    pg_window.session.select(memory_id)
    pg_window.editor.topic.setText("edited on the server")
    pg_window.editor.save()
    with MemoryStore(url) as other:
        assert other.get(memory_id).topic == "edited on the server"
    pg_window.session.undo_stack.undo()
    with MemoryStore(url) as other:
        assert other.get(memory_id).topic != "edited on the server"


def test_the_password_is_never_in_the_title_the_recent_files_or_the_settings(qtbot, qt_settings, pg_demo,
                                                                             tmp_path):
    from mnemoscope.ui.main_window import MainWindow

    url, count = pg_demo
    secret = _password_url(url)
    with closing_window(MainWindow()) as w:
        assert w.open_path(secret)
        qtbot.waitUntil(lambda: w.table.model.rowCount() == count, timeout=5000)
        assert PASSWORD not in w.windowTitle() and f"{PASSWORD_USER}@127.0.0.1" in w.windowTitle()
        assert PASSWORD not in w.status_path.text()
        assert all(PASSWORD not in a.text() for a in w.recent_menu.actions())
        stored = _stored_settings(tmp_path)
        assert f"{PASSWORD_USER}@127.0.0.1" in stored and PASSWORD not in stored
        # a background job opens its own connection: it needs the password, and has it
        _write_elsewhere(secret, "written with the password")
        qtbot.waitUntil(lambda: w.table.model.rowCount() == count + 1, timeout=2000)


def test_a_dropped_listener_reconnects_and_reads_once(pg_window, pg_demo, pg_server, qtbot):
    url, count = pg_demo
    session = pg_window.session
    qtbot.waitUntil(lambda: pg_window.table.model.rowCount() == count, timeout=5000)
    pid = session._listener.server_pid()
    pg_server.psql(f"SELECT pg_terminate_backend({pid})")
    qtbot.waitUntil(lambda: not session.listening, timeout=3000)
    _write_elsewhere(url, "written while no one listened")
    qtbot.waitUntil(lambda: session.listening and pg_window.table.model.rowCount() == count + 1, timeout=5000)
    assert session._listener.server_pid() != pid


def test_a_refused_login_is_one_line_in_a_dialog_without_the_password(qtbot, qt_settings, pg_demo):
    from mnemoscope.ui.main_window import MainWindow

    url, _ = pg_demo
    wrong = _password_url(url).replace(PASSWORD, "not-" + PASSWORD)
    with closing_window(MainWindow()) as w:
        assert not w.open_path(wrong)
        assert w.last_error.startswith("cannot connect to postgresql://secret@127.0.0.1")
        assert len(w.last_error.splitlines()) == 1 and PASSWORD not in w.last_error
        assert w.session.store is None and PASSWORD not in w.windowTitle()


def test_file_open_database_url_takes_the_password_apart_and_forgets_it(qtbot, qt_settings, pg_demo, tmp_path):
    from mnemoscope.ui.main_window import MainWindow

    url, count = pg_demo
    with closing_window(MainWindow()) as w:
        dialog = w._open_url_dialog()
        dialog.address.setText(url.replace("postgresql://postgres@", f"postgresql://{PASSWORD_USER}@"))
        dialog.password.setText(PASSWORD)
        dialog.accept()
        qtbot.waitUntil(lambda: w.table.model.rowCount() == count, timeout=5000)
        assert dialog.password.text() == "" and PASSWORD not in w.windowTitle()
        stored = _stored_settings(tmp_path)
        assert PASSWORD not in stored and f"{PASSWORD_USER}@127.0.0.1" in stored
        # not a URL: said in the dialog, which stays open
        again = w._open_url_dialog()
        again.address.setText("/tmp/memories.db")
        again.accept()
        assert again.isVisible() and "postgresql://" in again.problem.text()
        again.reject()


def test_a_password_typed_into_the_url_moves_to_the_password_field(qtbot):
    """Typed or pasted into the URL, the password does not stay readable there: it moves to
    the masked field as soon as the URL shows it (at the '@'), and the URL opened still has it."""
    from mnemoscope.ui.dialogs.url_dialog import DatabaseUrlDialog
    from PySide6.QtWidgets import QLineEdit

    dialog = DatabaseUrlDialog()
    qtbot.addWidget(dialog)
    qtbot.keyClicks(dialog.address, "postgresql://mara:p%40ss w0rd@db.lan:5432/team")
    assert dialog.address.text() == "postgresql://mara@db.lan:5432/team"
    assert dialog.password.text() == "p@ss w0rd"
    assert dialog.password.echoMode() == QLineEdit.EchoMode.Password
    assert dialog.url() == "postgresql://mara:p%40ss%20w0rd@db.lan:5432/team"
    dialog.address.setText("postgresql://theo:pasted@db.lan/team")  # a paste replaces the password too
    assert dialog.address.text() == "postgresql://theo@db.lan/team" and dialog.password.text() == "pasted"
    dialog.address.setText("postgresql://theo@db.lan:54")  # half a port: left as typed
    assert dialog.address.text() == "postgresql://theo@db.lan:54"


def test_backups_are_off_on_postgres_and_say_why_in_one_line(pg_window, pg_demo, qtbot):
    _, count = pg_demo
    qtbot.waitUntil(lambda: pg_window.table.model.rowCount() == count, timeout=5000)
    owner = pg_window.owner
    assert not owner.backup_action.isEnabled() and not owner.restore_action.isEnabled()
    assert "backup --to DIR" in owner.backup_action.statusTip()
    assert owner.back_up_now() is None  # asked anyway (a shortcut, a script): refused in one line
    assert "backup --to DIR" in pg_window.last_error and len(pg_window.last_error.splitlines()) == 1
    assert pg_window.tick_action.isEnabled()  # writing still works


def test_advancing_the_clock_runs_in_the_background_and_is_undone_on_postgres(pg_window, pg_demo, qtbot):
    url, count = pg_demo
    qtbot.waitUntil(lambda: pg_window.table.model.rowCount() == count, timeout=5000)
    with MemoryStore(url) as other:
        before = other.now()
    pg_window.advance(30)
    qtbot.waitUntil(lambda: pg_window.session.job is None and pg_window.session.undo_stack.count() == 1,
                    timeout=10000)
    assert not hasattr(pg_window, "last_error")  # no error was shown
    with MemoryStore(url) as other:
        assert other.now() - before > 29 * 86400
    pg_window.session.undo_stack.undo()
    with MemoryStore(url) as other:
        assert other.now() - before < 86400


def test_cancel_stops_the_servers_statement_at_once(qtbot, pg_demo):
    from mnemoscope.ui.background import Cancelled, Job

    url, _ = pg_demo
    store = MemoryStore(url)
    try:
        job = Job(store, "Sleeping", lambda s: s.conn.execute("SELECT pg_sleep(60)"))
        outcome = []
        job.failed.connect(outcome.append)
        job.finished.connect(lambda *a: outcome.append(a))
        job.start()
        qtbot.waitUntil(lambda: job.interrupt is not None, timeout=10000)
        time.sleep(0.3)  # the statement is running on the server
        started = time.monotonic()
        job.cancel()
        qtbot.waitUntil(lambda: bool(outcome), timeout=5000)
        assert isinstance(outcome[0], Cancelled) and time.monotonic() - started < 3
    finally:
        store.close()
