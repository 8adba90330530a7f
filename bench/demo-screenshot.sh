#!/usr/bin/env bash
# Regenerates docs/dashboard.png: runs `seda demo` and, while the flash crowd hits the run with
# our controller, photographs that server's live dashboard in headless Chromium (Debian's
# `chromium`, which .ci/run installs).
#
#   bench/demo-screenshot.sh [DELAY_S]
#
# DELAY_S (5): seconds after that server prints its dashboard address (the quick spike starts
# about 2 s in and lasts 10 s; Chromium takes a few seconds to start). Env: SEDA_BIN (default: cargo build --release -p seda-cli).
set -euo pipefail
DELAY=${1:-5}
HERE=$(cd "$(dirname "$0")/.." && pwd)
if [ -z "${SEDA_BIN:-}" ]; then
  (cd "$HERE" && cargo build --release -p seda-cli >&2)
  SEDA_BIN="$HERE/target/release/seda"
fi
command -v chromium >/dev/null || { echo "needs chromium (apt-get install chromium)" >&2; exit 1; }
WORK=$(mktemp -d /tmp/seda-shot.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
shot="$HERE/docs/dashboard.png"
"$SEDA_BIN" demo --out "$WORK/demo" 2>&1 | { while IFS= read -r line; do
  printf '%s\n' "$line"
  case "$line" in
    "[mail-spike] ours serving on "*"live dashboard "*)
      url=${line##*live dashboard }
      (sleep "$DELAY" && chromium --headless --no-sandbox --disable-gpu --hide-scrollbars \
        --window-size=1400,1350 --virtual-time-budget=3000 --screenshot="$shot" "$url" \
        >/tmp/seda-shot-chromium.log 2>&1 && echo "screenshot of $url: $shot") &
      ;;
  esac
done
wait; }
