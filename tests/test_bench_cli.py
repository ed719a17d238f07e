"""`python -m vkops info`, `bench` and `report` (vkops/bench/) on tiny shapes: what they print and
write, the result document against its schema, checks that catch a wrong output, Ctrl-C, missing
baselines and plotting, and usage errors that name the option. Timings are never asserted."""
import json
import os
import signal
import struct
import subprocess
import sys
import time
from pathlib import Path

import jsonschema
import numpy as np
import pytest

import vkops
from vkops import cli
from vkops.bench import baselines, cases as C, presets, report, runner, schema, specs as S
from vkops.bench.timing import QUICK

ROOT = Path(__file__).resolve().parent.parent
BASES = {"vkops", "numpy", "onnxruntime"}  # torch joins where it has CUDA (not on CI)


def torch_rows() -> set:
    return {"torch"} if baselines.status()["torch"]["available"] else set()


def valid(doc):
    assert schema.errors(doc) == []
    jsonschema.validate(doc, schema.SCHEMA)


def bench(tmp_path, capsys, *args):
    """Run `python -m vkops bench` in this process; (exit status, document, stdout, stderr)."""
    out = tmp_path / "results"
    rc = cli.main(["bench", "--quick", "--no-progress", "--out", str(out), *args])
    o, e = capsys.readouterr()
    files = sorted(out.glob("*.json"))
    assert len(files) == 1, files
    return rc, json.loads(files[0].read_text()), o, e


def test_info_lists_devices_kp_spirv_and_baselines(capsys):
    assert cli.main(["info", "--json"]) == 0
    facts = json.loads(capsys.readouterr().out)
    infos = vkops.devices()
    assert [d["name"] for d in facts["devices"]] == [i.name for i in infos]
    d0, dev = facts["devices"][0], vkops.Device(0)
    assert d0["subgroup_size"] == dev.subgroup_size and d0["features"] == list(dev.features)
    assert d0["limits"]["max_storage_buffer_range"] == infos[0].max_storage_buffer_range
    assert d0["limits"]["max_compute_shared_memory_size"] == infos[0].shared_memory_bytes
    assert len(d0["cooperative_matrix_shapes"]) == len(infos[0].cooperative_matrix_shapes)
    assert facts["kp"]["patched"] is True
    manifest = json.loads((ROOT / "vkops" / "spv" / "manifest.json").read_text())
    assert facts["spirv"]["modules"] == sorted(manifest["modules"])
    for name in ("numpy", "onnxruntime"):
        assert facts["baselines"][name]["available"], facts["baselines"][name]
    assert facts["baselines"]["torch"]["available"] == bool(torch_rows())
    assert cli.main(["info"]) == 0
    text = capsys.readouterr().out
    assert f"device 0: {infos[0].name}" in text and "subgroup size" in text and "features enabled: " in text
    assert "onnxruntime: " in text and "SPIR-V: " in text


@pytest.mark.parametrize("op,args,n_cases", [
    ("top_k", ["--shape", "4x300", "--shape", "2x3x40", "--k", "1,5", "--dtype", "float32,uint8"], 8),
    ("slice", ["--shape", "6x40", "--dtype", "float32", "--dtype", "int8"], 10),
    ("qlmm", ["--shape", "8x32x16", "--shape", "2x4x16x8", "--dtype", "int8xint8,uint8xuint8"], 4),
    ("qlmm", ["--shape", "20x64x48", "--dtype", "uint8xint8", "--b-layout", "row-major,column-major"], 2),
])
def test_bench_each_op_against_numpy_and_onnxruntime(tmp_path, capsys, op, args, n_cases):
    rc, doc, out, err = bench(tmp_path, capsys, "--op", op, "--against", "torch,numpy,onnxruntime", *args)
    assert rc == 0, err
    valid(doc)
    assert doc["device"]["name"] == vkops.Device().name and not doc["interrupted"]
    assert doc["method"]["reps"] == QUICK.reps and doc["against"] == ["torch", "numpy", "onnxruntime"]
    cases = report.by_case(doc["rows"])
    assert len(cases) == n_cases
    extra = {"vkCmdCopyBuffer"} if op == "slice" else set()
    for key, impls in cases.items():
        copy = op == "slice" and json.loads(key[3])["window"] == "copy"
        assert set(impls) == BASES | torch_rows() | (extra if copy else set()), key
    for r in doc["rows"]:
        assert r["verified"] is True, r
        case = C.case_from_row(r)
        if r["device"] == "vulkan":
            assert r["gpu_ms"] > 0 and r["wall_ms"] > 0 and r["batch_wall_ms"] > 0 and r["throughput_from"] == "gpu_ms"
        elif r["device"] == "cpu":
            assert r["gpu_ms"] is None and r["batch_wall_ms"] is None and r["throughput_from"] == "wall_ms"
        ms = r["gpu_ms"] or r["wall_ms"]
        gbs, tops = S.throughput(case, ms)
        assert (r["gb_per_s"], r["tops"]) == (gbs, tops)
        assert (gbs is None) == (op == "qlmm")
    if not torch_rows():
        assert not doc["baselines"]["torch"]["available"] and "baseline torch:" in err
    assert "| vkops " in out and "| numpy " in out and "| onnxruntime " in out and "results: " in out


