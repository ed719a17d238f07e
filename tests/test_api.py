"""API manners: public signatures show only public parameters, every public callable says what it
does, and torch's habits (largest=, sorted=) and Python lists work as documented."""
import inspect

import numpy as np
import pytest

import vkops
import vkops.onnx
from vkops import reference


def _public(module):
    """(qualified name, object) for each name in module.__all__, and each public method, classmethod,
    staticmethod and property its classes define (inherited ones from vkops classes included)."""
    for name in module.__all__:
        obj = getattr(module, name)
        yield f"{module.__name__}.{name}", obj
        if not inspect.isclass(obj):
            continue
        for klass in obj.__mro__:
            if not klass.__module__.startswith("vkops"):
                continue
            for attr, v in vars(klass).items():
                if attr.startswith("_"):
                    continue
                if isinstance(v, (staticmethod, classmethod)):
                    v = v.__func__
                if isinstance(v, property) or inspect.isfunction(v):
                    yield f"{module.__name__}.{name}.{attr}", v


PUBLIC = list(_public(vkops)) + list(_public(vkops.onnx))


@pytest.mark.host_only
def test_the_audit_sees_the_api():
    names = {n for n, _ in PUBLIC}
    for n in ("vkops.top_k", "vkops.Device.batch", "vkops.Device.name", "vkops.Batch.run", "vkops.TensorDesc.rank",
              "vkops.DeviceTensor.numpy", "vkops.Plan.to_json", "vkops.onnx.VkopsRep.run"):
        assert n in names


@pytest.mark.parametrize("name, obj", PUBLIC, ids=[n for n, _ in PUBLIC])
@pytest.mark.host_only
def test_public_signatures_have_no_private_parameters(name, obj):
    f = obj.fget if isinstance(obj, property) else obj
    if not callable(f) or isinstance(f, type) and issubclass(f, BaseException):
        return
    try:
        sig = inspect.signature(f)
    except ValueError:  # enum classes and builtins
        return
    private = [p for p in sig.parameters if p.startswith("_")]
    assert not private, f"{name}{sig} shows private parameters {private}"


@pytest.mark.parametrize("name, obj", PUBLIC, ids=[n for n, _ in PUBLIC])
@pytest.mark.host_only
def test_public_callables_have_docstrings(name, obj):
    doc = obj.__doc__
    if inspect.isclass(obj) and doc and doc.startswith(obj.__name__ + "("):
        doc = None  # the signature dataclasses write when a class has no docstring
    assert doc and doc.strip(), f"{name} has no docstring"


@pytest.mark.host_only
def test_operator_docstrings_state_dtypes_ranges_outputs_and_errors():
    for f, words in ((vkops.top_k, ["float16", "uint8", "1 <= k", "UINT32", "ValidationError", "largest", "sorted"]),
                     (vkops.slice, ["float16", "uint8", "offsets + sizes", "ValidationError", "x's dtype"]),
                     (vkops.quantized_linear_matmul, ["INT8", "UINT8", "33025", "FLOAT32", "ValidationError",
                                                      "DeviceLimitError"])):
        for w in words:
            assert w in f.__doc__, (f.__name__, w)


def test_top_k_accepts_torchs_largest_and_sorted():
    x = np.array([[3.0, 1.0, 2.0, 5.0]], np.float32)
    for kw, direction in (({"largest": True}, "decreasing"), ({"largest": False}, "increasing"),
                          ({"largest": False, "direction": "increasing"}, "increasing"),
                          ({"sorted": False}, "decreasing"), ({"sorted": True, "largest": False}, "increasing")):
        v, i = vkops.top_k(x, 3, **kw)
        rv, ri = reference.top_k1(x, 3, -1, direction)
        assert np.array_equal(v, rv) and np.array_equal(i, ri), kw
    with pytest.raises(vkops.ValidationError, match=r"direction='decreasing' and largest=False disagree"):
        vkops.top_k(x, 2, direction="decreasing", largest=False)
    with pytest.raises(vkops.ValidationError, match="largest must be True or False"):
        vkops.top_k(x, 2, largest="yes")
    with pytest.raises(vkops.ValidationError, match="sorted must be True or False"):
        vkops.top_k(x, 2, sorted=None)


def test_lists_and_scalars_follow_the_documented_rule():
    v, i = vkops.top_k([[3, 1, 2]], 2)  # ints -> int32
    assert v.dtype == np.int32 and v.tolist() == [[3, 2]] and i.tolist() == [[0, 2]]
    v, _ = vkops.top_k([1, 2.5, 0], 1)  # mixed -> float32
    assert v.dtype == np.float32 and v.tolist() == [2.5]
    with pytest.raises(vkops.ValidationError, match="rectangular list of numbers"):
        vkops.top_k([[1.0, 2.0], [3.0]], 1)
    with pytest.raises(vkops.ValidationError, match=r"np\.asarray\(a, np\.int8\) or np\.uint8"):
        vkops.quantized_linear_matmul([[1, 2]], 0.5, None, np.ones((2, 2), np.int8), 0.5, None, 1.0, None)
    # scales and zero points as Python values: floats -> float32, ints take their tensor's dtype
    a = np.arange(6, dtype=np.uint8).reshape(2, 3)
    b = np.arange(12, dtype=np.uint8).reshape(3, 4)
    y = vkops.quantized_linear_matmul(a, 0.5, [1, 2], b, [0.25, 0.5, 0.25, 0.5], 3, 2.0, 7)
    # power-of-two scales: the float32 scale product is exact, so the float64 oracle agrees bit for bit
    want = reference.quantized_linear_matmul(a, 0.5, np.array([[1], [2]], np.uint8), b,
                                             np.array([0.25, 0.5, 0.25, 0.5]), np.uint8(3), 2.0, np.uint8(7))
    assert np.array_equal(y, want)
    assert y.dtype == np.uint8 and y.shape == (2, 4)
    with pytest.raises(vkops.ValidationError, match=r"a_zero_point must be an integer in \[0, 255\]"):
        vkops.quantized_linear_matmul(a, 0.5, [1, 300], b, 0.5, None, 1.0, None)
    with pytest.raises(vkops.ValidationError, match="a_scale must be a positive number"):
        vkops.quantized_linear_matmul(a, True, None, b, 0.5, None, 1.0, None)
