"""Installed, Mnemoscope is one import package, ``mnemoscope``: nothing called ``app``,
``store`` or ``resources`` lands in a user's site-packages, and an agent project's own
``app/`` or ``store.py`` cannot shadow it."""

import ast
import os
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
FOLDERS = {"app": "mnemoscope", "store": "mnemoscope.store", "resources": "mnemoscope.resources"}


def _setuptools():
    with open(ROOT / "pyproject.toml", "rb") as fh:
        return tomllib.load(fh)["tool"]["setuptools"]


def test_the_package_list_is_every_folder_that_is_a_package():
    # pyproject.toml cannot find packages and map folders at once, so the list is written
    # out: this holds it to the tree, so a new package folder cannot be left out of the wheel.
    tool = _setuptools()
    assert tool["package-dir"] == {name: folder for folder, name in FOLDERS.items()}
    found = set()
    for folder, name in FOLDERS.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / folder).parts
            if "__pycache__" not in rel:
                found.add(".".join((name, *rel)))
    assert sorted(tool["packages"]) == sorted(found)


@pytest.mark.timeout(600)
def test_the_wheel_holds_exactly_one_top_level_package(tmp_path):
    out = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(ROOT)],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    (wheel,) = tmp_path.glob("mnemoscope-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names}
    dist_info = {t for t in tops if t.endswith(".dist-info")}
    assert tops - dist_info == {"mnemoscope"} and len(dist_info) == 1
    # the data files came along, under the package's names
    for data in ("mnemoscope/resources/encodings/o200k_base.tiktoken.gz", "mnemoscope/resources/demo/memories.jsonl",
                 "mnemoscope/resources/capabilities.json", "mnemoscope/store/__init__.py"):
        assert data in names


def _python_sources():
    for folder in ("app", "store", "resources", "tests", "packaging"):
        yield from sorted((ROOT / folder).rglob("*.py"))
    yield ROOT / "packaging" / "mnemoscope.spec"


def test_no_code_imports_the_folder_names():
    # `python -m pytest` puts the repository on sys.path, where app/ and store/ would import
    # by their folder names and hide an import an installed user could not make.
    offenders = []
    for path in _python_sources():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) and node.level == 0 else [])
            offenders += [f"{path.relative_to(ROOT)}:{node.lineno} {n}" for n in names
                          if n.split(".")[0] in FOLDERS]
    assert offenders == []


def test_an_agent_projects_own_app_and_store_do_not_shadow_mnemoscope(tmp_path):
    # what an agent project beside Mnemoscope often has
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "__init__.py").write_text("raise SystemExit('the project app was imported')\n")
    (tmp_path / "store.py").write_text("raise SystemExit('the project store was imported')\n")
    (tmp_path / "resources").mkdir()
    env = dict(os.environ, MNEMOSCOPE_HOME=str(tmp_path / "home"))
    out = subprocess.run([sys.executable, "-m", "mnemoscope", "--db", str(tmp_path / "m.db"), "demo"],
                         capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)
    assert out.returncode == 0, out.stderr + out.stdout
    out = subprocess.run([sys.executable, "-m", "mnemoscope", "--db", str(tmp_path / "m.db"), "recall", "tea"],
                         capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)
    assert out.returncode == 0 and out.stdout.strip(), out.stderr
