"""The layers stay honest: store/ and app/compiler/ import no Qt; the compiler imports no store."""

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
QT = ("PySide6", "PyQt5", "PyQt6", "PySide2", "pyqtgraph", "pytestqt", "shiboken6")


def imports_of(folder):
    for path in sorted((ROOT / folder).rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    yield path, alias.name
            elif isinstance(node, ast.ImportFrom):
                module = node.module or ""
                if node.level and folder == "app/compiler" and node.level > 1:
                    module = "mnemoscope." + module  # ..x from inside app/compiler reaches app/
                yield path, module


def test_store_and_compiler_import_no_qt():
    for folder in ("store", "app/compiler"):
        found = [(p.name, m) for p, m in imports_of(folder) if m.split(".")[0] in QT]
        assert found == [], f"{folder} imports Qt: {found}"


def test_compiler_imports_nothing_from_store():
    found = [(p.name, m) for p, m in imports_of("app/compiler") if m == "mnemoscope.store" or m.startswith("mnemoscope.store.")]
    assert found == []


def test_compiler_imports_nothing_outside_itself_in_app():
    found = [(p.name, m) for p, m in imports_of("app/compiler") if m.startswith("mnemoscope.") and not
             m.startswith("mnemoscope.compiler")]
    assert found == []


@pytest.mark.parametrize("modules", [
    "mnemoscope.store, mnemoscope.store.recall, mnemoscope.store.capture, mnemoscope.store.jsonl, mnemoscope.compiler",
    "mnemoscope.cli, mnemoscope.serve.mcp_server, mnemoscope.serve.http_api",  # starting an agent's server
])
def test_importing_the_layers_below_the_window_loads_no_qt(modules):
    import subprocess
    import sys

    code = f"import sys, {modules}; print([m for m in sys.modules if m.split('.')[0] in {QT!r}])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_the_doors_import_no_qt_and_the_window_no_doors():
    # The command line may start the window, but only through mnemoscope.ui.launch, lazily.
    for folder in ("app/serve", "app/cli"):
        found = [(p.name, m) for p, m in imports_of(folder) if m.split(".")[0] in QT]
        assert found == [], f"{folder} imports Qt: {found}"
    found = [(p.name, m) for p, m in imports_of("app/ui") if m.lstrip(".").split(".")[0] in ("cli", "serve")
             or m.startswith(("mnemoscope.cli", "mnemoscope.serve"))]
    assert found == [], f"the window imports the doors: {found}"


def _sources(*folders):
    for folder in folders:
        for path in sorted((ROOT / folder).rglob("*.py")):
            yield path.relative_to(ROOT).as_posix(), path.read_text(encoding="utf-8")


def test_the_store_imports_nothing_from_app():
    found = [(p.name, m) for p, m in imports_of("store") if m == "mnemoscope" or (m.startswith("mnemoscope.") and not m.startswith("mnemoscope.store"))]
    assert found == []


def test_the_app_reaches_the_store_through_its_public_face():
    """app/ talks to MemoryStore and its results; the store's tables, backends and schema
    are its own to change (#33: the window once imported store.tables' field lists)."""
    inner = ("tables", "backends", "schema", "ticking")
    found = [(p.relative_to(ROOT).as_posix(), m) for p, m in imports_of("app")
             if any(m == f"mnemoscope.store.{i}" or m.startswith(f"mnemoscope.store.{i}.") for i in inner)]
    assert found == [], f"app/ imports the store's inner modules: {found}"


def test_the_citation_pattern_has_one_home_and_the_store_one_named_twin():
    # The compiler writes [Mem:N]; everything above it reads it with the compiler's pattern.
    # The store sits below the compiler (it may not import it), so it keeps a twin that
    # names the original, and the two must agree.
    from mnemoscope.compiler.layout import CITATION
    from mnemoscope.store.conversations import CITATION_RE

    literal = re.compile(r"""re\.compile\(r?["']\\\[Mem""")
    written = [path for path, text in _sources("app", "store") if literal.search(text)]
    assert written == ["app/compiler/layout.py", "store/conversations.py"]
    assert CITATION_RE.pattern == CITATION.pattern
    assert "app/compiler/layout.py" in dict(_sources("store"))["store/conversations.py"]


def test_the_window_runs_work_off_its_thread_one_way():
    """app/ui/background.py's Job is the one worker (napari's thread_worker is the model):
    a second QRunnable, QThread or thread of its own in the window is a second way to get
    cancelling, progress and a window closed meanwhile right (#33: the backfill had one)."""
    threads = re.compile(r"\b(QRunnable|QThread|QThreadPool|threading\.Thread|ThreadPoolExecutor)\b")
    found = [path for path, text in _sources("app/ui") if threads.search(text)]
    assert found == ["app/ui/background.py"]


def test_no_pane_knows_the_main_window():
    """A pane or tool of the window gets the session and a widget to put its dialogs over,
    and says what it has to say through signals; only launch.py builds the window (#33:
    ecosystem.py reached into the window's editor, status bar and error box)."""
    found = sorted({p.name for p, m in imports_of("app/ui") if m.endswith("main_window") and p.name not in
                    ("main_window.py", "launch.py")})
    assert found == []


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
    assert "mnemoscope.store.ticking" in graph and "mnemoscope.cli.group" in graph
    try:
        tuple(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError as exc:
        pytest.fail(f"an import circle: {' -> '.join(exc.args[1])}")
