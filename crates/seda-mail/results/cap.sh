#!/bin/bash
# Historical: `seda mail load` and `--front builtin` were removed; see the README (Figures).
# usage: cap.sh ADDR LABEL  -- each type alone, 32 users, no think time, 10 s after 2 s warm-up
for t in login list_folders list_messages show_message refile search delete; do
  /work/wt-mail/target/release/seda mail load --addr $1 --users 32 --think-ms 0 --corpus-users 200 --duration 10 --warmup 2 --only $t > cap-$2-$t.txt 2>&1
  grep -E "^$t " cap-$2-$t.txt | sed "s/^/$2 /"
done
