#!/usr/bin/env bash
# A retry storm through `seda proxy`, under each refusal policy, in one run; writes its section
# of docs/benchmarks.md.
#
#   bench/retry-storm.sh [SECONDS] [POLICY...]
#
# The upstream is gunicorn (Debian's, 4 sync workers), as the lab's `proxy-spike` runs it, with
# a designed capacity: each page renders 200 rows of HTML (the lab's page, from rows in memory
# rather than PostgreSQL) and holds its worker until HOLD_S (40 ms) since it began, so the
# service answers 4 / 0.04 = 100 pages a second whatever else the machine runs, as long as its
# workers get the CPU for the page's real work. gunicorn and `seda proxy --target-ms 500` are
# pinned to core 0, sharing it as a proxy and its service share a machine; `seda load` runs
# on core 1: USERS (200) closed users with no think time and no back-off (a 503 is followed by
# the next request at once, on the same connection, unless the proxy closes it).
#
# For each policy (default: none delay:10ms delay:50ms close:1 close:8 cap:10 cap:50), a fresh
# proxy and upstream, 2 s of warm-up, then SECONDS (10) measured:
#   - goodput / capacity: replies within the 500 ms target per second, over 100/s;
#   - p90 of the replies (ms);
#   - refusals (503s) per second, and the errors and timeouts the clients saw;
#   - the proxy's and the upstream's CPU, seconds per second (user + system from /proc,
#     all threads, the whole process tree for gunicorn), over warm-up and run.
# Three last rows run policy `none` with clients that help, or make it worse: users that wait
# BACKOFF (100 ms) after a 503 (what the service keeps when its clients behave, the figure a
# policy aims at); users that retry a refused request 3 times at once (`seda load --retries
# 3`); and the same users throttling themselves (Google SRE's adaptive throttling, `--throttle`)
# with their retries in a 10% budget (`--retry-budget 0.1`).
# All figures come from one run; they move with other load on the machine (the load average
# is printed).
#
# Env: SEDA_BIN (default: cargo build --release -p seda-cli, in CARGO_TARGET_DIR or target/),
# OUT (default docs/benchmarks.md, whose section between the retry-storm markers is replaced;
# `-` for stdout only), USERS (200), PROXY_ARGS (more flags for every `seda proxy`, e.g.
# `--refusals-per-s 0` to turn off its cap on refusals across connections).
set -euo pipefail
DUR=${1:-10}
shift || true
POLICIES=("$@")
[ ${#POLICIES[@]} -gt 0 ] || POLICIES=(none delay:10ms delay:50ms close:1 close:8 cap:10 cap:50)
USERS=${USERS:-200}
WARMUP=2
BACKOFF=100ms
HOLD_S=0.04
WORKERS=4
TARGET_MS=500
HERE=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-$HERE/docs/benchmarks.md}
ARGS="$DUR ${POLICIES[*]}"

need=()
command -v gunicorn >/dev/null || need+=(gunicorn)
command -v taskset >/dev/null || need+=(util-linux)
if [ ${#need[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get install -y "${need[@]}"
fi
[ "$(nproc)" -ge 2 ] || { echo "needs 2 cores (servers on core 0, generator on core 1)"; exit 1; }

# shellcheck source=bench/lib.sh
. "$HERE/bench/lib.sh"
seda_bin
HZ=$(getconf CLK_TCK)
# User + system ticks of a process tree (every thread of every process).
tree_ticks() { cpu_ticks "$1" $(pgrep -P "$1" || true); }

cat > "$TMP/page.py" <<'PY'
# The lab's proxy-spike page (crates/seda-lab/src/peers/gunicorn.rs) without its database: a
# page of 200 rows rendered as HTML, the worker held until HOLD_S since the page began.
import hashlib
import html
import os
import random
import time

HOLD_S = float(os.environ["HOLD_S"])
ROWS = [(i, "item %d" % i, hashlib.md5(str(i).encode()).hexdigest() * 8) for i in range(1, 1001)]
PAGE = 200


def app(environ, start_response):
    began = time.monotonic()
    start = random.randrange(len(ROWS) - PAGE)
    cells = "".join(
        f"<tr><td>{i}</td><td>{html.escape(t)}</td><td>{html.escape(b)}</td></tr>"
        for i, t, b in ROWS[start:start + PAGE]
    )
    body = f"<html><body><table>{cells}</table></body></html>".encode()
    rest = HOLD_S - (time.monotonic() - began)
    if rest > 0:
        time.sleep(rest)
    start_response(
        "200 OK", [("Content-Type", "text/html"), ("Content-Length", str(len(body)))]
    )
    return [body]
PY
CAPACITY=$(awk -v w="$WORKERS" -v h="$HOLD_S" 'BEGIN {print w / h}')

# run POLICY [LABEL LOAD_ARGS...]: one row of the table
run() {
  local policy=$1 label=${2:-$1} up px gun proxy a_p a_u b_p b_u secs
  shift; shift || true
  up=$(free_port); px=$(free_port)
  HOLD_S=$HOLD_S taskset -c 0 gunicorn --workers "$WORKERS" --worker-class sync \
    --bind "127.0.0.1:$up" --backlog 2048 --chdir "$TMP" page:app > "$TMP/gunicorn.log" 2>&1 &
  gun=$!; PIDS+=("$gun")
  taskset -c 0 "$SEDA_BIN" proxy --listen "127.0.0.1:$px" --upstream "http://127.0.0.1:$up" \
    --target-ms "$TARGET_MS" --refusal "$policy" --admin off ${PROXY_ARGS:-} \
    > "$TMP/proxy.log" 2>&1 &
  proxy=$!; PIDS+=("$proxy")
  wait_up "http://127.0.0.1:$up/"; wait_up "http://127.0.0.1:$px/"
  a_p=$(tree_ticks "$proxy"); a_u=$(tree_ticks "$gun")
  taskset -c 1 "$SEDA_BIN" load "http://127.0.0.1:$px/" -c "$USERS" -d "${DUR}s" \
    --warmup "${WARMUP}s" --goodput-target "${TARGET_MS}ms" --no-progress --json "$@" \
    > "$TMP/load.json"
  b_p=$(tree_ticks "$proxy"); b_u=$(tree_ticks "$gun")
  kill "$proxy" "$gun"; wait "$proxy" "$gun" 2>/dev/null || true
  secs=$((DUR + WARMUP))
  python3 - "$TMP/load.json" "$label" "$CAPACITY" "$((b_p - a_p))" "$((b_u - a_u))" "$HZ" "$secs" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
s = report["summary"]
policy, cap = sys.argv[2], float(sys.argv[3])
proxy_ticks, up_ticks, hz, secs = int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]), float(sys.argv[7])
errors = s["errors"] + s["timeouts"]
print(
    f"| {policy} | {s['goodput_per_s'] / cap:.3f} | {s['latency']['p90_ms']:.0f} "
    f"| {s['rejected'] / s['duration_s']:.0f} | {errors} "
    f"| {proxy_ticks / hz / secs:.3f} | {up_ticks / hz / secs:.3f} "
    f"| {s['retries'] / max(s['sent'], 1):.3f} |"
)
PY
}

LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
ROWS=$TMP/rows.md
for p in "${POLICIES[@]}"; do
  run "$p" | tee -a "$ROWS"
done
# The reference: the same users, had they backed off (no policy needed then).
run none "none, users back off ${BACKOFF}" --backoff "$BACKOFF" | tee -a "$ROWS"
# Clients that retry at once, then the same clients throttled with a retry budget.
run none "none, users retry 3 x at once" --retries 3 | tee -a "$ROWS"
run none "none, users retry 3 x in a 10% budget, throttled" --retries 3 --retry-budget 0.1 \
  --throttle | tee -a "$ROWS"
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)

