"""Time one full training step of this project against the same model in PyTorch, on the CPU.

Run by hand, never by pytest:
    python benchmarks/bench_train.py [--shape reference|book|large|all] [--reps N] [--one-core] [--batch B]

One step is what train.py does per batch: loss_and_grads, clip_grad_norm, one Adam step. Ours is
timed three ways (engineering/parallel.py): on this thread alone, with BLAS on every core ("1
thread", --processes 1); with the batch shared by a thread per core ("threads", --processes 0
where a slice holds enough work); and by a process per core ("processes", --processes 2 on 2
cores); the two last each on a slice of the batch with BLAS held to one thread. The way train.py
takes by default is marked: at the reference shape config.py's --processes 0 gives one thread, at
the book shape the book recipe gives two processes, at the large shape --processes 0 gives
threads. The PyTorch side is tests/torch_gpt.py (the same named parameters, float32, eager mode,
default threads) with torch_gpt.adamw (the same decay groups) and torch.nn.utils.clip_grad_norm_.
After a warm-up the sides take turns, so a noisy machine slows all alike; the medians and their
ratios come from that one run, and beside each ratio its spread over the turns (the middle half of
the ratios of the two sides' medians, turn by turn). The turns are bursts of steps (5 at the
reference shape, 1 at the large), each after a pause of 0.2 s: an idle thread pool spins for a
while after its last task (OpenBLAS's for about 50 ms of CPU here, PyTorch's for a few ms), and on
a machine with few cores that spinning would otherwise slow whichever side runs next. After the
pause each side takes untimed steps for 0.05 s (WARM_SECONDS): the first steps after an idle pause
are slow, the threads' most, and a run's steps follow each other with no pause.

--batch B takes B sequences a step in place of the shape's own: where slices start to pay is found
so (docs/engineering/processes.md, When slices pay).

With --one-core both sides are held to one core: ours on one thread with one BLAS thread, PyTorch
with torch.set_num_threads(1). That splits the ratio in two: how much work each side spends on a
step, and how much each gains from the other cores.

Also printed:
- minor page faults per step. glibc gives freed heap back to the system when enough of it is
  free at the top, and memory it has given back is faulted in (and zeroed) again when next used:
  how often that happens depends on the whole process's allocation history, so the sides, sharing
  one heap above, can change each other's figures: our OnThreads and OnProcesses call
  parallel.keep_freed_memory, which makes glibc keep freed memory for the whole process, torch's
  steps in it included. The sides are therefore also timed each in a fresh process of its own (as
  a person training with either would run it), still taking turns: the parent tells one process,
  then the next, to take its steps;
- the step's matmul FLOPs, counted from the shapes (forward + backward of every linear layer and
  of the two attention products), and the rate train.py's way reaches on them, next to NumPy's own
  float32 matmul rate on a 1024 x 1024 @ 1024 x 1024 product measured in the same run;
- peak memory of one step. Two measures: tracemalloc's peak for train.py's way in this process, all
  its threads together (NumPy reports its array allocations to tracemalloc; torch does not), and
  for each side the growth of the resident set's high-water mark (VmHWM) over one step, each side
  in a fresh process where glibc is told to mmap every block over 64 KiB, so that freeing memory
  returns it and the high-water mark sees every temporary rather than reused heap. Beside it, the
  resident set of that process after the step and, for the processes, of its workers: each is a
  whole interpreter with numpy, and keeps its slice's memory from step to step.
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
import types

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "tests")]

import config  # noqa: E402
from engineering.parallel import OnProcesses, OnThreads, cores, matmul_flops, one_blas_thread, sharing  # noqa: E402
from transformer import Adam, ModelConfig, clip_grad_norm, init_params, loss_and_grads  # noqa: E402

SHAPES = {  # name: (B, T, emb_dim, heads, layers, ff_dim, V); context_len = T
    "reference": (16, 16, 32, 2, 2, 128, 575),
    "book": (12, 64, 128, 4, 1, 512, 573),  # config.RECIPES["book"] on a ~1 MB play: 73 characters + 500 merges
    "large": (32, 128, 256, 4, 4, 1024, 575),
}
DEFAULT_REPS = {"reference": 60, "book": 40, "large": 24}  # the large shape drifts by 5% between runs of 10
BURST = {"reference": 5, "book": 2, "large": 1}  # steps in a row per turn; one turn lasts a few ms at least
SETTLE_SECONDS = 0.2  # pause before each turn, for the other side's idle threads to stop spinning
# untimed steps after each pause, for at least this long: after an idle pause a thread that sleeps while another
# works is woken slowly for a few steps (a book step on 2 threads took 24.8, 22.4, 16.8 ms after 0.2 s idle, then
# 12.8 to 13.6 ms), where a run's steps follow each other with no pause
WARM_SECONDS = 0.05
LR, BETAS, EPS, WEIGHT_DECAY, GRAD_CLIP = 1e-3, (0.9, 0.999), 1e-8, 0.01, 1.0


def make_problem(shape):
    """The config, float32 parameters and one batch of ids and targets for a named shape."""
    B, T, C, nh, L, F, V = SHAPES[shape]
    cfg = ModelConfig(vocab_size=V, context_len=T, emb_dim=C, num_heads=nh, num_layers=L, ff_dim=F, ln_eps=1e-5)
    rng = np.random.default_rng(0)
    params = init_params(cfg, rng, dtype=np.float32)
    ids = rng.integers(0, V, size=(B, T))
    return cfg, params, ids, np.roll(ids, -1, axis=1)


def ours_step_fn(cfg, params, ids, targets, shared):
    """A function that takes one training step of this project, its batch shared as `shared` (parallel's
    OnThreads or OnProcesses) shares it."""
    opt = Adam(params, beta1=BETAS[0], beta2=BETAS[1], eps=EPS, weight_decay=WEIGHT_DECAY)
    latest = {}  # the gradients live on until the next step replaces them, as in train.py's loop

    def step():
        _, grads = shared.loss_and_grads(params, ids, targets, cfg)
        clip_grad_norm(grads, GRAD_CLIP)
        opt.step(params, grads, LR)
        latest["grads"] = grads
    step.shared = shared
    return step


def one_thread_step_fn(cfg, params, ids, targets, one_core=False):
    """Ours on this thread alone (--processes 1), with BLAS on every core (one_core: on one thread, for as long
    as this process lives)."""
    if one_core:
        one_blas_thread()  # the limit holds until it is restored, which nothing here does
    return ours_step_fn(cfg, params, ids, targets, OnThreads(1, loss_and_grads))


def threads_step_fn(cfg, params, ids, targets, one_core=False):
    """Ours on a thread per core, each on a slice of the batch (--processes 0 where threads_for finds it pays)."""
    return ours_step_fn(cfg, params, ids, targets, OnThreads(min(cores(), len(ids)), loss_and_grads))


def processes_step_fn(cfg, params, ids, targets, one_core=False):
    """Ours on a process per core, each on a slice of the batch (--processes 2 on 2 cores)."""
    return ours_step_fn(cfg, params, ids, targets, OnProcesses(min(cores(), len(ids))))


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


def default_side(shape, cfg):
    """The side train.py takes at a shape: the book recipe's --processes at the book shape, config.py's elsewhere."""
    B, T = SHAPES[shape][:2]
    processes = config.RECIPES["book"]["processes"] if shape == "book" else config.processes
    with sharing(types.SimpleNamespace(processes=processes, batch_size=B, seq_len=T), cfg, loss_and_grads) as shared:
        return "processes" if isinstance(shared, OnProcesses) else "threads" if shared.count > 1 else "one"


STEP_FNS = {"one": one_thread_step_fn, "threads": threads_step_fn, "processes": processes_step_fn,
            "torch": torch_step_fn}
LABELS = {"one": "ours, 1 thread", "threads": "ours, threads", "processes": "ours, processes", "torch": "torch"}


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
    """Warm up, then take reps steps per side, in turns of burst: {side: [(seconds, faults) of each step]}.

    timed_steps maps each side to a function that takes one step and returns (seconds, faults).
    """
    runs = {side: [] for side in timed_steps}
    for _ in range(warmup):
        for timed_step in timed_steps.values():
            timed_step()
    for _ in range(max(1, reps // burst)):
        for side, timed_step in timed_steps.items():
            time.sleep(SETTLE_SECONDS)
            warmed(timed_step)
            runs[side] += [timed_step() for _ in range(burst)]
    return runs


def warmed(timed_step):
    """Take untimed steps for WARM_SECONDS at least."""
    spent = 0.0
    while spent < WARM_SECONDS:
        spent += timed_step()[0]


def median_ms(steps):
    return 1e3 * statistics.median(took for took, _ in steps)


def ratio_said(slower, faster, burst):
    """The ratio of two sides' median times (slower over faster), and the middle half of the ratios of
    each turn's medians. Example: "1.23 x [1.18-1.30]"."""
    turns = [statistics.median(took for took, _ in steps[at: at + burst]) for steps in (slower, faster)
             for at in range(0, len(steps), burst)]
    half = len(turns) // 2
    ratios = sorted(a / b for a, b in zip(turns[:half], turns[half:]))
    quarter = len(ratios) // 4
    return f"{median_ms(slower) / median_ms(faster):5.2f} x [{ratios[quarter]:.2f}-{ratios[-1 - quarter]:.2f}]"


