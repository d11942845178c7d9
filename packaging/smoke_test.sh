#!/usr/bin/env bash
# Smoke-test the frozen app: build it (or take BUNDLE=path/to/Mnemoscope-folder), run
# `Mnemoscope --selftest` with a fresh HOME offscreen, then start its agent doors the way
# a client does (packaging/agent_smoke.py: MCP over stdio, `serve` over HTTP). Fails on a
# non-zero exit, on any unexpected line on stderr, or on a bundle over its size limits;
# prints the sizes and the start-up times.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUNDLE="${BUNDLE:-}"
if [ -z "$BUNDLE" ]; then
    bash "$ROOT/packaging/build.sh" "${BUILD_VENV:-}"
    BUNDLE="$ROOT/dist/Mnemoscope"
fi
EXE="$BUNDLE/Mnemoscope"
CLI="$BUNDLE/mnemoscope-cli"  # the console companion MCP clients start
for program in "$EXE" "$CLI"; do
    [ -x "$program" ] || { echo "smoke test: no executable at $program" >&2; exit 1; }
done

FRESH_HOME=$(mktemp -d)
ERR=$(mktemp)
START=$(date +%s.%N)
set +e
REPORT=$(env -i PATH=/usr/bin:/bin HOME="$FRESH_HOME" LANG=C.UTF-8 QT_QPA_PLATFORM=offscreen \
    "$EXE" --selftest 2>"$ERR")
CODE=$?
set -e
END=$(date +%s.%N)
echo "selftest report: $REPORT"
# Lines Qt's offscreen platform prints on every start; anything else on stderr is a failure.
UNEXPECTED=$(grep -v -e '^This plugin does not support propagateSizeHints()$' "$ERR" || true)
if [ "$CODE" -ne 0 ]; then
    echo "smoke test: Mnemoscope --selftest exited $CODE" >&2
    cat "$ERR" >&2
    exit 1
fi
if [ -n "$UNEXPECTED" ]; then
    echo "smoke test: unexpected stderr from the frozen app:" >&2
    echo "$UNEXPECTED" >&2
    exit 1
fi
echo "$REPORT" | grep -q '"ok": true' || { echo "smoke test: the report does not say ok" >&2; exit 1; }

# The agent doors, with nothing from the build environment: the driver is the system's
# python3 and only its standard library.
PYTHON=$(python3 -c "import sys; print(sys.executable)")
AGENT_DB="$FRESH_HOME/agent.db"
clean() { env -i PATH=/usr/bin:/bin HOME="$FRESH_HOME" LANG=C.UTF-8 "$@"; }
clean "$CLI" --db "$AGENT_DB" demo >/dev/null 2>"$ERR" || { cat "$ERR" >&2; exit 1; }
[ -s "$ERR" ] && { echo "smoke test: unexpected stderr from mnemoscope-cli demo:" >&2; cat "$ERR" >&2; exit 1; }
clean "$PYTHON" "$ROOT/packaging/agent_smoke.py" mcp -- "$CLI" mcp --db "$AGENT_DB"
if [ "$(uname -s)" = "Linux" ]; then  # the windowed program keeps its stdio on Linux: both serve MCP
    clean "$PYTHON" "$ROOT/packaging/agent_smoke.py" mcp -- "$EXE" mcp --db "$AGENT_DB"
fi
clean "$PYTHON" "$ROOT/packaging/agent_smoke.py" serve -- "$CLI" serve --db "$AGENT_DB"

# Size: the folder users unpack, and the archive they download (MiB).
ARCHIVE="$(mktemp -d)/Mnemoscope.tar.gz"
tar -C "$(dirname "$BUNDLE")" -czf "$ARCHIVE" "$(basename "$BUNDLE")"
FOLDER_KB=$(du -sk "$BUNDLE" | cut -f1)
ARCHIVE_BYTES=$(wc -c <"$ARCHIVE")
rm -rf "$(dirname "$ARCHIVE")" "$FRESH_HOME"
python3 -c "print(f'start-up to selftest done: {$END - $START:.2f} s')"
# 150 MB was the first target; Qt's ICU data (31 MB), numpy's OpenBLAS (24 MB) and the
# server stack (cryptography, OpenSSL, pydantic-core) keep the Linux folder above it.
# The default embedder's model (USE multilingual v3, 32 MB) raised them to 230 MB and
# 110 MB (issue 21); the model recall ranks with (multilingual-e5-small, 4-bit: 72 MB that
# hardly compress) to 310 MB and 180 MB where its wheel exists (issue 31, which allows up
# to 400 and 200 for a model that earns it: LoCoMo recall@10 0.757 against 0.727). Fail on
# growth past the limits: trim packaging/mnemoscope.spec rather than raise them.
python3 - "$FOLDER_KB" "$ARCHIVE_BYTES" <<'PY'
import sys
folder_mb, archive_mb = int(sys.argv[1]) * 1024 / 1e6, int(sys.argv[2]) / 1e6  # decimal MB
print(f"bundle size: {folder_mb:.1f} MB (limit 310 MB), tar.gz {archive_mb:.1f} MB (limit 180 MB)")
if folder_mb > 310 or archive_mb > 180:
    sys.exit("smoke test: the bundle is over its size limits; see packaging/mnemoscope.spec")
PY
