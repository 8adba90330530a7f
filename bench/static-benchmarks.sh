#!/usr/bin/env bash
# Where the static server's cycles go, beside nginx's, in one run; writes docs/benchmarks.md.
#
#   bench/static-benchmarks.sh [SECONDS] [ROUNDS]
#
# One file set (SPECweb99, /dir00000/class1_0 = 1 KB and /dir00000/class2_0 = 10 KB), three
# servers pinned to core 0 (taskset -c 0), the generator pinned to core 1:
#   - seda serve static (its front end takes one thread per core it may run on: one here),
#   - nginx, 1 worker, sendfile, no open_file_cache (it opens and fstats the file per request),
#   - nginx, 1 worker, sendfile, open_file_cache (a stronger peer: no open/fstat per request).
# For each size and each of 64 and 256 connections, each server gets ROUNDS runs of
#   wrk -t1 -cN -dSECONDS
# (the servers alternate within a round) and the median round is reported: requests/s and the
# server's CPU (user + system, from /proc) per request. Then, on 1 KB with 64 connections
# (`ab -k -c64 -n N`, a fixed number of requests):
#   - system calls per request: strace -c on every thread of the server;
#   - instructions and allocator calls per request, and the functions that take them:
#     the server under valgrind --tool=callgrind, counting zeroed after a warm-up and dumped
#     after the requests (nginx with `master_process off; daemon off;`, which callgrind needs).
# Requests/s and CPU per request move with other load on the machine (the load average is
# printed); instruction and system-call counts do not, and are the figures to compare across
# commits.
#
# Env: SEDA_BIN (default: cargo build --release -p seda-cli, in CARGO_TARGET_DIR or target/),
# OUT (default docs/benchmarks.md; `-` for stdout only), COUNT_REQUESTS (20000: requests for
# the strace and callgrind counts).
set -euo pipefail
DUR=${1:-5}
ROUNDS=${2:-3}
HERE=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/callgrind_count.sh
. "$HERE/bench/callgrind_count.sh"
OUT=${OUT:-$HERE/docs/benchmarks.md}
COUNT_N=${COUNT_REQUESTS:-20000}
ARGS="$*"

need=()
for tool in wrk ab strace valgrind curl taskset; do
  command -v "$tool" >/dev/null || need+=("$tool")
