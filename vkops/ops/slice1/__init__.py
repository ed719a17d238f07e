"""DML_SLICE1: one job a module.

- `desc`: the descriptor and its rules (`Slice1Desc.validate()`, `window_ints`)
- `tuning`: the lowering's knobs as data (`Slice1Tuning`: WORKGROUP, WORDS_PER_THREAD; `DEFAULT`), part of each
  plan key
- `lowering`: `affine()`, `plan()` (libvkops' planner by default, `python_plan()` the Python one), `lower()`, `lower_packed()` and the push-constant mirror `SLICE_PUSH`; the
  choice of slice1.comp's three loops is the three branches of `lower()` (no separate rule module: it
  reads only the folded window's alignment, docs/tuning/slice1.md "Which loop runs where")
- `face`: the NumPy face (`slice`)

May import: the pure modules (errors, tensor, limits, plan), `vkops.native` (the default plan) and `vkops.runtime` (the NumPy face, at call
time through `vkops.ops.face_runtime()`). Everything but `face` is pure: no device. Other operators import
`lower_packed` from here to pack a strided view.
"""
from .desc import Slice1Desc, window_ints
from .face import slice
from .lowering import SLICE_PUSH, affine, lower, lower_packed, plan, python_plan
from .tuning import DEFAULT, Slice1Tuning

__all__ = ["Slice1Desc", "window_ints", "slice", "SLICE_PUSH", "affine", "lower", "lower_packed", "plan", "python_plan",
           "DEFAULT", "Slice1Tuning"]
