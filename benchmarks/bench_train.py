"""Time one full training step of this project against the same model in PyTorch, on the CPU.

Run by hand, never by pytest:
    python benchmarks/bench_train.py [--shape reference|book|large|all] [--reps N] [--one-core] [--processes N]

One step is what train.py does per batch: loss_and_grads, clip_grad_norm, one Adam step, ours
on the processes train.py runs it on: --processes 1 (train.py's default) is this process alone,
with BLAS on every core; --processes 0 the count parallel.processes_for chooses (two at the
reference and book shapes, whose products hold two slices' worth, one per core at the large), each
on a slice of the batch with one BLAS thread. The PyTorch side is tests/torch_gpt.py (the same named parameters, float32, eager mode, default
threads) with torch_gpt.adamw (the same decay groups) and torch.nn.utils.clip_grad_norm_. After a
warm-up the two sides alternate, so a noisy machine slows both alike; the medians and their ratio
come from that one run. They alternate in bursts of steps (5 at the reference shape, 1 at the
large), each burst after a pause of 0.2 s: an idle thread pool spins for a while after its last
task (OpenBLAS's for about 50 ms of CPU here, PyTorch's for a few ms), and on a machine with few
cores that spinning would otherwise slow whichever side runs next.

With --one-core both sides are held to one core: ours in one process (no workers) with one BLAS
thread, PyTorch with torch.set_num_threads(1). That splits the ratio in two: how much work each
side spends on a step, and how much each gains from the other cores.

Also printed:
- minor page faults per step. glibc gives freed heap back to the system when enough of it is
  free at the top, and memory it has given back is faulted in (and zeroed) again when next used:
  how often that happens depends on the whole process's allocation history, so the two sides,
  sharing one heap above, can change each other's figures: our DataParallel calls
  parallel.keep_freed_memory, which makes glibc keep freed memory for the whole process, torch's
  steps in it included. The two are therefore also timed each in a fresh process of its own (as a
  person training with either would run it), still alternating step for step: the parent tells
  one process, then the other, to take a step;
- the step's matmul FLOPs, counted from the shapes (forward + backward of every linear layer and
  of the two attention products), and the rate this project reaches on them, next to NumPy's own
  float32 matmul rate on a 1024 x 1024 @ 1024 x 1024 product measured in the same run;
- peak memory of one step. Two measures: tracemalloc's peak for our step in this process, which
  computes the first slice (NumPy reports its array allocations to tracemalloc; torch does not),
  and for both sides the growth of the resident set's high-water mark (VmHWM) over one step, each
  side in a fresh process where glibc is told to mmap every block over 64 KiB, so that freeing
  memory returns it and the high-water mark sees every temporary rather than reused heap. Beside
  it, the resident set of that process after the step and, for ours, of its worker processes:
  each is a whole interpreter with numpy, and keeps its slice's memory from step to step.
"""

import argparse
import json
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

import config  # noqa: E402
from engineering.parallel import DataParallel, cores, matmul_flops, one_blas_thread, processes_for  # noqa: E402
from transformer import Adam, ModelConfig, clip_grad_norm, init_params  # noqa: E402

SHAPES = {  # name: (B, T, emb_dim, heads, layers, ff_dim, V); context_len = T
    "reference": (16, 16, 32, 2, 2, 128, 575),
    "book": (12, 64, 128, 4, 1, 512, 573),  # config.RECIPES["book"] on a ~1 MB play: 73 characters + 500 merges
    "large": (32, 128, 256, 4, 4, 1024, 575),
}
DEFAULT_REPS = {"reference": 60, "book": 40, "large": 24}  # the large shape drifts by 5% between runs of 10
BURST = {"reference": 5, "book": 2, "large": 1}  # steps in a row per turn; one turn lasts a few ms at least
SETTLE_SECONDS = 0.2  # pause before each turn, for the other side's idle threads to stop spinning
PROCESSES = config.processes  # ours on this many (0: processes_for); main sets it from --processes
LR, BETAS, EPS, WEIGHT_DECAY, GRAD_CLIP = 1e-3, (0.9, 0.999), 1e-8, 0.01, 1.0


def make_problem(shape):
    """The config, float32 parameters and one batch of ids and targets for a named shape."""
    B, T, C, nh, L, F, V = SHAPES[shape]
    cfg = ModelConfig(vocab_size=V, context_len=T, emb_dim=C, num_heads=nh, num_layers=L, ff_dim=F, ln_eps=1e-5)
    rng = np.random.default_rng(0)
    params = init_params(cfg, rng, dtype=np.float32)
    ids = rng.integers(0, V, size=(B, T))
    return cfg, params, ids, np.roll(ids, -1, axis=1)


