#!/usr/bin/env bash
# Research: the same `vkops bench --op top_k` cases with this tree's kernels ("new", with torch) and a
# saved copy's (.old: "old"), one process each, results under $OUT/new and $OUT/old. Make .old from the
# commit to compare against (an ignored folder; carry it with .gl, .whl and vkops/spv):
#   git worktree add /tmp/oldwt REV && mkdir -p .old && cp -r /tmp/oldwt/vkops .old/ && rm -rf .old/vkops/spv \
#     && .venv/bin/python /tmp/oldwt/kernels/build.py --out .old/vkops/spv && git worktree remove --force /tmp/oldwt
# then on the GPU host: bash bench/gpu.sh bash bench/ab.sh "--preset paper --k 1" "--preset llm --k 50"
set -u
run() {  # side, bench arguments...
  local side=$1; shift
  if [ "$side" = old ]; then pushd .old >/dev/null; fi
  VKOPS_NO_VALIDATION=1 python3 -m vkops bench --op top_k --no-progress --out "$OUT/$side" "$@" 2>&1 \
    | grep -v "^Warn" | grep "verified\|FAIL\|rror" | tail -60
  if [ "$side" = old ]; then popd >/dev/null; fi
}
mkdir -p "$OUT/new" "$OUT/old"
for args in "$@"; do
  run new $args --against torch
  run old $args --against none
done
