#!/usr/bin/env bash
# Haboob (seda serve static) against nginx, same load generator (wrk), one run.
#
#   bench/static-vs-nginx.sh [ROUNDS] [SECONDS]
#
# Installs wrk and nginx if missing, writes a SPECweb99 file set and an nginx configuration
# (worker_processes 2, sendfile on, access log off, keep-alive, daemon off, free port on
# 127.0.0.1, pid and temp paths in a temp dir), starts both servers as child processes, warms
# their caches, then alternates the servers for each file size and round:
#   wrk -t1 -c64 -d${SECONDS}s --latency http://127.0.0.1:PORT/FILE
# and prints requests/s, p99 latency, the ratio ours/nginx per round and the median ratio, and
# the peak RSS (VmHWM, summed over nginx's processes) of both.
# Env: SEDA_BIN (default: cargo build --release -p seda-cli), CONNECTIONS (64), THREADS (1),
# NGINX_OPEN_FILE_CACHE=1 (give nginx `open_file_cache`, so it skips open/fstat per request: a
# stronger peer than the configuration the issue specifies).
set -euo pipefail
ROUNDS=${1:-3}
DUR=${2:-5}
CONNS=${CONNECTIONS:-64}
WTHREADS=${THREADS:-1}
HERE=$(cd "$(dirname "$0")/.." && pwd)

