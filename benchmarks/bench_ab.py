"""Time whole training steps of two copies of this project against each other, taking turns in one run.

Run by hand, never by pytest:
    python benchmarks/bench_ab.py OTHER_FOLDER [--base FOLDER] [--shape reference|book|all]
                                  [--turns N] [--burst N] [--pause S]

This is how a speed trick is judged ("Plain unless measured", docs/engineering/performance.md): copy the
tree (`git worktree add /tmp/plain HEAD`, or cp -r), put one function of the copy back to its plain
form, and run this script on the copy. --base (default: this project's root) is the other side.

Each side is a trainer process of its own with its folder first on sys.path, so the folder's
transformer.py and engineering/parallel.py are the ones it imports, and so are the ones imported by the
worker processes it starts (they inherit sys.path). A trainer takes steps as train.py does: its batch
shared as parallel.sharing shares it, at the reference shape with config.py's --processes (one thread), at
the book shape with the book recipe's (two processes), then clip_grad_norm and one Adam step
(the book recipe's betas and weight decay), in float32, on a few fixed random batches in turn. On
each request it takes that many steps and replies with each step's seconds.

The parent warms both trainers up (two turns' worth of untimed steps each), then gives each side
--turns turns of --burst steps. The turns go in pairs, one per side, and the side that goes first
alternates from pair to pair, so whatever else the machine does meanwhile falls on both alike.
Before each turn it sleeps --pause seconds: an idle BLAS pool spins for a while after its last
task, and on a machine with few cores that would slow whichever side runs next. The defaults
(5 steps a turn at the book shape, 20 at the reference shape, a pause of 0.01 s, 40 turns) are
the settings of the figures in docs/engineering/performance.md.

Printed per shape: each side's median milliseconds per step, and how much slower or faster the
other side is: its median over the base's, minus one. With the code as committed on the base
side and a trick's plain form on the other, "slower" is what the trick pays.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import types

import numpy as np

BURST = {"reference": 20, "book": 5}  # steps in a row per turn: about 0.1 s on 2 cores at either shape
TURNS, PAUSE_SECONDS = 40, 0.01
BATCHES = 8  # fixed random batches, taken in turn
LR, BETAS, EPS, WEIGHT_DECAY, GRAD_CLIP = 1e-4, (0.9, 0.99), 1e-8, 0.1, 1.0  # the rate does not change a step's time


def train_on_request(folder, dims, processes):
    """The trainer: import the folder's project, then for each line n on stdin take n training steps
    and print their seconds as a JSON list. Its first line says how it shares a batch."""
    sys.path.insert(0, folder)
    from engineering.parallel import sharing
    from transformer import Adam, ModelConfig, clip_grad_norm, init_params, loss_and_grads

    B, T, C, nh, L, F, V = dims
    cfg = ModelConfig(vocab_size=V, context_len=T, emb_dim=C, num_heads=nh, num_layers=L, ff_dim=F, ln_eps=1e-5)
    rng = np.random.default_rng(0)
    params = init_params(cfg, rng, dtype=np.float32)
    opt = Adam(params, BETAS[0], BETAS[1], EPS, WEIGHT_DECAY)
    batches = [rng.integers(0, V, size=(B, T + 1)) for _ in range(BATCHES)]  # ids are [:, :-1], targets [:, 1:]
    taken = 0
    settings = types.SimpleNamespace(processes=processes, batch_size=B, seq_len=T)
    with sharing(settings, cfg, loss_and_grads) as parallel:
        print(json.dumps(f"{parallel.count} {type(parallel).__name__}"), flush=True)
        for line in sys.stdin:
            took = []
            for _ in range(int(line)):
                batch = batches[taken % BATCHES]
                start = time.perf_counter()
                _, grads = parallel.loss_and_grads(params, batch[:, :-1], batch[:, 1:], cfg)
                clip_grad_norm(grads, GRAD_CLIP)
                opt.step(params, grads, LR)
                took.append(time.perf_counter() - start)
                taken += 1
            print(json.dumps(took), flush=True)


class Trainer:
    """The parent's handle on one side's trainer process."""

    def __init__(self, folder, dims, processes):
        # The trainer gets the shape's numbers, not its name: importing bench_train there would import
        # this tree's transformer.py before the folder's.
        command = [sys.executable, __file__, "--trainer", folder, "--dims", ",".join(map(str, dims)),
                   "--processes", str(processes)]
        self.folder = folder
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.sharing = self.reply()

    def reply(self):
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"the trainer for {self.folder} stopped (its error is printed above)")
        return json.loads(line)

    def steps(self, n):  # -> the seconds of each of n steps
        self.process.stdin.write(f"{n}\n")
        self.process.stdin.flush()
        return self.reply()

    def close(self):
        self.process.stdin.close()
        self.process.wait()


def take_turns(trainers, turns, burst, pause):
    """Warm up, then turns of burst steps per side, in pairs whose first side alternates: each side's step seconds."""
    for trainer in trainers:
        trainer.steps(2 * burst)
    took = [[] for _ in trainers]
    for pair in range(turns):
        order = range(len(trainers)) if pair % 2 == 0 else reversed(range(len(trainers)))
        for side in order:
            time.sleep(pause)
            took[side] += trainers[side].steps(burst)
    return took


