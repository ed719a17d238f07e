"""vkops.onnx: ONNX's own backend node tests for TopK, Slice and QLinearMatMul, and our own cases
(dtype conversion, errors, clamping, per-axis scales, a two-node graph) against NumPy."""
import re
import unittest
import warnings

import numpy as np
import onnx
import onnx.backend.test
import pytest
from onnx import TensorProto, helper
from onnx.backend.test.loader import load_model_tests

import vkops
import vkops.onnx as vkonnx

# ---------------------------------------------------------------------------------------------- #
# ONNX node tests
# ---------------------------------------------------------------------------------------------- #
FAMILIES = re.compile(r"^test_(top_k|slice|qlinearmatmul)(_|$)")
# Node tests vkops cannot run, with the reason. Each must raise the backend's clear error (checked
# below), and the list must name only tests that exist, so it cannot go stale.
UNSUPPORTED = {}

with warnings.catch_warnings():  # ONNX builds every op's cases at load; some overflow on purpose
    warnings.simplefilter("ignore", RuntimeWarning)
    NODE_CASES = {t.name: t for t in load_model_tests(kind="node") if FAMILIES.search(t.name)}
    backend_test = onnx.backend.test.BackendTest(vkonnx, __name__)
NODE_TESTS = sorted(NODE_CASES)


def _expose(cases):
    """Only our families on the CPU device (ONNX's 'CPU': host arrays in and out), as a TestCase
    class: the runner's own classes would add every other ONNX test as a skip."""
    node = cases["OnnxBackendNodeModelTest"]
    attrs = {f"{name}_cpu": getattr(node, f"{name}_cpu") for name in NODE_TESTS if name not in UNSUPPORTED}
    return type("OnnxBackendNodeModelTest", (unittest.TestCase,), attrs)


OnnxBackendNodeModelTest = _expose(backend_test.test_cases)


@pytest.mark.host_only
def test_node_tests_found():
    # guards against a renamed family silently running nothing
    for family in ("top_k", "slice", "qlinearmatmul"):
        assert any(n.startswith(f"test_{family}") for n in NODE_TESTS), family
    assert len(NODE_TESTS) >= 20, NODE_TESTS


@pytest.mark.host_only
def test_unsupported_list_is_current_and_each_raises_its_error():
    assert set(UNSUPPORTED) <= set(NODE_TESTS), set(UNSUPPORTED) - set(NODE_TESTS)
    for name, reason in UNSUPPORTED.items():
        assert isinstance(reason, str) and len(reason) > 10, (name, reason)
        case = NODE_CASES[name]
        inputs = [onnx.numpy_helper.to_array(x) if isinstance(x, TensorProto) else x for x in case.data_sets[0][0]]
        with pytest.raises(vkops.ValidationError, match="vkops.onnx: "):
            vkonnx.prepare(case.model).run(inputs)


# ---------------------------------------------------------------------------------------------- #
# our cases
# ---------------------------------------------------------------------------------------------- #
INT64_MAX, INT64_MIN = 2**63 - 1, -(2**63)


def model(nodes, inputs, outputs, initializers=(), opset=21):
    """inputs / outputs: (name, numpy dtype, rank), dimensions left unknown."""
    def info(name, dt, rank):
        return helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(np.dtype(dt)), [None] * rank)

    g = helper.make_graph(nodes, "g", [info(*i) for i in inputs], [info(*o) for o in outputs],
                          [onnx.numpy_helper.from_array(np.asarray(v), n) for n, v in initializers])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def run_topk(x, k, **attrs):
    node = helper.make_node("TopK", ["x", "k"], ["v", "i"], name="topk", **attrs)
    m = model([node], [("x", x.dtype, x.ndim), ("k", np.int64, 1)], [("v", x.dtype, x.ndim), ("i", np.int64, x.ndim)])
    return vkonnx.prepare(m).run([x, np.array([k], np.int64)])


def topk_oracle(x, k, axis, largest):
    """Stable: among equal values the lower index first, in both directions (ONNX's tie rule)."""
    order = np.argsort(-x.astype(np.float64) if largest else x, axis=axis, kind="stable")  # no unsigned wrap
    idx = np.take(order, np.arange(k), axis=axis)
    return np.take_along_axis(x, idx, axis=axis), idx.astype(np.int64)


