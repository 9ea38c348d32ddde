#!/bin/bash
# Interleaved CPU (user+sys) of old/new sidecar `call` vs git, big-history fixture. Output: round variant kind user sys wall load
REPO=/tmp/stack-fx/big-history-index/repo
ROUNDS=${ROUNDS:-10}
export FLUXGIT_MCP_ALLOWED_ROOTS=/tmp/stack-fx FLUXGIT_MCP_AUDIT_DISABLED=1 FLUXGIT_MCP_PRESENCE_DISABLED=1 FLUXGIT_MCP_AGENT_DETECTION_DISABLED=1 FLUXGIT_ENGINE_WATCH_DISABLED=1
ARGS="{\"repoPath\": \"$REPO\"}"
T=/tmp/stack-work/t.$$
t() { /usr/bin/time -f '%U %S %e' -o $T "$@" > /dev/null 2>/dev/null; cat $T; }
load() { cut -d' ' -f1 /proc/loadavg; }
for r in $(seq $ROUNDS); do
  set -- ${BINS:-old new}; if (( r % 2 )); then order="$1 $2"; else order="$2 $1"; fi
  for b in $order; do
    bin=/tmp/stack-work/$b-sidecar
    rd=/tmp/stack-work/run-$b
    for tool in repo.branchStack repo.refs; do
      rm -rf $rd
      echo "$r $b $tool-fresh $(FLUXGIT_RUN_DIR=$rd t $bin call $tool "$ARGS") $(load)"
      echo "$r $b $tool-second $(FLUXGIT_RUN_DIR=$rd t $bin call $tool "$ARGS") $(load)"
    done
    echo "$r $b trivial $(FLUXGIT_RUN_DIR=$rd t $bin call worktree.list "$ARGS") $(load)"
  done
  cd $REPO
  echo "$r git branchStack $(t git for-each-ref '--format=%(refname:short) %(objectname:short) %(committerdate:iso-strict) %(upstream:short) %(upstream:track) %(ahead-behind:HEAD)' refs/heads) $(load)"
  echo "$r git refs $(t git for-each-ref '--format=%(refname) %(objectname) %(upstream:short) %(upstream:track)') $(load)"
  cd /tmp
done
