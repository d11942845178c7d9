"""The record of the default database (app/default_database.py) as an outsider may leave it:
a file far bigger than any path, or one another user wrote. Each door reads it when no
``--db`` is given; neither may hold a door up or choose its database."""

from __future__ import annotations

import os
import time

import pytest
from mnemoscope.default_database import RECORD, default_database, remember_opened
from mnemoscope.store import MemoryStore


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("MNEMOSCOPE_HOME", str(tmp_path / "home"))
    os.makedirs(tmp_path / "home")
    return tmp_path / "home"


def test_a_record_bigger_than_any_path_is_not_read_whole(home):
    """A sparse file of 3 GiB: `mnemoscope stats` without --db read it all and did not
    answer in two minutes (1 GiB here). A path or URL is a few thousand characters at most."""
    with open(home / RECORD, "wb") as fh:
        fh.truncate(1 << 30)
    started = time.monotonic()
    chosen = default_database()
    assert time.monotonic() - started < 5
    assert chosen.demo and RECORD in chosen.why and "bytes" in chosen.why


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="making another user's file needs root")
def test_a_record_another_user_wrote_does_not_choose_the_database(home, tmp_path):
    """Where the data folder is shared (MNEMOSCOPE_HOME=/tmp/...), someone else's record
    would send this user's agents, and what they remember, to a database of theirs."""
    theirs = str(tmp_path / "theirs.db")
    MemoryStore(theirs).close()
    remember_opened(theirs)
    assert default_database().path == theirs
    os.chown(home / RECORD, 65534, 65534)
    chosen = default_database()
    assert chosen.demo and chosen.path != theirs
    assert "another user" in chosen.why
