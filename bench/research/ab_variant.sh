#!/usr/bin/env bash
# Research: save this tree's package as the bench/research/ab.sh side .var/NAME, its SPIR-V built from this tree's
# kernels/ as they are now (edit them, run this, then `git checkout kernels/`: commit your own kernel work first,
# or that checkout reverts it too). .var is ignored: carry it.
#   bash bench/research/ab_variant.sh epi32
set -eu
name=$1
rm -rf ".var/$name" && mkdir -p ".var/$name"
cp -r vkops ".var/$name/" && rm -rf ".var/$name/vkops/spv"
.venv/bin/python kernels/build.py --out ".var/$name/vkops/spv" >/dev/null
echo ".var/$name: $(ls ".var/$name/vkops/spv" | wc -l) SPIR-V modules"
