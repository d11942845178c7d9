"""Every SQL statement of the store is one PostgreSQL can plan.

A statement that no PostgreSQL test happens to run (a rare path, a new pane's query) could
still call a function only SQLite has: the Answers pane once failed on every PostgreSQL
memory because of one ``json_extract``. So this test reads store/'s source and takes each
SQL statement written there (a string literal, or an f-string whose parts it fills in: a
piece the backend builds, as ``sql.like('text')``, is built by the PostgreSQL backend), and
each statement the store has the backend build (an upsert, a numbered insert, a full-text
search: their calls, with the arguments written there), and asks the server to ``EXPLAIN``
it on a migrated database with pgvector: an unknown function, column, table or a type that
does not fit fails here, in CI, not in a user's window.

Statements SQLite alone runs are left out by where they live (the SQLite backend and its
migrations) or by what they name (SQLite's catalogue); :data:`SQLITE_ONLY` says why. The
PostgreSQL backend's builders are checked through the calls that use them.
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import psycopg
import pytest
from mnemoscope.store import MemoryStore
from mnemoscope.store.backends.pg_connection import PostgresError, pyformat
from mnemoscope.store.backends.postgres import PostgresBackend, pg_tsquery
from mnemoscope.store.recall.text import all_of

STORE = Path(__file__).resolve().parent.parent.parent / "store"
HEAD = re.compile(r"^\s*(SELECT|INSERT|UPDATE|DELETE|WITH)\b")  # the store writes SQL in capitals
# Where a statement is SQLite's own, and why it need not plan on PostgreSQL.
SQLITE_ONLY = {
    "backends/sqlite.py": "the SQLite backend: its statements run on SQLite only",
    "schema/migrations.py": "SQLite's migrations; PostgreSQL's are store/backends/pg_schema.py",
}
SQLITE_WORDS = re.compile(r"\b(sqlite_master|sqlite_schema|_sqlite_migrations|fts5vocab|PRAGMA)\b", re.I)
MATCH_QUERY = pg_tsquery(all_of(["tea"]))
PARAMETER = re.compile(r"\?|'(?:[^']|'')*'")  # a parameter, or a quoted literal (whose ? is text)
BUILT = PostgresBackend.sql  # what the PostgreSQL backend builds for the store's calls
# Calls that build a whole statement, and those that build a piece of one (inside an f-string).
STATEMENT_BUILDERS = ("text_search", "upsert", "insert_if_absent", "insert_one")
PIECE_BUILDERS = ("like", "holds", "json_text")


def _fill(node: ast.FormattedValue, module: object, before: str, after: str) -> str:
    """A value for one ``{...}`` of an f-string: the module's constant it names, or what the
    text around it says it is (a list of placeholders, a quoted word, columns, a condition)."""
    source = ast.unparse(node.value)
    if _builder(node.value) in PIECE_BUILDERS:
        args, kwargs = _arguments(node.value, module)
        return getattr(BUILT, node.value.func.attr)(*args, **kwargs)
    try:
        value = eval(source, vars(module))  # noqa: S307 - names of store/'s own modules
        if isinstance(value, (str, int)):
            return str(value)
        if isinstance(value, (tuple, list)) and all(isinstance(v, str) for v in value):
            return ", ".join(value)
    except Exception:  # a local name: fall back on the text around it
        pass
    b, a = before.rstrip().upper(), after.lstrip().upper()
    if source.endswith(".table") or source.startswith("_table("):  # a set of vectors' (store/meaning/vectors.py)
        return "recall_vectors" if "other" in source or "without" in source else "vectors"
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


def _builder(node: ast.AST) -> str | None:
    """The name of the backend builder ``node`` calls (``….sql.like(…)``), if it calls one."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
            and node.func.attr in STATEMENT_BUILDERS + PIECE_BUILDERS:
        return node.func.attr
    return None


def _value(node: ast.AST, module: object) -> object:
    """An argument as written: a literal, a module's constant, an f-string filled in."""
    if isinstance(node, ast.JoinedStr):
        return _text(node, module)
    try:
        return ast.literal_eval(node)
    except ValueError:
        source = ast.unparse(node)
        if source.endswith(".table"):  # a set of vectors' table (store/meaning/vectors.py): each is planned
            return "recall_vectors"
        return eval(source, vars(module))  # noqa: S307 - names of store/'s own modules


