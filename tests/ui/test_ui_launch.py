"""Starting the window on a Linux desktop that lacks a library Qt's X11 plugin needs: the
program says which, and what to install, instead of Qt's message naming the plugin."""

import shutil
import subprocess

import pytest

pytest.importorskip("PySide6")

from mnemoscope.ui import launch  # noqa: E402


def _needing(tmp_path, *sonames: str) -> str:
    """A shared library that needs ``sonames``, which are then removed (cc builds both)."""
    source = tmp_path / "empty.c"
    source.write_text("int mnemoscope_probe(void) { return 0; }\n")
    for soname in sonames:
        subprocess.run(["cc", "-shared", "-fPIC", "-o", str(tmp_path / soname), f"-Wl,-soname,{soname}",
                        str(source)], check=True)
    plugin = tmp_path / "libqxcb.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(plugin), str(source), f"-L{tmp_path}",
                    "-Wl,--no-as-needed", *(f"-l:{s}" for s in sonames)], check=True)
    for soname in sonames:
        (tmp_path / soname).unlink()
    return str(plugin)


def test_this_machine_has_what_the_x11_plugin_needs():
    if launch._xcb_plugin() is None:
        pytest.skip("no X11 plugin")
    assert launch.missing_libraries() == []  # the tests' window runs here


@pytest.mark.skipif(not (shutil.which("cc") and shutil.which("ldd")), reason="needs a C compiler and ldd")
def test_a_plugin_whose_libraries_cannot_be_found_lists_every_one(tmp_path):
    plugin = _needing(tmp_path, "libmnemoscope-absent-a.so.4", "libmnemoscope-absent-b.so.1")
    assert launch.missing_libraries(plugin) == ["libmnemoscope-absent-a.so.4", "libmnemoscope-absent-b.so.1"]


def test_the_message_names_the_packages_on_debian_and_fedora():
    words = launch.missing_libraries_reason(["libxcb-icccm.so.4", "libxcb-keysyms.so.1", "libxcb-shape.so.0"])
    assert "libxcb-icccm.so.4, libxcb-keysyms.so.1, libxcb-shape.so.0" in words
    assert "sudo apt-get install libxcb-icccm4 libxcb-keysyms1 libxcb-shape0" in words
    assert "sudo dnf install xcb-util-wm xcb-util-keysyms libxcb" in words
    assert launch.missing_libraries_reason([]) is None


def test_the_window_does_not_start_and_says_what_to_install(monkeypatch, capsys):
    monkeypatch.setattr(launch, "uses_x11", lambda: True)
    monkeypatch.setattr(launch, "no_display_reason", lambda: None)
    monkeypatch.setattr(launch, "missing_libraries", lambda: ["libxcb-icccm.so.4"])
    monkeypatch.setattr(launch, "create_app", lambda *a: pytest.fail("Qt was started"))
    assert launch.run_gui() == 2
    err = capsys.readouterr().err
    assert "libxcb-icccm.so.4" in err and "apt-get install libxcb-icccm4" in err


@pytest.mark.parametrize("env, x11", [
    ({"DISPLAY": ":0"}, True),
    ({"DISPLAY": ":0", "WAYLAND_DISPLAY": "wayland-0", "XDG_SESSION_TYPE": "wayland"}, False),
    ({"DISPLAY": ":0", "QT_QPA_PLATFORM": "offscreen"}, False),
    ({"QT_QPA_PLATFORM": "xcb"}, True),
    ({}, False),
])
def test_the_check_runs_only_where_qt_uses_x11(monkeypatch, env, x11):
    for name in ("DISPLAY", "WAYLAND_DISPLAY", "XDG_SESSION_TYPE", "QT_QPA_PLATFORM"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(launch.sys, "platform", "linux")
    assert launch.uses_x11() is x11
