"""vkops: DirectML operators as hand-written Vulkan compute shaders, dispatched through Kompute.

Descriptors validate without a device; `vkops.runtime` is the only module that imports kp.

This module is the public face: the operators' descriptors and NumPy-level functions (`vkops.ops`), the
runtime's Device, Batch and DeviceTensor, Plan, Limits, TensorDesc, DataType and the errors.
May import: the pure modules (errors, dtypes, tensor, limits, plan), `vkops.ops`, `vkops.runtime`; never
`vkops.bench` (loaded only by `python -m vkops bench/report/info`), `vkops.cli`, `vkops.onnx`, `vkops.demo`.

The layers, each importing only from itself and layers above it in this list (not all of them: the table
in tests/test_layers.py is exact, and checks every import; docs/architecture.md#import-direction):

    pure       errors, dtypes, tensor, limits, plan, inputs
    reference  the NumPy oracles (imports only the pure modules)
    native     vkops.native: libvkops' planner and host reads through ctypes (imports only the pure modules)
    platform   drivers, vkinfo (the Vulkan loader and device facts; no kp)
    runtime    vkops.runtime (the only code that imports kp, or the wheel's vkops._vendor; native for its reads)
    ops        vkops.ops (native for default plans; runtime at call time)
    face       vkops (this module)
    users      vkops.onnx, vkops.demo; bench: vkops.bench
    command    vkops.cli, vkops.__main__

Nothing in vkops imports the repository's bench/ folder or tests/.
"""
from .dtypes import DataType
from .errors import DeviceLimitError, DeviceMemoryError, NoDeviceError, ValidationError
from .limits import Limits
from .ops.qlmm import QuantizedLinearMatMulDesc
from .ops.qlmm import quantized_linear_matmul
from .ops.slice1 import Slice1Desc, slice
from .ops.top_k1 import AxisDirection, TopK1Desc, top_k
from .plan import Plan
from .runtime import Batch, Device, Graph, DeviceTensor, devices, to_device
from .tensor import TensorDesc

__version__ = "0.1.0"

__all__ = ["DataType", "DeviceLimitError", "DeviceMemoryError", "NoDeviceError", "ValidationError", "TensorDesc", "Slice1Desc", "slice",
           "QuantizedLinearMatMulDesc", "quantized_linear_matmul",
           "AxisDirection", "TopK1Desc", "top_k",
           "Batch", "Device", "Graph", "DeviceTensor", "devices", "to_device", "Limits", "Plan"]