@pytest.mark.parametrize("dtype", ["float32", "float16", "int8", "uint16", "int32", "int64", "uint64"])
@pytest.mark.parametrize("largest", [1, 0])
def test_top_k_directions_axes_and_ties(rng, dtype, largest):
    x = rng.integers(0, 5, (3, 7, 4)).astype(dtype)  # few distinct values: many ties
    for axis in (-1, -2, 0, 1):
        v, i = run_topk(x, 3, axis=axis, largest=largest)
        want_v, want_i = topk_oracle(x, 3, axis, largest)
        assert v.dtype == x.dtype and i.dtype == np.int64
        np.testing.assert_array_equal(v, want_v)
        np.testing.assert_array_equal(i, want_i)


def test_top_k_opset1_attribute_k_and_sorted0():
    x = np.array([[3.0, -1.0, 7.0, 7.0, 0.5]], np.float32)
    node = helper.make_node("TopK", ["x"], ["v", "i"], k=2)
    m = model([node], [("x", np.float32, 2)], [("v", np.float32, 2), ("i", np.int64, 2)], opset=1)
    v, i = vkonnx.prepare(m).run([x])
    np.testing.assert_array_equal(v, [[7.0, 7.0]])
    np.testing.assert_array_equal(i, [[2, 3]])
    # sorted=0 leaves the order open; vkops returns the sorted order, which is one valid answer
    v, i = run_topk(x, 3, sorted=0, largest=0)
    np.testing.assert_array_equal(v, [[-1.0, 0.5, 3.0]])
    np.testing.assert_array_equal(i, [[1, 4, 0]])


@pytest.mark.host_only
def test_top_k_zero_k_and_empty_input_never_reach_the_device(monkeypatch):
    monkeypatch.setattr(vkops, "top_k", lambda *a, **k: pytest.fail("device call for an empty result"))
    v, i = run_topk(np.ones((2, 5), np.float32), 0)
    assert v.shape == i.shape == (2, 0) and v.dtype == np.float32 and i.dtype == np.int64
    v, i = run_topk(np.ones((0, 5), np.int64), 2)
    assert v.shape == (0, 2) and v.dtype == np.int64


@pytest.mark.host_only
def test_top_k_bad_k_and_axis_are_named():
    x = np.ones((2, 5), np.float32)
    with pytest.raises(vkops.ValidationError, match=r"TopK \(node 'topk'\) K must be in \[0, 5\].*got 6"):
        run_topk(x, 6)
    with pytest.raises(vkops.ValidationError, match=r"TopK \(node 'topk'\) axis must be in \[-2, 1\].*got 2"):
        run_topk(x, 1, axis=2)


@pytest.mark.parametrize("dtype, value, limit", [("int64", 2**40, "2147483647"), ("int64", -(2**31) - 1, "-2147483648"),
                                                 ("uint64", 2**32, "4294967295")])
@pytest.mark.host_only
def test_64_bit_values_that_do_not_fit_are_named(dtype, value, limit):
    x = np.array([[1, value, 3]], dtype)
    with pytest.raises(vkops.ValidationError, match=rf"TopK \(node 'topk'\) input X has dtype {dtype} with values "
                                                     rf"in \[.*{value}.*\].*{limit}"):
        run_topk(x, 1)


def test_64_bit_values_that_fit_keep_their_dtype():
    x = np.array([[2**31 - 1, -(2**31), 5]], np.int64)
    v, i = run_topk(x, 3)
    assert v.dtype == np.int64
    np.testing.assert_array_equal(v, [[2**31 - 1, 5, -(2**31)]])
    np.testing.assert_array_equal(i, [[0, 2, 1]])


@pytest.mark.host_only
def test_unsupported_dtypes_are_named():
    with pytest.raises(vkops.ValidationError, match=r"TopK \(node 'topk'\) input X has dtype float64, which vkops "
                                                     r"does not support \(supported: float32, float16"):
        run_topk(np.ones((1, 4)), 2)


