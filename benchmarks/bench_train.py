"""Time one full training step of this project against the same model in PyTorch, on the CPU.

Run by hand, never by pytest:  python benchmarks/bench_train.py [--shape reference|large|both] [--reps N]

One step is what train.py does per batch: loss_and_grads, clip_grad_norm, one Adam step. The
PyTorch side is tests/torch_gpt.py (the same named parameters, float32, eager mode, default
threads) with torch_gpt.adamw (the same decay groups) and torch.nn.utils.clip_grad_norm_. After a
warm-up the two sides alternate, step for step, so a noisy machine slows both alike; the medians
and their ratio come from that one run.

Also printed:
- the step's matmul FLOPs, counted from the shapes (forward + backward of every linear layer and
  of the two attention products), and the rate this project reaches on them, next to NumPy's own
  float32 matmul rate on a 1024 x 1024 @ 1024 x 1024 product measured in the same run;
- peak memory of one step. Two measures: tracemalloc's peak for our step (NumPy reports its array
  allocations to tracemalloc; torch does not), and for both sides the growth of the resident set's
  high-water mark (VmHWM) over one step, each side in a fresh process where glibc is told to mmap
  every block over 64 KiB, so that freeing memory returns it and the high-water mark sees every
  temporary rather than reused heap.
"""

import argparse
import math
import os
import resource
import statistics
import subprocess
import sys
import time
import tracemalloc

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "tests")]

from optim import Adam, clip_grad_norm  # noqa: E402
from transformer import ModelConfig, init_params, loss_and_grads  # noqa: E402

try:
    import torch
    import torch_gpt
except ImportError as error:
    torch, TORCH_MISSING = None, f"PyTorch is not importable ({error}); pip install torch==2.13.0 to compare"

SHAPES = {  # name: (B, T, emb_dim, heads, layers, ff_dim, V); context_len = T
    "reference": (16, 16, 32, 2, 2, 128, 575),
    "large": (32, 128, 256, 4, 4, 1024, 575),
}
LR, BETAS, EPS, WEIGHT_DECAY, GRAD_CLIP = 1e-3, (0.9, 0.999), 1e-8, 0.01, 1.0


def make_problem(shape):
    """The config, float32 parameters and one batch of ids and targets for a named shape."""
    B, T, C, nh, L, F, V = SHAPES[shape]
    cfg = ModelConfig(vocab_size=V, context_len=T, emb_dim=C, num_heads=nh, num_layers=L, ff_dim=F, ln_eps=1e-5)
    rng = np.random.default_rng(0)
    params = init_params(cfg, rng, dtype=np.float32)
    ids = rng.integers(0, V, size=(B, T))
    return cfg, params, ids, np.roll(ids, -1, axis=1)


def numpy_step_fn(cfg, params, ids, targets):
    """A function that takes one training step of this project."""
    opt = Adam(params, beta1=BETAS[0], beta2=BETAS[1], eps=EPS, weight_decay=WEIGHT_DECAY)

    def step():
        _, grads = loss_and_grads(params, ids, targets, cfg)
        clip_grad_norm(grads, GRAD_CLIP)
        opt.step(params, grads, LR)
    return step


def torch_step_fn(cfg, params, ids, targets):
    """A function that takes one training step of the PyTorch mirror, on its own copy of params."""
    tparams = torch_gpt.to_torch(params)
    opt = torch_gpt.adamw(tparams, lr=LR, betas=BETAS, eps=EPS, weight_decay=WEIGHT_DECAY)
    tids, ttargets = torch.tensor(ids), torch.tensor(targets)

    def step():
        torch_gpt.loss_and_grads(tparams, tids, ttargets, cfg)
        torch.nn.utils.clip_grad_norm_(list(tparams.values()), GRAD_CLIP)
        opt.step()
    return step


def seconds(fn):
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def timed(step):
    """Run step once: the seconds it took and the minor page faults of this process meanwhile."""
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    took = seconds(step)
    return took, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults


def matmul_flops(shape):
    """FLOPs of the step's matrix products: forward, then backward (two products per forward one).

    A product (m, k) @ (k, n) costs 2 m k n. Per block: QKV (N, C) @ (C, 3C), scores (T, hs) @ (hs, T)
    and attn @ V (T, T) @ (T, hs) for each of B * nh heads, Wo (N, C) @ (C, C), W1 (N, C) @ (C, F),
    W2 (N, F) @ (F, C); then the head (N, C) @ (C, V). The backward of each product is two products of
    the same size (the input's gradient and the weight's, or both operands' for attention).
    """
    B, T, C, nh, L, F, V = SHAPES[shape]
    N, hs = B * T, C // nh
    block = 2 * N * C * 3 * C + 2 * (2 * B * nh * T * T * hs) + 2 * N * C * C + 2 * (2 * N * C * F)
    forward = L * block + 2 * N * C * V
    return 3 * forward


