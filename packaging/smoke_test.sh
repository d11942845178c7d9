#!/usr/bin/env bash
# Smoke-test the frozen app: build it (or take BUNDLE=path/to/Mnemoscope-folder), run
# `Mnemoscope --selftest` with a fresh HOME offscreen, fail on a non-zero exit or on any
# unexpected line on stderr, and print the bundle size and start-up time.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUNDLE="${BUNDLE:-}"
if [ -z "$BUNDLE" ]; then
    bash "$ROOT/packaging/build.sh" "${BUILD_VENV:-}"
    BUNDLE="$ROOT/dist/Mnemoscope"
fi
EXE="$BUNDLE/Mnemoscope"
[ -x "$EXE" ] || { echo "smoke test: no executable at $EXE" >&2; exit 1; }

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
SIZE_MB=$(du -sm "$BUNDLE" | cut -f1)
printf 'bundle size: %s MB (target <= 150 MB)\n' "$SIZE_MB"
python3 -c "print(f'start-up to selftest done: {$END - $START:.2f} s')"
# 150 MB is the target; Qt's ICU data (31 MB) and numpy's OpenBLAS (24 MB) alone keep the
# Linux folder near 170 MB. Fail only on a regression well past what we ship today.
if [ "$SIZE_MB" -gt 185 ]; then
    echo "smoke test: the bundle grew to $SIZE_MB MB (limit 185 MB); see packaging/mnemoscope.spec" >&2
    exit 1
fi
