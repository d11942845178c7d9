"""On PostgreSQL the store's clock is the server's (issue 19, "the strength of a memory is the
same whichever server computed it"): a serve process on a machine whose clock is an hour fast
stamps, decays and ticks by the server's time, as one with a right clock does."""

import time

from mnemoscope.store import MemoryStore

HOUR = 3600.0


def test_a_machine_with_a_wrong_clock_keeps_the_servers_time(pg_url, monkeypatch):
    real = time.time  # this machine runs the test server too: its clock is the server's
    monkeypatch.setattr(time, "time", lambda: real() + HOUR)  # this machine's clock runs an hour fast
    fast = MemoryStore(pg_url)
    try:
        assert abs(fast.now() - real()) < 1.0, "the store took this machine's clock, not the server's"
        before = real()
        memory = fast.remember("Mara moved to Porto in the spring").memory
        report = fast.tick()  # decays by the server's time: an hour ahead would lower every strength
        after = real()
        assert before - 1 < memory.created_at < after + 1
        assert before - 1 < report.now < after + 1
    finally:
        fast.close()


def test_a_sqlite_file_keeps_this_machines_clock(tmp_path, monkeypatch):
    real = time.time
    monkeypatch.setattr(time, "time", lambda: real() + HOUR)
    store = MemoryStore(tmp_path / "m.db")
    try:
        assert abs(store.now() - (real() + HOUR)) < 1.0
    finally:
        store.close()
