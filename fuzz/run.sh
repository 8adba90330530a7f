#!/usr/bin/env bash
# Runs every fuzz target (libFuzzer) for SECONDS each (default 30) and prints executions per target.
#   fuzz/run.sh 30        # bounded run (CI)
#   fuzz/run.sh 3600      # by hand
# Builds with plain cargo and the instrumentation flags `cargo fuzz build -s none -a` passes, so
# neither CI nor a user has to install cargo-fuzz (compiling it took 1.5 of CI's 30 minutes);
# `cargo fuzz run` works on the same targets by hand (fuzz/README.md). No sanitizer (the project
# has no unsafe code); overflow checks and debug assertions are on, so arithmetic overflows are
# found. A crash leaves its input under fuzz/artifacts/TARGET/ and makes this script fail.
set -euo pipefail
cd "$(dirname "$0")"
seconds="${1:-30}"
# An explicit --target keeps the flags off build scripts and proc-macros, as cargo-fuzz does.
triple="$(rustc -vV | sed -n 's/^host: //p')"
export RUSTFLAGS="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing -Cdebug-assertions -Coverflow-checks"
# Its own target directory: other flags than the workspace's build.
export CARGO_TARGET_DIR="$PWD/target"
cargo build --release --target "$triple" --bins
# The targets are the [[bin]] entries of Cargo.toml.
targets="$(sed -n '/^\[\[bin\]\]/{n;s/^name = "\(.*\)"/\1/p}' Cargo.toml)"
status=0
for target in $targets; do
    mkdir -p "corpus/$target" "artifacts/$target"
    log="$(mktemp)"
    if "target/$triple/release/$target" "corpus/$target" \
        -artifact_prefix="artifacts/$target/" -max_total_time="$seconds" -print_final_stats=1 \
        -max_len=4096 -timeout=10 -rss_limit_mb=2048 >"$log" 2>&1; then
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