need=()
command -v wrk >/dev/null || need+=(wrk)
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || need+=(nginx-light)
command -v curl >/dev/null || need+=(curl)
if [ ${#need[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get install -y "${need[@]}"
fi
NGINX=$(command -v nginx || echo /usr/sbin/nginx)

if [ -z "${SEDA_BIN:-}" ]; then
  (cd "$HERE" && cargo build --release -q -p seda-cli)
  SEDA_BIN="$HERE/target/release/seda"
fi

STOP_SIGNAL=INT
# shellcheck source=bench/lib.sh
. "$HERE/bench/lib.sh"

"$SEDA_BIN" fileset specweb99 --out "$TMP/www" --dirs 1 >/dev/null
# nginx's workers drop root privileges (to nobody): they must be able to read the files.
chmod -R a+rX "$TMP"
FILE_1K=/dir00000/class1_0    # 1024 bytes
FILE_10K=/dir00000/class2_0   # 10240 bytes

# --- nginx ---
NPORT=$(free_port)
mkdir -p "$TMP/nginx"
cat > "$TMP/nginx/nginx.conf" <<CONF
$(nginx_main "$TMP/nginx" 2)
http {
    access_log off;
    sendfile on;
    tcp_nopush on;
    keepalive_timeout 65;
    keepalive_requests 100000000;
    default_type application/octet-stream;
    $( [ "${NGINX_OPEN_FILE_CACHE:-0}" = 1 ] && echo "open_file_cache max=10000 inactive=60s;" )
    client_body_temp_path $TMP/nginx/body;
    proxy_temp_path $TMP/nginx/proxy;
    fastcgi_temp_path $TMP/nginx/fastcgi;
    uwsgi_temp_path $TMP/nginx/uwsgi;
    scgi_temp_path $TMP/nginx/scgi;
    server {
        listen 127.0.0.1:$NPORT;
        root $TMP/www;
    }
}
CONF
"$NGINX" -p "$TMP/nginx" -c "$TMP/nginx/nginx.conf" &
NGINX_PID=$!
PIDS+=("$NGINX_PID")

# --- ours ---
"$SEDA_BIN" serve static --root "$TMP/www" --addr 127.0.0.1:0 > "$TMP/seda.log" 2>&1 &
SEDA_PID=$!
PIDS+=("$SEDA_PID")

for _ in $(seq 100); do
  grep -q 'http://127' "$TMP/seda.log" 2>/dev/null && curl -sf -o /dev/null "http://127.0.0.1:$NPORT$FILE_1K" && break
  sleep 0.1
done
SADDR=$(grep -o '127\.0\.0\.1:[0-9]*' "$TMP/seda.log" | head -1)
[ -n "$SADDR" ] || { echo "seda did not start:"; cat "$TMP/seda.log"; exit 1; }

# Warm both (the page cache, nginx's open-file and kernel caches).
for f in $FILE_1K $FILE_10K; do
  for u in "http://$SADDR$f" "http://127.0.0.1:$NPORT$f"; do
    curl -sf -o /dev/null "$u"; curl -sf -o /dev/null "$u"
  done
done
cmp <(curl -sf "http://$SADDR$FILE_10K") "$TMP/www$FILE_10K"
cmp <(curl -sf "http://127.0.0.1:$NPORT$FILE_10K") "$TMP/www$FILE_10K"

# CPU per request (cpu_ticks) is a figure that other load on a shared machine disturbs less
# than requests/s.
HZ=$(getconf CLK_TCK)

run_wrk() { # url pids... -> "req/s p99 cpu_us_per_request errors"
  local url=$1 out rps p99 n a b cpu errs
  shift
  a=$(cpu_ticks "$@")
  out=$(wrk -t"$WTHREADS" -c"$CONNS" -d"${DUR}s" --latency "$url")
  b=$(cpu_ticks "$@")
  rps=$(awk '/^Requests\/sec:/ {print $2}' <<<"$out")
  p99=$(awk '$1 == "99%" {print $2}' <<<"$out")
  n=$(awk '/requests in/ {print $1}' <<<"$out")
  cpu=$(awk -v a="$a" -v b="$b" -v n="$n" -v hz="$HZ" 'BEGIN {printf "%.1f", (b - a) / hz * 1e6 / n}')
  errs=$(grep -E 'Non-2xx|Socket errors' <<<"$out" | tr -s ' ' | tr '\n' ' ' || true)
  echo "$rps $p99 $cpu ${errs:-}"
}

echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "nginx open_file_cache: ${NGINX_OPEN_FILE_CACHE:-0}"
echo "wrk -t$WTHREADS -c$CONNS -d${DUR}s --latency; seda on $SADDR, nginx on 127.0.0.1:$NPORT"
NGINX_PIDS="$NGINX_PID $(pgrep -P "$NGINX_PID" | tr '\n' ' ')"
printf '%-5s %-5s %11s %9s %8s %11s %9s %8s %7s\n' size round seda_req/s seda_p99 seda_cpu \
  nginx_req/s nginx_p99 ngx_cpu ratio
echo "(cpu: microseconds of server CPU, user + system, per request)"
declare -A RATIOS
for size in 1k 10k; do
  f=$FILE_1K; [ "$size" = 10k ] && f=$FILE_10K
  for r in $(seq "$ROUNDS"); do
    # Alternate who goes first, so drift in the machine's load does not favour one server.
    if (( r % 2 )); then
      read -r s_rps s_p99 s_cpu s_err < <(run_wrk "http://$SADDR$f" "$SEDA_PID")
      read -r n_rps n_p99 n_cpu n_err < <(run_wrk "http://127.0.0.1:$NPORT$f" $NGINX_PIDS)
    else
      read -r n_rps n_p99 n_cpu n_err < <(run_wrk "http://127.0.0.1:$NPORT$f" $NGINX_PIDS)
      read -r s_rps s_p99 s_cpu s_err < <(run_wrk "http://$SADDR$f" "$SEDA_PID")
    fi
    ratio=$(awk -v a="$s_rps" -v b="$n_rps" 'BEGIN {printf "%.3f", a / b}')
    RATIOS[$size]="${RATIOS[$size]:-} $ratio"
    printf '%-5s %-5s %11s %9s %8s %11s %9s %8s %7s %s %s\n' "$size" "$r" "$s_rps" "$s_p99" \
      "$s_cpu" "$n_rps" "$n_p99" "$n_cpu" "$ratio" "${s_err:+seda:$s_err}" "${n_err:+nginx:$n_err}"
  done
done
for size in 1k 10k; do
  med=$(tr ' ' '\n' <<<"${RATIOS[$size]}" | grep . | sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}')
  echo "median ratio seda/nginx, $size: $med"
done

hwm() { awk '/^VmHWM/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }
seda_kb=$(hwm "$SEDA_PID")
nginx_kb=0
for p in "$NGINX_PID" $(pgrep -P "$NGINX_PID" || true); do nginx_kb=$((nginx_kb + $(hwm "$p"))); done
echo "peak RSS (VmHWM): seda ${seda_kb} kB, nginx ${nginx_kb} kB (master + workers)"