def compare(shape, dims, processes, base, other, args):
    """Time the two folders at one shape, each sharing its batch as --processes asks, and print each side's
    median and the other side's difference."""
    burst = args.burst or BURST[shape]
    trainers = []
    try:
        trainers += [Trainer(base, dims, processes), Trainer(other, dims, processes)]
        took = take_turns(trainers, args.turns, burst, args.pause)
    finally:
        for trainer in trainers:
            trainer.close()
    base_ms, other_ms = (1e3 * statistics.median(seconds) for seconds in took)
    change = 100 * (other_ms / base_ms - 1)
    B, T, C, nh, L, F, V = dims
    print(f"\n{shape}: B={B} T={T} emb_dim={C} heads={nh} layers={L} ff_dim={F} V={V}, float32; "
          f"{args.turns} turns of {burst} steps per side, {args.pause} s pause before each")
    for label, trainer, ms in (("base", trainers[0], base_ms), ("other", trainers[1], other_ms)):
        print(f"  {label:6s}{ms:8.2f} ms/step  on {trainer.sharing}  {trainer.folder}")
    print(f"  the other side is {abs(change):.1f}% {'slower' if change >= 0 else 'faster'}")


def project_folder(folder):
    """The folder as an absolute path; exit with status 2 where it holds no copy of the project."""
    if not os.path.isfile(os.path.join(folder, "transformer.py")):
        print(f"bench_ab.py: {folder} is not a folder holding transformer.py", file=sys.stderr)
        sys.exit(2)
    return os.path.abspath(folder)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("other", nargs="?", metavar="OTHER_FOLDER", help="a copy of the project to time")
    parser.add_argument("--base", help="the copy to time it against (default: this project's root)")
    parser.add_argument("--shape", choices=[*BURST, "all"], default="all")
    parser.add_argument("--turns", type=int, default=TURNS, help=f"turns per side (default {TURNS})")
    parser.add_argument("--burst", type=int, help="steps per turn (default 20 reference, 5 book)")
    parser.add_argument("--pause", type=float, default=PAUSE_SECONDS, help="seconds of sleep before each turn")
    parser.add_argument("--trainer", help=argparse.SUPPRESS)
    parser.add_argument("--dims", help=argparse.SUPPRESS)
    parser.add_argument("--processes", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.trainer:
        train_on_request(args.trainer, [int(d) for d in args.dims.split(",")], args.processes)
        return
    if args.other is None:
        parser.error("OTHER_FOLDER is required")
    from bench_train import ROOT, SHAPES  # here, not at the top: a trainer must import its own folder's project
    import config
    from engineering.parallel import cores

    base, other = project_folder(args.base or ROOT), project_folder(args.other)
    print(f"numpy {np.__version__}, python {sys.version.split()[0]}, {cores()} cores")
    for shape in BURST if args.shape == "all" else [args.shape]:
        processes = config.RECIPES["book"]["processes"] if shape == "book" else config.processes
        compare(shape, SHAPES[shape], processes, base, other, args)


if __name__ == "__main__":
    main()