def _arguments(call: ast.Call, module: object) -> tuple[list, dict]:
    return [_value(a, module) for a in call.args], {k.arg: _value(k.value, module) for k in call.keywords}


def _text(node: ast.JoinedStr, module: object) -> str:
    parts = [v.value if isinstance(v, ast.Constant) else v for v in node.values]
    text = ""
    for i, part in enumerate(parts):
        if isinstance(part, str):
            text += part
        else:
            after = next((p for p in parts[i + 1:] if isinstance(p, str)), "")
            text += _fill(part, module, text, after)
    return text


def built(call: ast.Call, module: object) -> str | None:
    """The statement the PostgreSQL backend builds for a call of the store (None: a piece)."""
    name = call.func.attr
    if name == "text_search":  # (columns, query, where, params, *, limit, state, ranked)
        columns, where = _value(call.args[0], module), _value(call.args[2], module)
        flags = {k.arg: ast.literal_eval(k.value) for k in call.keywords if k.arg in ("state", "ranked")}
        return BUILT.text_search(columns, all_of(["tea"]), where, [None] * where.count("?"), limit=5,
                                 pairs=[("global", "low")], **flags)[0]
    if name == "insert_one":  # (table, {column: value}, number)
        table, row, number = call.args
        columns = [k.value for k in row.keys] if isinstance(row, ast.Dict) else ["id"]
        return BUILT.insert(ast.literal_eval(table), columns, ast.literal_eval(number))
    if name in ("upsert", "insert_if_absent"):
        args, kwargs = _arguments(call, module)
        return getattr(BUILT, name)(*args, **kwargs)
    return None


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
        # The builders themselves (a class of statements) are checked through their calls.
        builders = {id(n) for c in ast.walk(tree) if isinstance(c, ast.ClassDef) and c.name.endswith("Statements")
                    for n in ast.walk(c)}
        for node in ast.walk(tree):
            if id(node) in builders:
                continue
            if _builder(node) in STATEMENT_BUILDERS:
                found.append((rel, node.lineno, built(node, module)))
                continue
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in inside:
                text = node.value
            elif isinstance(node, ast.JoinedStr):
                text = _text(node, module).replace("{}", "1")  # a template for str.format: its columns
            else:
                continue
            # (a piece of a statement is no statement)
            if HEAD.match(text) and len(text.split()) > 2 and not SQLITE_WORDS.search(text):
                found.append((rel, node.lineno, text))
    return found


def test_the_scan_finds_the_statements_it_is_for():
    """The scan itself: it sees both kinds of statement, in the modules where they live."""
    found = statements()
    where = {rel for rel, _, _ in found}
    assert len(found) > 150 and {"recall/ranking.py", "schema/tables.py", "agents/provenance.py", "agents/activity.py"} <= where
    assert not any(rel in SQLITE_ONLY for rel, _, _ in found)


def test_every_statement_of_the_store_plans_on_postgresql(pgvector_server):
    url = pgvector_server.new_database("statements")
    with MemoryStore(url):  # migrated: every table, view, index and the halfvec column
        pass
    failed = []
    with psycopg.connect(url, autocommit=True) as conn:
        for rel, line, text in statements():
            try:
                # Every parameter is NULL (its type is the server's to infer) but a full-text query.
                params = [MATCH_QUERY if text.startswith(" AS tsquery", m.end()) else None
                          for m in PARAMETER.finditer(text) if m.group(0) == "?"]
                conn.execute("EXPLAIN " + pyformat(text), params)
            except (psycopg.Error, PostgresError, AttributeError) as exc:
                sql = text
                first = str(exc).splitlines()[0]
                failed.append(f"store/{rel}:{line}: {first}\n    {' '.join(sql.split())[:200]}")
    assert not failed, f"{len(failed)} statements PostgreSQL cannot plan:\n" + "\n".join(failed)


@pytest.mark.parametrize("sql", ["SELECT json_extract(text, '$.a') FROM memories"])
def test_a_function_only_sqlite_has_fails_the_plan(pgvector_server, sql):
    """The check catches the bug it is for: SQLite's json_extract (store/agents/provenance.py's)."""
    url = pgvector_server.new_database("statements_bad")
    with MemoryStore(url):
        pass
    with psycopg.connect(url, autocommit=True) as conn, pytest.raises(psycopg.Error, match="json_extract"):
        conn.execute("EXPLAIN " + pyformat(sql))