def test_a_wrong_output_fails_its_check(tmp_path, capsys, monkeypatch):
    real = S.TopK.read

    def corrupt(out):
        v, i = real(out)
        return v, i[..., ::-1].copy()  # right values set, wrong order of indices

    monkeypatch.setattr(S.TopK, "read", staticmethod(corrupt))
    rc, doc, out, err = bench(tmp_path, capsys, "--op", "top_k", "--shape", "3x50", "--k", "4", "--against", "numpy")
    ours = [r for r in doc["rows"] if r["implementation"] == "vkops"]
    assert rc == 1 and [r["verified"] for r in ours] == [False] and "FAILED" in err
    assert [r["verified"] for r in doc["rows"] if r["implementation"] == "numpy"] == [True]


@pytest.mark.host_only
def test_top_k_check_follows_the_tie_rule():
    x = np.array([[3, 7, 7, 1, 7]], np.uint8)
    case, prob = C.top_k_case(x.shape, "uint8", 3), S.Problem({"x": x})
    v = np.array([[7, 7, 7]], np.uint8)
    assert S.TopK.check(case, prob, (v, np.array([[1, 2, 4]])), strict=True) == (True, "exact")
    swapped = (v, np.array([[4, 1, 2]]))
    assert S.TopK.check(case, prob, swapped, strict=True)[0] is False        # vkops: the spec's order
    assert S.TopK.check(case, prob, swapped, strict=False) == (True, "values exact; tie order differs")
    assert S.TopK.check(case, prob, (v, np.array([[1, 1, 2]])), strict=False)[0] is False  # one twice
    assert S.TopK.check(case, prob, (v, np.array([[0, 1, 2]])), strict=False)[0] is False  # 3 is not 7
    assert S.TopK.check(case, prob, (np.array([[7, 7, 3]], np.uint8), np.array([[1, 2, 0]])), strict=False)[0] is False


@pytest.mark.host_only
def test_top_k_check_samples_the_rows_of_a_tall_input():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((300, 40)).astype(np.float32)
    case, prob = C.top_k_case(x.shape, "float32", 4), S.Problem({"x": x})
    v, i = vkops.reference.top_k1(x, 4, -1)
    assert S.TopK.check(case, prob, (v, i), strict=True) == (True, "exact (64 of 300 rows)")
    for row in (0, 299, int(prob.cached("rows", None)[7])):  # first, last, one sampled between
        bad = v.copy()
        bad[row, 0] += 1
        assert S.TopK.check(case, prob, (bad, i), strict=True)[0] is False, row


@pytest.mark.subgroup_free
def test_ctrl_c_keeps_the_rows_measured(tmp_path, capsys, monkeypatch):
    real, seen = runner.Sweep.add, []

    def add(self, row):
        real(self, row)
        seen.append(row)
        if len(seen) == 2:
            raise KeyboardInterrupt

    monkeypatch.setattr(runner.Sweep, "add", add)
    rc, doc, out, err = bench(tmp_path, capsys, "--op", "slice", "--shape", "4x16", "--against", "numpy")
    assert rc == 130 and doc["interrupted"] is True and doc["rows"] == json.loads(json.dumps(seen))
    assert "interrupted: kept the 2 rows" in err and out.count("| slice float32 4x16") == 2
    valid(doc)