{
  echo "<!-- retry-storm:begin -->"
  echo "## A retry storm through the proxy, by refusal policy"
  echo
  generated_by "bench/retry-storm.sh $ARGS" "$LOAD_BEFORE" "$LOAD_AFTER"
  echo
  echo "$USERS closed users with no back-off (\`seda load -c $USERS\`, core 1) through \`seda proxy"
  echo "--target-ms $TARGET_MS --refusal POLICY\` to gunicorn ($WORKERS sync workers, each page holding"
  echo "its worker ${HOLD_S} s: a capacity of $CAPACITY pages/s), both on core 0. Goodput: replies"
  echo "within ${TARGET_MS} ms per second over the capacity; p90 of the replies; refusals (503s) per"
  echo "second; errors and timeouts at the client; CPU seconds per second of the proxy and of"
  echo "gunicorn's processes. ${DUR} s measured per policy after ${WARMUP} s of warm-up. The"
  echo "last rows are references with policy \`none\`: users that wait ${BACKOFF} after a 503;"
  echo "users that retry a refused request 3 times at once (\`seda load --retries 3\`); and"
  echo "the same users throttled (\`--throttle\`, Google SRE's) with a 10% retry budget"
  echo "(\`--retry-budget 0.1\`). Retries / request: retries sent over requests sent. Every row"
  echo "also has the proxy's cap on refusals answered at once across its connections"
  echo "(\`refusals_per_s\`, default 5,000 a second)$([ -n "${PROXY_ARGS:-}" ] && echo "; proxy flags: \`$PROXY_ARGS\`")."
  echo
  echo "| refusal policy | goodput / capacity | p90 ms | refusals/s | errors | proxy CPU s/s | upstream CPU s/s | retries / request |"
  echo "|---|---|---|---|---|---|---|---|"
  cat "$ROWS"
  echo "<!-- retry-storm:end -->"
} > "$TMP/section.md"

write_section retry-storm "$TMP/section.md" "$OUT"
