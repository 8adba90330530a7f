#!/bin/bash
# Historical: `seda mail load` and `--front builtin` were removed; see the README (Figures).
# One consistent pass with the final binary: per backend, fresh corpus, 16 users, then each type alone.
S=/work/wt-mail/target/release/seda
run() { # label db port
  echo "== $1"
  $S mail corpus --db "$2" --users 200 --seed 1 --prefix bench_
  $S serve mail --db "$2" --prefix bench_ --addr 127.0.0.1:$3 > serve-$1.log 2>&1 &
  pid=$!
  sleep 2
  $S mail load --addr 127.0.0.1:$3 --users 16 --corpus-users 200 --duration 30 --warmup 3
  ./cap.sh 127.0.0.1:$3 $1
  kill -INT $pid; wait $pid
  cat serve-$1.log
}
rm -f /tmp/mailrun/final/bench.db*
run sqlite /tmp/mailrun/final/bench.db 28741
run postgres postgres://postgres@127.0.0.1:5432/test 28742
run mysql mysql://root@127.0.0.1:3306/test 28743
