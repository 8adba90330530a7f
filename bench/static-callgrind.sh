#!/usr/bin/env bash
# Instructions and allocator calls per request of `seda serve static` alone, under callgrind:
# the quick before/after check for a change on the static path (bench/static-benchmarks.sh
# runs the same count beside nginx's, with throughput and system calls, in minutes).
#
#   bench/static-callgrind.sh [REQUESTS] [TOP]
#
# The server runs under valgrind --tool=callgrind on core 0, `ab -k -c64` on core 1 asks for
# the 1 KB SPECweb99 file: 2000 warm-up requests, counting zeroed, then REQUESTS (default
# 20000) requests, counting dumped. Prints instructions and allocator calls per request, then
# the TOP (default 15) functions by their own instructions per request and, with INCLUSIVE=1,
# the TOP by inclusive instructions (callgrind_annotate). Callgrind counts instructions
# exactly: the figures repeat on a busy machine, within a few instructions per request.
#
# Env: SEDA_BIN (default target/release/seda, built if missing), FILE (default
# /dir00000/class1_0), KEEP=DIR keeps the dump in DIR, SERVE_ARGS (more `serve static` flags).
set -euo pipefail
N=${1:-20000}
TOP=${2:-15}
HERE=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/callgrind_count.sh
. "$HERE/bench/callgrind_count.sh"
FILE=${FILE:-/dir00000/class1_0}
SEDA_BIN=${SEDA_BIN:-$HERE/target/release/seda}
[ -x "$SEDA_BIN" ] || (cd "$HERE" && cargo build --release -q -p seda-cli)
for tool in valgrind callgrind_control ab curl taskset; do
  command -v "$tool" >/dev/null || { echo "needs $tool"; exit 1; }
done

TMP=$(mktemp -d)
PID=
cleanup() {
  [ -z "$PID" ] || kill "$PID" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$TMP"
}
trap cleanup EXIT

PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$SEDA_BIN" fileset specweb99 --out "$TMP/www" --dirs 1 >/dev/null
# taskset execs valgrind: the pid is valgrind's.
# shellcheck disable=SC2086
taskset -c 0 valgrind --tool=callgrind --callgrind-out-file="$TMP/cg.%p" \
  "$SEDA_BIN" serve static --root "$TMP/www" --addr "127.0.0.1:$PORT" --admin off \
  ${SERVE_ARGS:-} > "$TMP/seda.log" 2>&1 &
PID=$!
URL="http://127.0.0.1:$PORT$FILE"
for _ in $(seq 600); do
  curl -sf -o /dev/null "$URL" && break
  sleep 0.1
done
cmp <(curl -sf "$URL") "$TMP/www$FILE"
DUMP=$TMP/cg.$PID.1
callgrind_count "$PID" "$URL" "$N" "$DUMP" "$TMP/ab.txt"
grep -E '^(Complete|Failed|Non-2xx)' "$TMP/ab.txt" | tr -s ' ' | sed 's/^/# ab: /'

python3 "$HERE/bench/callgrind_summary.py" "$DUMP" "$N" "$TOP" | {
  read -r ins allocs
  echo "instructions/request $ins  allocator calls/request $allocs"
  echo "# self instructions per request"
  cat
}
if [ "${INCLUSIVE:-0}" = 1 ]; then
  echo "# inclusive instructions per request"
  callgrind_annotate --inclusive=yes --threshold=100 "$DUMP" 2>/dev/null |
    awk -v n="$N" -v top="$TOP" '
      /^ *[0-9,]+ \([ 0-9.]+%\) / {
        c = $1; gsub(",", "", c); $1 = ""; $2 = ""; sub(/^ +/, "")
        sub(/ \[[^]]*\]$/, "")
        if (++k <= top + 1) printf "%d\t%s\n", c / n, substr($0, 1, 110)
      }'
fi
if [ -n "${KEEP:-}" ]; then
  mkdir -p "$KEEP"
  cp "$DUMP" "$KEEP/"
  echo "# dump: $KEEP/$(basename "$DUMP")"
fi
