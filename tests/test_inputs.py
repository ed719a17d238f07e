"""What the NumPy face accepts: lists and scalars where the dtype is unambiguous, no 0-d operands,
integer window parameters, positive finite scales."""
import numpy as np
import pytest

import vkops


def test_python_lists_take_float32_and_int32():
    v, i = vkops.top_k([[3.0, 1.0, 2.0]], 2)
    assert v.dtype == np.float32 and np.array_equal(v, [[3.0, 2.0]]) and np.array_equal(i, [[0, 2]])
    y = vkops.slice([[1, 2, 3], [4, 5, 6]], [0, 0], [2, 3], [-1, 2])
    assert y.dtype == np.int32 and np.array_equal(y, [[4, 6], [1, 3]])


@pytest.mark.parametrize("x, msg", [([True, False], "booleans"), ([2**40, 1], "int32's range"),
                                    ([1e300, 1.0], "float32's range"), (["a", "b"], "list of numbers")])
@pytest.mark.host_only
def test_ambiguous_lists_say_what_to_pass(x, msg):
    with pytest.raises(vkops.ValidationError, match=msg):
        vkops.top_k(x, 1)


@pytest.mark.parametrize("x", [np.float32(3.0), np.array(2, np.int8), 5.0])
@pytest.mark.host_only
def test_zero_d_operands_are_rejected(x):
    with pytest.raises(vkops.ValidationError, match="1 to 8 dimensions.*reshape"):
        vkops.top_k(x, 1)
    with pytest.raises(vkops.ValidationError, match="1 to 8 dimensions"):
        vkops.slice(x, [0], [1], [1])


@pytest.mark.parametrize("field, value", [("input_window_offsets", [0, 0.5]), ("input_window_sizes", [2, 2.5]),
                                          ("input_window_strides", [1, True]), ("input_window_strides", [1, float("nan")])])
@pytest.mark.subgroup_free
def test_window_parameters_must_be_integers(field, value):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    args = {"input_window_offsets": [0, 0], "input_window_sizes": [3, 3], "input_window_strides": [1, 1]}
    args[field] = value
    with pytest.raises(vkops.ValidationError, match=f"Slice1Desc.{field} must hold integers"):
        vkops.slice(x, args["input_window_offsets"], args["input_window_sizes"], args["input_window_strides"])
    # integral floats are integers
    assert np.array_equal(vkops.slice(x, [0.0, 1.0], [3, 3], [1, 1]), x[:, 1:4])


@pytest.mark.parametrize("field", ["a_scale", "b_scale", "output_scale"])
@pytest.mark.parametrize("value", [0.0, -0.5, np.nan, np.inf, -np.inf])
@pytest.mark.host_only
def test_scales_must_be_positive_and_finite(field, value):
    a = np.ones((2, 3), np.int8)
    b = np.ones((3, 4), np.int8)
    s = {"a_scale": 0.1, "b_scale": 0.1, "output_scale": 1.0}
    s[field] = value
    with pytest.raises(vkops.ValidationError, match=f"QuantizedLinearMatMulDesc.{field} must be finite and > 0"):
        vkops.quantized_linear_matmul(a, s["a_scale"], None, b, s["b_scale"], None, s["output_scale"], None)
    per_column = np.full(4, 0.1, np.float32)
    per_column[2] = value
    with pytest.raises(vkops.ValidationError, match=r"b_scale must be finite and > 0; got .* at index \(2,\)"):
        vkops.quantized_linear_matmul(a, 0.1, None, b, per_column, None, 1.0, None)
