#!/usr/bin/env bash
# Compares `seda load` with wrk against nginx on 127.0.0.1, and measures the open loop's
# achieved rate and the memory for 10,000 idle connections.
#
#   bench/load-vs-wrk.sh            # REPEAT=3 DURATION=10 by default; about 3.5 minutes
#   REPEAT=1 DURATION=5 bench/load-vs-wrk.sh
#   OPEN_PATH=/empty IDLE=0 bench/load-vs-wrk.sh   # open loop on a 204; skip the idle test
#
# nginx runs pinned to CPU 0 (taskset -c 0) with a generated config in a temp dir (daemon off,
# one worker), the clients are pinned to CPU 1 (wrk via taskset -c 1, seda via --cpu 1). CPU time
# is user + system from /usr/bin/time -v. Needs: nginx (nginx-light), wrk, jq, time, and a
# release build of the seda binary (built here with cargo build --release -p seda-cli).
set -euo pipefail

REPEAT=${REPEAT:-3}
DURATION=${DURATION:-10}
RATES=${RATES:-"10000 20000 30000 40000 50000"}
IDLE=${IDLE:-10000}
OPEN_PATH=${OPEN_PATH:-/1k.html}   # /empty: a 204 from nginx, cheaper than a file
cd "$(dirname "$0")/.."

for tool in nginx wrk jq /usr/bin/time taskset; do
  command -v "$tool" >/dev/null || { echo "missing $tool (apt-get install -y nginx-light wrk jq time util-linux)"; exit 1; }
done
cargo build --release -q -p seda-cli
SEDA=$PWD/target/release/seda

DIR=$(mktemp -d /tmp/seda-bench.XXXXXX)
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null || echo 18089)
mkdir -p "$DIR/www" "$DIR/tmp"
head -c 1024 /dev/zero | tr '\0' 'x' > "$DIR/www/1k.html"
cat > "$DIR/nginx.conf" <<CONF
daemon off;
master_process off;
worker_processes 1;
worker_rlimit_nofile 20000;
error_log $DIR/error.log;
pid $DIR/nginx.pid;
events { worker_connections 16384; }
http {
  access_log off;
  client_body_temp_path $DIR/tmp;
  keepalive_requests 100000000;
  keepalive_timeout 300s;
  server {
    listen 127.0.0.1:$PORT backlog=4096;
    root $DIR/www;
    location = /empty { return 204; }
  }
}
CONF
taskset -c 0 nginx -c "$DIR/nginx.conf" -p "$DIR" &
NGINX=$!
trap 'kill -CONT $NGINX 2>/dev/null; kill $NGINX 2>/dev/null; wait $NGINX 2>/dev/null; rm -rf "$DIR"' EXIT
for _ in $(seq 100); do
  (exec 3<>/dev/tcp/127.0.0.1/$PORT) 2>/dev/null && break
  sleep 0.05
done
URL=http://127.0.0.1:$PORT/1k.html
echo "nginx pid $NGINX on port $PORT, pinned to CPU 0; clients on CPU 1; ${DURATION}s per run"

cpu_of() { # user+sys seconds from a /usr/bin/time -v log
  awk -F': ' '/User time/{u=$2} /System time/{s=$2} END{printf "%.2f", u+s}' "$1"
}
rss_of() { awk -F': ' '/Maximum resident/{print $2}' "$1"; }

echo
echo "== closed loop, 64 connections, 1 KB file =="
printf "%-4s %12s %12s %8s %14s %14s %8s\n" run wrk_rps seda_rps ratio wrk_us_per_req seda_us_per_req ratio
for i in $(seq "$REPEAT"); do
  /usr/bin/time -v -o "$DIR/wrk.time" taskset -c 1 wrk -t1 -c64 -d"${DURATION}s" "$URL" > "$DIR/wrk.out"
  wrk_rps=$(awk '/Requests\/sec/{print $2}' "$DIR/wrk.out")
  wrk_n=$(awk '/requests in/{print $1}' "$DIR/wrk.out")
  /usr/bin/time -v -o "$DIR/seda.time" "$SEDA" load "$URL" -c 64 -d "${DURATION}s" --cpu 1 --json --no-progress > "$DIR/seda.json"
  seda_rps=$(jq '.summary.throughput_per_s' "$DIR/seda.json")
  seda_n=$(jq '.summary.completed' "$DIR/seda.json")
  wrk_cpu=$(cpu_of "$DIR/wrk.time"); seda_cpu=$(cpu_of "$DIR/seda.time")
  awk -v i="$i" -v wr="$wrk_rps" -v sr="$seda_rps" -v wc="$wrk_cpu" -v sc="$seda_cpu" -v wn="$wrk_n" -v sn="$seda_n" 'BEGIN{
    wu=wc/wn*1e6; su=sc/sn*1e6;
    printf "%-4s %12.0f %12.0f %8.3f %14.2f %14.2f %8.3f\n", i, wr, sr, sr/wr, wu, su, su/wu }' \
    | tee -a "$DIR/closed.txt"
done
median() { sort -n | awk '{a[NR]=$1} END{print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
echo "median ratios: req/s $(awk '{print $4}' "$DIR/closed.txt" | median)," \
  "CPU per request $(awk '{print $7}' "$DIR/closed.txt" | median)"

echo
echo "== open loop (constant arrivals) on $OPEN_PATH, achieved vs asked =="
printf "%-8s %12s %12s %10s %10s %10s %10s\n" asked sent_per_s done_per_s sent/asked p50_ms p99_ms seda_cpu_s
for rate in $RATES; do
  /usr/bin/time -v -o "$DIR/open.time" "$SEDA" load --model open --arrivals constant -r "$rate" \
    --max-connections 1000 -d "${DURATION}s" --cpu 1 --json --no-progress \
    "http://127.0.0.1:$PORT$OPEN_PATH" > "$DIR/open.json"
  jq -r --arg rate "$rate" --arg cpu "$(cpu_of "$DIR/open.time")" '.summary as $s |
    [$rate, ($s.sent/$s.duration_s), $s.throughput_per_s, ($s.sent/$s.duration_s/($rate|tonumber)),
     $s.latency.p50_ms, $s.latency.p99_ms, $cpu] |
    "\(.[0])\t\(.[1]|floor)\t\(.[2]|floor)\t\(.[3]*10000|floor/10000)\t\(.[4])\t\(.[5])\t\(.[6])"' "$DIR/open.json" |
    awk -F'\t' '{printf "%-8s %12s %12s %10s %10s %10s %10s\n", $1,$2,$3,$4,$5,$6,$7}'
done

[ "$IDLE" -gt 0 ] || exit 0
echo
echo "== $IDLE idle keep-alive connections (closed loop, one request each, then a long think) =="
/usr/bin/time -v -o "$DIR/idle.time" "$SEDA" load "$URL" -c "$IDLE" --think 60s --ramp 3s -d 8s \
  --cpu 1 --json --no-progress > "$DIR/idle.json" &
IDLE_PID=$!
sleep 6 # the stimulus: count while the connections are held (ramp 3 s, run 8 s)
echo "established connections to nginx at t=6s: $(ss -Htn state established "( sport = :$PORT )" | wc -l)"
wait $IDLE_PID
jq -r '.summary | "completed \(.completed) errors \(.errors) clients \(.clients)"' "$DIR/idle.json"
echo "active users at the end: $(jq '.series[-1].active' "$DIR/idle.json")"
echo "seda max RSS: $(rss_of "$DIR/idle.time") KB"
