#!/usr/bin/env bash
# seda proxy against HAProxy in front of the same upstream (nginx serving a 1 KB file), at
# underload, same load generator, one run: CPU per proxied request and added latency.
#
#   bench/proxy-vs-haproxy.sh [ROUNDS] [SECONDS] [RATE]
#
# nginx (1 worker), HAProxy (nbthread 1) and `seda proxy` run pinned to CPU 0; `seda load`
# (open loop, RATE requests/s, Poisson) runs on CPU 1. Each round drives nginx directly, then
# through HAProxy, then through seda proxy (target 500 ms, so admission control is on but
# never rejects at this load). CPU per request is the proxy process's user+system time over the
# run divided by the requests it completed (/proc/PID/stat), which other work on the machine
# does not inflate the way a throughput figure would. Prints each round, then the medians and
# the ratio ours/HAProxy.
# Env: SEDA_BIN (default: cargo build --release -p seda-cli).
set -euo pipefail
ROUNDS=${1:-3}
DUR=${2:-5}
RATE=${3:-2000}
HERE=$(cd "$(dirname "$0")/.." && pwd)

need=()
command -v haproxy >/dev/null || [ -x /usr/sbin/haproxy ] || need+=(haproxy)
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || need+=(nginx-light)
if [ ${#need[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get install -y "${need[@]}"
fi
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
HAPROXY=$(command -v haproxy || echo /usr/sbin/haproxy)
if [ -z "${SEDA_BIN:-}" ]; then
  (cd "$HERE" && cargo build --release -q -p seda-cli)
  SEDA_BIN="$HERE/target/release/seda"
fi

# shellcheck source=bench/lib.sh
. "$HERE/bench/lib.sh"

UP=$(free_port); HA=$(free_port); OURS=$(free_port)
nginx_upstream "$UP"
haproxy_config "$HA" "$UP"
taskset -c 0 "$NGINX" -c "$TMP/nginx/nginx.conf" & PIDS+=($!)
taskset -c 0 "$HAPROXY" -db -f "$TMP/haproxy.cfg" & HA_PID=$!; PIDS+=($HA_PID)
taskset -c 0 "$SEDA_BIN" proxy --listen "127.0.0.1:$OURS" --upstream "http://127.0.0.1:$UP" \
  --target-ms 500 > "$TMP/proxy.log" & OURS_PID=$!; PIDS+=($OURS_PID)
sleep 1

# run NAME PORT PID: prints "NAME us_per_request p50_ms p99_ms completed"
run() {
  local name=$1 port=$2 pid=$3 before after
  before=$([ "$pid" = - ] && echo 0 || cpu_ticks "$pid")
  taskset -c 1 "$SEDA_BIN" load "http://127.0.0.1:$port/f" --model open -r "$RATE" -d "${DUR}s" \
    --warmup 1s --json > "$TMP/$name.json"
  after=$([ "$pid" = - ] && echo 0 || cpu_ticks "$pid")
  python3 - "$TMP/$name.json" "$name" "$before" "$after" "$(getconf CLK_TCK)" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))["summary"]
name, before, after, hz = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
# The load's warm-up requests also cost CPU: count everything sent during the run.
cpu_us = (after - before) / hz * 1e6
per = cpu_us / max(d["sent"], 1) if after else float("nan")
lat = d["latency"]
print(f"{name:8} {per:8.1f} us/req  p50 {lat['p50_ms']:.3f} ms  p99 {lat['p99_ms']:.3f} ms  completed {d['completed']}  errors {d['errors']}")
PY
}

for r in $(seq 1 "$ROUNDS"); do
  echo "round $r"
  run direct "$UP" - | tee -a "$TMP/all"
  run haproxy "$HA" "$HA_PID" | tee -a "$TMP/all"
  run seda "$OURS" "$OURS_PID" | tee -a "$TMP/all"
done
python3 - "$TMP/all" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
def med(name, col):
    return statistics.median(float(r[col]) for r in rows if r[0] == name)
ha, ours = med("haproxy", 1), med("seda", 1)
print(f"median CPU per request: haproxy {ha:.1f} us, seda proxy {ours:.1f} us, ratio {ours/ha:.2f}")
for n in ("direct", "haproxy", "seda"):
    print(f"median p50 {n:8} {med(n, 4):.3f} ms   p99 {med(n, 7):.3f} ms")
PY
