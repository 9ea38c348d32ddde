#!/bin/bash
# usage: history-rounds.sh ROUNDS TARGET TOOL ARGS GITCMD BIN...   (interleaved: each round runs every BIN once, then git)
rounds=$1 target=$2 tool=$3 args=$4 gitcmd=$5; shift 5
for r in $(seq $rounds); do
  for bin in "$@"; do
    SETTLE=2 python3 /tmp/history-drive.py $bin /tmp/history-ripgrep $target $tool "$args" | sed "s|^|$(basename $bin) |"
  done
  (cd $target && eval "perf stat -e task-clock -x, -o /tmp/history-perfstat.txt $gitcmd" >/dev/null 2>&1; echo "git cpu_ms=$(grep task-clock /tmp/history-perfstat.txt | cut -d, -f1)")
done
