"""Recall by meaning inside PostgreSQL, through pgvector, when the server has it.

The stored vectors stay what they are on both backends (``vectors.vec``: int8 bytes, see
store/meaning/vectors.py). Where the ``vector`` extension is installed in the database (or this
login may install it), opening the memory for writing adds, once:

* ``vectors.emb`` (and ``recall_vectors.emb``, for each set of store/meaning/vectors.py): the same int8 components as a ``halfvec``, a column the server generates
  from ``vec`` (every int8 value is exact in half precision, and a cosine ignores scale, so
  ``emb`` is exactly the stored vector);
* an HNSW index of ``emb`` for cosine distance, for the dimension of the memory's vectors
  (a partial index: vectors of another model, after a ``reembed`` to another dimension, are
  searched without it until the next open for writing makes one for theirs), built after
  the opening's write transaction, concurrently with the agents' writes
  (:func:`build_index`).

Then a recall asks the server for its nearest vectors instead of loading them all into the
process: the scope and trust filter is part of the query, so a memory the caller may not
see is never among the candidates, and the candidates' cosines are then computed exactly
(float32, as numpy does) and ranked by cosine, then id. With the index, the candidates are
pgvector's approximate nearest ones (HNSW with an iterative scan, so a filter that rejects
many still yields enough) once the caller may see many memories; below that, and without
the index, every vector the caller may see is compared, and none it may not
(:meth:`Search.nearest` says why).

Without pgvector (a managed server that does not offer it, a login that may not install
it), nothing is added and recall searches the same vectors with numpy in the process: the
documented fallback. ``stats`` says which.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from ..store import MemoryStore

# hnsw.ef_search: how many candidates the graph walk keeps (at least twice the number asked
# for). At 1,000,000 memories (tests/perf/pg_scale_bench.py) 100 found 0.886 of the exact 50
# nearest, 200 0.968, 400 0.974 (lowest query 0.88) in 8 ms, 800 no more in 12.7 ms; another
# build of the same index found all of them at 400.
EF_SEARCH = 400
# The session lock of the one process building the index (:func:`build_index`): "MNEV".
INDEX_LOCK = 0x4D4E4556
# An index scan with a filter that rejects rows reads on (iterative scan), at most this many.
MAX_SCAN_TUPLES = 40_000
# Up to this many memories the caller may see, the search compares every one of them and
# reads nothing else (:meth:`Search.nearest`). tests/perf/pg_hidden_bench.py measures it.
EXACT_UP_TO = 20_000
# The index through which that search finds the rows the caller may see, and only those
# (built with the HNSW index, :func:`build_index`): of one expression, scope and sensitivity,
# that no other index has, so the planner cannot take the scope's index instead (which reads
# every row of the scope, too sensitive ones too: 920 for 60 in tests/attacks/test_attack_pgvector.py).
VISIBLE_INDEX = "memories_scope_sensitivity"
_SHOWN = "(m.scope || ' ' || m.sensitivity)"  # a scope holds no space (store/model/memory.py)
# While it runs, the planner may not read a table through (a seq scan reads every row, a
# bitmap scan of the scope's index every row of the scope, hidden ones too).
_VISIBLE_FIRST = ("enable_seqscan", "enable_bitmapscan")

_FUNCTION = """
CREATE FUNCTION mnemoscope_halfvec(b bytea) RETURNS halfvec LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
  SELECT array_agg((get_byte(b, i) + 128) % 256 - 128 ORDER BY i)::halfvec
  FROM generate_series(0, length(b) - 1) AS i
