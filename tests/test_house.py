"""The store's house rules: one internal module for the tables, MemoryStore the public face."""

import ast
import os

import pytest

STORE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "store")
USERS = ("recall.py", "jsonl.py", "capture.py", "graph.py", "activity.py", "conversations.py", "conflicts.py",
         "privacy.py", "backup.py", "mirror.py")


def _tree(name):
    with open(os.path.join(STORE, name), encoding="utf-8") as fh:
        return ast.parse(fh.read(), name)


@pytest.mark.parametrize("name", [n for n in USERS if os.path.exists(os.path.join(STORE, n))])
def test_no_module_reaches_into_another_objects_private_parts(name):
    offenders = [f"{name}:{node.lineno} {ast.unparse(node)}" for node in ast.walk(_tree(name))
                 if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")
                 and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))]
    assert offenders == []


@pytest.mark.parametrize("name", ["recall.py", "jsonl.py", "capture.py", "graph.py"])
def test_the_operation_modules_import_the_store_for_type_hints_only(name):
    tree = _tree(name)
    guarded = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
               for n in ast.walk(node)}
    runtime = [node.lineno for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
               and node.module == "store" and node.level == 1 and id(node) not in guarded]
    assert runtime == [], f"{name} imports store.py at run time (lines {runtime}): an import circle"
