"""Attacks on the mirror's folder: planted links, edited pages, long names, a full disk."""

import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest
from mnemoscope.store import StoreError
from mnemoscope.store.files.mirror import MARKER, write_mirror

pytestmark = pytest.mark.timeout(120)


def snapshot(folder):
    """Every entry under ``folder`` with its bytes (links by target), to prove nothing changed."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            rel = os.path.relpath(p, folder)
            if os.path.islink(p):
                out[rel] = ("link", os.readlink(p))
            elif os.path.isfile(p):
                with open(p, "rb") as fh:
                    out[rel] = fh.read()
            else:
                out[rel] = "dir"
    return out


@pytest.fixture(params=["openat", "lstat"])
def guard(request, monkeypatch):
    """Both ways SafeFolder guards: relative to open folders (Linux, macOS) and by lstat
    before each use (what Windows gets)."""
    from mnemoscope.store.files import safe_folder

    if request.param == "lstat":
        monkeypatch.setattr(safe_folder, "_AT", False)
    return request.param


@pytest.fixture
def victim(tmp_path):
    v = tmp_path / "victim"
    v.mkdir()
    (v / "diary-2019.md").write_text("my diary")
    (v / "Important.md").write_text("keep me")
    (v / "Ana.md").write_text("the owner's own page about Ana")
    return v


@pytest.fixture
def memories(store):
    store.remember("Ana plays the cello.", who="Ana", topic="music")
    store.remember("Ana climbed at Vertigo on Saturday.", kind="event", who="Ana", topic="climbing")
    return store


def test_a_planted_entities_link_writes_and_removes_nothing_through_it(memories, tmp_path, victim, guard):
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / MARKER).write_text("This folder is a Mnemoscope mirror; `mnemoscope mirror` rewrites it.\n")
    (vault / "entities").symlink_to(victim, target_is_directory=True)
    before = snapshot(victim)
    with pytest.raises(StoreError, match="is a link"):
        write_mirror(memories, vault)
    assert snapshot(victim) == before


LEVELS = ["root", "marker", "entities", "topics", "diary", "page", "overview"]


@pytest.mark.parametrize("level", LEVELS)
def test_a_link_at_any_level_of_the_mirror_is_refused_and_its_target_untouched(memories, tmp_path, victim, level,
                                                                             guard):
    vault = tmp_path / "vault"
    write_mirror(memories, vault)
    target_file = victim / "Important.md"
    if level == "root":
        shutil.rmtree(vault)
        vault.symlink_to(victim, target_is_directory=True)
    else:
        rel = {"marker": MARKER, "entities": "entities", "topics": "topics", "diary": "diary",
               "page": "entities/Ana.md", "overview": "Overview.md"}[level]
        p = vault / rel
        shutil.rmtree(p) if p.is_dir() else p.unlink()
        if level in ("entities", "topics", "diary"):
            p.symlink_to(victim, target_is_directory=True)
        else:
            p.symlink_to(target_file)
    memories.remember("Ana moved to Porto.", who="Ana", topic="moves")  # so there is something to write
    before = snapshot(victim)
    with pytest.raises(StoreError, match="is a link"):
        write_mirror(memories, vault)
    assert snapshot(victim) == before


def test_only_pages_the_mirror_wrote_and_nobody_edited_are_removed(memories, tmp_path, guard):
    vault = tmp_path / "vault"
    write_mirror(memories, vault)
    (vault / "entities" / "diary-2019.md").write_text("mine, not the mirror's")
    (vault / "topics" / "music.md").write_text("# music\n\nmy own notes\n")  # a person edits a page
    for m in memories.list():
        memories.update(m.id, topic="hobbies")
    result = write_mirror(memories, vault)
    assert "topics/climbing.md" in result.removed and not (vault / "topics" / "climbing.md").exists()
    assert result.kept == ["topics/music.md"]
    assert (vault / "topics" / "music.md").read_text() == "# music\n\nmy own notes\n"
    assert (vault / "entities" / "diary-2019.md").read_text() == "mine, not the mirror's"
    # a page a person edited is not rewritten either, and the next mirror still keeps it
    (vault / "topics" / "hobbies.md").write_text("edited")
    memories.remember("Ana also sings.", who="Ana", topic="hobbies")
    again = write_mirror(memories, vault)
    assert "topics/hobbies.md" in again.kept and (vault / "topics" / "hobbies.md").read_text() == "edited"
    assert again.removed == [] and (vault / "topics" / "music.md").exists()  # no longer the mirror's page


def test_a_mirror_from_before_the_record_removes_nothing_and_says_what_it_kept(memories, tmp_path):
    vault = tmp_path / "vault"
    write_mirror(memories, vault)
    (vault / MARKER).write_text("This folder is a Mnemoscope mirror; `mnemoscope mirror` rewrites it.\n")
    for m in memories.list():
        memories.update(m.id, topic="hobbies")
    result = write_mirror(memories, vault)
    assert result.removed == [] and (vault / "topics" / "music.md").exists()
    assert "topics/hobbies.md" in result.written
    record = json.loads((vault / MARKER).read_text())
    assert "topics/hobbies.md" in record["pages"] and "topics/music.md" not in record["pages"]


def test_a_forged_record_cannot_point_outside_the_mirror(memories, tmp_path, victim):
    vault = tmp_path / "vault"
    write_mirror(memories, vault)
    digest = __import__("hashlib").sha256(b"keep me").hexdigest()
    record = json.loads((vault / MARKER).read_text())
    record["pages"]["entities/../../victim/Important.md"] = [digest]
    record["pages"]["../victim/Important.md"] = [digest]
    (vault / MARKER).write_text(json.dumps(record))
    memories.remember("Ana moved to Porto.", who="Ana", topic="moves")
    before = snapshot(victim)
    write_mirror(memories, vault)
    assert snapshot(victim) == before


def test_a_folder_swapped_for_a_link_after_it_was_opened_is_still_not_followed(tmp_path, victim):
    from mnemoscope.store.files.safe_folder import _AT, SafeFolder

    if not _AT:
        pytest.skip("the platform has no openat: each use is checked with lstat instead")
    vault = tmp_path / "vault"
    before = snapshot(victim)
    with SafeFolder(vault) as top, top.sub("entities") as entities:
        (vault / "entities").rename(tmp_path / "moved")
        (vault / "entities").symlink_to(victim, target_is_directory=True)
        entities.write("Ana.md", b"written after the swap")
        entities.write("Important.md", b"overwrite?")
    assert snapshot(victim) == before
    assert (tmp_path / "moved" / "Ana.md").read_bytes() == b"written after the swap"


def test_a_hard_link_planted_as_a_page_is_kept_and_its_other_name_untouched(memories, tmp_path, victim):
    vault = tmp_path / "vault"
    write_mirror(memories, vault)
    (vault / "entities" / "Ana.md").unlink()
    os.link(victim / "Ana.md", vault / "entities" / "Ana.md")
    memories.remember("Ana moved to Porto.", who="Ana", topic="moves")
    result = write_mirror(memories, vault)
    assert "entities/Ana.md" in result.kept
    assert (victim / "Ana.md").read_text() == "the owner's own page about Ana"


def test_a_windows_junction_counts_as_a_link():
    from types import SimpleNamespace

    from mnemoscope.store.files.safe_folder import is_link

    folder = SimpleNamespace(st_mode=0o040755, st_file_attributes=0x10)
    junction = SimpleNamespace(st_mode=0o040755, st_file_attributes=0x10 | 0x400)  # FILE_ATTRIBUTE_REPARSE_POINT
    assert not is_link(folder) and is_link(junction)


def test_the_command_line_names_the_pages_it_kept(memories, tmp_path, db_path):
    from click.testing import CliRunner
    from mnemoscope.cli import cli

    vault = tmp_path / "vault"
    write_mirror(memories, vault)
    (vault / "entities" / "Ana.md").write_text("my own words")
    memories.remember("Ana moved to Porto.", who="Ana", topic="moves")
    out = CliRunner().invoke(cli, ["mirror", "--db", db_path, "--out", str(vault)])
    assert out.exit_code == 0, out.output
    assert "kept entities/Ana.md: it is not what the mirror last wrote there" in out.output
    assert (vault / "entities" / "Ana.md").read_text() == "my own words"


def test_long_and_reserved_names_are_shortened_stable_and_unique(store, tmp_path):
    long_a = "关于我们家族历史的长篇研究" * 7  # 91 characters, 273 bytes
    long_b = long_a[:60] + "另一个完全不同的主题的结尾部分"
    for topic in (long_a, long_b, "CON", "aux.txt"):
        store.remember(f"A note filed under {topic[-5:]}, number {len(topic)}.", topic=topic)
    first = write_mirror(store, tmp_path / "vault")
    names = sorted(p.name for p in (tmp_path / "vault" / "topics").iterdir())
    assert len(names) == 4 and all(len(n.encode()) <= 255 for n in names)
    assert "_CON.md" in names and "_aux.txt.md" in names
    overview = (tmp_path / "vault" / "Overview.md").read_text()
    for name in names:  # every page is linked by its file name, with the whole topic shown
        assert f"[[{name[:-3]}" in overview
    assert f"|{long_a}]]" in overview
    second = write_mirror(store, tmp_path / "again")
    assert sorted(p.name for p in (tmp_path / "again" / "topics").iterdir()) == names
    assert second.written == first.written


def _unshare_ok():
    if sys.platform != "linux" or not shutil.which("unshare"):
        return False
    return subprocess.run(["unshare", "-rm", "true"], capture_output=True).returncode == 0


needs_tmpfs = pytest.mark.skipif(not _unshare_ok(), reason="needs unshare to mount a small tmpfs")


def run_on_small_disk(tmp_path, script, size="600k"):
    """Run ``script`` with ``tmp_path/disk`` a tmpfs of ``size`` (in its own mount namespace)."""
    disk = tmp_path / "disk"
    disk.mkdir(exist_ok=True)
    code = textwrap.dedent(script)
    shell = f'mount -t tmpfs -o size={size} none "{disk}" && exec "{sys.executable}" -c "$0"'
    return subprocess.run(["unshare", "-rm", "sh", "-c", shell, code], capture_output=True, text=True,
                          timeout=90, env={**os.environ, "DISK": str(disk)})


@needs_tmpfs
def test_a_full_disk_fails_the_mirror_clearly_and_keeps_every_page_whole(db_path, tmp_path):
    from mnemoscope.store import MemoryStore

    with MemoryStore(db_path) as s:
        for i in range(40):
            s.remember(f"Ana note {i}: " + "x" * 400, who="Ana", topic=f"topic {i}")
    proc = run_on_small_disk(tmp_path, f"""
        import os, hashlib
        from mnemoscope.store import MemoryStore, StoreError
        from mnemoscope.store.files.mirror import write_mirror
        s = MemoryStore({db_path!r})
        vault = os.path.join(os.environ["DISK"], "vault")
        write_mirror(s, vault)
        fd = os.open(os.path.join(os.environ["DISK"], "filler"), os.O_WRONLY | os.O_CREAT)
        try:  # fill what is left
            while True:
                os.write(fd, b"0" * 4096)
        except OSError:
            os.close(fd)
        before = {{}}
        for d, _, fs in os.walk(vault):
            for f in fs:
                before[os.path.join(d, f)] = open(os.path.join(d, f), "rb").read()
        for m in s.list():
            s.update(m.id, text=m.text + " and more " + "y" * 300)
        try:
            write_mirror(s, vault)
            print("NO ERROR")
        except StoreError as e:
            print("ERROR", e)
        bad = [p for p, data in before.items() if os.path.exists(p) and open(p, "rb").read() not in (data,)
               and not open(p, "rb").read().endswith(b"\\n")]
        leftovers = [f for d, _, fs in os.walk(vault) for f in fs if f.endswith(".tmp")]
        print("TORN", len(bad), "TMP", len(leftovers))
    """)
    assert proc.returncode == 0, proc.stderr
    assert "ERROR cannot write the mirror" in proc.stdout and "No space left" in proc.stdout, proc.stdout
    assert "TORN 0 TMP 0" in proc.stdout, proc.stdout


def test_every_page_name_fits_every_platform():
    from hypothesis import given, settings
    from hypothesis import strategies as st
    from mnemoscope.store.files.mirror import _RESERVED, _page_name
    from mnemoscope.store.model.memory import NAME_FORBIDDEN

    @settings(max_examples=400, deadline=None)
    @given(st.text(min_size=0, max_size=400))
    def check(name):
        page = _page_name(name)
        assert page == _page_name(name)  # stable
        assert 0 < len((page + " (99).md").encode("utf-8")) <= 255
        assert not any(c in page for c in '\\/:*?"<>|\x00') and not page.startswith(".")
        assert not NAME_FORBIDDEN.search(page)  # nothing that reorders a name or breaks a line
        assert page.split(".")[0].rstrip(" ").upper() not in _RESERVED
        page.encode("utf-8")  # no lone surrogate: the name can be written

    check()