$$;
"""
# The tables of stored vectors (store/meaning/vectors.py's sets), each searched the same way.
TABLES = ("vectors", "recall_vectors")


def _column_sql(table: str) -> str:
    return f"ALTER TABLE {_table(table)} ADD COLUMN emb halfvec GENERATED ALWAYS AS (mnemoscope_halfvec(vec)) STORED"


def _table(table: str) -> str:
    if table not in TABLES:
        raise ValueError(f"not a table of vectors: {table!r}")
    return table


def index_name(dim: int, table: str = "vectors") -> str:
    return f"{_table(table)}_emb_hnsw_{int(dim)}"


def _index_sql(dim: int, *, concurrently: bool = False, table: str = "vectors") -> str:
    dim = int(dim)
    return (f"CREATE INDEX {'CONCURRENTLY ' if concurrently else ''}IF NOT EXISTS {index_name(dim, table)} "
            f"ON {_table(table)} USING hnsw ((emb::halfvec({dim})) halfvec_cosine_ops) WHERE vector_dims(emb) = {dim}")


_VISIBLE_SQL = f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {VISIBLE_INDEX} ON memories " \
               "((scope || ' ' || sensitivity)) INCLUDE (rowid, id)"


def state(conn: Any, table: str = "vectors") -> dict[str, Any]:
    """What this database has for the vectors of ``table``: ``installed`` (the extension's
    version or None), ``column`` (``emb`` exists), ``indexed`` (dimensions with an index
    ready), ``building`` (with one being built, or left unfinished by a killed build),
    ``may_install``."""
    installed = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
    column = conn.execute("SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema() "
                          "AND table_name = ? AND column_name = 'emb'", (_table(table),)).fetchone() is not None
    found = conn.execute(
        "SELECT c.relname, i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
        "WHERE c.relnamespace = current_schema()::regnamespace AND c.relname LIKE ?",
        (table.replace("_", "\\_") + "\\_emb\\_hnsw\\_%",)).fetchall()
    indexed = sorted(int(name.rsplit("_", 1)[1]) for name, valid in found if valid)
    building = sorted(int(name.rsplit("_", 1)[1]) for name, valid in found if not valid)
    available, may_install = installed is not None, False
    if installed is None:
        available, may_install = conn.execute(
            "SELECT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector'), "
            "(SELECT rolsuper FROM pg_roles WHERE rolname = current_user)").fetchone()
    return {"installed": installed[0] if installed else None, "column": column, "indexed": indexed,
            "building": building,
            "available": bool(available), "may_install": bool(available and may_install)}


def due(found: dict[str, Any]) -> bool:
    """Whether opening for writing has pgvector to set up (see :func:`set_up`)."""
    return not found["column"] and (found["installed"] is not None or found["may_install"])


def set_up(conn: Any, table: str = "vectors") -> None:
    """Inside the caller's write transaction: install the extension if it is not yet, and
    add ``emb`` to ``table`` (generated for the vectors already there). The index comes
    after the transaction (:func:`build_index`)."""
    found = state(conn, table)
    if found["column"]:
        return
    if found["installed"] is None:
        conn.execute_script("CREATE EXTENSION IF NOT EXISTS vector")
    if conn.execute("SELECT 1 FROM pg_proc WHERE proname = 'mnemoscope_halfvec' "
                    "AND pronamespace = current_schema()::regnamespace").fetchone() is None:
        conn.execute_script(_FUNCTION)
    conn.execute_script(_column_sql(table))


def build_index(conn: Any, dim: int, table: str = "vectors") -> None:
    """Outside any transaction, once ``vectors.emb`` is there (:func:`set_up`): the HNSW
    index of the stored vectors' dimension (``dim``, the store's embedder's, when there are
    none yet), when it is missing, built ``CONCURRENTLY``: agents go on writing meanwhile.
    (Built inside the write transaction it held every writer of the memory for the whole
    build: 3.5 minutes at 100,000 on this machine, more at a million.) One process builds
    it at a time (a session lock: another opening meanwhile goes on without waiting, and
    recall compares every visible vector until the index is ready); an index a killed
    build left invalid is dropped and built again. So is :data:`VISIBLE_INDEX`, by which the
    exact search finds the rows a caller may see without reading any other."""
    stored = conn.execute(f"SELECT length(vec) FROM {_table(table)} LIMIT 1").fetchone()
    dim = stored[0] if stored else dim

    def valid(name: str) -> bool | None:
        found = conn.execute("SELECT i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
                             "WHERE c.relname = ? AND c.relnamespace = current_schema()::regnamespace",
                             (name,)).fetchone()
        return None if found is None else found[0]

    wanted = ((index_name(dim, table), _index_sql(dim, concurrently=True, table=table)), (VISIBLE_INDEX, _VISIBLE_SQL))
    if all(valid(name) for name, _ in wanted) or \
            not conn.execute("SELECT pg_try_advisory_lock(?)", (INDEX_LOCK,)).fetchone()[0]:
        return  # built (the usual opening), or being built by another process
    try:
        for name, sql in wanted:
            again = valid(name)  # now that no other process builds it
            if again:
                continue
            if again is not None:
                conn.execute_script(f"DROP INDEX CONCURRENTLY IF EXISTS {name}")
            conn.execute_script(sql)
    finally:
        conn.execute("SELECT pg_advisory_unlock(?)", (INDEX_LOCK,))


def describe(found: dict[str, Any]) -> str:
    """How recall finds vectors on this database, in words (``stats``)."""
    if found["column"]:
        dims = ", ".join(map(str, found["indexed"])) or "none"
        building = "".join(f"; index for dimension {d} being built (until then an exact search)"
                           for d in found["building"])
        return (f"pgvector {found['installed']}: searched in the server (HNSW index for dimension {dims}{building}; "
                f"exact while the caller may see at most {EXACT_UP_TO:,} memories), scope and trust filtered in the query")
    if found["installed"] is not None or found["may_install"]:
        return "pgvector available, set up when the memory is next opened for writing; until then numpy " \
               "over stored vectors"
    if found["available"]:
        return ("numpy over stored vectors: the server has pgvector, but it is not installed in this database "
                "and this login may not install it (a superuser can: CREATE EXTENSION vector)")
    return "numpy over stored vectors (no pgvector on this server)"


def _literal(query: np.ndarray) -> str:
    return "[" + ",".join(repr(float(x)) for x in np.asarray(query, dtype=np.float32)) + "]"


@dataclass
class Search:
    """The server's vectors, as :func:`store.vectors.index` gives them on PostgreSQL with
    pgvector: nothing is held in the process but the dimension."""

    store: MemoryStore
    dim: int
    key: tuple
    table: str = "vectors"

    def nearest(self, query: np.ndarray, scopes: Sequence[str], max_rank: int, k: int,
                minimum: float, without: Any = None) -> list[tuple[str, float, float]]:
        """See :func:`store.vectors.nearest`; the standing is measured against the mean and
        spread of the cosines of the candidates the server returned (not of every visible
        memory: that would read them all).

        What the caller may not see must change neither what it gets nor how long it waits
        (issue #32). The HNSW graph holds every memory, and its walk passes hidden rows,
        up to ``hnsw.max_scan_tuples`` of them: with 45,000 hidden memories nearer the query
        than any visible one, the walk stopped among them and 50 candidates became 22, and a
        search took 52 ms where it took 8 without them. So while the caller may see at most
        :data:`EXACT_UP_TO` memories, the search compares each of them, found through
        :data:`VISIBLE_INDEX`, and reads no other row (:meth:`exact_query`; the planner is
        kept from scanning a whole table meanwhile). Above that the walk is worth it; when
        it stops short among hidden rows, the search is done again exactly: then the answer
        still does not depend on hidden memories, the time does (the notes of issue #32).

        With ``without`` (another set's index), only the memories that have no vector there
        are compared, exactly (recall's fallback while that set catches up: a scan of the
        visible memories, done only while some lack one)."""
        from ..model.memory import SENSITIVITIES

        readable = [s for s in SENSITIVITIES if SENSITIVITIES.index(s) <= max_rank]
        if not readable or not scopes:
            return []
        q = _literal(query)
        # The index orders candidates by the half-precision query; twice as many as asked for
        # are ranked again by their exact cosine, so the answer is numpy's (ties by id).
        fetch = max(2 * k, k + 20)
        conn = self.store.conn
        shown = tuple(f"{scope} {s}" for scope in scopes for s in readable)
        before = conn.execute("SELECT " + ", ".join(f"current_setting('{name}')" for name in _VISIBLE_FIRST)).fetchone()
        conn.execute("SELECT " + ", ".join(f"set_config('{name}', 'off', false)" for name in _VISIBLE_FIRST))
        try:
            visible = conn.execute(self.count_query(len(shown)),
                                   (*shown, max(EXACT_UP_TO, fetch) + 1)).fetchone()[0]
            rows = None
            if without is not None:
                rows = conn.execute(self.exact_query(len(shown), without.table), (q, *shown, q, fetch)).fetchall()
            elif visible > EXACT_UP_TO:
                conn.execute("SELECT set_config('hnsw.ef_search', ?, false), set_config('hnsw.iterative_scan', "
                             "'strict_order', false), set_config('hnsw.max_scan_tuples', ?, false)",
                             (str(min(1000, max(EF_SEARCH, 2 * fetch))), str(MAX_SCAN_TUPLES)))
                rows = conn.execute(self.query(len(shown)), (q, *shown, q, fetch)).fetchall()
                if len(rows) < min(fetch, visible):  # the walk stopped among rows the caller may not see
                    rows = None
            if rows is None:
                rows = conn.execute(self.exact_query(len(shown)), (q, *shown, q, fetch)).fetchall()
        finally:
            conn.execute("SELECT " + ", ".join(f"set_config('{name}', ?, false)" for name in _VISIBLE_FIRST),
                         tuple(before))
        ranked = sorted(((mid, float(np.float32(c))) for mid, c in rows), key=lambda r: (-r[1], r[0]))[:k]
        if not ranked:
            return []
        cos = np.array([c for _, c in rows], dtype=np.float64)
        from ..recall.relevance import spread_of

        mean, spread = spread_of(cos)
        return [(mid, c, (c - mean) / spread) for mid, c in ranked if c >= minimum]

    def query(self, shown: int) -> str:
        """The walk of :meth:`nearest`: the candidates by the index (the filter inside: the
        ``shown`` pairs of scope and sensitivity the caller may see), then their exact cosines."""
        dim = self.dim
        return (f"SELECT c.id, 1 - (c.emb::vector({dim}) <=> CAST(? AS vector({dim}))) AS cos FROM ("
                f"SELECT m.id, v.emb FROM {_table(self.table)} v JOIN memories m ON m.rowid = v.rowid "
                f"WHERE vector_dims(v.emb) = {dim} AND {_SHOWN} IN ({','.join('?' * shown)}) "
                f"ORDER BY v.emb::halfvec({dim}) <=> CAST(? AS halfvec({dim})) LIMIT ?) c")

    def exact_query(self, shown: int, without: str = "") -> str:
        """The exact search of :meth:`nearest`: the memories the caller may see (by
        :data:`VISIBLE_INDEX`), each one's vector by its rowid (the subquery is not flattened
        into a join, which the planner would make by reading every vector), ordered by the
        distance to the half-precision query (not the HNSW index's expression: never its walk),
        ties by id; then their exact cosines. ``without``: leave out the memories that have a
        vector in that table."""
        dim = self.dim
        lacking = f" AND NOT EXISTS (SELECT 1 FROM {_table(without)} w WHERE w.rowid = m.rowid)" if without else ""
        return (f"SELECT c.id, 1 - (c.emb::vector({dim}) <=> CAST(? AS vector({dim}))) AS cos FROM ("
                f"SELECT m.id, v.emb FROM memories m JOIN LATERAL (SELECT v.emb FROM {_table(self.table)} v "
                f"WHERE v.rowid = m.rowid AND vector_dims(v.emb) = {dim} OFFSET 0) v ON true "
                f"WHERE {_SHOWN} IN ({','.join('?' * shown)}){lacking} "
                "ORDER BY v.emb <=> CAST(? AS halfvec), m.id LIMIT ?) c")

    @staticmethod
    def count_query(shown: int) -> str:
        """How many memories the caller may see, up to a limit (counted in :data:`VISIBLE_INDEX`)."""
        return f"SELECT count(*) FROM (SELECT 1 FROM memories m WHERE {_SHOWN} IN ({','.join('?' * shown)}) LIMIT ?) c"

    def count(self) -> int:
        return self.store.conn.execute(f"SELECT count(*) FROM {_table(self.table)}").fetchone()[0]

    def lacking_count(self, other: Any, scopes: Sequence[str] | None = None, max_rank: int = 99) -> int:
        """How many memories have a vector here and none in ``other``'s table (None: none
        there), of those in ``scopes`` at most ``max_rank`` sensitive (all when None)."""
        lacking = "" if other is None else \
            f" AND NOT EXISTS (SELECT 1 FROM {_table(other.table)} w WHERE w.rowid = m.rowid)"
        if scopes is None:
            return self.store.conn.execute(
                f"SELECT count(*) FROM {_table(self.table)} v JOIN memories m ON m.rowid = v.rowid "
                f"WHERE true{lacking}").fetchone()[0]
        from ..model.memory import SENSITIVITIES

        shown = tuple(f"{scope} {s}" for scope in scopes for s in SENSITIVITIES[:max_rank + 1])
        return self.store.conn.execute(
            f"SELECT count(*) FROM memories m WHERE {_SHOWN} IN ({','.join('?' * len(shown))}) "
            f"AND EXISTS (SELECT 1 FROM {_table(self.table)} v WHERE v.rowid = m.rowid){lacking}", shown).fetchone()[0]

    def held_ids(self) -> list[str]:
        """The memories with a vector here (read only when an index in the process asks)."""
        return [r[0] for r in self.store.conn.execute(
            f"SELECT m.id FROM {_table(self.table)} v JOIN memories m ON m.rowid = v.rowid").fetchall()]

    def cosines_of(self, query: np.ndarray, ids: Sequence[str]) -> dict[str, float]:
        """The exact cosines of the memories ``ids`` that have a vector (the caller has
        already filtered them by scope and trust)."""
        out: dict[str, float] = {}
        ids = list(ids)
        q = _literal(query)
        for first in range(0, len(ids), 500):
            chunk = ids[first:first + 500]
            out.update((mid, float(np.float32(c))) for mid, c in self.store.conn.execute(
                f"SELECT m.id, 1 - (v.emb::vector({self.dim}) <=> CAST(? AS vector({self.dim}))) FROM memories m "
                f"JOIN {_table(self.table)} v ON v.rowid = m.rowid WHERE vector_dims(v.emb) = {self.dim} "
                f"AND m.id IN ({','.join('?' * len(chunk))})", (q, *chunk)).fetchall())
        return out
