#!/usr/bin/env bash
# A retry storm on the e-mail service: users that ignore `Retry-After` and resend at once, with
# and without the server's cap on refusals a second; writes its section of docs/benchmarks.md.
#
#   bench/mail-retry-storm.sh [SECONDS] [USERS]
#
# `seda serve mail` (SQLite, 100 seeded users) runs on core 0 on an emulated processor of one
# core, so its capacity is stated before the run: about 484 requests a second on the user
# model's mix (the lab's `mail::MailCapacity`); each request-type stage has our controller
# (`response_time_tuned`, p90 target 0.5 s), as in the lab's `mail-spike`. `seda load
# --workload mail` runs on core 1: USERS (1024, WC03's largest load) e-mail users with 10 ms
# of think time that resend at once on a 503 (`--backoff 0s`, no `--honor-retry-after`). Rows:
#   - the server's default cap on refusals answered at once (`--refusals-per-s`, 5,000);
#   - no server-wide cap (`--refusals-per-s 0`): each connection's own policy only;
#   - the reference: the same users waiting 100 ms after a 503 (default cap).
# For each, a fresh server, 3 s of warm-up, then SECONDS (10) measured: goodput (replies within
# the 500 ms target per second, over the stated capacity: the mix a storm admits is not the
# user model's, so the ratio is approximate), p90 of the replies, refusals a second, errors and
# timeouts, and the server's CPU (user + system, seconds a second). All figures come from one
# run; they move with other load on the machine (the load average is printed).
#
# Env: SEDA_BIN (default: cargo build --release -p seda-cli), OUT (default docs/benchmarks.md,
# whose section between the mail-retry-storm markers is replaced; `-` for stdout only).
set -euo pipefail
DUR=${1:-10}
USERS=${2:-1024}
WARMUP=3
THINK=10ms
BACKOFF=100ms
TARGET_S=0.5
CAPACITY=484
HERE=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-$HERE/docs/benchmarks.md}
[ "$(nproc)" -ge 2 ] || { echo "needs 2 cores (server on core 0, generator on core 1)"; exit 1; }
# shellcheck source=bench/lib.sh
. "$HERE/bench/lib.sh"
seda_bin
HZ=$(getconf CLK_TCK)

for kind in login list_folders list_messages show_message delete refile search; do
  printf '[stages."mail.%s".admission]\nkind = "response_time_tuned"\ntarget_s = %s\n\n' \
    "$kind" "$TARGET_S"
done > "$TMP/ours.toml"

# row LABEL REFUSALS_PER_S LOAD_ARGS...: one row of the table
row() {
  local label=$1 cap=$2 port server a b
  shift 2
  port=$(free_port)
  taskset -c 0 "$SEDA_BIN" serve mail --db "$TMP/mail.db" --seed-users 100 \
    --config "$TMP/ours.toml" --cores 1 --addr "127.0.0.1:$port" --admin off \
    --refusals-per-s "$cap" > "$TMP/serve.log" 2>&1 &
  server=$!; PIDS+=("$server")
  wait_up "http://127.0.0.1:$port/login"
  local load=(load --workload mail -c "$USERS" --think "$THINK" --no-progress --json "$@"
    "http://127.0.0.1:$port/")
  taskset -c 1 "$SEDA_BIN" "${load[@]}" -d "${WARMUP}s" > /dev/null
  a=$(cpu_ticks "$server")
  taskset -c 1 "$SEDA_BIN" "${load[@]}" -d "${DUR}s" --goodput-target "${TARGET_S}s" \
    > "$TMP/load.json"
  b=$(cpu_ticks "$server")
  kill "$server"; wait "$server" 2>/dev/null || true
  python3 - "$TMP/load.json" "$label" "$CAPACITY" "$((b - a))" "$HZ" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))["summary"]
label, cap, ticks, hz = sys.argv[2], float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
secs = s["duration_s"]
print(
    f"| {label} | {s['goodput_per_s'] / cap:.3f} | {s['latency']['p90_ms']:.0f} "
    f"| {s['rejected'] / secs:.0f} | {s['errors'] + s['timeouts']} | {ticks / hz / secs:.3f} |"
)
PY
}

LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
ROWS=$TMP/rows.md
row "resend at once, server cap 5000/s (default)" 5000 --backoff 0s | tee -a "$ROWS"
row "resend at once, no server cap" 0 --backoff 0s | tee -a "$ROWS"
row "users wait ${BACKOFF} after a 503 (reference)" 5000 --backoff "$BACKOFF" | tee -a "$ROWS"
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)

{
  echo "<!-- mail-retry-storm:begin -->"
  echo "## A retry storm on the e-mail service"
  echo
  generated_by "bench/mail-retry-storm.sh $DUR $USERS" "$LOAD_BEFORE" "$LOAD_AFTER"
  echo
  echo "$USERS e-mail users (\`seda load --workload mail\`, think $THINK, core 1) that resend at"
  echo "once on a 503, against \`seda serve mail --cores 1\` (core 0; capacity about $CAPACITY"
  echo "requests/s by design on the user model's mix; per-type \`response_time_tuned\`, p90"
  echo "target ${TARGET_S} s). Goodput: replies within the target per second over that capacity"
  echo "(approximate: a storm admits another mix); p90 of the replies; refusals (503s) per"
  echo "second; errors and timeouts at the client; the server's CPU, seconds per second."
  echo "${DUR} s measured per row after ${WARMUP} s of warm-up."
  echo
  echo "| users, server's refusal cap | goodput / capacity | p90 ms | refusals/s | errors | server CPU s/s |"
  echo "|---|---|---|---|---|---|"
  cat "$ROWS"
  echo "<!-- mail-retry-storm:end -->"
} > "$TMP/section.md"

write_section mail-retry-storm "$TMP/section.md" "$OUT"
