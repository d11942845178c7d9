"""The layers stay honest: the import contracts in pyproject.toml (lint-imports), and what
import-linter cannot say: what loads at run time, a text that has one home, one way to run
work off the GUI thread, no import circle."""

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
QT = ("PySide6", "PyQt5", "PyQt6", "PySide2", "pyqtgraph", "pytestqt", "shiboken6")


@pytest.mark.parametrize("modules", [
    "mnemoscope.store, mnemoscope.store.recall.ranking, mnemoscope.store.agents.capture, mnemoscope.store.importers.jsonl, mnemoscope.compiler",
    "mnemoscope.cli, mnemoscope.serve.mcp_server, mnemoscope.serve.http_api",  # starting an agent's server
])
def test_importing_the_layers_below_the_window_loads_no_qt(modules):
    import subprocess
    import sys

    code = f"import sys, {modules}; print([m for m in sys.modules if m.split('.')[0] in {QT!r}])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def _sources(*folders):
    for folder in folders:
        for path in sorted((ROOT / folder).rglob("*.py")):
            yield path.relative_to(ROOT).as_posix(), path.read_text(encoding="utf-8")


def test_the_import_contracts_hold():
    """pyproject.toml's [tool.importlinter] contracts: Qt only in the window, the compiler
    apart from the store, the window apart from the doors, app/ through the store's public
    face, the main window built by the launcher only. lint-imports reads the package as it
    installs (``mnemoscope.store`` inside ``mnemoscope``), so a copy of its sources is laid
    out so: an editable install maps the folders, which import-linter cannot follow."""
    import os
    import shutil
    import subprocess
    import sys
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        sources = shutil.ignore_patterns("__pycache__", "*.pyc")
        shutil.copytree(ROOT / "app", Path(tmp, "mnemoscope"), ignore=sources)
        shutil.copytree(ROOT / "store", Path(tmp, "mnemoscope", "store"), ignore=sources)
        lint = Path(sys.executable).with_name("lint-imports")
        if not lint.exists():  # the test extra brings it; a checkout installed before it did has none
            pytest.skip("import-linter is not installed here: pip install -e '.[test]'")
        out = subprocess.run([str(lint), "--no-cache", str(ROOT / "pyproject.toml")], capture_output=True, text=True,
                             cwd=tmp, env=dict(os.environ, PYTHONPATH=tmp), timeout=300)
    assert out.returncode == 0 and "broken" in out.stdout, out.stdout[-4000:] + out.stderr[-2000:]
    assert " 0 broken" in out.stdout


def test_the_citation_pattern_has_one_home_and_the_store_one_named_twin():
    # The compiler writes [Mem:N]; everything above it reads it with the compiler's pattern.
    # The store sits below the compiler (it may not import it), so it keeps a twin that
    # names the original, and the two must agree.
    from mnemoscope.compiler.layout import CITATION
    from mnemoscope.store.agents.conversations import CITATION_RE

    literal = re.compile(r"""re\.compile\(r?["']\\\[Mem""")
    written = [path for path, text in _sources("app", "store") if literal.search(text)]
    assert written == ["app/compiler/layout.py", "store/agents/conversations.py"]
    assert CITATION_RE.pattern == CITATION.pattern
    assert "app/compiler/layout.py" in dict(_sources("store"))["store/agents/conversations.py"]


def test_the_window_runs_work_off_its_thread_one_way():
    """app/ui/background.py's Job is the one worker (napari's thread_worker is the model):
    a second QRunnable, QThread or thread of its own in the window is a second way to get
    cancelling, progress and a window closed meanwhile right (#33: the backfill had one)."""
    threads = re.compile(r"\b(QRunnable|QThread|QThreadPool|threading\.Thread|ThreadPoolExecutor)\b")
    found = [path for path, text in _sources("app/ui") if threads.search(text)]
    assert found == ["app/ui/background.py"]


def test_the_cache_minimum_has_one_home():
    defined = [path for path, text in _sources("app", "store")
               if re.search(r"^PROVIDER_MIN_CACHE_TOKENS\s*=", text, re.MULTILINE)]
    assert defined == ["app/compiler/cache.py"]


def _module_imports():
    """Each module of the installed package and the modules it imports when it runs (imports
    under ``if TYPE_CHECKING`` are for type hints and left out)."""
    folders = {"app": "mnemoscope", "store": "mnemoscope.store", "resources": "mnemoscope.resources"}
    modules = {}
    for folder, package in folders.items():
        for path in (ROOT / folder).rglob("*.py"):
            parts = path.relative_to(ROOT / folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            modules[".".join((package, *parts))] = path
    graph = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        hinted = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If) and "TYPE_CHECKING" in
                  ast.unparse(node.test) for n in ast.walk(node)}
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        deps = set()
        for node in ast.walk(tree):
            if id(node) in hinted:
                continue
            if isinstance(node, ast.Import):
                deps.update(a.name for a in node.names if a.name in modules)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                    base = f"{base}.{node.module}" if node.module else base
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    deps.add(sub if sub in modules else base)
        graph[name] = {d for d in deps if d in modules and d != name}
    return graph


def test_the_import_picture_has_no_circle():
    import graphlib

    graph = _module_imports()
    assert "mnemoscope.store.forgetting.ticking" in graph and "mnemoscope.cli.group" in graph
    try:
        tuple(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError as exc:
        pytest.fail(f"an import circle: {' -> '.join(exc.args[1])}")
