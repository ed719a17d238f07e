"""Research (not a benchmark of record): where GRADIX's compaction (top_k1_gradix_collect_*) spends its time. A
GRADIX top_k is planned (the default rule; GRADIX forced where the rule takes another path) and its digit passes
run once into this script's own `work` and `ctr` buffers, so the row state the compaction reads (each row's K-th
key T, `need`, each chunk's ties of T) is real. Then the plan's compaction dispatch is timed alone, and copies of it
with the same push block, groups and buffers (kernels/variants.py research_gcollect_probe*, gradix_collect.comp's
GCOLLECT_PROBE), each adding one part to the one before:

    probe1  the block loop's loads alone (no row state, no keys, no barrier)
    probe2  + the row state (T, need, the earlier chunks' ties: two barriers) and each element's key and compare
            with T, counts only
    probe3  + the block's slots: shared atomics, the two barriers a block and the row's global slot atomic between
            them, nothing written
    probe4  + the survivors' writes (keys above T, ties of chunks wholly inside the cut); no cut-chunk tie list,
            no tail (the cut chunk's ranking)
    probe5  probe4 without the slot round trip (no barriers, no global atomic: slots from the workgroup's own
            shared counter, wrapped into the row's K)
    real    + the cut chunk's tie list and its ranking (the real module: for 16/32-bit keys its loops replaced by
            a survivor bit mask since session 23, so probes 1-5 cut down the loops it had, which 8-bit keys keep)

Whole-kernel variants of the write phase (probe6-13: unrolled loops, 8-byte stores, staged and ballot writes, the bit
mask) were measured and removed; their numbers are in docs/tuning/top_k1.md, session 23.

Each is timed as its dispatch's Vulkan timestamps (vkops.bench.timing's method: warm-up, rounds until two agree,
the median call of a round), each call followed by a copy that zeroes `ctr` (the row's survivor slot counter, which
gradix_sort would zero; its time is not counted). Printed: GPU µs and the row data's read rate, with the module's
workgroup size and shared memory. The cut-down probes' (1-5) outputs mean nothing and are not checked; the real
compaction's survivors are checked against the oracle's top-K indices
a row (wrong: exit status 1), and the whole top_k call against NumPy's top-K values and the oracle's
indices. --ties N draws the values from N levels (many ties of T: the cut chunk's tie list or its block scan).

    bash bench/gpu.sh python3 bench/research/gradix_collect_probe.py [--shape 64x131072] [--k 4096] [--dtype float32]
        [--ties N]
"""
import argparse
import json
import os
import statistics
import sys
from importlib import resources

import numpy as np
sys.path.insert(0, os.getcwd())
import vkops  # noqa: E402
from vkops import reference  # noqa: E402
from vkops.bench import timing  # noqa: E402
from vkops.ops import top_k1  # noqa: E402
from vkops.plan import Builder  # noqa: E402
from vkops.runtime.execute import execute  # noqa: E402

SUFFIX = {"float32": "f32", "float16": "f16"}  # the dtypes with research_gcollect_probe* modules
# (label, module; {t}: the dtype's suffix), in the order printed: the real module, then cut down
VARIANTS = [("real", "top_k1_gradix_collect_{t}"),
            ("probe5 no slot trip", "research_gcollect_probe5_{t}"), ("probe4 +writes", "research_gcollect_probe4_{t}"),
            ("probe3 +slots", "research_gcollect_probe3_{t}"), ("probe2 +keys", "research_gcollect_probe2_{t}"),
            ("probe1 loads", "research_gcollect_probe1_{t}")]
FULL = {"real"}  # the whole kernel: its survivors checked

ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
ap.add_argument("--shape", default="64x131072", help="rows x row length")
ap.add_argument("--k", type=int, default=4096)
ap.add_argument("--dtype", default="float32", choices=sorted(SUFFIX))
ap.add_argument("--chunks", type=int, default=None, help="GRADIX chunks a row (default: the rule's)")
ap.add_argument("--reps", type=int, default=30, help="calls a timed round")
ap.add_argument("--ties", type=int, default=None, help="values drawn from this many levels (many ties)")
args = ap.parse_args()
M_ = timing.Method(reps=args.reps, warm_s=0.3, round_warm_s=0.1)
dev = vkops.Device()
shape = tuple(map(int, args.shape.split("x")))
rng = np.random.default_rng(0)
x_np = (rng.standard_normal(shape) if args.ties is None else rng.integers(0, args.ties, shape)).astype(args.dtype)
x = dev.tensor(x_np)
xd = x.desc
n_rows, K = int(np.prod(shape[:-1])), args.k

d = top_k1.TopK1Desc(xd, *top_k1.output_descs(xd, len(shape) - 1, K), len(shape) - 1, K).validate()
kw = {} if args.chunks is None else {"chunks": args.chunks}
p = top_k1.plan(d, dev.limits, **kw)
if p.note("path") != "gradix":
    kw["force"] = "gradix"
    p = top_k1.plan(d, dev.limits, **kw)
