"""DML_TOP_K1: one job a module.

- `desc`: the descriptor and its rules (`TopK1Desc.validate()`, `AxisDirection`, `MAX_AXIS_LENGTH`, `output_descs`)
- `tuning`: every planning knob as data (`TopK1Tuning`, `DEFAULT`), part of each plan key
- `paths`: the path rule (which path a call takes on a device, with its buffer, workgroup and chunks) and
  the shared-memory budgets of each kernel
- `lowering`: `plan()` (libvkops' planner by default, `python_plan()` the Python one) and `lower()`, the push-constant mirrors `PUSH` (one per kernels/top_k1/*.comp)
- `face`: the NumPy face (`top_k`, and `_top_k` with the path switches tests and benchmarks use)

May import: the pure modules (errors, dtypes, tensor, limits, plan), `vkops.ops` (`slice1` for packing,
`face_runtime`), `vkops.native` (the default plan) and `vkops.runtime` (the NumPy face, at call time through `face_runtime()`). Everything but
`face` is pure: no device.
"""
from . import paths
from .desc import MAX_AXIS_LENGTH, AxisDirection, TopK1Desc, output_descs
from .face import _direction, _top_k, top_k
from .lowering import MAX_OTHER_DIMS, PUSH, SENT_IDX, algorithm, lower, plan, python_plan
from .paths import Path
from .tuning import DEFAULT, TopK1Tuning

__all__ = ["paths", "MAX_AXIS_LENGTH", "AxisDirection", "TopK1Desc", "output_descs", "top_k", "MAX_OTHER_DIMS",
           "PUSH", "SENT_IDX", "algorithm", "lower", "plan", "python_plan", "Path", "DEFAULT",
           "TopK1Tuning"]