@pytest.mark.host_only
def test_unknown_op_names_op_type_and_node():
    node = helper.make_node("Add", ["x", "x"], ["y"], name="adder")
    m = model([node], [("x", np.float32, 1)], [("y", np.float32, 1)])
    with pytest.raises(NotImplementedError, match=r"op type 'Add' \(node 'adder'\) is not supported"):
        vkonnx.prepare(m).run([np.ones(3, np.float32)])


def run_slice(x, starts, ends, axes=None, steps=None):
    names = ["x", "starts", "ends"] + (["axes"] if axes is not None else [""] if steps is not None else [])
    names += ["steps"] if steps is not None else []
    inits = [(n, np.array(v, np.int64)) for n, v in (("starts", starts), ("ends", ends), ("axes", axes),
                                                      ("steps", steps)) if v is not None]
    node = helper.make_node("Slice", names, ["y"], name="slice")
    m = model([node], [("x", x.dtype, x.ndim)], [("y", x.dtype, x.ndim)], inits)
    return vkonnx.prepare(m).run([x])[0]


SLICES = [  # (starts, ends, axes, steps): clamping, INT_MAX/INT_MIN, negative indices and steps
    ([1, -100], [INT64_MAX, 100], [0, 1], [1, 2]),
    ([INT64_MAX, -1], [INT64_MIN, -100], [0, 1], [-1, -3]),
    ([-2, 0, 1], [-1, 5, 3], None, None),
    ([5], [-7], [-1], [-2]),
    ([0], [1], [-2], [5]),
    ([3, 2], [0, -6], [2, 1], [-2, -1]),
]


@pytest.mark.parametrize("dtype", ["float32", "uint8", "int16", "int64", "bool"])
@pytest.mark.parametrize("starts, ends, axes, steps", SLICES)
@pytest.mark.subgroup_free
def test_slice_matches_numpy(rng, dtype, starts, ends, axes, steps):
    x = rng.integers(-50, 50, (4, 6, 5)).astype(dtype)
    ax = axes if axes is not None else range(len(starts))
    st = steps if steps is not None else [1] * len(starts)
    key = [slice(None)] * x.ndim
    for s, e, a, t in zip(starts, ends, ax, st):
        key[a] = slice(s, e, t)  # NumPy's slice clamping is ONNX's (opset 13 text)
    want = x[tuple(key)]
    y = run_slice(x, starts, ends, axes, steps)
    assert y.dtype == x.dtype and y.shape == want.shape
    np.testing.assert_array_equal(y, want)


@pytest.mark.parametrize("starts, ends, steps", [([3], [3], [1]), ([1000], [INT64_MAX], [1]), ([0], [5], [-1]),
                                                 ([-100], [-6], [-1]), ([4], [1], [2])])
@pytest.mark.host_only
def test_empty_slices_return_empty_arrays_without_a_device_call(monkeypatch, starts, ends, steps):
    monkeypatch.setattr(vkops, "slice", lambda *a, **k: pytest.fail("device call for an empty result"))
    x = np.arange(30, dtype=np.float32).reshape(5, 6)
    y = run_slice(x, starts, ends, [1], steps)
    want = x[:, slice(starts[0], ends[0], steps[0])]
    assert want.size == 0 and y.shape == want.shape and y.dtype == np.float32


@pytest.mark.subgroup_free
def test_slice_negative_step_clamps_start_as_onnx_says_not_as_numpy():
    # The opset 13 text clamps an adjusted start to [0, dim - 1] when stepping backward, so a start
    # below -dim copies element 0; NumPy's x[-100::-1] (and onnx.reference, which uses NumPy) is empty.
    # Ends below -dim become -1 (before element 0).
    x = np.arange(6, dtype=np.float32)
    np.testing.assert_array_equal(run_slice(x, [-100], [INT64_MIN], [0], [-1]), [0.0])
    np.testing.assert_array_equal(run_slice(x, [2], [-100], [0], [-1]), [2.0, 1.0, 0.0])


