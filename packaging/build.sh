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