def numpy_step_fn(cfg, params, ids, targets, one_core=False):
    """A function that takes one training step of this project, on as many processes as train.py would
    (one_core: on this one, with one BLAS thread, for as long as this process lives)."""
    opt = Adam(params, beta1=BETAS[0], beta2=BETAS[1], eps=EPS, weight_decay=WEIGHT_DECAY)
    if one_core:
        one_blas_thread()  # the limit holds until it is restored, which nothing here does
    parallel = DataParallel(1 if one_core else PROCESSES or processes_for(cfg, *ids.shape))
    latest = {}  # the gradients live on until the next step replaces them, as in train.py's loop

    def step():
        _, grads = parallel.loss_and_grads(params, ids, targets, cfg)
        clip_grad_norm(grads, GRAD_CLIP)
        opt.step(params, grads, LR)
        latest["grads"] = grads
    step.parallel = parallel  # for memory(): the worker processes' resident sets count too
    return step


def import_torch():
    """torch and tests/torch_gpt.py, imported only by what steps torch: a process that trains our
    model alone then has none of PyTorch's allocations in its heap, like train.py's. ImportError
    where PyTorch is not installed."""
    import torch
    import torch_gpt
    return torch, torch_gpt


def torch_step_fn(cfg, params, ids, targets, one_core=False):
    """A function that takes one training step of the PyTorch mirror, on its own copy of params
    (one_core: on one thread)."""
    torch, torch_gpt = import_torch()
    if one_core:
        torch.set_num_threads(1)
    tparams = torch_gpt.to_torch(params)
    opt = torch_gpt.adamw(tparams, lr=LR, betas=BETAS, eps=EPS, weight_decay=WEIGHT_DECAY)
    tids, ttargets = torch.tensor(ids), torch.tensor(targets)

    def step():
        torch_gpt.loss_and_grads(tparams, tids, ttargets, cfg)  # .grad lives on until the next step
        torch.nn.utils.clip_grad_norm_(list(tparams.values()), GRAD_CLIP)
        opt.step()
    return step


STEP_FNS = {"numpy": numpy_step_fn, "torch": torch_step_fn}


def seconds(fn):
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def timed(step):
    """Run step once: the seconds it took and the minor page faults of this process meanwhile."""
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    took = seconds(step)
    return took, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults


