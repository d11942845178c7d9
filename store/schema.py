"""The database schema, as sqlite-utils migrations from the first version on.

A database records every migration applied to it. One that records a migration this
version does not know, or a schema version above ours, was written by a newer
Mnemoscope and is refused before anything is written to it.
"""

from __future__ import annotations

from sqlite_utils import Database
from sqlite_utils.migrations import Migrations

SCHEMA_VERSION = 2
MIGRATION_SET = "mnemoscope"

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
    db["memories"].enable_fts(["terms"], create_triggers=True, tokenize="unicode61")
    # Re-index only when the terms change: a tick rewrites strength and layer of every
    # row, and re-indexing each one made a 100,000-memory tick five times slower.
    db.execute('DROP TRIGGER "memories_au"')
    db.execute(
        'CREATE TRIGGER "memories_au" AFTER UPDATE OF "terms" ON "memories" BEGIN\n'
        '  INSERT INTO "memories_fts" ("memories_fts", rowid, "terms") VALUES(\'delete\', old.rowid, old."terms");\n'
        '  INSERT INTO "memories_fts" (rowid, "terms") VALUES (new.rowid, new."terms");\nEND'
    )
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
    citation maps of agents' compiled prompts (see ``store/activity.py`` and
    ``store/conversations.py``)."""
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


KNOWN_MIGRATIONS = frozenset(m.name for m in migrations._migrations)
