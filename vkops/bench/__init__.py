"""Benchmarks as a package: `python -m vkops bench`, `report` and `info` (vkops/cli.py dispatches).

- `timing`    the one timing method: Vulkan timestamps after a clock warm-up, rounds until two agree
- `cases`     a case (op, shape, dtype, params) and the rules its options follow
- `specs`     per operator: inputs, the vkops call, the check against vkops.reference, work done
- `baselines` torch (CUDA), NumPy and ONNX Runtime (CPU) doing the same operator call
- `presets`   the shape sweeps: small (a CPU driver), paper (docs/performance/'s tables), llm
- `runner`    the sweep: progress on stderr, Ctrl-C keeps the rows, one JSON document per run
- `schema`    that document's JSON Schema, and a validator that needs no package
- `report`    Markdown and PNG plots from one or more result documents
- `info`      the devices, the kp build, the SPIR-V set and the baselines this machine has

Nothing here is imported by `import vkops`; torch, onnxruntime, matplotlib and tqdm are optional
(`pip install vkops[bench]`) and a missing one is reported, not fatal.

May import: the package face `vkops`, `vkops.ops`, `vkops.runtime`, `vkops.reference`, drivers, vkinfo
and the pure modules; never `vkops.cli`, `vkops.onnx`, `vkops.demo`. Only `vkops.cli` imports this
package, and nothing in vkops imports the repository's bench/ folder (its scripts import this package,
not the reverse). (tests/test_layers.py checks it.)
"""
