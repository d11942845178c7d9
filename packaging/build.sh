#!/usr/bin/env bash
# Build the desktop bundle from a clean virtual environment: dist/Mnemoscope/Mnemoscope.
# Usage: packaging/build.sh [VENV_DIR]   (default: a new temporary one)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
VENV="${1:-$(mktemp -d)/venv}"
export PIP_DISABLE_PIP_VERSION_CHECK=1
if [ ! -x "$VENV/bin/python" ]; then
    python3 -m venv "$VENV"
fi
"$VENV/bin/pip" install -q "$ROOT[package]"
# Qt's xcb platform plugin links these; the bundle can only carry what the build machine
# has, so on Debian/Ubuntu build machines make sure they are there (best effort).
XCB_PACKAGES="libxcb-icccm4 libxcb-keysyms1 libxcb-image0 libxcb-render-util0 libxkbcommon-x11-0 libxcb-cursor0"
if [ "$(uname -s)" = "Linux" ] && command -v dpkg-query >/dev/null 2>&1 && [ "$(id -u)" = "0" ]; then
    missing=""
    for pkg in $XCB_PACKAGES; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing="$missing $pkg"
    done
    if [ -n "$missing" ]; then
        (apt-get install -y -qq $missing >/dev/null 2>&1 || (apt-get update -qq >/dev/null 2>&1 &&
            apt-get install -y -qq $missing >/dev/null 2>&1)) || echo "build: could not install$missing" >&2
    fi
fi
cd "$ROOT"
rm -rf build/pyinstaller dist/Mnemoscope
"$VENV/bin/pyinstaller" --noconfirm --clean --log-level WARN \
    --workpath build/pyinstaller --distpath dist packaging/mnemoscope.spec
# Strip debug symbols from the shared libraries, except numpy's OpenBLAS, which its
# manylinux patching leaves unloadable once stripped.
if [ "$(uname -s)" = "Linux" ] && command -v strip >/dev/null 2>&1; then
    find dist/Mnemoscope -type f -name '*.so*' -not -path '*/numpy.libs/*' -exec strip --strip-unneeded {} + \
        2>/dev/null || true
fi
echo "built: $ROOT/dist/Mnemoscope ($(du -sh dist/Mnemoscope | cut -f1))"