hists = [x_ for x_ in p.dispatches if x_.kernel.startswith("top_k1_gradix_hist_")]
collect = next(x_ for x_ in p.dispatches if x_.kernel.startswith(("top_k1_gradix_collect_", "top_k1_gradix_fcollect_")))
assert collect.kernel == f"top_k1_gradix_collect_{SUFFIX[args.dtype]}", collect.kernel  # not GRADIX_FILTER's
pc = np.frombuffer(np.array(collect.push, np.uint32).tobytes(), top_k1.PUSH["gradix_collect"])[0]
work_words, ctr_words = (p.buffers[i].words for i in collect.bindings[1:])
manifest = json.loads(resources.files("vkops").joinpath("spv", "manifest.json").read_text())["modules"]
wg = collect.spec[0]


def shared_bytes(module):
    terms = manifest[module]["shared_memory"]["terms"]
    return sum(t["bytes"] * (t["length"] if isinstance(t["length"], int) else collect.spec[t["length"]["spec"]])
               for t in terms)


print("device", dev.name, "shape", shape, args.dtype, "K", K, "path gradix" + (" (forced)" if "force" in kw else ""),
      flush=True)
print(f"compaction {collect.kernel}: groups {collect.groups}, workgroup {wg}, chunks {pc['chunks']} of "
      f"{pc['chunk_len']}, vec {pc['vec']}, {shared_bytes(collect.kernel)} B shared; {len(hists)} digit passes first",
      flush=True)

# The probe's buffers: x, and work and ctr of the plan's sizes as inputs (the same tensors for every plan here)
work = dev.tensor(np.zeros(work_words, np.uint32))
ctr = dev.tensor(np.zeros(ctr_words, np.uint32))
zeros = dev.tensor(np.zeros(ctr_words, np.uint32))


def plan_of(kernels):
    b = Builder("gradix_collect_probe", dev.limits)
    refs = [b.input(xd, "x"), b.input(work.desc, "work"), b.input(ctr.desc, "ctr")]
    for k, disp in kernels:
        b.dispatch(k, refs, [1, 2], disp.groups, np.array(disp.push, np.uint32), disp.spec)
    return b.finish()


def run(plan, batch):
    execute(plan, batch, [x, work, ctr], [])
    batch.copy(zeros, ctr)  # the survivors' slot counters back to zero (gradix_sort's job in the real plan)


with dev.batch() as b:  # the real digit passes: T, need and each chunk's ties in `work`, `ctr` left zero
    execute(plan_of([(h.kernel, h) for h in hists]), b, [x, work, ctr], [])
pristine = dev.tensor(work.numpy())  # that state, the survivors all zero
state = work.numpy()[:2 * n_rows]
assert not ctr.numpy().any(), "the digit passes left ctr nonzero"
print(f"row 0: T 0x{int(state[0]):08x}, need {int(state[1])} of its ties (keys above T: {K - int(state[1])})",
      flush=True)

ref_i = reference.top_k1(x_np.reshape(n_rows, shape[-1]), K, -1)[1]


def survivors_exact(plan):
    """Run `plan` once on the real state, the survivors zeroed first; whether every row's survivors are its top-K
    indices."""
    with dev.batch() as b:
        b.copy(pristine, work)
        run(plan, b)
    w = work.numpy()
    surv0 = 2 * n_rows + n_rows * int(pc["chunks"]) * 256  # gradix.glsl surv_at(0)
    idx = w[surv0:surv0 + 2 * n_rows * K].reshape(n_rows, K, 2)[:, :, 1]
    return np.array_equal(np.sort(idx, axis=1), np.sort(ref_i.astype(np.uint32), axis=1))


def gpu_us(plan):
    """GPU µs of the plan's one dispatch (the zeroing copy after it not counted), timing's method."""
    with dev.batch() as b:
        run(plan, b)  # pipelines built

    def batch_once(timestamps=False):
        b = dev.batch(timestamps=timestamps)
        with b:
            for _ in range(M_.reps):
                run(plan, b)
        return b

    timing.warm(batch_once, M_.warm_s)

    def timed():
        b = batch_once(timestamps=True)
        assert len(b.gpu_ns) == 2 * M_.reps, len(b.gpu_ns)  # the dispatch, the copy
        return statistics.median(b.gpu_ns[0::2]) / 1e3

    return timing.settled(timed, lambda: timing.warm(batch_once, M_.round_warm_s), M_)


ok = True
for label, module in VARIANTS:
    module = module.format(t=SUFFIX[args.dtype])
    plan = plan_of([(module, collect)])
    us = gpu_us(plan)
    check = ""
    if label.split()[0] in FULL:
        exact = survivors_exact(plan)
        ok &= exact
        check = "  survivors exact" if exact else "  survivors WRONG"
    print(f"{label:22s} {module:31s} {us:7.1f} us  {x_np.nbytes / us / 1e3:7.1f} GB/s  "
          f"{shared_bytes(module)} B shared{check}", flush=True)

# The whole top_k (its own plan and buffers), after: NumPy's top-K values, the oracle's indices (ties by index)
v, i = (t.numpy() for t in top_k1._top_k(x, K, **kw))
want_v = -np.sort(-x_np.astype(np.float32), axis=-1)[..., :K]
call_ok = np.array_equal(v.astype(np.float32), want_v) and np.array_equal(i.reshape(n_rows, K), ref_i)
print("top_k call:", "exact" if call_ok else "WRONG", flush=True)
sys.exit(0 if ok and call_ok else 1)
