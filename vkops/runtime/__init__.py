"""The one layer that talks to kp (vkops' patched build of Kompute 0.9.0), one job a module:

- `device`    Device: facts, the kp manager and the features it enabled
- `memory`    caching allocator of device/staging buffers, DeviceTensor
- `pipelines` pipelines compiled once per kernel and specialization; the cache file on disk
- `submit`    Batch: recorded dispatches with barriers, run on reused sequences
- `execute`   runs a Plan (vkops/plan.py) in a batch: the one path of every operator call
- `plancache` the plans of earlier calls, by operator parameters and input descriptors
- `graph`     Graph: a batch captured once and re-submitted as one recorded kp sequence
- `call`      Call: one NumPy-face operator call through a batch
- `recipe`    a repeated small NumPy call's recipe: its buffers and kept recording, run again
- `_kp`       the kp import (patched build only) and Vulkan flag values

May import: the pure modules (errors, dtypes, tensor, limits, plan, inputs), `vkops.drivers` and
`vkops.vkinfo` (the loader, device facts), `vkops.native` (libvkops' reads of mapped device memory), kp
(here alone, through `_kp`). Never `vkops.ops` (an
operator reaches the runtime through `Call` and a Plan, never the reverse), `vkops.bench`,
`vkops.reference` or the package face `vkops`. (tests/test_layers.py checks it.)
"""
from .call import Call
from .device import Device, devices, to_device
from .graph import Graph
from .memory import DeviceTensor
from .submit import Batch

__all__ = ["Batch", "Call", "Graph", "Device", "DeviceTensor", "devices", "to_device"]
