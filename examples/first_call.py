"""One call of each operator on the default Vulkan device, checked against NumPy: the first thing to run
after `pip install` (`python examples/first_call.py`; `python -m vkops info` says which device and driver)."""
import numpy as np

import vkops
from vkops import reference as ref

rng = np.random.default_rng(0)
print(vkops.Device())

x = rng.standard_normal((64, 32000)).astype(np.float32)            # 64 vocabulary rows, K = 50
v, i = vkops.top_k(x, 50)
rv, ri = ref.top_k1(x, 50, 1)
assert np.array_equal(v, rv) and np.array_equal(i, ri)
print("top_k     64x32000 float32, K=50: equal to NumPy")

s = rng.standard_normal((8, 512, 512)).astype(np.float16)
y = vkops.slice(s, (1, 0, 3), (6, 512, 500), (2, -1, 3))
assert np.array_equal(y, ref.slice1(s, (1, 0, 3), (6, 512, 500), (2, -1, 3)))
print("slice     8x512x512 float16, strides (2, -1, 3): equal to NumPy")

a, b = rng.integers(-128, 128, (256, 1024), np.int8), rng.integers(-128, 128, (1024, 768), np.int8)
q = vkops.quantized_linear_matmul(a, 0.01, np.int8(2), b, 0.02, np.int8(-1), 0.5, np.int8(3))
assert np.array_equal(q, ref.quantized_linear_matmul(a, 0.01, np.int8(2), b, 0.02, np.int8(-1), 0.5, np.int8(3)))
print("qlmm      256x1024 @ 1024x768 int8, zero points: equal to NumPy")