def alternate(timed_steps, reps, warmup, burst):
    """Warm up, then take reps steps per side, in turns of burst: {side: (median ms, median page faults)}.

    timed_steps maps each side to a function that takes one step and returns (seconds, faults).
    """
    runs = {side: [] for side in timed_steps}
    for _ in range(warmup):
        for timed_step in timed_steps.values():
            timed_step()
    for _ in range(max(1, reps // burst)):
        for side, timed_step in timed_steps.items():
            time.sleep(SETTLE_SECONDS)
            runs[side] += [timed_step() for _ in range(burst)]
    return {side: (1e3 * statistics.median(took for took, _ in r), statistics.median(f for _, f in r))
            for side, r in runs.items()}


def child_command(shape, side, measure, one_core):
    """The command line of a fresh process for one side (child, below)."""
    command = [sys.executable, __file__, "--shape", shape, "--child", side, "--measure", measure,
               "--processes", str(PROCESSES)]
    return command + (["--one-core"] if one_core else [])


class StepProcess:
    """One side's training step in a fresh process of its own, stepped on request from this one."""

    def __init__(self, shape, side, one_core):
        self.process = subprocess.Popen(child_command(shape, side, "steps", one_core), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def __call__(self):  # -> (seconds, page faults) of one step, timed in the other process
        self.process.stdin.write("step\n")
        self.process.stdin.flush()
        took, faults = json.loads(self.process.stdout.readline())
        return took, faults

    def close(self):
        self.process.stdin.close()
        self.process.wait()


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


def rss_kib(field, pid="self"):
    with open(f"/proc/{pid}/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith(field + ":"))


def memory(step):
    """After a warm-up step, how far one more step lifts the resident high-water mark (MiB), and the
    resident sets (MiB) after it of this process and of the worker processes it trains with."""
    step()
    with open("/proc/self/clear_refs", "w") as clear_refs:
        clear_refs.write("5")  # resets VmHWM to the current resident set size (Linux 4.0 and later)
    before = rss_kib("VmRSS")
    step()
    workers = [worker.process.pid for worker in step.parallel.workers] if hasattr(step, "parallel") else []
    return {"growth": (rss_kib("VmHWM") - before) / 1024, "resident": rss_kib("VmRSS") / 1024,
            "workers": [rss_kib("VmRSS", pid) / 1024 for pid in workers]}


def child(args):
    """A fresh process for one side: take timed steps while asked to, or measure its memory once."""
    step = STEP_FNS[args.child](*make_problem(args.shape), one_core=args.one_core)
    if args.measure == "steps":
        for _ in sys.stdin:  # one line, one step
            print(json.dumps(timed(step)), flush=True)
    else:
        print(json.dumps(memory(step)))


def memory_in_child(shape, side, one_core):
    """memory() of one side in a fresh process with small blocks mmapped; None where it failed."""
    env = dict(os.environ, MALLOC_MMAP_THRESHOLD_="65536")
    result = subprocess.run(child_command(shape, side, "memory", one_core), env=env, capture_output=True, text=True)
    return json.loads(result.stdout) if result.returncode == 0 and result.stdout.strip() else None


def bench(shape, reps, warmup, one_core):
    problem = make_problem(shape)
    try:
        torch, _ = import_torch()
    except ImportError as error:
        torch, torch_missing = None, f"PyTorch is not importable ({error}); pip install torch==2.13.0 to compare"
    sides = ["numpy"] + (["torch"] if torch is not None else [])
    steps = {side: STEP_FNS[side](*problem, one_core=one_core) for side in sides}
    together = alternate({side: lambda step=step: timed(step) for side, step in steps.items()}, reps, warmup,
                         BURST[shape])
    processes = {side: StepProcess(shape, side, one_core) for side in sides}
    apart = alternate(processes, reps, warmup, BURST[shape])
    for process in processes.values():
        process.close()
    B, T, C, nh, L, F, V = SHAPES[shape]
    cfg, processes = problem[0], steps["numpy"].parallel.processes
    print(f"\n{shape}: B={B} T={T} emb_dim={C} heads={nh} layers={L} ff_dim={F} V={V}, float32, {reps} steps each")
    print("                 alternating in one process          alternating, each in its own process")
    for side in sides:
        label = "numpy (ours)" if side == "numpy" else "torch"
        print(f"  {label:13s}{together[side][0]:9.2f} ms/step, {together[side][1]:6.0f} page faults"
              f"     {apart[side][0]:9.2f} ms/step, {apart[side][1]:6.0f} page faults")
    if torch is not None:
        print(f"  speed-up     {together['torch'][0] / together['numpy'][0]:9.2f} x  (torch ms / ours ms)"
              f"          {apart['torch'][0] / apart['numpy'][0]:9.2f} x")
        print(f"  torch {torch.__version__}, eager, {torch.get_num_threads()} thread(s)")
    else:
        print(f"  torch        not measured: {torch_missing}")
    if one_core:
        print(f"  ours on 1 process with one BLAS thread, of {cores()} cores (--one-core)")
    elif processes == 1:
        print(f"  ours in this process, with BLAS on all {cores()} cores (train.py's default, --processes 1)")
    else:
        print(f"  ours on {processes} process(es) of {cores()} cores, each on a slice of the batch with one core "
              f"of BLAS (--processes {PROCESSES})")
    flops, peak = matmul_flops(cfg, B, T), sgemm_gflops()
    rate = flops / (together["numpy"][0] / 1e3) / 1e9
    print(f"  matmul FLOPs : {flops:,} per step -> ours {rate:.1f} GFLOP/s (alternating), "
          f"numpy sgemm 1024^3 peak {peak:.1f} GFLOP/s ({100 * rate / peak:.0f}%)")
    print(f"  peak memory  : ours {tracemalloc_peak_mib(steps['numpy']):.1f} MiB (tracemalloc, numpy allocations "
          f"of this process's slice)")
    for side in sides:
        used = memory_in_child(shape, side, one_core)
        if used is None:
            print(f"                 {side:5s} unavailable (needs Linux /proc)")
            continue
        workers = (f" + {sum(used['workers']):.1f} MiB in {len(used['workers'])} worker process(es)"
                   if used["workers"] else "")
        print(f"                 {side:5s} {used['growth']:.1f} MiB (growth of VmHWM over one step, fresh process); "
              f"resident after it {used['resident']:.1f} MiB{workers}")
    steps["numpy"].parallel.close()  # its workers stop here, not idle through the next shape's run


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", choices=[*SHAPES, "all"], default="all")
    parser.add_argument("--reps", type=int, default=None, help="timed steps per side (default 60 reference, 24 large)")
    parser.add_argument("--warmup", type=int, default=3, help="untimed steps per side first")
    parser.add_argument("--one-core", action="store_true",
                        help="hold both sides to one core: ours one process, one BLAS thread; torch one thread")
    parser.add_argument("--processes", type=int, default=config.processes,
                        help="ours on this many processes, as train.py --processes N (0: parallel.processes_for)")
    parser.add_argument("--child", choices=list(STEP_FNS), help=argparse.SUPPRESS)
    parser.add_argument("--measure", choices=["steps", "memory"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    global PROCESSES
    PROCESSES = args.processes
    if args.child:
        child(args)
        return
    blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
    print(f"numpy {np.__version__} with {blas['name']} {blas['version']}, python {sys.version.split()[0]}")
    blas_vars = {name: os.environ[name] for name in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE",
                                                     "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS") if name in os.environ}
    print(f"BLAS environment: {blas_vars or 'none of OPENBLAS_CORETYPE, OPENBLAS_L2_SIZE, *_NUM_THREADS set'}")
    for shape in SHAPES if args.shape == "all" else [args.shape]:
        bench(shape, args.reps or DEFAULT_REPS[shape], args.warmup, args.one_core)


if __name__ == "__main__":
    main()
