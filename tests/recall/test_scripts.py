"""Recall finds words in every script, with or without their accents."""

import pytest
from mnemoscope.store import MemoryStore
from mnemoscope.store.recall.text import terms

MEMORIES = {
    "ru": "Мара пьёт зелёный чай каждое утро",
    "el": "Η Μάρα πίνει τσάι με μέλι",
    "ar": "مارا تشرب الشاي كل صباح",
    "he": "מרה שותה תה ירוק בבוקר",
    "ko": "마라는 매일 아침 녹차를 마셔요",
    "hi": "मारा हर सुबह अदरक वाली चाय पीती है",
    "de": "Herr Müller trinkt Kräutertee im Café",
    "fr": "Élodie préfère le thé à la menthe",
    "zh": "玛拉每天早上喝绿茶",
    "ja": "マラは毎朝コーヒーを飲みます",
    "en": "Mara drinks coffee with oat milk",
}

QUERIES = [
    ("чай", "ru"), ("ЗЕЛЁНЫЙ", "ru"), ("зеленый чай", "ru"),
    ("τσάι", "el"), ("τσαι μελι", "el"),
    ("الشاي", "ar"), ("الشَّاي", "ar"),
    ("תה ירוק", "he"),
    ("녹차", "ko"), ("아침", "ko"),
    ("चाय", "hi"), ("अदरक", "hi"),
    ("Müller", "de"), ("Muller", "de"), ("MÜLLER", "de"), ("cafe", "de"),
    ("elodie", "fr"), ("thé menthe", "fr"),
    ("绿茶", "zh"), ("コーヒー", "ja"), ("毎朝", "ja"),
    ("coffee oat milk", "en"),
]


@pytest.fixture(scope="module")
def polyglot():
    with MemoryStore() as store:
        for lang, text in MEMORIES.items():
            store.remember(text, memory_id=lang)
        yield store


@pytest.mark.parametrize("query, lang", QUERIES)
def test_recall_finds_words_in_every_script(polyglot, query, lang):
    hits = polyglot.recall(query, k=3, explain=True)
    assert hits and hits[0].id == lang, [(h.id, h.score) for h in hits]
    assert hits[0].why["keyword"] > 0


def test_muller_is_one_word_not_its_tail():
    assert terms("Müller") == ["muller"]
    assert "ller" not in terms("Herr Müller")


def test_a_word_and_its_marks_stay_together():
    assert terms("चाय पीती") == ["चाय", "पीती"]
    assert terms("prefers_language") == ["prefer", "languag"]  # underscores still split, as before


def test_an_existing_database_is_reindexed_in_place(tmp_path):
    """A database written before recall knew every script finds them after the upgrade."""
    import sqlite3

    from mnemoscope.store.schema.migrations import migrations
    from sqlite_utils import Database

    path = str(tmp_path / "old.db")
    conn = sqlite3.connect(path)
    migrations.apply(Database(conn), stop_before="m004_every_script")
    # Rows as the old code wrote them: no terms for Cyrillic, "Müller" cut to "m ller".
    for mid, text, old_terms in (("ru", MEMORIES["ru"], ""), ("de", MEMORIES["de"], "herr m ller trinkt kr utert caf")):
        conn.execute("INSERT INTO memories (id, text, kind, importance, scope, sensitivity, created_at, updated_at, "
                     "ref_time, base, recall_count, pinned, strength, layer, terms) "
                     "VALUES (?, ?, 'fact', 0.5, 'global', 'low', 1.79e9, 1.79e9, 1.79e9, 1, 0, 0, 1, 'fading', ?)",
                     (mid, text, old_terms))
    conn.commit()
    conn.close()
    # What the full-text index finds (the hash embedder: by meaning, coffee is near tea)
    from mnemoscope.store.meaning.embedding import HashEmbedder

    with MemoryStore(path, embedder=HashEmbedder()) as store:
        assert store.recall("чай", now=1.79e9)[0].id == "ru"
        assert store.recall("Muller", now=1.79e9)[0].id == "de"
        sql = store.conn.execute("SELECT sql FROM sqlite_master WHERE name = 'memories_fts'").fetchone()[0]
        assert "remove_diacritics 2" in sql
        store.remember("Theo drinks черный чай", memory_id="new", now=1.79e9)  # the triggers index new rows
        assert {h.id for h in store.recall("чай", k=5, now=1.79e9)} == {"ru", "new"}
        store.update("ru", text="Мара пьёт кофе", now=1.79e9)
        # recall ranks every visible memory; the index now holds "чай" for "new" alone
        words = {h.id: h.parts["keyword"] for h in store.recall("чай", k=5, now=1.79e9)}
        assert words["new"] > 0 and words.get("ru", 0.0) == 0.0
