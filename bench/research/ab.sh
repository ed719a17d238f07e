#!/usr/bin/env bash
# Research: the same `vkops bench --op top_k` cases with this tree's kernels ("new", with torch) and with
# each saved package copy: .old/ ("old") and every .var/NAME/ ("NAME"), one process each, results under
# $OUT/<side>. Make a copy from a commit (an ignored folder; carry it with dist and vkops/spv):
#   git worktree add /tmp/oldwt REV && mkdir -p .old && cp -r /tmp/oldwt/vkops .old/ && rm -rf .old/vkops/spv \
#     && .venv/bin/python /tmp/oldwt/kernels/build.py --out .old/vkops/spv && git worktree remove --force /tmp/oldwt
# or from an edited kernel: `bench/research/ab_variant.sh NAME` (this tree's package, its kernels/ edited in place).
# then on the GPU host: bash bench/gpu.sh bash bench/research/ab.sh "--preset paper --k 1" "--preset llm --k 50"
# (AB_SIDES="old epi32" runs only those saved sides beside new).
set -u
run() {  # side, directory, bench arguments...
  local side=$1 dir=$2; shift 2
  pushd "$dir" >/dev/null
  VKOPS_NO_VALIDATION=1 python3 -m vkops bench --op top_k --no-progress --out "$OUT/$side" "$@" 2>&1 \
    | grep -v "^Warn" | grep "verified\|FAIL\|rror" | tail -60
  popd >/dev/null
}
sides=()
[ -d .old/vkops ] && sides+=("old:.old")
for d in .var/*/; do [ -d "$d/vkops" ] && sides+=("$(basename "$d"):$d"); done
if [ -n "${AB_SIDES:-}" ]; then  # only these saved sides (names, space-separated), besides new
  keep=(); for s in "${sides[@]}"; do [[ " $AB_SIDES " == *" ${s%%:*} "* ]] && keep+=("$s"); done; sides=("${keep[@]}")
fi
for args in "$@"; do
  run new . $args --against torch
  for s in "${sides[@]}"; do run "${s%%:*}" "${s#*:}" $args --against none; done
done
