#!/usr/bin/env bash
# Runs a command on the lent GPU machine (no registry, no Vulkan loader there): unpack the loader
# debs and the kp wheel that ../shared/tools/gpu-bundle.sh built into .gl/ and .whl/, then run "$@".
# Carry .gl, .whl and vkops/spv (built here by `make spv`) with the call.
set -e
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
exec "$@"
