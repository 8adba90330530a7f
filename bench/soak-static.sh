#!/usr/bin/env bash
# Soak (manual, not CI): spike after spike at 3 x capacity against `seda serve static`, printing
# the server's RSS, open files and threads every 10 s. They should stay flat across spikes.
#
#   bench/soak-static.sh [MINUTES] [CAPACITY_PER_S]
#
# MINUTES (30): length of the run. CAPACITY_PER_S (2000): requests/s the server sustains on this
# machine (find it with `seda lab run` or a closed-model `seda load`). Each 60 s cycle is 40 s at
# half capacity, then 20 s at 3 x capacity (open model, Poisson arrivals, SPECweb99 mix).
# Env: SEDA_BIN (default: cargo build --release -p seda-cli), DIRS (5 SPECweb99 directories).
set -euo pipefail
MINUTES=${1:-30}
CAP=${2:-2000}
DIRS=${DIRS:-5}
HERE=$(cd "$(dirname "$0")/.." && pwd)
if [ -z "${SEDA_BIN:-}" ]; then
  (cd "$HERE" && cargo build --release -p seda-cli >&2)
  SEDA_BIN="$HERE/target/release/seda"
fi
WORK=$(mktemp -d /tmp/seda-soak.XXXXXX)
SERVER=""
LOAD=""
cleanup() {
  [ -n "$LOAD" ] && kill "$LOAD" 2>/dev/null || true
  [ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

"$SEDA_BIN" fileset specweb99 --out "$WORK/www" --dirs "$DIRS" >/dev/null
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$SEDA_BIN" serve static --root "$WORK/www" --addr "127.0.0.1:$PORT" >"$WORK/server.log" 2>&1 &
SERVER=$!
for _ in $(seq 50); do
  (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break
  sleep 0.1
done

# The schedule: per minute, half capacity at +0 s and 3 x capacity at +40 s.
base=$((CAP / 2))
spike=$((CAP * 3))
sched=""
for m in $(seq 0 $((MINUTES - 1))); do
  sched+="$((m * 60))s=$base,$((m * 60 + 40))s=$spike,"
done
sched=${sched%,}

"$SEDA_BIN" load "http://127.0.0.1:$PORT/" --model open --workload specweb --specweb-dirs "$DIRS" \
  -r "$base" --schedule "$sched" -d "${MINUTES}m" >"$WORK/load.log" 2>&1 &
LOAD=$!

printf '%8s %10s %10s %8s %8s\n' elapsed rss_mb hwm_mb fds threads
start=$(date +%s)
while kill -0 "$LOAD" 2>/dev/null; do
  now=$(( $(date +%s) - start ))
  rss=$(awk '/^VmRSS/ {printf "%.1f", $2/1024}' "/proc/$SERVER/status")
  hwm=$(awk '/^VmHWM/ {printf "%.1f", $2/1024}' "/proc/$SERVER/status")
  threads=$(awk '/^Threads/ {print $2}' "/proc/$SERVER/status")
  fds=$(ls "/proc/$SERVER/fd" | wc -l)
  printf '%7ss %10s %10s %8s %8s\n' "$now" "$rss" "$hwm" "$fds" "$threads"
  sleep 10
done
echo
tail -n 30 "$WORK/load.log"
