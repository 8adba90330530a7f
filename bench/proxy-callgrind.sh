#!/usr/bin/env bash
# Instructions and allocator calls per proxied request, `seda proxy` against HAProxy, under
# callgrind: the quick before/after check for a change on the proxy's path
# (bench/proxy-vs-haproxy.sh compares CPU time and latency under an open-loop load instead).
#
#   bench/proxy-callgrind.sh [REQUESTS] [TOP]
#
# nginx (1 worker, serving a 1 KB file) is the upstream on core 1. Each proxy in turn runs
# under valgrind --tool=callgrind on core 0 with the settings of bench/proxy-vs-haproxy.sh
# (HAProxy: nbthread 1, keep-alive, `http-reuse always`; ours: one route with a 500 ms
# target, so admission control is on); `ab -k -c64` on core 1 sends 2000 warm-up requests,
# counting zeroed, then REQUESTS (default 20000), counting dumped. Prints instructions and
# allocator calls per request for both and the ratio, then ours' TOP (default 15) functions
# by their own instructions per request. Callgrind counts instructions, so the figures repeat
# on a busy machine (they include whatever else the proxy process does meanwhile: timers).
#
# Env: SEDA_BIN (default target/release/seda, built if missing), KEEP=DIR keeps both dumps,
# ONLY=seda skips HAProxy.
set -euo pipefail
N=${1:-20000}
TOP=${2:-15}
HERE=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/callgrind_count.sh
. "$HERE/bench/callgrind_count.sh"
SEDA_BIN=${SEDA_BIN:-$HERE/target/release/seda}
[ -x "$SEDA_BIN" ] || (cd "$HERE" && cargo build --release -q -p seda-cli)
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
HAPROXY=$(command -v haproxy || echo /usr/sbin/haproxy)
for tool in valgrind callgrind_control ab curl taskset "$NGINX" "$HAPROXY"; do
  command -v "$tool" >/dev/null || { echo "needs $tool"; exit 1; }
done

# shellcheck source=bench/lib.sh
. "$HERE/bench/lib.sh"

UP=$(free_port)
nginx_upstream "$UP"
taskset -c 1 "$NGINX" -c "$TMP/nginx/nginx.conf" & PIDS+=($!)

# measure NAME PORT: waits for the proxy (valgrind's pid in $PID) to answer on PORT, checks
# the body, counts N requests; prints "instructions allocator_calls" per request on stdout.
measure() {
  local name=$1 port=$2 url
  url="http://127.0.0.1:$port/f"
  for _ in $(seq 600); do
    curl -sf -o /dev/null "$url" && break
    sleep 0.1
  done
  cmp <(curl -sf "$url") "$TMP/www/f"
  callgrind_count "$PID" "$url" "$N" "$TMP/cg.$name.$PID.1" "$TMP/ab.$name.txt"
  grep -E '^(Complete|Failed|Non-2xx)' "$TMP/ab.$name.txt" | tr -s ' ' | sed "s/^/# ab $name: /" >&2
  cp "$TMP/cg.$name.$PID.1" "$TMP/$name.dump"
}

OURS=$(free_port)
# taskset execs valgrind: the pid is valgrind's.
taskset -c 0 valgrind --tool=callgrind --callgrind-out-file="$TMP/cg.seda.%p" \
  "$SEDA_BIN" proxy --listen "127.0.0.1:$OURS" --upstream "http://127.0.0.1:$UP" \
  --target-ms 500 > "$TMP/seda.log" 2>&1 &
PID=$!; PIDS+=($PID)
measure seda "$OURS"
read -r ours_ins ours_alloc < <(python3 "$HERE/bench/callgrind_summary.py" "$TMP/seda.dump" "$N")

if [ "${ONLY:-}" != seda ]; then
  HA=$(free_port)
  haproxy_config "$HA" "$UP"
  taskset -c 0 valgrind --tool=callgrind --callgrind-out-file="$TMP/cg.haproxy.%p" \
    "$HAPROXY" -db -f "$TMP/haproxy.cfg" > "$TMP/haproxy.log" 2>&1 &
  PID=$!; PIDS+=($PID)
  measure haproxy "$HA"
  read -r ha_ins ha_alloc < <(python3 "$HERE/bench/callgrind_summary.py" "$TMP/haproxy.dump" "$N")
  echo "haproxy     instructions/request $ha_ins  allocator calls/request $ha_alloc"
fi
echo "seda proxy  instructions/request $ours_ins  allocator calls/request $ours_alloc"
[ -z "${ha_ins:-}" ] || python3 -c "print(f'ratio seda/haproxy {$ours_ins / $ha_ins:.2f}')"
echo "# seda proxy: self instructions per request"
python3 "$HERE/bench/callgrind_summary.py" "$TMP/seda.dump" "$N" "$TOP" | tail -n +2
if [ -n "${KEEP:-}" ]; then
  mkdir -p "$KEEP"
  cp "$TMP"/*.dump "$KEEP/"
  echo "# dumps: $KEEP"
fi
