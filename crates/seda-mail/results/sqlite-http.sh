#!/bin/bash
# Historical: `seda mail load` and `--front builtin` were removed; see the README (Figures).
# SQLite through the seda-http front end (the default of seda serve mail): fresh corpus, 16 users, each type alone.
S=/work/wt-mail/target/release/seda
rm -f /tmp/mailrun/final/bench2.db*
$S mail corpus --db /tmp/mailrun/final/bench2.db --users 200 --seed 1
$S serve mail --db /tmp/mailrun/final/bench2.db --addr 127.0.0.1:28751 > serve-http.log 2>&1 &
pid=$!
sleep 2
head -1 serve-http.log
$S mail load --addr 127.0.0.1:28751 --users 16 --corpus-users 200 --duration 30 --warmup 3
./cap.sh 127.0.0.1:28751 sqlite-seda-http
kill -INT $pid; wait $pid
tail -12 serve-http.log
