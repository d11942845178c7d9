"""Run LangGraph's own store test modules against MnemoscopeStore (docs/agents.md lists
each case that differs, and why; tests/doors/test_langgraph_store.py has the cases as ours).

    python tests/support/langgraph_upstream.py PATH/TO/langgraph [pytest options]

PATH is a checkout of langchain-ai/langgraph; its libs/checkpoint/tests/test_store.py and
libs/checkpoint-sqlite/tests/test_store.py are copied into a temporary folder as they are,
beside a conftest that hands each test a MnemoscopeStore (over a new in-memory Mnemoscope
store) where it builds an InMemoryStore or a SqliteStore. Needs the langgraph extra and
langgraph-checkpoint-sqlite, pytest-mock and pytest-asyncio (their test modules import them).
Nothing of LangGraph's is kept in this repository.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile

MODULES = {"test_checkpoint_store.py": "libs/checkpoint/tests/test_store.py",
           "test_sqlite_store.py": "libs/checkpoint-sqlite/tests/test_store.py",
           "embed_test_utils.py": "libs/checkpoint/tests/embed_test_utils.py"}

CONFTEST = '''
import contextlib

import langgraph.store.memory as memory_module
import langgraph.store.sqlite as sqlite_module
from mnemoscope.adapters.langgraph import MnemoscopeStore
from mnemoscope.store import MemoryStore


class Store(MnemoscopeStore):
    """A MnemoscopeStore built as the tests build LangGraph's stores."""

    def __init__(self, index=None, **_options):
        fields = (index.get("fields") or index.get("text_fields")) if isinstance(index, dict) else None
        super().__init__(MemoryStore(":memory:"), index_fields=fields)
        self.index_config = index
        self.embeddings = index.get("embed") if isinstance(index, dict) else None

    def setup(self):
        pass


class SqliteStore:
    @staticmethod
    @contextlib.contextmanager
    def from_conn_string(_conn, index=None, **_options):
        yield Store(index)


memory_module.InMemoryStore = Store
sqlite_module.SqliteStore = SqliteStore
'''


def main(checkout: str, options: list[str]) -> int:
    folder = tempfile.mkdtemp(prefix="mnemoscope-langgraph-")
    try:
        tests = os.path.join(folder, "tests")
        os.makedirs(tests)
        for name, path in MODULES.items():
            shutil.copyfile(os.path.join(checkout, path), os.path.join(tests, name))
        open(os.path.join(tests, "__init__.py"), "w").close()
        with open(os.path.join(folder, "conftest.py"), "w", encoding="utf-8") as fh:
            fh.write(CONFTEST)
        with open(os.path.join(folder, "pytest.ini"), "w", encoding="utf-8") as fh:
            fh.write("[pytest]\nasyncio_mode = auto\n")
        return subprocess.call([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rf", "tests",
                                *options], cwd=folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    sys.exit(main(sys.argv[1], sys.argv[2:]))
