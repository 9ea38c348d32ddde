#!/bin/bash
# callgrind instruction counts of one `call` per case: fresh run dir, then second start on it.
REPO=/tmp/stack-fx/big-history-index/repo
export FLUXGIT_MCP_ALLOWED_ROOTS=/tmp/stack-fx FLUXGIT_MCP_AUDIT_DISABLED=1 FLUXGIT_MCP_PRESENCE_DISABLED=1 FLUXGIT_MCP_AGENT_DETECTION_DISABLED=1 FLUXGIT_ENGINE_WATCH_DISABLED=1
ARGS="{\"repoPath\": \"$REPO\"}"
OUT=${OUT:-/tmp/stack-work/cg}
mkdir -p $OUT
for b in ${BINS:-old new}; do
  bin=/tmp/stack-work/$b-sidecar; rd=/tmp/stack-work/cgrun-$b
  for tool in repo.branchStack ${TOOLS:-}; do
    rm -rf $rd
    for kind in fresh second; do
      FLUXGIT_RUN_DIR=$rd valgrind --tool=callgrind --trace-children=no --callgrind-out-file=$OUT/$b-$tool-$kind.out $bin call $tool "$ARGS" > /dev/null 2> $OUT/$b-$tool-$kind.err
      echo "$b $tool $kind $(grep -o 'Collected : [0-9]*' $OUT/$b-$tool-$kind.err | awk '{print $3}')"
    done
  done
  rm -rf $rd
  FLUXGIT_RUN_DIR=$rd valgrind --tool=callgrind --callgrind-out-file=$OUT/$b-trivial.out $bin call worktree.list "$ARGS" > /dev/null 2> $OUT/$b-trivial.err
  echo "$b trivial - $(grep -o 'Collected : [0-9]*' $OUT/$b-trivial.err | awk '{print $3}')"
done
cd $REPO
valgrind --tool=callgrind --callgrind-out-file=$OUT/git-branchStack.out git for-each-ref '--format=%(refname:short) %(objectname:short) %(committerdate:iso-strict) %(upstream:short) %(upstream:track) %(ahead-behind:HEAD)' refs/heads > /dev/null 2> $OUT/git.err
echo "git branchStack - $(grep -o 'Collected : [0-9]*' $OUT/git.err | awk '{print $3}')"