done
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || need+=(nginx-light)
if [ ${#need[@]} -gt 0 ]; then
  pkgs=$(printf '%s\n' "${need[@]}" | sed 's/^ab$/apache2-utils/; s/^taskset$/util-linux/')
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  # shellcheck disable=SC2086
  $SUDO apt-get install -y $pkgs
fi
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
[ "$(nproc)" -ge 2 ] || { echo "needs 2 cores (server on core 0, generator on core 1)"; exit 1; }


# shellcheck source=bench/lib.sh
. "$HERE/bench/lib.sh"
seda_bin

"$SEDA_BIN" fileset specweb99 --out "$TMP/www" --dirs 1 >/dev/null
chmod -R a+rX "$TMP" # nginx's worker runs as nobody
FILE_1K=/dir00000/class1_0
FILE_10K=/dir00000/class2_0

# nginx_conf NAME PORT OPEN_FILE_CACHE(0/1) CALLGRIND(0/1)
nginx_conf() {
  local dir=$TMP/$1
  mkdir -p "$dir"
  cat > "$dir/nginx.conf" <<CONF
$(nginx_main "$dir" 1 "$4")
http {
    access_log off;
    sendfile on;
    tcp_nopush on;
    keepalive_timeout 65;
    keepalive_requests 100000000;
    default_type application/octet-stream;
    $( [ "$3" = 1 ] && echo "open_file_cache max=10000 inactive=60s;" )
    client_body_temp_path $dir/body;
    proxy_temp_path $dir/proxy;
    fastcgi_temp_path $dir/fastcgi;
    uwsgi_temp_path $dir/uwsgi;
    scgi_temp_path $dir/scgi;
    server {
        listen 127.0.0.1:$2;
        root $TMP/www;
    }
}
CONF
  echo "$dir/nginx.conf"
}

# start_seda PORT [WRAPPER...]: prints the pid
start_seda() {
  local port=$1
  shift
  taskset -c 0 "$@" "$SEDA_BIN" serve static --root "$TMP/www" --addr "127.0.0.1:$port" \
    --admin off > "$TMP/seda-$port.log" 2>&1 &
  echo $!
}

start_nginx() { # conf [WRAPPER...]: prints the pid
  local conf=$1
  shift
  taskset -c 0 "$@" "$NGINX" -p "$(dirname "$conf")" -c "$conf" > /dev/null 2>&1 &
  echo $!
}

# Every pid and thread id of a server (nginx: master and worker).
server_tids() {
  local p
  for p in "$@" $(pgrep -P "$1" || true); do ls "/proc/$p/task"; done
}

HZ=$(getconf CLK_TCK)

run_wrk() { # conns url pids... -> "req/s cpu_us_per_request errors"
  local conns=$1 url=$2 out rps n a b cpu errs
  shift 2
  a=$(cpu_ticks "$@")
  out=$(taskset -c 1 wrk -t1 -c"$conns" -d"${DUR}s" "$url")
  b=$(cpu_ticks "$@")
  rps=$(awk '/^Requests\/sec:/ {print $2}' <<<"$out")
  n=$(awk '/requests in/ {print $1}' <<<"$out")
  cpu=$(awk -v a="$a" -v b="$b" -v n="$n" -v hz="$HZ" 'BEGIN {printf "%.2f", (b - a) / hz * 1e6 / n}')
  errs=$(grep -E 'Non-2xx|Socket errors' <<<"$out" | tr -s ' ' | tr '\n' ' ' || true)
  echo "$rps $cpu ${errs:-}"
}

median() { tr ' ' '\n' | grep . | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# --- throughput and CPU: the three servers side by side ---
SPORT=$(free_port); NPORT=$(free_port); CPORT=$(free_port)
SEDA_PID=$(start_seda "$SPORT"); PIDS+=("$SEDA_PID")
NGX_PID=$(start_nginx "$(nginx_conf nginx "$NPORT" 0 0)"); PIDS+=("$NGX_PID")
OFC_PID=$(start_nginx "$(nginx_conf nginx-ofc "$CPORT" 1 0)"); PIDS+=("$OFC_PID")
declare -A URL=([seda]="http://127.0.0.1:$SPORT" [nginx]="http://127.0.0.1:$NPORT" [nginx_ofc]="http://127.0.0.1:$CPORT")
for s in seda nginx nginx_ofc; do wait_up "${URL[$s]}$FILE_1K"; done
declare -A SPIDS=([seda]="$SEDA_PID" [nginx]="$NGX_PID $(pgrep -P "$NGX_PID" | tr '\n' ' ')" [nginx_ofc]="$OFC_PID $(pgrep -P "$OFC_PID" | tr '\n' ' ')")
for s in seda nginx nginx_ofc; do
  for f in $FILE_1K $FILE_10K; do
    curl -sf -o /dev/null "${URL[$s]}$f"
    cmp <(curl -sf "${URL[$s]}$f") "$TMP/www$f"
  done
done

LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
REPORT=$TMP/report.md
{
  echo "| file | conns | server | requests/s | CPU us/request | ours / peer requests/s | ours / peer CPU |"
  echo "|---|---|---|---|---|---|---|"
} > "$REPORT"
for size in 1k 10k; do
  f=$FILE_1K; [ "$size" = 10k ] && f=$FILE_10K
  for conns in 64 256; do
    declare -A RPS=() CPU=()
    order=(seda nginx nginx_ofc)
    for r in $(seq "$ROUNDS"); do
      # Rotate who goes first, so drift in the machine's load does not favour one server.
      [ "$r" = 1 ] || order=("${order[@]:1}" "${order[0]}")
      for s in "${order[@]}"; do
        # shellcheck disable=SC2086
        read -r rps cpu errs < <(run_wrk "$conns" "${URL[$s]}$f" ${SPIDS[$s]})
        [ -z "${errs:-}" ] || echo "$s $size c$conns: $errs" >&2
        RPS[$s]="${RPS[$s]:-} $rps"; CPU[$s]="${CPU[$s]:-} $cpu"
      done
    done
    s_rps=$(median <<<"${RPS[seda]}"); s_cpu=$(median <<<"${CPU[seda]}")
    for s in seda nginx nginx_ofc; do
      rps=$(median <<<"${RPS[$s]}"); cpu=$(median <<<"${CPU[$s]}")
      if [ "$s" = seda ]; then
        ratio="-"; cratio="-"
      else
        ratio=$(awk -v a="$s_rps" -v b="$rps" 'BEGIN {printf "%.3f", a / b}')
        cratio=$(awk -v a="$s_cpu" -v b="$cpu" 'BEGIN {printf "%.3f", a / b}')
      fi
      echo "| $size | $conns | $s | $rps | $cpu | $ratio | $cratio |" | tee -a "$REPORT"
    done
  done
done
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)

# --- system calls per request: strace -c on every thread, a fixed number of requests ---
strace_per_request() { # name url pids... -> table rows
  local name=$1 url=$2 out=$TMP/strace-$1 args=() t
  shift 2
  for t in $(server_tids "$@"); do args+=(-p "$t"); done
  strace -f -c -o "$out" "${args[@]}" 2>/dev/null &
  local spid=$!
  sleep 1
  taskset -c 1 ab -q -k -c 64 -n "$COUNT_N" "$url" > "$TMP/ab-$name" 2>&1
  kill -INT "$spid"; wait "$spid" 2>/dev/null || true
  awk -v n="$COUNT_N" -v s="$name" '
    # Columns: % time, seconds, usecs/call, calls, [errors], syscall.
    $NF == "total" { printf "| %s | **%.2f** | all |\n", s, $4 / n; next }
    $1 ~ /^[0-9.]+$/ && NF >= 5 && $4 / n >= 0.01 {
      rows = rows sprintf("| %s | %.2f | %s |\n", s, $4 / n, $NF)
    }
    END { printf "%s", rows }' "$out"
}
{
  echo
  echo "| server | system calls per request | call |"
  echo "|---|---|---|"
} >> "$REPORT"
for s in seda nginx nginx_ofc; do
  # shellcheck disable=SC2086
  strace_per_request "$s" "${URL[$s]}$FILE_1K" ${SPIDS[$s]} | tee -a "$REPORT"
done

for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
wait 2>/dev/null || true
PIDS=()

# --- instructions per request: callgrind, counting only the fixed number of requests ---
callgrind_per_request() { # name port start-command... -> "instructions allocs" and top list
  local name=$1 port=$2 pid dump
  shift 2
  pid=$("$@" valgrind --tool=callgrind --callgrind-out-file="$TMP/cg-$name.%p")
  PIDS+=("$pid")
  wait_up "http://127.0.0.1:$port$FILE_1K"
  dump=$TMP/cg-$name.$pid.1
  callgrind_count "$pid" "http://127.0.0.1:$port$FILE_1K" "$COUNT_N" "$dump" "$TMP/ab-cg-$name"
  python3 "$HERE/bench/callgrind_summary.py" "$dump" "$COUNT_N" 12
}
CG_SEDA=$(free_port)
callgrind_per_request seda "$CG_SEDA" start_seda "$CG_SEDA" > "$TMP/cg-seda.txt"
CG_NGX=$(free_port)
callgrind_per_request nginx "$CG_NGX" start_nginx "$(nginx_conf cg-nginx "$CG_NGX" 0 1)" > "$TMP/cg-nginx.txt"
CG_OFC=$(free_port)
callgrind_per_request nginx_ofc "$CG_OFC" start_nginx "$(nginx_conf cg-ofc "$CG_OFC" 1 1)" > "$TMP/cg-ofc.txt"
{
  echo
  echo "| server | instructions per request | allocator calls per request |"
  echo "|---|---|---|"
  for s in seda:cg-seda nginx:cg-nginx nginx_ofc:cg-ofc; do
    read -r ins allocs < "$TMP/${s#*:}.txt"
    echo "| ${s%%:*} | $ins | $allocs |"
  done
} | tee -a "$REPORT"

{
  echo "# Benchmarks: the static server against nginx"
  echo
  echo "Generated by \`bench/static-benchmarks.sh $ARGS\` on $(date -u '+%Y-%m-%d %H:%M UTC'),"
  echo "commit $(git -C "$HERE" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$HERE" diff --quiet 2>/dev/null || echo ' (with uncommitted changes)');"
  echo "$(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), load average $LOAD_BEFORE before"
  echo "the throughput runs and $LOAD_AFTER after. Do not edit by hand: run the command again."
  echo
  echo "Servers on core 0, the generator on core 1 (taskset). Files: SPECweb99 set, 1 KB ="
  echo "\`$FILE_1K\`, 10 KB = \`$FILE_10K\`. nginx: 1 worker, sendfile, access log off; nginx_ofc"
  echo "adds \`open_file_cache\`. Throughput: \`wrk -t1 -cN -d${DUR}s\`, median of $ROUNDS rounds per"
  echo "server; CPU per request is the server's user + system time over the requests served."
  echo "Requests/s and CPU move with other load on the machine; the counts below do not."
  echo
  echo "## Requests/s and CPU per request"
  echo
  sed -n '1,/^$/p' "$REPORT" | grep '^|'
  echo
  echo "## System calls per request"
  echo
  echo "\`strace -f -c\` on every thread of the server, \`ab -k -c64 -n $COUNT_N\`, 1 KB file."
  echo
  awk '/^\| server \| system calls/,/^$/' "$REPORT" | grep '^|'
  echo
  echo "## Instructions per request"
  echo
  echo "\`valgrind --tool=callgrind\`, counting zeroed after 2000 warm-up requests, then"
  echo "\`ab -k -c64 -n $COUNT_N\` on the 1 KB file (nginx with \`master_process off\`)."
  echo "Allocator calls are calls to malloc, calloc, realloc and the aligned variants."
  echo
  awk '/^\| server \| instructions/,0' "$REPORT" | grep '^|'
  for s in seda:cg-seda nginx:cg-nginx nginx_ofc:cg-ofc; do
    echo
    echo "### ${s%%:*}: functions by their own instructions per request"
    echo
    echo '```'
    tail -n +2 "$TMP/${s#*:}.txt"
    echo '```'
  done
} > "$TMP/benchmarks.md"
if [ "$OUT" = - ]; then cat "$TMP/benchmarks.md"; exit 0; fi
# Other scripts' sections of the file (between `<!-- NAME:begin -->` and `<!-- NAME:end -->`,
# e.g. bench/retry-storm.sh's) are kept, after this script's own text.
python3 - "$OUT" "$TMP/benchmarks.md" <<'PY'
import re, sys
out, mine = sys.argv[1], open(sys.argv[2]).read()
try:
    old = open(out).read()
except FileNotFoundError:
    old = ""
sections = [m.group(0) for m in re.finditer(r"<!-- ([\w-]+):begin -->.*?<!-- \1:end -->\n?", old, re.S)]
text = mine.rstrip("\n") + "\n"
for s in sections:
    text += "\n" + s if s.endswith("\n") else "\n" + s + "\n"
open(out, "w").write(text)
PY
echo "wrote $OUT"
