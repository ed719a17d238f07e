"""Property-based tests: random descriptors and data for the three operators, checked against
`vkops.reference`, and random invalid descriptors, which must raise ValidationError naming the field.

The default profile ("ci", set in conftest.py) keeps the whole file to tens of seconds on lavapipe;
`pytest --hypothesis-profile=long tests/test_properties.py` runs many more examples. A falsifying
example found here becomes a regular test in the operator's own test file.
"""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import vkops
from vkops import reference
from vkops.dtypes import DataType

DTYPES = [dt.np for dt in DataType]
SPECIAL = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0]


def elements(dtype, ties: bool):
    """Values of `dtype`: few distinct ones (ties) or the whole range, floats with NaN, ±inf, -0.0."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        if ties:
            return st.sampled_from(SPECIAL)
        return st.floats(width=8 * dtype.itemsize, allow_nan=True, allow_infinity=True) | st.sampled_from(SPECIAL)
    info = np.iinfo(dtype)
    if ties:
        return st.integers(max(info.min, -2), min(info.max, 2))
    return st.integers(int(info.min), int(info.max))


@st.composite
def arrays(draw, max_rank=8, max_elems=96):
    """A NumPy array of any DML dtype and rank 1..max_rank, sometimes a strided, reversed or broadcast view."""
    dtype = draw(st.sampled_from(DTYPES))
    rank = draw(st.integers(1, max_rank))
    shape = []
    for _ in range(rank):
        room = max(1, max_elems // max(1, int(np.prod(shape, dtype=np.int64))))
        shape.append(draw(st.integers(1, min(4 if rank > 3 else 12, room))))
    ties = draw(st.booleans())
    view = draw(st.sampled_from(["packed", "reversed", "strided", "broadcast"]))
    if view == "broadcast":
        base_shape = [1 if i == 0 else s for i, s in enumerate(shape)]
        base = draw(hnp.arrays(dtype, base_shape, elements=elements(dtype, ties)))
        return np.broadcast_to(base, shape)
    if view == "strided":
        base = draw(hnp.arrays(dtype, [2 * s for s in shape], elements=elements(dtype, ties)))
        return base[tuple(slice(None, None, 2) for _ in shape)]
    x = draw(hnp.arrays(dtype, shape, elements=elements(dtype, ties)))
    return x[..., ::-1] if view == "reversed" else x


def on_device(x, dev):
    """`x` as a device tensor with the same strides where they are non-negative: a broadcast view
    becomes a zero-stride view of the uploaded base, anything else is uploaded packed."""
    if x.ndim and x.strides[0] == 0 and x.shape[0] > 1:
        base = vkops.to_device(np.ascontiguousarray(x[:1]), dev)
        return base.as_strided(x.shape, (0,) + base.desc.element_strides[1:])
    return vkops.to_device(x, dev)


def same_bits(a, b):
    return a.shape == b.shape and a.dtype == b.dtype and np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes()


@st.composite
def slice_case(draw):
    x = draw(arrays())
    offs, sizes, strides = [], [], []
    for n in x.shape:
        off = draw(st.integers(0, n - 1))
        size = draw(st.integers(1, n - off))
        stride = draw(st.integers(1, size + 1)) * draw(st.sampled_from([1, -1]))
        offs.append(off), sizes.append(size), strides.append(stride)
    return x, offs, sizes, strides


@given(slice_case(), st.booleans())
@pytest.mark.subgroup_free
def test_slice_matches_reference(dev, case, device):
    x, offs, sizes, strides = case
    want = reference.slice1(x, offs, sizes, strides)
    src = on_device(x, dev) if device else x
    got = vkops.slice(src, offs, sizes, strides)
    assert same_bits(got.numpy() if device else got, want)


@st.composite
def top_k_case(draw):
    x = draw(arrays(max_rank=8, max_elems=120))
    axis = draw(st.integers(-x.ndim, x.ndim - 1))
    k = draw(st.integers(1, x.shape[axis]))
    direction = draw(st.sampled_from(["decreasing", "increasing"]))
    return x, k, axis, direction


@given(top_k_case(), st.booleans())
def test_top_k_matches_reference(dev, case, device):
    x, k, axis, direction = case
    want_v, want_i = reference.top_k1(x, k, axis % x.ndim, direction)
    src = on_device(x, dev) if device else x
    v, i = vkops.top_k(src, k, axis, direction)
    if device:
        v, i = v.numpy(), i.numpy()
    assert np.array_equal(i, want_i)
    assert same_bits(v, want_v)


def q_param(draw, kind, count, dtype=None):
    """A scale (dtype None) or zero point: per tensor, per row/column, or absent (zero points)."""
    gran = draw(st.sampled_from(["tensor", kind] + (["none"] if dtype is not None else [])))
    if gran == "none":
        return None
    n = 1 if gran == "tensor" else count
    if dtype is None:
        return np.asarray(draw(hnp.arrays(np.float32, n, elements=st.floats(0.0009765625, 0.5, width=32))))
    info = np.iinfo(dtype)
    return draw(hnp.arrays(dtype, n, elements=st.integers(int(info.min), int(info.max))))


@st.composite
def qlmm_case(draw):
    M, K, N = (draw(st.integers(1, 40)) for _ in range(3))
    adt, bdt, odt = (draw(st.sampled_from([np.int8, np.uint8])) for _ in range(3))
    batch = draw(st.sampled_from([(), (2,), (1, 2)]))
    a = draw(hnp.arrays(adt, batch + (M, K), elements=st.integers(int(np.iinfo(adt).min), int(np.iinfo(adt).max))))
    b = draw(hnp.arrays(bdt, (K, N), elements=st.integers(int(np.iinfo(bdt).min), int(np.iinfo(bdt).max))))
    sa, sb, so = q_param(draw, "row", M), q_param(draw, "column", N), q_param(draw, "row", M)
    za, zb = q_param(draw, "row", M, adt), q_param(draw, "column", N, bdt)
    zo = draw(hnp.arrays(odt, 1, elements=st.integers(int(np.iinfo(odt).min), int(np.iinfo(odt).max))))
    return a, sa, za, b, sb, zb, so, zo


def dml_shaped(p, kind):
    if p is None or p.size == 1:
        return p
    return p.reshape(-1, 1) if kind == "row" else p.reshape(1, -1)


@given(qlmm_case())
def test_qlmm_matches_reference(dev, case):
    a, sa, za, b, sb, zb, so, zo = case
    got = vkops.quantized_linear_matmul(a, sa, za, b, sb, zb, so, zo)
    want = reference.quantized_linear_matmul(a, dml_shaped(sa, "row"), dml_shaped(za, "row"), b,
                                             dml_shaped(sb, "col"), dml_shaped(zb, "col"), dml_shaped(so, "row"), zo)
    assert got.shape == want.shape and got.dtype == want.dtype
    # float32 scale products may round a .5 tie the other way than the float64 oracle (README)
    assert np.abs(got.astype(np.int32) - want.astype(np.int32)).max(initial=0) <= 1


# -- rejected inputs: ValidationError naming the field ------------------------------------------ #
@st.composite
def bad_slice(draw):
    x = np.zeros(draw(st.lists(st.integers(1, 5), min_size=1, max_size=4)), np.float32)
    n = x.ndim
    offs, sizes, strides = [0] * n, list(x.shape), [1] * n
    d = draw(st.integers(0, n - 1))
    how = draw(st.sampled_from(["offset", "size", "stride", "fraction", "count", "negative"]))
    if how == "offset":
        offs[d] = x.shape[d] + draw(st.integers(0, 3))
        field = "input_window"
    elif how == "size":
        sizes[d] = x.shape[d] + draw(st.integers(1, 3))
        field = "input_window"
    elif how == "stride":
        strides[d] = 0
        field = "input_window_strides"
    elif how == "fraction":
        offs[d] = 0.5
        field = "input_window_offsets"
    elif how == "negative":
        sizes[d] = -draw(st.integers(0, 3))
        field = "input_window_sizes"
    else:
        offs = offs + [0]
        field = "input_window_offsets"
    return x, offs, sizes, strides, field


@given(bad_slice())
@pytest.mark.host_only
def test_bad_slices_are_rejected_by_field(dev, case):
    x, offs, sizes, strides, field = case
    with pytest.raises(vkops.ValidationError, match=field):
        vkops.slice(x, offs, sizes, strides)


@given(st.lists(st.integers(1, 6), min_size=1, max_size=4), st.data())
@pytest.mark.host_only
def test_bad_top_k_is_rejected_by_field(dev, shape, data):
    x = np.zeros(shape, np.float32)
    how = data.draw(st.sampled_from(["k_big", "k_zero", "axis", "direction"]))
    k, axis, direction = 1, -1, "decreasing"
    if how == "k_big":
        k, field = shape[-1] + data.draw(st.integers(1, 3)), "k"
    elif how == "k_zero":
        k, field = data.draw(st.integers(-3, 0)), "k"
    elif how == "axis":
        axis, field = len(shape) + data.draw(st.integers(0, 3)), "axis"
    else:
        direction, field = data.draw(st.sampled_from(["up", "largest", ""])), "direction"
    with pytest.raises(vkops.ValidationError, match=field):
        vkops.top_k(x, k, axis, direction)


@given(st.integers(1, 8), st.integers(1, 8), st.integers(1, 8), st.data())
@pytest.mark.host_only
def test_bad_qlmm_is_rejected_by_field(dev, M, K, N, data):
    a = np.zeros((M, K), np.int8)
    b = np.zeros((K, N), np.int8)
    args = dict(a_scale=0.1, a_zero_point=None, b_scale=0.1, b_zero_point=None, output_scale=1.0,
                output_zero_point=None)
    how = data.draw(st.sampled_from(["inner", "scale_value", "scale_shape", "zp_type"]))
    if how == "inner":
        b, field = np.zeros((K + 1, N), np.int8), "b"
    elif how == "scale_value":
        f = data.draw(st.sampled_from(["a_scale", "b_scale", "output_scale"]))
        args[f], field = data.draw(st.sampled_from([0.0, -1.0, np.nan, np.inf])), f
    elif how == "scale_shape":
        args["b_scale"], field = np.ones(N + 1, np.float32), "b_scale"
    else:
        args["a_zero_point"], field = np.zeros(1, np.uint8), "a_zero_point"
    with pytest.raises(vkops.ValidationError, match=field):
        vkops.quantized_linear_matmul(a, args["a_scale"], args["a_zero_point"], b, args["b_scale"],
                                      args["b_zero_point"], args["output_scale"], args["output_zero_point"])
