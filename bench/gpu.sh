#!/usr/bin/env bash
# Runs a command on a GPU host that has Python 3.10-3.13, numpy and the GPU driver but no registry, no
# Vulkan loader and no compiler: carry `dist` (`make wheels` here builds it) with the call. The wheel for
# the host's Python is installed into /tmp/site, and the tree's own Python code runs on the wheel's binary
# parts: its patched kp as the module `kp` and its Vulkan loader as libvulkan.so.1 (so saved copies of older
# trees, bench/research/ab.sh's sides, run too), and uncommitted changes to vkops/ are measured without new wheels.
# The tree's vkops/spv is used when carried, else the wheel's. The driver is found as vkops finds it (a
# headless NVIDIA driver included): no VK_DRIVER_FILES needed.
set -e
py=${PYTHON:-python3}
tag=$($py -c 'import sys; print("cp%d%d" % sys.version_info[:2])')
whl=$(ls -t dist/vkops-*-"$tag"-*manylinux*.whl 2>/dev/null | head -1)
[ -n "$whl" ] || { echo "gpu.sh: no dist/vkops-*-$tag-*manylinux*.whl: run \`make wheels\` and carry dist" >&2; exit 1; }
$py -m pip install -q --no-index --no-deps --target /tmp/site "$whl"
mkdir -p /tmp/vkops-loader && ln -sfn /tmp/site/vkops.libs/libvulkan-*.so* /tmp/vkops-loader/libvulkan.so.1
[ -f vkops/spv/manifest.json ] || cp -r /tmp/site/vkops/spv vkops/
export PYTHONPATH=$PWD:/tmp/site/vkops/_vendor LD_LIBRARY_PATH=/tmp/vkops-loader:${LD_LIBRARY_PATH:-} PYTHONUNBUFFERED=1
exec "$@"