def sgemm_gflops(n=1024, reps=10):
    """NumPy's float32 matmul rate on an n x n @ n x n product: the best of reps, in GFLOP/s."""
    rng = np.random.default_rng(0)
    a, b = rng.random((n, n), dtype=np.float32), rng.random((n, n), dtype=np.float32)
    a @ b
    return 2 * n ** 3 / min(seconds(lambda: a @ b) for _ in range(reps)) / 1e9


def tracemalloc_peak_mib(step):
    """Peak of NumPy's allocations during one step, over what was allocated before it."""
    tracemalloc.start()
    before, _ = tracemalloc.get_traced_memory()
    step()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return (peak - before) / 2 ** 20


def rss_kib(field):
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith(field + ":"))


def hwm_growth_in_child(shape, side):
    """Run `--hwm-child` in a fresh process and return the MiB it printed (None where unsupported)."""
    env = dict(os.environ, MALLOC_MMAP_THRESHOLD_="65536")
    result = subprocess.run([sys.executable, __file__, "--shape", shape, "--hwm-child", side],
                            env=env, capture_output=True, text=True)
    return float(result.stdout) if result.returncode == 0 and result.stdout.strip() else None


def hwm_growth_mib(shape, side):
    """In this process: after a warm-up step, how far one more step lifts the resident high-water mark."""
    make = numpy_step_fn if side == "numpy" else torch_step_fn
    step = make(*make_problem(shape))
    step()
    with open("/proc/self/clear_refs", "w") as clear_refs:
        clear_refs.write("5")  # resets VmHWM to the current resident set size (Linux 4.0 and later)
    before = rss_kib("VmRSS")
    step()
    return (rss_kib("VmHWM") - before) / 1024


def bench(shape, reps, warmup):
    problem = make_problem(shape)
    steps = {"numpy": numpy_step_fn(*problem)}
    if torch is not None:
        steps["torch"] = torch_step_fn(*problem)
    runs = {side: [] for side in steps}
    for _ in range(warmup):
        for step in steps.values():
            step()
    for _ in range(reps):
        for side, step in steps.items():
            runs[side].append(timed(step))
    ms = {side: 1e3 * statistics.median(took for took, _ in r) for side, r in runs.items()}
    faults = {side: statistics.median(f for _, f in r) for side, r in runs.items()}
    flops = matmul_flops(shape)
    peak = sgemm_gflops()
    B, T, C, nh, L, F, V = SHAPES[shape]
    print(f"\n{shape}: B={B} T={T} emb_dim={C} heads={nh} layers={L} ff_dim={F} V={V}, float32, {reps} steps each")
    print(f"  numpy (ours) : {ms['numpy']:8.2f} ms/step (median), {faults['numpy']:.0f} page faults/step")
    if torch is not None:
        print(f"  torch        : {ms['torch']:8.2f} ms/step (median), {faults['torch']:.0f} page faults/step, "
              f"eager, {torch.get_num_threads()} threads")
        print(f"  speed-up     : {ms['torch'] / ms['numpy']:8.2f} x  (torch ms / ours ms)")
    else:
        print(f"  torch        : not measured: {TORCH_MISSING}")
    rate = flops / (ms["numpy"] / 1e3) / 1e9
    print(f"  matmul FLOPs : {flops:,} per step -> ours {rate:.1f} GFLOP/s, "
          f"numpy sgemm 1024^3 peak {peak:.1f} GFLOP/s ({100 * rate / peak:.0f}%)")
    print(f"  peak memory  : ours {tracemalloc_peak_mib(steps['numpy']):.1f} MiB (tracemalloc, numpy allocations)")
    for side in steps:
        growth = hwm_growth_in_child(shape, side)
        shown = "unavailable (needs Linux /proc)" if growth is None else f"{growth:.1f} MiB"
        print(f"                 {side:5s} {shown} (growth of VmHWM over one step, fresh process)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", choices=[*SHAPES, "both"], default="both")
    parser.add_argument("--reps", type=int, default=None, help="timed steps per side (default 60 reference, 10 large)")
    parser.add_argument("--warmup", type=int, default=3, help="untimed steps per side first")
    parser.add_argument("--hwm-child", choices=["numpy", "torch"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.hwm_child:
        print(hwm_growth_mib(args.shape, args.hwm_child))
        return
    print(f"numpy {np.__version__}" + (f", torch {torch.__version__}" if torch is not None else ""))
    blas_vars = {name: os.environ[name] for name in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE",
                                                     "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS") if name in os.environ}
    print(f"BLAS environment: {blas_vars or 'none of OPENBLAS_CORETYPE, OPENBLAS_L2_SIZE, *_NUM_THREADS set'}")
    for shape in SHAPES if args.shape == "both" else [args.shape]:
        bench(shape, args.reps or (60 if shape == "reference" else 10), args.warmup)


if __name__ == "__main__":
    main()
