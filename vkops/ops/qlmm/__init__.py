"""DML_QUANTIZED_LINEAR_MATRIX_MULTIPLY (ONNX QLinearMatMul): one job a module.

- `desc`: the descriptor and its rules (`QuantizedLinearMatMulDesc.validate()`, `MAX_K`)
- `tuning`: every planning knob as data (`QlmmTuning`, `DEFAULT`), part of each plan key
- `rule`: the kernel rule (`choose_kernel`, `AUTO_RULE` tried in order; `Product`, `Choice`, `choose`)
- `lowering`: `plan()` (libvkops' planner by default, `python_plan()` the Python one) and `lower()`, the push-constant mirror `QLMM_PUSH` and the portable kernel's sizes
- `coopmat`, `stream`, `dot`, `gemv`: each kernel's shape rules, tiles, specialization and split-K (and
  `coopmat` which devices qualify, the self-check's remembered verdict and `device_limits`)
- `selfcheck`: the cooperative-matrix self-check (small products on the device against the oracle)
- `face`, `args`: the NumPy face (`quantized_linear_matmul`) and its argument normalisation

May import: the pure modules (errors, dtypes, tensor, limits, plan, inputs), `vkops.ops` (`slice1` for
packing, `face_runtime`), `vkops.native` (the default plan), `vkops.reference` (the self-check's oracle) and `vkops.runtime` (the NumPy face
and the self-check, at call time). Everything but `face`, `args` and `selfcheck` is pure: no device. A tuning module and a rule function of this shape are the pattern for the other operators.
"""
from .rule import AUTO_RULE, KERNELS, Choice, Facts, Product, choose, choose_kernel, foldable, product
from .coopmat import device_limits
from .desc import MAX_K, QUANT_TYPES, QuantizedLinearMatMulDesc
from .face import quantized_linear_matmul
from .lowering import (F_A_SIGNED, F_B_COLS, F_B_SIGNED, F_O_SIGNED, F_SA_ROW, F_SB_COL, F_SO_ROW, F_ZA_ROW, F_ZB_COL,
                    F_ZO_ROW, PORTABLE_BN, PORTABLE_WG, QLMM_PUSH, lower, plan, python_plan)
from .tuning import DEFAULT, QlmmTuning

__all__ = ["AUTO_RULE", "KERNELS", "Choice", "Facts", "Product", "choose", "choose_kernel", "foldable", "product",
           "device_limits", "MAX_K", "QUANT_TYPES", "QuantizedLinearMatMulDesc", "quantized_linear_matmul",
           "F_A_SIGNED", "F_B_COLS", "F_B_SIGNED", "F_O_SIGNED", "F_SA_ROW", "F_SB_COL", "F_SO_ROW", "F_ZA_ROW",
           "F_ZB_COL", "F_ZO_ROW", "PORTABLE_BN", "PORTABLE_WG", "QLMM_PUSH", "lower", "plan", "python_plan",
           "DEFAULT", "QlmmTuning"]
