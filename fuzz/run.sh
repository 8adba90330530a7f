#!/usr/bin/env bash
# Runs every cargo-fuzz target for SECONDS each (default 30) and prints executions per target.
#   fuzz/run.sh 30        # bounded run (CI)
#   fuzz/run.sh 3600      # by hand
# Needs cargo-fuzz (`cargo install cargo-fuzz`). The machine has stable Rust only:
# RUSTC_BOOTSTRAP=1 lets it take libFuzzer's -Z flags. No sanitizer (the project has no unsafe
# code; overflow checks and debug assertions are on, so arithmetic overflows are found).
# A crash leaves its input under fuzz/artifacts/TARGET/ and makes this script fail.
set -euo pipefail
cd "$(dirname "$0")"
seconds="${1:-30}"
export RUSTC_BOOTSTRAP=1
flags=(-s none -a)
cargo fuzz build "${flags[@]}"
status=0
for target in $(cargo fuzz list); do
    mkdir -p "corpus/$target"
    log="$(mktemp)"
    if cargo fuzz run "${flags[@]}" "$target" "corpus/$target" -- \
        -max_total_time="$seconds" -print_final_stats=1 -max_len=4096 -timeout=10 -rss_limit_mb=2048 \
        >"$log" 2>&1; then
        verdict=ok
    else
        verdict=FAILED
        status=1
        tail -40 "$log"
    fi
    execs="$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || true)"
    if [ -z "$execs" ]; then
        execs="$(grep -oE '^#[0-9]+' "$log" | tail -1 | tr -d '#' || true)"
    fi
    printf 'fuzz %-14s %4ss  %12s execs  %s\n' "$target" "$seconds" "${execs:-?}" "$verdict"
    rm -f "$log"
done
exit $status
