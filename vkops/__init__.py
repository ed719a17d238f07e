"""vkops: DirectML operators as hand-written Vulkan compute shaders, dispatched through Kompute.

Descriptors validate without a device; `vkops.runtime` is the only module that imports kp.
"""
from .dtypes import DataType
from .errors import DeviceLimitError, DeviceMemoryError, ValidationError
from .limits import Limits
from .ops.qlmm import QuantizedLinearMatMulDesc
from .ops.qlmm_face import quantized_linear_matmul
from .ops.slice1 import Slice1Desc, slice
from .ops.top_k1 import AxisDirection, TopK1Desc, top_k
from .plan import Plan
from .runtime import Batch, Device, Graph, DeviceTensor, devices, to_device
from .tensor import TensorDesc

__version__ = "0.1.0"

__all__ = ["DataType", "DeviceLimitError", "DeviceMemoryError", "ValidationError", "TensorDesc", "Slice1Desc", "slice",
           "QuantizedLinearMatMulDesc", "quantized_linear_matmul",
           "AxisDirection", "TopK1Desc", "top_k",
           "Batch", "Device", "Graph", "DeviceTensor", "devices", "to_device", "Limits", "Plan"]
