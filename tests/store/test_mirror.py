import re

import pytest
from mnemoscope.store import MemoryStore, StoreError
from mnemoscope.store.files.mirror import write_mirror
from support.helpers import PLANTED, plant_write, unwritten_unless

LINK = re.compile(r"\[\[([^\]|]+)(?:\|[^\]]*)?\]\]")


def tree(root):
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_demo_mirror_has_overview_entity_topic_and_diary_pages_that_link(demo_store, tmp_path):
    result = write_mirror(demo_store, tmp_path / "vault", trust=None)
    pages = tree(tmp_path / "vault")
    assert {"Overview.md", "entities/Mara.md", "entities/Lighthouse.md", "topics/work.md",
            "diary/2026-10.md"} <= set(pages)
    overview = pages["Overview.md"].decode()
    assert overview.index("## Strongest: habit") < overview.index("## Strongest: fading")
    assert "## People" in overview and "- [[Mara]] (33)" in overview
    mara = pages["entities/Mara.md"].decode()
    assert mara.startswith("# Mara\n\nperson · 33 memories\nalso called Mara Ellison\n")
    assert "- Mara hates being called 'buddy'; she finds it patronising. · *fact*" in mara
    assert "玛拉喜欢喝乌龙茶" in mara
    diary = pages["diary/2026-10.md"].decode()
    assert re.search(r"\n## 2026-10-\d\d \([A-Z][a-z]+day\)\n\n- Mara climbed at Vertigo with Theo on Saturday\.", diary)
    assert "Mara is a backend engineer" not in diary  # facts are not diary entries
    # every [[link]] names a page of the vault, so it opens as an Obsidian vault
    stems = {p.rsplit("/", 1)[-1][:-3] for p in pages if p.endswith(".md")}
    targets = {t for text in pages.values() for t in LINK.findall(text.decode())}
    assert targets and targets <= stems
    assert result.memories == 61 and not result.removed


@pytest.mark.parametrize(**PLANTED)
def test_same_database_gives_byte_identical_files_and_looking_never_writes(demo_store, db_path, tmp_path, planted):
    with unwritten_unless(planted, db_path):
        write_mirror(demo_store, tmp_path / "a")
        with MemoryStore(db_path) as again:
            write_mirror(again, tmp_path / "b")
        assert tree(tmp_path / "a") == tree(tmp_path / "b")
        second = write_mirror(demo_store, tmp_path / "a")
        assert second.written == [] and second.unchanged > 35
        if planted:
            plant_write(demo_store)


def test_trust_leaves_out_more_sensitive_memories_and_archived_only_when_asked(demo_store, tmp_path):
    def all_text(folder):
        return "".join(t.decode() for t in tree(folder).values())

    full = all_text(write_mirror(demo_store, tmp_path / "full", trust=None).out)
    assert "Banco Atlântico" in full and "asthma" in full
    assert "Manchester" not in full  # archived
    low = write_mirror(demo_store, tmp_path / "low", trust="low")
    text = all_text(low.out)
    assert "Banco Atlântico" not in text and "asthma" not in text and "peanuts" not in text
    assert "Mara hates being called 'buddy'" in text and low.memories == 61 - 7
    assert not (low.out / "entities" / "Rui Sousa.md").exists()  # only sensitive memories mention him
    archived = write_mirror(demo_store, tmp_path / "arch", trust=None, include_archived=True)
    assert "Mara used to live in Manchester before moving to Lisbon. · *fact* · strength" in all_text(archived.out)
    assert "## Strongest: archived" in (archived.out / "Overview.md").read_text()


def test_a_second_mirror_removes_stale_pages_and_leaves_other_files(store, tmp_path):
    store.remember("Ana plays the cello.", who="Ana", topic="music")
    out = tmp_path / "vault"
    write_mirror(store, out)
    (out / "notes.txt").write_text("mine")
    assert (out / "topics" / "music.md").exists()
    store.update(store.list()[0].id, topic="hobbies")
    result = write_mirror(store, out)
    assert result.removed == ["topics/music.md"] and (out / "topics" / "hobbies.md").exists()
    assert (out / "notes.txt").read_text() == "mine"


def test_a_folder_with_other_files_is_refused(store, tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "thesis.md").write_text("do not touch")
    with pytest.raises(StoreError, match="not empty"):
        write_mirror(store, tmp_path / "docs")
    assert sorted(p.name for p in (tmp_path / "docs").iterdir()) == ["thesis.md"]
    with pytest.raises(StoreError, match="trust: must be one of"):
        write_mirror(store, tmp_path / "new", trust="secret")