@pytest.mark.host_only
def test_slice_errors_name_the_rule():
    x = np.zeros((2, 3), np.float32)
    with pytest.raises(vkops.ValidationError, match=r"Slice \(node 'slice'\) axes must not repeat; axis 1"):
        run_slice(x, [0, 0], [1, 1], [1, -1])
    with pytest.raises(vkops.ValidationError, match=r"steps must not be 0"):
        run_slice(x, [0], [1], [0], [0])
    with pytest.raises(vkops.ValidationError, match=r"axes value must be in \[-2, 1\] for rank 2; got 2"):
        run_slice(x, [0], [1], [2])


@pytest.mark.subgroup_free
def test_slice_opset1_attributes():
    x = np.arange(8, dtype=np.int32).reshape(2, 4)
    node = helper.make_node("Slice", ["x"], ["y"], starts=[0, 1], ends=[-1, 1000])
    m = model([node], [("x", np.int32, 2)], [("y", np.int32, 2)], opset=1)
    np.testing.assert_array_equal(vkonnx.prepare(m).run([x])[0], [[1, 2, 3]])


def qlmm_oracle(a, sa, za, b, sb, zb, sy, zy):
    """ONNX QLinearMatMul with per-row a / y and per-column b parameters given as (.., M, 1) / (.., 1, N)."""
    acc = np.matmul(a.astype(np.int64) - za.astype(np.int64), b.astype(np.int64) - zb.astype(np.int64))
    y = np.rint(acc * (sa.astype(np.float64) * sb / sy)) + zy
    info = np.iinfo(zy.dtype)
    return np.clip(y, info.min, info.max).astype(zy.dtype)


def run_qlmm(*args, opset=21):
    names = ["a", "a_scale", "a_zero_point", "b", "b_scale", "b_zero_point", "y_scale", "y_zero_point"]
    node = helper.make_node("QLinearMatMul", names, ["y"])
    rank = np.matmul(np.zeros(np.shape(args[0])), np.zeros(np.shape(args[3]))).ndim
    m = model([node], [(n, np.asarray(v).dtype, np.ndim(v)) for n, v in zip(names, args)],
              [("y", np.asarray(args[7]).dtype, rank)], opset=opset)
    return vkonnx.prepare(m).run(list(args))[0]


def close(got, want):
    """vkops forms the scale product in float32: an output may differ by 1 near a .5 tie (README)."""
    assert got.dtype == want.dtype and got.shape == want.shape
    d = np.abs(got.astype(np.int32) - want.astype(np.int32))
    assert d.max() <= 1 and (d == 0).mean() >= 0.9, (got, want)


@pytest.mark.parametrize("a_dt, b_dt, y_dt", [(np.uint8, np.int8, np.uint8), (np.int8, np.uint8, np.int8)])
def test_qlinearmatmul_per_axis_scales_and_zero_points(rng, a_dt, b_dt, y_dt):
    M, K, N = 5, 7, 6
    a = rng.integers(np.iinfo(a_dt).min, np.iinfo(a_dt).max + 1, (M, K)).astype(a_dt)
    b = rng.integers(np.iinfo(b_dt).min, np.iinfo(b_dt).max + 1, (K, N)).astype(b_dt)
    sa, sb, sy = (rng.uniform(0.01, 0.05, n).astype(np.float32) for n in (M, N, M))
    za, zb = rng.integers(0, 20, M).astype(a_dt), rng.integers(0, 20, N).astype(b_dt)
    zy = rng.integers(0, 20, M).astype(y_dt)
    y = run_qlmm(a, sa, za, b, sb, zb, sy, zy)
    close(y, qlmm_oracle(a, sa[:, None], za[:, None], b, sb[None], zb[None], sy[:, None], zy[:, None]))
    # float16 scales are exact in float32
    y16 = run_qlmm(a, sa.astype(np.float16), za, b, sb.astype(np.float16), zb, sy.astype(np.float16), zy)
    close(y16, qlmm_oracle(a, sa[:, None].astype(np.float16), za[:, None], b, sb[None].astype(np.float16), zb[None],
                           sy[:, None].astype(np.float16), zy[:, None]))


@pytest.mark.parametrize("a_shape, b_shape", [((2, 1, 3, 4), (1, 3, 4, 5)), ((2, 2, 1, 3, 4), (3, 4, 5)),
                                              ((3, 4), (2, 4, 5))])
