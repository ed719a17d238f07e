"""examples/c_host/vkops_host.c: hand-made plans run on the default Vulkan device (lavapipe in CI) and
checked against NumPy; malformed plans, manifests and files rejected with exit code 2 and a message
naming the problem; a clean run under the Khronos validation layer."""
import copy
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's vkops, not whichever one the venv installed
from vkops.dtypes import words_for  # noqa: E402
from vkops.limits import Limits  # noqa: E402
from vkops.ops import slice1 as S  # noqa: E402
from vkops.tensor import TensorDesc  # noqa: E402

SOURCE = ROOT / "examples" / "c_host" / "vkops_host.c"
MANIFEST = ROOT / "vkops" / "spv" / "manifest.json"
LIMITS = Limits(max_workgroup_invocations=1024, max_workgroup_size=(1024, 1024, 64))  # workgroups of 256


@pytest.fixture(scope="module")
def host(tmp_path_factory):
    """The host, compiled once; any compiler warning fails."""
    assert MANIFEST.exists(), f"{MANIFEST} is missing: run `make spv` first"
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    assert cc, "no C compiler"
    exe = tmp_path_factory.mktemp("c_host") / "vkops_host"
    r = subprocess.run([cc, "-std=c99", "-O2", "-Wall", "-Wextra", "-pedantic", "-o", str(exe), str(SOURCE),
                        "-lvulkan", "-lm"], capture_output=True, text=True)
    assert r.returncode == 0 and not r.stderr, r.stderr
    return exe


