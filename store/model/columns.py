"""A memory's columns, declared once.

Everything that lists a memory's columns is built from :data:`MEMORY_COLUMNS`: the
``memory_rows`` view on both engines (store/schema/migrations.py, store/backends/pg_schema.py), what a read
makes into a :class:`~.model.Memory` and what a write stores (store/schema/tables.py), the fields a
caller may set (``model.EDITABLE``), the copy between stores (store/files/copying.py) and the
fields of a JSONL line (store/importers/jsonl.py). A new column is one :class:`Column` here, with the
migration that adds it as ``since``: a migration not written out in store/schema/migrations.py is made
from the declaration on both engines (``ALTER TABLE … ADD COLUMN`` and the view again). The
field of :class:`~.model.Memory` is the code that uses it; tests/house/test_house.py adds a
throwaway column this way and follows its value through every path.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

# How an export writes a stored value, and how a read gives it to Python.
EXPORTS = ("value", "text", "time", "flag", "json", "list")


@dataclass(frozen=True)
class Column:
    """One column of a memory.

    ``type``: str, float or int (the SQL type on each engine). ``table``: ``memories``, or
    ``memory_state`` for the decay state a tick rewrites (worked out by store/forgetting/decay.py, not
    given by a caller). ``default``: what a row that does not give the column holds.
    ``export``: how a JSONL line writes it (``value`` as stored, ``text`` with NULL as "",
    ``time`` as ISO 8601, ``flag`` as true/false, ``json`` parsed, ``list`` a JSON list;
    None: not exported, the store works it out again). ``editable``: a caller may set it
    (remember, update, an import's line). ``merge``: what an import that merges does with
    it: ``newer`` (the newer version's wins), ``union`` (a list: both versions' items);
    None keeps the stored one. ``copied``: a copy to another store carries it.
    ``max_chars``: the longest text a caller may give (``text`` has the config's limit).
    ``is_name``: a caller's value is checked as a name (model.check_name: no control,
    line-separator or direction character). ``shared``: many memories hold the same short value (a read makes it one string; ``text``
    exports are read so too). ``since``: the migration that made the column."""

    name: str
    type: type = str
    table: str = "memories"
    not_null: bool = False
    default: Any = None
    export: str | None = "value"
    editable: bool = False
    merge: str | None = None
    copied: bool = True
    max_chars: int | None = None
    is_name: bool = False
    shared: bool = False
    since: str = "m001_initial"

    def __post_init__(self) -> None:
        if self.export is not None and self.export not in EXPORTS:
            raise ValueError(f"column {self.name}: export must be one of {', '.join(EXPORTS)}, got {self.export!r}")
        if self.type not in (str, float, int):
            raise ValueError(f"column {self.name}: type must be str, float or int, got {self.type!r}")

    def stored(self, value: Any) -> Any:
        """A caller's value as the column stores it (a list or JSON as text, a flag as 0/1)."""
        if self.export == "list":
            return json.dumps(list(value or []), ensure_ascii=False)
        if self.export == "json":
            return None if value is None else json.dumps(value, ensure_ascii=False, sort_keys=True)
        if self.export == "flag":
            return int(bool(value))
        return value


STATE = "memory_state"
# The order of the memory_rows view (and of Memory's fields): the decay state among the
# rest where it stood before it moved to memory_state (migration 9).
MEMORY_COLUMNS: tuple[Column, ...] = (
    Column("id", not_null=True),
    Column("text", not_null=True, editable=True, merge="newer"),
    Column("kind", not_null=True, shared=True, editable=True, merge="newer"),
    Column("importance", float, not_null=True, editable=True, merge="newer"),
    Column("who", default="", export="text", is_name=True, shared=True, editable=True, merge="newer"),
    Column("topic", default="", export="text", is_name=True, shared=True, editable=True, merge="newer"),
    Column("scope", not_null=True, shared=True, editable=True),  # a merge never moves a memory to another scope
    Column("sensitivity", not_null=True, shared=True, editable=True, merge="newer"),
    Column("tags", default="[]", export="list", editable=True, merge="union"),
    Column("source", default="", export="text", shared=True, editable=True, merge="newer"),
    Column("source_kind", default="", export="text", shared=True, editable=True, merge="newer"),
    Column("created_at", float, not_null=True, export="time"),
    Column("updated_at", float, not_null=True, export="time"),
    Column("ref_time", float, not_null=True, export="time"),
    Column("base", float, not_null=True),
    Column("recall_count", int, not_null=True, default=0),
    Column("last_recalled_at", float, export="time"),
    Column("pinned", int, not_null=True, default=0, export="flag", editable=True, merge="newer"),
    Column("half_life_days", float),
    Column("strength", float, table=STATE, not_null=True, export=None),
    Column("layer", table=STATE, not_null=True, shared=True, export=None),
    Column("ticked_at", float, table=STATE, export=None),
    Column("terms", default="", export=None),  # the search terms, from text, who and topic
    Column("context", export="json", editable=True, merge="newer", since="m005_capture_context"),
    Column("reason_to_remember", not_null=True, default="", export="text", editable=True, merge="newer",
           max_chars=1000, since="m005_capture_context"),
    Column("next_change_at", float, table=STATE, export=None, since="m006_layer_clock"),
)
COLUMN = {c.name: c for c in MEMORY_COLUMNS}
# What a Memory holds of the row (its search terms and the tick's next moment stay inside the store).
MEMORY_FIELDS = tuple(c.name for c in MEMORY_COLUMNS if c.name not in ("terms", "next_change_at"))
BODY = tuple(c.name for c in MEMORY_COLUMNS if c.table == "memories")  # the memories table's
STATE_COLUMNS = tuple(c.name for c in MEMORY_COLUMNS if c.table == STATE)  # memory_state's, keyed by rowid
EDITABLE_COLUMNS = tuple(c.name for c in MEMORY_COLUMNS if c.editable)
EXPORTED = tuple(c.name for c in MEMORY_COLUMNS if c.export is not None)
COPIED = tuple(c.name for c in MEMORY_COLUMNS if c.copied)


def stored(values: dict[str, Any]) -> dict[str, Any]:
    """Fields of a memory as its columns store them (names that are not columns pass as they are)."""
    return {k: COLUMN[k].stored(v) if k in COLUMN else v for k, v in values.items()}


def view_sql(order: tuple[str, ...], upto: str | None = None) -> str:
    """``CREATE VIEW memory_rows``: a memory with its decay state, every column of those made
    by the migrations of ``order`` up to ``upto`` (all of them when None), in declared order."""
    made = set(order if upto is None else order[:order.index(upto) + 1])
    names = ", ".join(("s." if c.table == STATE else "m.") + c.name for c in MEMORY_COLUMNS if c.since in made)
    return f"CREATE VIEW memory_rows AS SELECT {names} FROM memories m JOIN memory_state s ON s.rowid = m.rowid"


def added_by(migration: str) -> tuple[Column, ...]:
    """The columns a migration made from this declaration adds."""
    return tuple(c for c in MEMORY_COLUMNS if c.since == migration)


def add_column_sql(column: Column, types: dict[type, str]) -> str:
    """``ALTER TABLE … ADD COLUMN`` for a declared column, in an engine's ``types``."""
    sql = f"ALTER TABLE {column.table} ADD COLUMN {column.name} {types[column.type]}"
    if column.default is not None:
        default = column.default
        sql += " DEFAULT " + ("'" + default.replace("'", "''") + "'" if isinstance(default, str) else repr(default))
    if column.not_null:
        if column.default is None:
            raise ValueError(f"column {column.name}: a NOT NULL column added to existing rows needs a default")
        sql += " NOT NULL"
    return sql
