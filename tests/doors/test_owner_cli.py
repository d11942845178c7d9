import json

from mnemoscope.cli import main
from mnemoscope.store import MemoryStore
from mnemoscope.store.files.backup import snapshots

AWS = "AKIAQ3EGRV7XKJ4PLM2N"


def test_backup_rotation_and_restore_from_the_command_line(tmp_path, capsys):
    db = tmp_path / "m.db"
    with MemoryStore(db) as s:
        s.remember("Mara lives in Lisbon.", memory_id="lisbon")
    for _ in range(3):
        assert main(["--db", str(db), "backup", "--keep", "2"]) == 0
    assert "integrity ok" in capsys.readouterr().out
    assert len(snapshots(db)) == 2
    first = snapshots(db)[0]
    with MemoryStore(db) as s:
        s.remember("Mara moved to Porto.", memory_id="porto")
    assert main(["--db", str(db), "restore-backup", str(first)]) == 0
    out = capsys.readouterr().out
    assert "only in the current database: porto  Mara moved to Porto." in out
    assert "nothing was replaced" in out
    with MemoryStore(db) as s:
        assert s.exists("porto")
    assert main(["--db", str(db), "restore-backup", str(first), "--yes", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["restored"] and data["only_current"] == ["porto"]
    with MemoryStore(db) as s:
        assert not s.exists("porto") and s.exists("lisbon")
    assert main(["--db", str(db), "restore-backup", str(tmp_path / "missing.db")]) == 1
    assert "does not exist" in capsys.readouterr().err


def test_bulk_changes_snapshot_first(tmp_path, capsys):
    db = tmp_path / "m.db"
    with MemoryStore(db) as s:
        s.remember("Mara lives in Lisbon.")
    assert main(["--db", str(db), "tick", "--advance-days", "5"]) == 0
    assert snapshots(db) == []
    assert main(["--db", str(db), "tick", "--advance-days", "45"]) == 0
    assert "snapshot before the change" in capsys.readouterr().err and len(snapshots(db)) == 1
    export = tmp_path / "e.jsonl"
    assert main(["--db", str(db), "export", "--out", str(export)]) == 0
    assert main(["--db", str(db), "import", str(export), "--on-conflict", "overwrite"]) == 0
    assert len(snapshots(db)) == 2


def test_mirror_privacy_check_and_conflicts_from_the_command_line(tmp_path, capsys):
    db = tmp_path / "m.db"
    with MemoryStore(db) as s:
        old = s.remember("Mara lives in Lisbon.", now=1_790_000_000).memory.id
        new = s.remember("Mara moved to Porto.", now=1_790_086_400).memory.id
        key = s.remember(f"Deploy key {AWS} for staging.", sensitivity="low").memory.id
    assert main(["--db", str(db), "privacy-check"]) == 1
    out, err = capsys.readouterr()
    assert out.startswith(f"{key}\tAWS Access Key\tchars 11-31\tAKIA…") and AWS not in out and "1 findings" in err

    assert main(["--db", str(db), "mirror", "--out", str(tmp_path / "vault")]) == 0
    out, err = capsys.readouterr()
    assert "mirrored 3 memories" in out
    assert "warning: the mirror holds 1 thing the privacy check flags (AWS Access Key)" in err
    assert main(["--db", str(db), "export", "--out", str(tmp_path / "e.jsonl")]) == 0
    assert "warning: the export holds 1 thing" in capsys.readouterr().err
    assert (tmp_path / "vault" / "Overview.md").exists()
    assert main(["--db", str(db), "mirror", "--out", str(tmp_path / "vault"), "--trust", "public"]) == 0
    assert "mirrored 0 memories" in capsys.readouterr().out

    assert main(["--db", str(db), "conflicts", "--json"]) == 0
    [conflict] = json.loads(capsys.readouterr().out)
    assert (conflict["newer"], conflict["older"], conflict["slot"]) == (new, old, "location")
    assert main(["--db", str(db), "keep-both", new, old]) == 0
    assert main(["--db", str(db), "conflicts"]) == 0
    assert "no conflicts" in capsys.readouterr().err
    with MemoryStore(db) as s:
        s.conn.execute("DELETE FROM edges WHERE edge = 'kept_with'")
    assert main(["--db", str(db), "supersede", new, old]) == 0
    assert main(["--db", str(db), "conflicts"]) == 0
    assert "no conflicts" in capsys.readouterr().err
    with MemoryStore(db) as s:
        assert s.get(old).layer == "archived"
    assert main(["--db", str(db), "supersede", new, "nope"]) == 1
    assert "no memory with id 'nope'" in capsys.readouterr().err


def test_remember_on_the_command_line_says_it_may_conflict(tmp_path, capsys):
    db = tmp_path / "m.db"
    assert main(["--db", str(db), "remember", "Theo works at Acme Corp."]) == 0
    assert main(["--db", str(db), "remember", "Theo joined Globex last week."]) == 0
    assert "it may conflict with" in capsys.readouterr().out


def test_conflicts_by_meaning_from_the_command_line(tmp_path, capsys):
    db = tmp_path / "m.db"
    assert main(["--db", str(db), "remember", "Priya is vegetarian."]) == 0
    assert main(["--db", str(db), "remember", "Priya eats fish again since the spring."]) == 0
    assert "it may conflict with" in capsys.readouterr().out
    assert main(["--db", str(db), "conflicts"]) == 0
    out, err = capsys.readouterr()
    assert "Priya, changed (again)" in out and "Priya eats fish again since the spring." in out
    assert "1 conflicts" in err