def clean_env(**extra):
    """The suite's conftest turns the layer on through the environment, logging to its own file; the host's
    runs should see only what each test asks for."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("VK_INSTANCE_LAYERS", "VK_LAYER_SETTINGS_PATH", "VKOPS_VALIDATION")}
    env.update(extra)
    return env


def slice_dispatch(desc, bindings, barrier=()):
    """The dispatch vkops plans for `desc` (push words, spec and groups from slice1.plan), rebound."""
    (d,) = S.plan(desc, LIMITS).to_dict()["dispatches"]
    return dict(d, bindings=list(bindings), barrier=list(barrier))


def slice_desc(x_shape, x_strides, offs, sizes, strides, dtype="float32"):
    outs = tuple(1 + (sz - 1) // abs(st) for sz, st in zip(sizes, strides))
    return S.Slice1Desc(TensorDesc(dtype, x_shape, x_strides), TensorDesc(dtype, outs), offs, sizes, strides).validate()


def tensor_buffer(name, role, desc, extra_bytes=0):
    nbytes = 4 * words_for(desc.span, desc.data_type) + extra_bytes
    return {"name": name, "role": role, "bytes": nbytes,
            "tensor": {"data_type": desc.data_type.value, "sizes": list(desc.sizes),
                       "strides": None if desc.strides is None else list(desc.strides)}}


def plan_doc(buffers, dispatches):
    return {"format": "vkops-plan/1", "op": "test", "limits": {}, "buffers": buffers, "dispatches": dispatches}


def run(host, tmp_path, plan, inputs, n_out, manifest=MANIFEST, env=None, args=()):
    """(returncode, stdout, stderr, [output bytes]). `plan` is a dict or raw bytes; inputs are bytes."""
    pf = tmp_path / "plan.json"
    pf.write_bytes(plan if isinstance(plan, bytes) else json.dumps(plan).encode())
    cmd = [str(host), *args, str(manifest), str(pf)]
    for i, data in enumerate(inputs):
        f = tmp_path / f"in{i}.bin"
        f.write_bytes(data)
        cmd += ["--in", str(f)]
    outs = [tmp_path / f"out{j}.bin" for j in range(n_out)]
    for f in outs:
        cmd += ["--out", str(f)]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env or clean_env(), timeout=120)
    return r.returncode, r.stdout, r.stderr, [f.read_bytes() if f.exists() else None for f in outs]


def strided_input(rng, shape, strides, dtype="float32"):
    """(span bytes, the tensor view): a buffer of random values and the strided tensor over it."""
    span = 1 + sum((n - 1) * s for n, s in zip(shape, strides))
    base = rng.standard_normal(span).astype(dtype)
    it = base.itemsize
    return base.tobytes(), np.lib.stride_tricks.as_strided(base, shape, [s * it for s in strides])


SLICES = [  # input shape, input strides (None: packed), offsets, window sizes, window strides
    ((4, 256), None, (0, 0), (4, 256), (-2, 1)),           # negative stride, rows of one workgroup (row mode)
    ((3, 2048), None, (0, 0), (3, 2048), (-1, 1)),         # 16-byte vector mode
    ((5, 7, 9), None, (1, 0, 2), (4, 7, 6), (2, -3, -1)),  # generic mode, all kinds of stride
    ((6, 40), (100, 2), (1, 3), (5, 30), (2, -3)),         # strided input: the file holds its span
]


@pytest.mark.parametrize("case", SLICES, ids=lambda c: "x".join(map(str, c[0])) + f"_{c[4]}")
def test_slice_matches_numpy(host, tmp_path, case):
    shape, xstrides, offs, sizes, strides = case
    rng = np.random.default_rng(1)
    if xstrides is None:
        x = rng.standard_normal(shape).astype(np.float32)
        data = x.tobytes()
    else:
        data, x = strided_input(rng, shape, xstrides)
    desc = slice_desc(shape, xstrides, offs, sizes, strides)
    d = slice_dispatch(desc, [0, 1])
    plan = plan_doc([tensor_buffer("input", "input", desc.input), tensor_buffer("output", "output", desc.output)], [d])
    rc, out, err, (got,) = run(host, tmp_path, plan, [data], 1)
    assert rc == 0 and err == "", err
    want = x[tuple(slice(o + s - 1, (o - 1 if o else None), st) if st < 0 else slice(o, o + s, st)
                   for o, s, st in zip(offs, sizes, strides))]
    assert got == np.ascontiguousarray(want).tobytes()
    assert "ran 1 dispatches" in out


def test_two_dispatches_with_barrier(host, tmp_path):
    """Slice into a scratch buffer, then slice the scratch into the output: the second dispatch reads what the
    first wrote, so it needs the barrier."""
    rng = np.random.default_rng(2)
    x = rng.integers(0, 1 << 30, (8, 300)).astype(np.int32)
    d1 = slice_desc(x.shape, None, (0, 0), (8, 300), (-1, 2))      # -> (8, 150)
    d2 = slice_desc((8, 150), None, (1, 0), (7, 150), (3, -1))     # -> (3, 150)
    scratch = {"name": "scratch0", "role": "scratch", "bytes": 8 * 150 * 4 + 64, "zeroed": False}
    x_desc = TensorDesc("int32", x.shape)
    out_desc = TensorDesc("int32", d2.output.sizes)
    plan = plan_doc([tensor_buffer("input", "input", x_desc), scratch, tensor_buffer("output", "output", out_desc)],
                    [slice_dispatch(d1, [0, 1]), slice_dispatch(d2, [1, 2], barrier=[1])])
    rc, _, err, (got,) = run(host, tmp_path, plan, [x.tobytes()], 1)
    assert rc == 0 and err == "", err
    want = x[::-1, ::2][1::3, ::-1]
    assert np.frombuffer(got, np.int32).reshape(want.shape).tolist() == want.tolist()


def test_constant_buffer_and_word_padded_input(host, tmp_path):
    """A constant buffer's words arrive as given (sliced through to the output), and an 8-bit input may come
    padded to whole words (what vkops.dtypes.pack writes)."""
    words = [0, 1, 0xFFFFFFFF, 0x80000000, 12345678, 7]
    cdesc = TensorDesc("uint32", (6,))
    d = slice_desc((6,), None, (0,), (6,), (-1,), dtype="uint32")
    plan = plan_doc([{"name": "c", "role": "constant", "bytes": 24, "data": words},
                     tensor_buffer("output", "output", cdesc)], [slice_dispatch(d, [0, 1])])
    rc, _, err, (got,) = run(host, tmp_path, plan, [], 1)
    assert rc == 0 and err == "", err
    assert np.frombuffer(got, "<u4").tolist() == words[::-1]

    x = np.arange(7, dtype=np.uint8) + 100
    d = slice_desc((7,), None, (0,), (7,), (-2,), dtype="uint8")
    plan = plan_doc([tensor_buffer("input", "input", d.input), tensor_buffer("output", "output", d.output)],
                    [slice_dispatch(d, [0, 1])])
    rc, _, err, (got,) = run(host, tmp_path, plan, [x.tobytes() + b"\0"], 1)
    assert rc == 0 and err == "", err
    assert got == x[::-2].tobytes()  # 4 bytes: outputs are not padded


# ---- rejected plans ---------------------------------------------------------------------------------------

def good_case():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 256)).astype(np.float32)
    desc = slice_desc(x.shape, None, (0, 0), (4, 256), (-2, 1))
    plan = plan_doc([tensor_buffer("input", "input", desc.input), tensor_buffer("output", "output", desc.output)],
                    [slice_dispatch(desc, [0, 1])])
    return plan, x.tobytes()


def mutate(path, value):
    def f(plan):
        p = copy.deepcopy(plan)
        obj = p
        for k in path[:-1]:
            obj = obj[k]
        if value is DELETE:
            del obj[path[-1]]
        else:
            obj[path[-1]] = value(obj[path[-1]]) if callable(value) else value
        return p
    return f


DELETE = object()
BAD_PLANS = {  # name: (change to the good plan, words the message must contain)
    "missing binding": (mutate(("dispatches", 0, "bindings"), [0]), ["wrong binding count", "1 bindings",
                                                                      "manifest says 2", 'dispatch 0 "slice1_b32"']),
    "wrong push size": (mutate(("dispatches", 0, "push"), lambda p: p[:-1]), ["23 push words", "manifest says 24"]),
    "unknown kernel": (mutate(("dispatches", 0, "kernel"), "slice1_b64"), ["unknown kernel", "slice1_b64"]),
    "buffer id out of range": (mutate(("dispatches", 0, "bindings"), [0, 7]), ["buffer id out of range",
                                                                              '"bindings"[1] is 7', "2 buffers"]),
    "barrier id out of range": (mutate(("dispatches", 0, "barrier"), [2]), ["buffer id out of range", '"barrier"[0]']),
    "too many spec constants": (mutate(("dispatches", 0, "spec"), [256, 4, 1]), ["too many spec constants",
                                                                                "3 spec values"]),
    "group count above the limit": (mutate(("dispatches", 0, "groups"), [0xFFFFFFFF, 1, 1]),
                                    ["maxComputeWorkGroupCount[0]", "4294967295"]),
    "zero groups": (mutate(("dispatches", 0, "groups"), [1, 0, 1]), ['"groups"[1] is 0']),
    "push word too large": (mutate(("dispatches", 0, "push", 0), 1 << 32), ["4294967296", '"push"[0]']),
    "negative push word": (mutate(("dispatches", 0, "push", 0), -1), ['"push"[0]', "got -1"]),
    "fractional spec": (mutate(("dispatches", 0, "spec", 0), 2.5), ['"spec"[0]', "got 2.5"]),
    "missing field": (mutate(("dispatches", 0, "writes"), DELETE), ['missing field "writes"', "dispatch 0"]),
    "wrong field type": (mutate(("dispatches", 0, "push"), "1 2 3"), ['"push" must be an array', "got a string"]),
    "bytes not a multiple of 4": (mutate(("buffers", 1, "bytes"), 4098), ["multiple of 4", "4098", '"output"']),
    "output bytes too small": (mutate(("buffers", 1, "bytes"), 4), ["needs 2048 bytes", '"output"']),
    "unknown role": (mutate(("buffers", 1, "role"), "temp"), ['unknown buffer "role" "temp"']),
    "unknown data type": (mutate(("buffers", 0, "tensor", "data_type"), "bfloat16"), ['"bfloat16"']),
    "constant data length": (lambda p: dict(p, buffers=p["buffers"] + [
        {"name": "k", "role": "constant", "bytes": 16, "data": [1, 2, 3]}]), ["3 words", "needs 4"]),
    "wrong format": (mutate(("format",), "vkops-plan/2"), ['"vkops-plan/1"']),
    "no dispatches": (mutate(("dispatches",), []), ["no dispatches"]),
}


@pytest.mark.parametrize("name", list(BAD_PLANS))
def test_bad_plan_rejected(host, tmp_path, name):
    change, words = BAD_PLANS[name]
    plan, data = good_case()
    rc, out, err, (got,) = run(host, tmp_path, change(plan), [data], 1)
    assert rc == 2, (rc, err)
    assert err.startswith("vkops_host: error: ") and err.count("\n") == 1, err
    for w in words:
        assert w in err, (w, err)
    assert got is None and out == ""  # nothing ran


def json_bytes(plan):
    return json.dumps(plan, indent=1).encode()


BAD_FILES = {  # name: (plan bytes from the good plan, input bytes from the good input, words)
    "truncated JSON": (lambda p: json_bytes(p)[: len(json_bytes(p)) // 2], None, ["invalid JSON", "plan.json line"]),
    "garbage bytes": (lambda p: bytes(range(256)) * 4, None, ["invalid JSON", "unexpected character"]),
    "empty file": (lambda p: b"", None, ["invalid JSON", "unexpected end of file"]),
    "trailing text": (lambda p: json_bytes(p) + b"]", None, ["text after the JSON value"]),
    "deep nesting": (lambda p: b"[" * 100000, None, ["nested deeper than 64"]),
    "NUL in string": (lambda p: json_bytes(p).replace(b'"input"', b'"in\x00put"', 1), None, ["control character"]),
    "control and non-UTF-8 bytes in a name": (lambda p: json_bytes(p).replace(b'"slice1_b32"', b'"slice1\\n\xff"'),
                                              None, ['unknown kernel "slice1??"']),
    "input one byte short": (None, lambda d: d[:-1], ["wrong input file size", "4095 bytes", "4096"]),
    "input too long": (None, lambda d: d + b"\0" * 8, ["wrong input file size", "4104 bytes"]),
}


@pytest.mark.parametrize("name", list(BAD_FILES))
def test_bad_file_rejected(host, tmp_path, name):
    make_plan, make_input, words = BAD_FILES[name]
    plan, data = good_case()
    rc, _, err, _ = run(host, tmp_path, make_plan(plan) if make_plan else plan, [make_input(data) if make_input else data], 1)
    assert rc == 2, (rc, err)
    assert err.startswith("vkops_host: error: ") and err.count("\n") == 1, err
    for w in words:
        assert w in err, (w, err)


def edited_manifest(tmp_path, edit):
    """A copy of the manifest (its SPIR-V files linked beside it) changed by `edit`."""
    d = tmp_path / "spv"
    d.mkdir()
    m = json.loads(MANIFEST.read_text())
    for name in m["modules"].values():
        (d / name["file"]).symlink_to(MANIFEST.parent / name["file"])
    edit(m)
    (d / "manifest.json").write_text(json.dumps(m))
    return d / "manifest.json"


def test_bad_manifest_rejected(host, tmp_path):
    plan, data = good_case()
    cases = [
        (lambda m: m["modules"]["slice1_b32"]["push_constants"].update(size=98), ["not a multiple of 4"]),
        (lambda m: m["modules"]["slice1_b32"]["bindings"][1].update(set=1), ["set 1", "not supported by this host"]),
        (lambda m: m["modules"]["slice1_b32"].update(file="missing.spv"), ["cannot open SPIR-V file", "missing.spv"]),
        (lambda m: m["modules"]["slice1_b32"].update(file="manifest.json"), ["not a SPIR-V module"]),
        (lambda m: m["modules"]["slice1_b32"]["device_features"].append("shaderBFloat16Type"),
         ["needs feature shaderBFloat16Type, not supported by this host"]),
        (lambda m: m.update(format="vkops-kernel-manifest/9"), ['"vkops-kernel-manifest/1"']),
    ]
    for i, (edit, words) in enumerate(cases):
        sub = tmp_path / str(i)
        sub.mkdir()
        rc, _, err, _ = run(host, sub, plan, [data], 1, manifest=edited_manifest(sub, edit))
        assert rc == 2 and err.count("\n") == 1, (i, rc, err)
        for w in words:
            assert w in err, (i, w, err)
    bad = tmp_path / "garbage.json"
    bad.write_bytes(b'{"format": "vkops-kernel-manifest/1", "modules": {"slice1_b32": {"file": ')
    rc, _, err, _ = run(host, tmp_path, plan, [data], 1, manifest=bad)
    assert rc == 2 and "invalid JSON" in err and "garbage.json line 1" in err, err


def test_command_line_errors(host, tmp_path):
    plan, data = good_case()
    rc, _, err, _ = run(host, tmp_path, plan, [data, data], 1)
    assert rc == 2 and "1 inputs and 1 outputs" in err and "2 --in and 1 --out" in err, err
    rc, _, err, _ = run(host, tmp_path, plan, [data], 1, args=("--device", "99"))
    assert rc == 2 and "--device 99" in err, err
    rc, _, err, _ = run(host, tmp_path, plan, [data], 1, args=("--bogus",))
    assert rc == 2 and 'unknown option "--bogus"' in err, err


# ---- the validation layer ---------------------------------------------------------------------------------

def test_validation_layer_clean_run(host, tmp_path):
    """Plans with one and two dispatches, scratch, constants and barriers: no message at all, leaks included
    (the layer reports leaked objects when the device and instance are destroyed)."""
    rng = np.random.default_rng(4)
    x = rng.integers(0, 1000, (8, 300)).astype(np.int32)
    d1 = slice_desc(x.shape, None, (0, 0), (8, 300), (-1, 2))
    d2 = slice_desc((8, 150), None, (1, 0), (7, 150), (3, -1))
    plan = plan_doc([tensor_buffer("input", "input", TensorDesc("int32", x.shape)),
                     {"name": "scratch0", "role": "scratch", "bytes": 8 * 150 * 4, "zeroed": True},
                     {"name": "zp", "role": "constant", "bytes": 16, "data": [0, 1, 2, 3]},
                     tensor_buffer("output", "output", TensorDesc("int32", d2.output.sizes))],
                    [slice_dispatch(d1, [0, 1]), slice_dispatch(d2, [1, 3], barrier=[1])])
    rc, out, err, (got,) = run(host, tmp_path, plan, [x.tobytes()], 1, env=clean_env(VKOPS_VALIDATION="1"))
    assert rc == 0 and err == "", err
    assert "validation layer on" in out  # the layer really ran
    assert np.frombuffer(got, np.int32).tolist() == x[::-1, ::2][1::3, ::-1].ravel().tolist()


def test_validation_layer_messages_give_exit_4(host, tmp_path):
    """The negative control: a manifest that understates the shader's push-constant block (92 of 96 bytes) is
    consistent with the plan, so only the layer can see the mismatch."""
    plan, data = good_case()
    plan["dispatches"][0]["push"] = plan["dispatches"][0]["push"][:23]
    manifest = edited_manifest(tmp_path, lambda m: m["modules"]["slice1_b32"]["push_constants"].update(size=92))
    rc, _, err, _ = run(host, tmp_path, plan, [data], 1, manifest=manifest, env=clean_env(VKOPS_VALIDATION="1"))
    assert rc == 4, (rc, err)
    assert "vkops_host: validation error:" in err, err


def test_sync_validation_catches_a_missing_barrier(host, tmp_path):
    """VKOPS_VALIDATION=sync: the two-dispatch plan is clean with its barrier and a READ_AFTER_WRITE hazard
    without it (lavapipe runs dispatches in order, so only the layer can tell)."""
    x = np.arange(8 * 300, dtype=np.int32).reshape(8, 300)
    d1 = slice_desc(x.shape, None, (0, 0), (8, 300), (-1, 2))
    d2 = slice_desc((8, 150), None, (1, 0), (7, 150), (3, -1))
    for barrier in ([1], []):
        plan = plan_doc([tensor_buffer("input", "input", TensorDesc("int32", x.shape)),
                         {"name": "scratch0", "role": "scratch", "bytes": 8 * 150 * 4, "zeroed": False},
                         tensor_buffer("output", "output", TensorDesc("int32", d2.output.sizes))],
                        [slice_dispatch(d1, [0, 1]), slice_dispatch(d2, [1, 2], barrier=barrier)])
        rc, _, err, _ = run(host, tmp_path, plan, [x.tobytes()], 1, env=clean_env(VKOPS_VALIDATION="sync"))
        if barrier:
            assert rc == 0 and err == "", err
        else:
            assert rc == 4 and "SYNC-HAZARD-READ-AFTER-WRITE" in err, (rc, err)


def test_device_features_and_extensions(host, tmp_path):
    """Features a kernel's manifest entry lists are enabled through the pNext chain (the layer checks the
    chain); an extension the device lacks is an error naming it."""
    plan, data = good_case()
    sub = tmp_path / "features"
    sub.mkdir()
    manifest = edited_manifest(sub, lambda m: m["modules"]["slice1_b32"].update(
        device_features=["shaderInt8", "vulkanMemoryModel", "storageBuffer16BitAccess"]))
    rc, out, err, _ = run(host, sub, plan, [data], 1, manifest=manifest, env=clean_env(VKOPS_VALIDATION="1"))
    assert rc == 0 and err == "" and "validation layer on" in out, err
    sub = tmp_path / "extension"
    sub.mkdir()
    manifest = edited_manifest(sub, lambda m: m["modules"]["slice1_b32"].update(
        device_extensions=["VK_VKOPS_no_such_extension"]))
    rc, _, err, _ = run(host, sub, plan, [data], 1, manifest=manifest)
    assert rc == 2 and 'kernel "slice1_b32" needs device extension VK_VKOPS_no_such_extension' in err, err


def test_plans_from_the_planner_run_bit_for_bit(host, tmp_path):
    """`make provider-test`'s cases (a TOP_K1 sort with barriers and a chunked TOP_K1 with zeroed
    counters, SLICE1 with negative strides, QLinearMatMul with zero points): the C host's outputs equal
    the NumPy oracle and, bit for bit, vkops' own run of the same plan, under synchronization validation."""
    r = subprocess.run([sys.executable, str(ROOT / "examples" / "c_host" / "provider_test.py"), str(host),
                        "--keep", str(tmp_path)], env=clean_env(VKOPS_VALIDATION="sync"), capture_output=True,
                       text=True, cwd=ROOT)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert len([ln for ln in lines if ln.startswith("ok ")]) == 6 and "bit-identical" in lines[0], r.stdout
    assert any(ln.startswith("ok   qlmm decoding (qlmm_dot_sk)") for ln in lines), r.stdout  # integer dot products
    assert "all passed" in lines[-1]