@pytest.mark.parametrize("opset", [10, 21])
def test_qlinearmatmul_broadcasts_batches(rng, a_shape, b_shape, opset):
    a = rng.integers(-128, 128, a_shape).astype(np.int8)
    b = rng.integers(-128, 128, b_shape).astype(np.int8)
    args = (np.float32(0.02), np.int8(3), np.float32(0.03), np.int8(-2), np.float32(0.5), np.int8(1))
    y = run_qlmm(a, args[0], args[1], b, args[2], args[3], args[4], args[5], opset=opset)
    close(y, qlmm_oracle(a, *args[:2], b, *args[2:]))


def test_qlinearmatmul_per_batch_scales_and_vectors(rng):
    a = rng.integers(0, 256, (2, 3, 4)).astype(np.uint8)
    b = rng.integers(0, 256, (2, 4, 5)).astype(np.uint8)
    sa = rng.uniform(0.01, 0.05, (2, 3, 1)).astype(np.float32)  # a different scale per batch and row
    zb = rng.integers(0, 50, (2, 1, 5)).astype(np.uint8)
    sb, za, sy, zy = np.float32(0.02), np.uint8(7), np.float32(0.3), np.uint8(9)
    close(run_qlmm(a, sa, za, b, sb, zb, sy, zy), qlmm_oracle(a, sa, za, b, sb, zb, sy, zy))
    v = rng.integers(0, 256, 4).astype(np.uint8)  # numpy.matmul's 1-D b: a column, dropped after
    close(run_qlmm(a, sa, za, v, sb, zb[..., :1], sy, zy),
          qlmm_oracle(a, sa, za, v[:, None], sb, zb[..., :1], sy, zy)[..., 0])


@pytest.mark.host_only
def test_qlinearmatmul_rejects_wrong_types_and_shapes():
    a, b = np.ones((2, 3), np.int8), np.ones((3, 4), np.int8)
    with pytest.raises(vkops.ValidationError, match=r"QLinearMatMul input a must be int8 or uint8.*int32"):
        run_qlmm(a.astype(np.int32), np.float32(1), np.int32(0), b, np.float32(1), np.int8(0), np.float32(1),
                 np.int8(0))
    with pytest.raises(vkops.ValidationError, match=r"b_scale must be a scalar, a 4-element vector.*got \(3,\)"):
        run_qlmm(a, np.float32(1), np.int8(0), b, np.ones(3, np.float32), np.int8(0), np.float32(1), np.int8(0))


def test_two_node_graph_slice_then_top_k_with_constant_k():
    x = np.random.default_rng(1).standard_normal((4, 10)).astype(np.float32)
    nodes = [helper.make_node("Constant", [], ["k"], value=onnx.numpy_helper.from_array(np.array([2], np.int64))),
             helper.make_node("Slice", ["x", "starts", "ends", "axes", "steps"], ["s"], name="cut"),
             helper.make_node("TopK", ["s", "k"], ["v", "i"], name="best", largest=0)]
    inits = [("starts", [-1, 1]), ("ends", [INT64_MIN, 9]), ("axes", [0, 1]), ("steps", [-2, 1])]
    m = model(nodes, [("x", np.float32, 2)], [("v", np.float32, 2), ("i", np.int64, 2)],
              [(n, np.array(v, np.int64)) for n, v in inits])
    out = vkonnx.prepare(m).run({"x": x})
    want_v, want_i = topk_oracle(x[::-2, 1:9], 2, -1, 0)
    np.testing.assert_array_equal(out["v"], want_v)
    np.testing.assert_array_equal(out.i, want_i)
    got = vkonnx.run_model(m, [x])  # the module-level one-off form
    np.testing.assert_array_equal(got[0], want_v)


def test_run_node_and_supports_device():
    node = helper.make_node("TopK", ["x", "k"], ["v", "i"], axis=0)
    x = np.array([1, 9, 4], np.uint8)
    v, i = vkonnx.run_node(node, [x, np.array([2], np.int64)])
    np.testing.assert_array_equal(v, [9, 4])
    np.testing.assert_array_equal(i, [1, 2])
    assert vkonnx.supports_device("CPU") and not vkonnx.supports_device("CUDA")
