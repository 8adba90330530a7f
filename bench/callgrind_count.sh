# Sourced by the static benchmarks (bench/static-callgrind.sh, bench/static-benchmarks.sh): the
# counted part of a server's run under callgrind.
#
#   callgrind_count PID URL REQUESTS DUMP AB_OUT
#
# 2000 warm-up requests (`ab -k -c64` on core 1), counting zeroed, REQUESTS requests (ab's
# report to AB_OUT), counting dumped; waits for DUMP to be written, then stops the server
# (PID: valgrind's; taskset execs it). Fails if no dump appeared.
callgrind_count() {
  local pid=$1 url=$2 n=$3 dump=$4 ab_out=$5
  taskset -c 1 ab -q -k -c 64 -n 2000 "$url" > /dev/null 2>&1
  callgrind_control -z "$pid" > /dev/null 2>&1
  taskset -c 1 ab -q -k -c 64 -n "$n" "$url" > "$ab_out"
  callgrind_control -d "$pid" > /dev/null 2>&1
  for _ in $(seq 300); do
    grep -q '^totals:' "$dump" 2>/dev/null && break
    sleep 0.1
  done
  kill "$pid" 2>/dev/null || true
  grep -q '^totals:' "$dump" || { echo "no callgrind dump $dump" >&2; return 1; }
}