def child_command(shape, side, measure, one_core):
    """The command line of a fresh process for one side (child, below)."""
    command = [sys.executable, __file__, "--shape", shape, "--child", side, "--measure", measure,
               "--batch", str(SHAPES[shape][0])]
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
    workers = [worker.process.pid for worker in getattr(getattr(step, "shared", None), "workers", [])]
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
    B, T, C, nh, L, F, V = SHAPES[shape]
    cfg, burst = problem[0], BURST[shape]
    try:
        torch, _ = import_torch()
    except ImportError as error:
        torch, torch_missing = None, f"PyTorch is not importable ({error}); pip install torch==2.13.0 to compare"
    sides = ["one"] + ([] if one_core else ["threads", "processes"]) + (["torch"] if torch is not None else [])
    steps = {side: STEP_FNS[side](*problem, one_core=one_core) for side in sides}
    together = alternate({side: lambda step=step: timed(step) for side, step in steps.items()}, reps, warmup, burst)
    processes = {side: StepProcess(shape, side, one_core) for side in sides}
    apart = alternate(processes, reps, warmup, burst)
    for process in processes.values():
        process.close()
    default = "one" if one_core else default_side(shape, cfg)
    print(f"\n{shape}: B={B} T={T} emb_dim={C} heads={nh} layers={L} ff_dim={F} V={V}, float32, {reps} steps each")
    print("                    alternating in one process         alternating, each in its own process")
    for side in sides:
        faults = [statistics.median(f for _, f in steps_of[side]) for steps_of in (together, apart)]
        print(f"  {LABELS[side]:16s}{median_ms(together[side]):9.2f} ms/step, {faults[0]:6.0f} page faults"
              f"   {median_ms(apart[side]):9.2f} ms/step, {faults[1]:6.0f} page faults")
    if torch is not None:
        for side in sides[:-1]:
            mark = "  <- train.py's" if side == default else ""
            print(f"  torch / {LABELS[side]:16s}{ratio_said(together['torch'], together[side], burst)}"
                  f"      {ratio_said(apart['torch'], apart[side], burst)}{mark}")
        print(f"  torch {torch.__version__}, eager, {torch.get_num_threads()} thread(s)")
    else:
        print(f"  torch        not measured: {torch_missing}")
    if not one_core:
        for slower, faster in (("one", "threads"), ("processes", "threads")):
            label = f"{LABELS[slower]} / {LABELS[faster][6:]}"
            print(f"  {label:26s}{ratio_said(together[slower], together[faster], burst)}"
                  f"      {ratio_said(apart[slower], apart[faster], burst)}")
    print(f"  ours, 1 thread: BLAS on {1 if one_core else cores()} core(s). ours, threads and processes: "
          f"{min(cores(), B)} of them on {cores()} cores, each on a slice of the batch with one core of BLAS. "
          f"train.py's way here: {LABELS[default]}")
    flops, peak = matmul_flops(cfg, B, T), sgemm_gflops()
    rate = flops / (median_ms(together[default]) / 1e3) / 1e9
    print(f"  matmul FLOPs : {flops:,} per step -> train.py's {rate:.1f} GFLOP/s (alternating), "
          f"numpy sgemm 1024^3 peak {peak:.1f} GFLOP/s ({100 * rate / peak:.0f}%)")
    print(f"  peak memory  : train.py's {tracemalloc_peak_mib(steps[default]):.1f} MiB (tracemalloc, numpy "
          f"allocations of this process, all its threads)")
    for side in sides:
        used = memory_in_child(shape, side, one_core)
        if used is None:
            print(f"                 {side:9s} unavailable (needs Linux /proc)")
            continue
        workers = (f" + {sum(used['workers']):.1f} MiB in {len(used['workers'])} worker process(es)"
                   if used["workers"] else "")
        print(f"                 {side:9s} {used['growth']:.1f} MiB (growth of VmHWM over one step, fresh process); "
              f"resident after it {used['resident']:.1f} MiB{workers}")
    for side, step in steps.items():
        if side != "torch":
            step.shared.close()  # its threads or workers stop here, not idle through the next shape's run


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", choices=[*SHAPES, "all"], default="all")
    parser.add_argument("--reps", type=int, default=None, help="timed steps per side (default 60 reference, 24 large)")
    parser.add_argument("--warmup", type=int, default=3, help="untimed steps per side first")
    parser.add_argument("--one-core", action="store_true",
                        help="hold both sides to one core: ours one thread, one BLAS thread; torch one thread")
    parser.add_argument("--batch", type=int, help="sequences a step, in place of each shape's own B")
    parser.add_argument("--child", choices=list(STEP_FNS), help=argparse.SUPPRESS)
    parser.add_argument("--measure", choices=["steps", "memory"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.batch:
        for name, (_, *rest) in SHAPES.items():
            SHAPES[name] = (args.batch, *rest)
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
