"""Every SQL statement written in store/ is one PostgreSQL can plan.

A statement that no PostgreSQL test happens to run (a rare path, a new pane's query) could
still call a function only SQLite has: the Answers pane once failed on every PostgreSQL
memory because of one ``json_extract``. So this test reads store/'s source, takes each SQL
statement written there (a string literal, or an f-string whose parts it fills in), turns it
into what the PostgreSQL backend sends (store/backend.py ``translate``) and asks the server
to ``EXPLAIN`` it on a migrated database with pgvector: an unknown function, column, table
or a type that does not fit fails here, in CI, not in a user's window.

Statements SQLite alone runs are left out by where they live (the SQLite backend and its
migrations) or by what they name (SQLite's catalogue); :data:`SQLITE_ONLY` says why.
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import psycopg
import pytest
from mnemoscope.store import MemoryStore
from mnemoscope.store.backend import PostgresError, fts_to_tsquery, translate

STORE = Path(__file__).resolve().parent.parent / "store"
HEAD = re.compile(r"^\s*(SELECT|INSERT|UPDATE|DELETE|WITH)\b")  # the store writes SQL in capitals
# Where a statement is SQLite's own, and why it need not plan on PostgreSQL.
SQLITE_ONLY = {
    "backends/sqlite.py": "the SQLite backend: its statements run on SQLite only",
    "schema.py": "SQLite's migrations; PostgreSQL's are store/pg_schema.py",
}
SQLITE_WORDS = re.compile(r"\b(sqlite_master|sqlite_schema|_sqlite_migrations|fts5vocab|PRAGMA)\b", re.I)
MATCH_QUERY = '"tea"'


def _fill(node: ast.FormattedValue, module: object, before: str, after: str) -> str:
    """A value for one ``{...}`` of an f-string: the module's constant it names, or what the
    text around it says it is (a list of placeholders, a quoted word, columns, a condition)."""
    source = ast.unparse(node.value)
    try:
        value = eval(source, vars(module))  # noqa: S307 - names of store/'s own modules
        if isinstance(value, (str, int)):
            return str(value)
        if isinstance(value, (tuple, list)) and all(isinstance(v, str) for v in value):
            return ", ".join(value)
    except Exception:  # a local name: fall back on the text around it
        pass
    b, a = before.rstrip().upper(), after.lstrip().upper()
    if "dim" in source:  # a vector's dimensions
        return "384"
    if b.endswith("ARRAY_POSITION("):
        return "ARRAY['x']::text[]"
    if b.endswith("SET"):
        return "rowid = 1"
    if b.endswith(("IN (", "VALUES (")) or "?" in source:
        return "?"
    if before.endswith("'") and after.startswith("'"):
        return "ticks" if "table" in source else "id" if "column" in source else "x"
    if b.endswith(("MAX(", ".")) or (b.endswith("(") and a.startswith(")")):
        return "id"
    if b.endswith(("SELECT", "SELECT DISTINCT", ",")) and a.startswith(("FROM", ",")):
        return "1"
    if b.endswith(("WHERE", "AND", "OR")):
        return "TRUE"
    if b.endswith(("INTO", "UPDATE")):
        return "memories"
    if b.endswith(("FROM", "JOIN")):
        return "ticks" if "table" in source else "memory_rows"  # the view: every column of a memory and of its decay state
    if b.endswith("ORDER BY"):
        return "1"
    return ""


def statements() -> list[tuple[str, int, str]]:
    found = []
    for path in sorted(STORE.rglob("*.py")):
        rel = path.relative_to(STORE).as_posix()
        if rel in SQLITE_ONLY:
            continue
        name = "mnemoscope.store." + rel[:-3].replace("/", ".").removesuffix(".__init__")
        module = importlib.import_module(name)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        inside = {id(v) for n in ast.walk(tree) if isinstance(n, ast.JoinedStr) for v in n.values}
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in inside:
                text = node.value
            elif isinstance(node, ast.JoinedStr):
                parts = [v.value if isinstance(v, ast.Constant) else v for v in node.values]
                text = ""
                for i, part in enumerate(parts):
                    if isinstance(part, str):
                        text += part
                    else:
                        after = next((p for p in parts[i + 1:] if isinstance(p, str)), "")
                        text += _fill(part, module, text, after)
                text = text.replace("{}", "1")  # a template for str.format: its columns
            else:
                continue
            # (a piece of a statement, as translate() itself writes them, is no statement)
            if HEAD.match(text) and len(text.split()) > 2 and not SQLITE_WORDS.search(text):
                found.append((rel, node.lineno, text))
    return found


def test_the_scan_finds_the_statements_it_is_for():
    """The scan itself: it sees both kinds of statement, in the modules where they live."""
    found = statements()
    where = {rel for rel, _, _ in found}
    assert len(found) > 150 and {"recall.py", "tables.py", "provenance.py", "activity.py"} <= where
    assert not any(rel in SQLITE_ONLY for rel, _, _ in found)


def test_every_statement_of_the_store_plans_on_postgresql(pgvector_server):
    url = pgvector_server.new_database("statements")
    with MemoryStore(url):  # migrated: every table, view, index and the halfvec column
        pass
    query = fts_to_tsquery(MATCH_QUERY)
    failed = []
    with psycopg.connect(url, autocommit=True) as conn:
        for rel, line, text in statements():
            try:
                sql, params, _ = translate(text, [MATCH_QUERY] * text.count("?"))
                # Every parameter is NULL (its type is the server's to infer) but the full-text query.
                params = [p if p == query else None for p in params]
                conn.execute("EXPLAIN " + sql, params)
            except (psycopg.Error, PostgresError, AttributeError) as exc:
                sql = text
                first = str(exc).splitlines()[0]
                failed.append(f"store/{rel}:{line}: {first}\n    {' '.join(sql.split())[:200]}")
    assert not failed, f"{len(failed)} statements PostgreSQL cannot plan:\n" + "\n".join(failed)


@pytest.mark.parametrize("sql", ["SELECT json_extract(text, '$.a') FROM memories"])
def test_a_function_only_sqlite_has_fails_the_plan(pgvector_server, sql):
    """The check catches the bug it is for: SQLite's json_extract (store/provenance.py's)."""
    url = pgvector_server.new_database("statements_bad")
    with MemoryStore(url):
        pass
    with psycopg.connect(url, autocommit=True) as conn, pytest.raises(psycopg.Error, match="json_extract"):
        conn.execute("EXPLAIN " + translate(sql)[0])