@pytest.mark.parametrize("sig,name", [(signal.SIGINT, "Ctrl-C"), (signal.SIGTERM, "SIGTERM")])
def test_a_signal_ends_a_sweep_with_its_rows(tmp_path, sig, name):
    """A real Ctrl-C (SIGINT), or the SIGTERM of `timeout` or a batch scheduler, once two rows are out: the
    measurement in flight finishes, exit 130, the rows so far in a valid document."""
    out = tmp_path / "r"
    ks = ",".join(str(k) for k in range(1, 61))
    p = subprocess.Popen([sys.executable, "-m", "vkops", "bench", "--op", "top_k", "--shape", "2x16384", "--k", ks,
                          "--quick", "--against", "none", "--no-progress", "--out", str(out)],
                         cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    rows = 0
    try:
        for line in p.stderr:
            rows += " | vkops: " in line
            if rows == 2:
                p.send_signal(sig)
                break
        stdout, stderr = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 130 and f"{name}: stopping after this measurement" in stderr, stderr
    doc = json.loads(next(out.glob("*.json")).read_text())
    valid(doc)
    assert doc["interrupted"] is True and 2 <= len(doc["rows"]) < 60 and "interrupted: kept the" in stderr


@pytest.mark.subgroup_free
def test_a_missing_baseline_is_reported(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(baselines.OnnxRuntime, "missing", lambda self: "onnxruntime is not installed (test)")
    rc, doc, out, err = bench(tmp_path, capsys, "--op", "slice", "--shape", "4x16", "--window", "flip0",
                              "--against", "onnxruntime,numpy")
    assert rc == 0 and {r["implementation"] for r in doc["rows"]} == {"vkops", "numpy"}
    ort = doc["baselines"]["onnxruntime"]
    assert ort["available"] is False and ort["reason"] == "onnxruntime is not installed (test)"
    assert "baseline onnxruntime: onnxruntime is not installed (test)" in err
    valid(doc)


def test_a_baseline_that_cannot_run_a_case_is_skipped_not_fatal(tmp_path, capsys, monkeypatch):
    def refuse(self, case, problem):
        raise baselines.Unsupported("no kernel for this (test)")

    monkeypatch.setattr(baselines.NumPy, "impls", refuse)
    rc, doc, out, err = bench(tmp_path, capsys, "--op", "top_k", "--shape", "2x64", "--k", "3", "--against", "numpy")
    assert rc == 0 and [r["implementation"] for r in doc["rows"]] == ["vkops"]
    assert doc["skipped"] == [{"op": "top_k", "shape": [2, 64], "dtype": "float32", "params": {"k": 3},
                               "implementation": "numpy", "reason": "no kernel for this (test)"}]
    assert "not run: top_k float32 2x64 numpy: no kernel for this (test)" in out
    valid(doc)


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    """Two result documents that share cases (as two machines would)."""
    d = tmp_path_factory.mktemp("runs")
    a = [C.top_k_case((4, 64), "float32", 2), C.top_k_case((4, 64), "float32", 8), C.slice_case((8, 32), "int8", "copy"),
         C.qlmm_case((4, 16, 8), "uint8xuint8")]
    paths = []
    for cs in (a, a[:2] + [C.slice_case((8, 32), "int8", "stride2")]):
        doc, path = runner.run(runner.Config(cases=cs, against=["numpy"], out=d, method=QUICK, progress=False))
        paths.append(path)
        time.sleep(0.01)
    return paths


def png_size(path: Path):
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


@pytest.mark.host_only
def test_report_writes_markdown_and_plots(tmp_path, capsys, two_runs):
    import matplotlib.image

    out = tmp_path / "rep"
    assert cli.main(["report", *map(str, two_runs), "--out", str(out)]) == 0
    md = (out / "report.md").read_text()
    pngs = sorted(out.glob("*.png"))
    names = {p.name for p in pngs}
    assert {"run1_top_k_throughput.png", "run1_top_k_speedup.png", "run1_slice_throughput.png",
            "run1_qlmm_throughput.png", "run2_top_k_throughput.png", "across_top_k.png"} <= names
    assert "across_slice.png" not in names  # the runs share no slice case
    for p in pngs:
        assert f"]({p.name})" in md
        w, h = png_size(p)
        img = matplotlib.image.imread(p)
        assert img.shape[:2] == (h, w) and p.stat().st_size < 100_000
        assert h == report.HEIGHT_IN * report.DPI
    w, _ = png_size(out / "run1_top_k_throughput.png")
    assert w == report.fig_size(2)[0] * report.DPI
    assert "## Across runs" in md and "### top_k" in md and "vs numpy" in md and "| float32 4x64 K=8" in md
    assert md.count("## run ") == 2 and "| vkops ms | numpy ms |" in md
    assert "ms vkops / numpy (speedup), by K:" in md and "| float32 | 4x64  |" in md  # docs/performance/top_k1.md's TOP_K1 layout
    assert capsys.readouterr().out.count("plot: ") == len(pngs)


@pytest.mark.host_only
def test_report_without_matplotlib_writes_markdown(tmp_path, capsys, monkeypatch, two_runs):
    monkeypatch.setattr(report, "_pyplot", lambda: None)
    out = tmp_path / "rep"
    assert cli.main(["report", str(two_runs[0]), "--out", str(out)]) == 0
    assert "matplotlib is not installed" in (out / "report.md").read_text() and not list(out.glob("*.png"))
    assert "matplotlib is not installed" in capsys.readouterr().err


@pytest.mark.parametrize("args,option", [
    (["bench", "--op", "nope"], "--op"),
    (["bench", "--shape", "4x8"], "--shape"),
    (["bench", "--op", "top_k", "--shape", "4x8", "--preset", "small"], "--shape"),
    (["bench", "--op", "top_k", "--shape", "4x8", "--k", "9"], "--k"),
    (["bench", "--op", "top_k", "--shape", "4x8", "--k", "two"], "--k"),
    (["bench", "--op", "slice", "--shape", "4x8", "--k", "2"], "--k"),
    (["bench", "--op", "top_k", "--shape", "4x8", "--dtype", "float64"], "--dtype"),
    (["bench", "--op", "qlmm", "--shape", "4x8"], "--shape"),
    (["bench", "--op", "qlmm", "--shape", "4x8x8", "--dtype", "int16xint8"], "--dtype"),
    (["bench", "--op", "slice", "--shape", "4x8", "--window", "diagonal"], "--window"),
    (["bench", "--op", "qlmm", "--shape", "4x8x8", "--b-layout", "transposed"], "--b-layout"),
    (["bench", "--op", "top_k", "--shape", "4x8", "--b-layout", "column-major"], "--b-layout"),
    (["bench", "--preset", "small", "--b-layout", "column-major"], "--b-layout"),
    (["bench", "--shape", "4xa", "--op", "slice"], "--shape"),
    (["bench", "--against", "tensorflow"], "--against"),
    (["bench", "--device", "99"], "--device"),
    (["bench", "--preset", "large"], "--preset"),
    (["bench", "--preset", "small", "--dtype", "bfloat16"], "--dtype"),
    (["bench", "--preset", "llm", "--op", "slice"], "--op"),
    (["report", "--out", "x", "/nonexistent.json"], "results"),
])
@pytest.mark.host_only
def test_bad_arguments_are_usage_errors_naming_the_option(capsys, args, option):
    with pytest.raises(SystemExit) as e:
        cli.main(args)
    err = capsys.readouterr().err
    assert e.value.code == 2 and f"argument {option}" in err and "usage: python -m vkops" in err, err


@pytest.mark.host_only
def test_report_refuses_a_file_that_is_not_a_result(tmp_path, capsys):
    bad = tmp_path / "plan.json"
    bad.write_text(json.dumps({"format": "vkops-plan/1"}))
    with pytest.raises(SystemExit) as e:
        cli.main(["report", str(bad), "--out", str(tmp_path)])
    assert e.value.code == 2 and "is not a vkops bench result" in capsys.readouterr().err


def test_python_m_vkops_bench_runs_as_a_command(tmp_path):
    r = subprocess.run([sys.executable, "-m", "vkops", "bench", "--op", "nope"], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 2 and "argument --op: invalid choice: 'nope'" in r.stderr
    r = subprocess.run([sys.executable, "-m", "vkops", "bench", "--op", "qlmm", "--shape", "4x8x8", "--quick",
                        "--against", "numpy", "--out", str(tmp_path)], cwd=ROOT, capture_output=True, text=True,
                       env=dict(os.environ, OUT="/nonexistent"))
    assert r.returncode == 0, r.stderr
    doc = json.loads(next(tmp_path.glob("*.json")).read_text())
    assert doc["command"][3:] == ["bench", "--op", "qlmm", "--shape", "4x8x8", "--quick", "--against", "numpy",
                                  "--out", str(tmp_path)]
    valid(doc)


def test_qlmm_column_major_b_case(tmp_path):
    """The llm preset's column-major cases: b goes up as the N x K matrix and the call sees a transposed
    view of it; the result is checked like any other, and the layout is part of the case."""
    case = C.qlmm_case((8, 32, 16), "int8xint8", "column-major")
    assert "B column-major" in case.label()
    assert any(c.params.get("b_layout") == "column-major" for c in presets.qlmm("llm"))
    dev = vkops.Device()
    b = np.arange(32 * 16, dtype=np.int8).reshape(1, 32, 16)
    view = S.QLinearMatMul.upload(case, dev, "b", b)
    assert view.desc.element_strides == (512, 1, 32) and np.array_equal(view.numpy(), b)
    doc, _ = runner.run(runner.Config(cases=[case, C.qlmm_case((8, 32, 16), "int8xint8")], against=[],
                                      out=tmp_path, method=QUICK, progress=False))
    assert [r["verified"] for r in doc["rows"]] == [True, True]
    assert [C.case_from_row(r).params.get("b_layout") for r in doc["rows"]] == ["column-major", None]


def test_decode_preset_runs_every_way_and_checks_every_token(tmp_path, capsys, monkeypatch):
    """`bench --preset decode`: eager, batch and graph over the same tokens, each token's top-k against the
    oracle, one JSON document; a graph whose output is wrong fails the run (exit 1); bad options are usage
    errors naming the option."""
    from vkops.bench import decode

    assert cli.main(["bench", "--preset", "decode", "--step", "tiny", "--tokens", "3", "--quick", "--against", "none",
                     "--out", str(tmp_path)]) == 0
    (path,) = tmp_path.glob("decode-tiny-*.json")
    doc = json.loads(path.read_text())
    assert [r["implementation"] for r in doc["rows"]] == ["vkops eager", "vkops batch", "vkops graph"]
    assert all(r["verified"] and r["tokens_checked"] == 3 for r in doc["rows"]) and not doc["failures"]
    assert doc["gpu_ms_per_token"]["vkops"] > 0 and doc["weight_bytes"] == decode.STEPS["tiny"].weight_bytes
    assert "vkops graph" in capsys.readouterr().out

    real = decode.VkopsStep.replay
    monkeypatch.setattr(decode.VkopsStep, "replay", lambda self, x: tuple(a + 1 for a in real(self, x)))
    assert cli.main(["bench", "--preset", "decode", "--step", "tiny", "--tokens", "2", "--quick", "--against", "none",
                     "--out", str(tmp_path / "bad")]) == 1
    assert "FAILED vkops graph" in capsys.readouterr().out
    for argv, msg in ((["--step", "huge"], "--step: 'huge'"), (["--tokens", "0"], "--tokens: must be >= 1"),
                      (["--k", "5"], "--preset decode: takes"),
                      (["--b-layout", "row-major,column-major"], "--b-layout: the decode preset takes one of"),
                      (["--b-layout", "diagonal"], "row-major or column-major, not 'diagonal'")):
        with pytest.raises(SystemExit):
            cli.main(["bench", "--preset", "decode", "--quick"] + argv)
        assert msg in capsys.readouterr().err


def test_decode_preset_with_pytorch_layout_weights(tmp_path, monkeypatch):
    """`--b-layout column-major`: vkops' weights are N x K device matrices read through K x N views (PyTorch's
    Linear weight as it lies), every token checked, the layout in the document; where the matrix-vector kernel
    runs (QlmmTuning.GEMV_BC) it reads them in place: its _bc build, nothing packed."""
    from vkops.bench import decode
    from vkops.ops.qlmm import gemv as QG

    steps, real = [], decode.VkopsStep.__init__
    monkeypatch.setattr(decode.VkopsStep, "__init__", lambda self, *a, **k: (real(self, *a, **k), steps.append(self))[0])
    assert cli.main(["bench", "--preset", "decode", "--step", "tiny", "--tokens", "2", "--quick", "--against", "none",
                     "--b-layout", "column-major", "--out", str(tmp_path)]) == 0
    (path,) = tmp_path.glob("decode-tiny-*.json")
    doc = json.loads(path.read_text())
    assert doc["b_layout"] == "column-major" and all(r["verified"] for r in doc["rows"]) and not doc["failures"]
    (vk,) = steps
    s = decode.STEPS["tiny"]
    shapes = [(s.hidden, s.ffn), (s.ffn, s.hidden), (s.hidden, s.vocab)]
    assert [(w.desc.sizes[-2:], w.desc.element_strides[-2:]) for w in vk.w] == [(kn, (1, kn[0])) for kn in shapes]
    def b_of(p):  # the (K, N) of a plan's B where B is read through a transposed view
        b = next((x.tensor for x in p.buffers if x.name == "b"), None)
        return b and b.element_strides[-2] == 1 and tuple(b.sizes[-2:])

    mine = [p for p in vk.dev._plans._entries.values() if p.op == "qlmm" and b_of(p) in shapes]
    bc = [p for p in mine if p.dispatches[-1].kernel.startswith(QG.kernel(1, True))]
    assert len(mine) == len(shapes)  # one plan a product, whichever way it ran
    allowed = [(K, N) for K, N in shapes if QG.why_not(vk.dev.limits, 1, K, N, (0, 0, K, 1), True)[0]]
    assert len(bc) == len(allowed) and all(len(p.dispatches) == 1 and p.note("b_layout") == "column-major" for p in bc)
    assert allowed or os.environ.get("VKOPS_CI_LEG") == "limits"  # lavapipe as it is runs the kernel
