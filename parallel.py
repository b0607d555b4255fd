"""Training on every core: each batch is cut into slices of rows, one per thread, and the gradients
of the slices are averaged. This is data parallelism, as nanoGPT does across GPUs, here across the
cores of one CPU.

Why threads pay: NumPy lets go of Python's global lock inside each array operation, so threads that
each run loss_and_grads on their own slice keep every core busy, the elementwise passes (layer norm,
softmax, GELU) included. Left to itself NumPy spreads only the matrix products over the cores (its
BLAS does that) and runs everything else on one. During a step the BLAS is kept to one core per
product: the cores are already shared out by slice. With one thread too, for a model too small to
gain from slices: its products are small enough that splitting them costs more than it saves, and
a split product leaves half its output in the other core's cache for the next pass to fetch.

The loss is the mean over the N positions of the batch. With slices of N_k positions,
    loss = sum_k (N_k / N) loss_k,    grads = sum_k (N_k / N) grads_k,
which are the numbers of one loss_and_grads over the whole batch, up to float rounding.
"""

import contextlib
import ctypes
import functools
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from transformer import flat_buffer, loss_and_grads

# A slice is worth a thread when its matrix products take at least this many FLOPs per step, about
# a millisecond of one core's BLAS here: below it the threads' Python code, which takes turns on the
# global lock, costs more than the second core gives. Measured on 2 cores: a step of 1.4e8 FLOPs
# took as long in two slices as in one, and one of 4.4e8 FLOPs took 16% less in two.
FLOPS_PER_THREAD = 2 ** 27


def matmul_flops(cfg, batch_size, seq_len):
    """FLOPs of one training step's matrix products: forward, then backward (two per forward one).

    A product (m, k) @ (k, n) costs 2 m k n. Per block: QKV (N, C) @ (C, 3C), scores (T, hs) @ (hs, T)
    and attn @ V (T, T) @ (T, hs) for each of B * nh heads, Wo (N, C) @ (C, C), W1 (N, C) @ (C, F),
    W2 (N, F) @ (F, C); then the head (N, C) @ (C, V). The backward of each product is two products of
    the same size (the input's gradient and the weight's, or both operands' for attention).
    Example: matmul_flops(the reference shape: V=575, C=32, nh=2, L=2, F=128; B=16, T=16) -> 69,156,864
    """
    B, T, C, F = batch_size, seq_len, cfg.emb_dim, cfg.ff_dim
    N, hs = B * T, cfg.head_dim
    block = 2 * N * C * 3 * C + 2 * (2 * B * cfg.num_heads * T * T * hs) + 2 * N * C * C + 2 * (2 * N * C * F)
    forward = cfg.num_layers * block + 2 * N * C * cfg.vocab_size
    return 3 * forward


def cores():
    """The CPU cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def threads_for(cfg, batch_size, seq_len, available=None):
    """How many threads to train with: one per core, as long as each slice of the batch keeps at
    least FLOPS_PER_THREAD of products; 1 where numpy's BLAS cannot be kept to one core.

    Example: the reference shape (6.9e7 FLOPs a step) -> 1; the large shape of benchmarks/ -> the cores
    """
    if blas_library() is None:
        return 1
    available = cores() if available is None else available
    worth = matmul_flops(cfg, batch_size, seq_len) // FLOPS_PER_THREAD
    return max(1, min(available, batch_size, worth))


@functools.lru_cache(maxsize=None)
def blas_library():
    """(set, get) of the number of cores of the OpenBLAS that numpy calls, through ctypes; None for
    any other BLAS (Apple's Accelerate, MKL), whose threads this module leaves alone."""
    maps = Path("/proc/self/maps")  # Linux: every library this process has loaded
    if maps.exists():
        paths = sorted({line.split()[-1] for line in maps.read_text().splitlines() if "openblas" in line})
    else:  # the OpenBLAS that numpy's wheels bundle beside it on Windows and macOS
        package = Path(np.__file__).parent
        bundled = [*package.parent.glob("numpy.libs/*openblas*"), *package.glob(".dylibs/*openblas*")]
        paths = sorted(map(str, bundled))
    for path in paths:
        try:
            library = ctypes.CDLL(path)
        except OSError:
            continue
        # the names differ by build: numpy's own wheels, older 64-bit-integer ones, a system OpenBLAS
        for prefix, suffix in (("scipy_", "64_"), ("", "64_"), ("", "")):
            names = f"{prefix}openblas_set_num_threads{suffix}", f"{prefix}openblas_get_num_threads{suffix}"
            if all(hasattr(library, name) for name in names):
                return tuple(getattr(library, name) for name in names)
    return None


@contextlib.contextmanager
def blas_threads(n):
    """numpy's matrix products run on n cores inside the with-block, and as before after it.

    It sets the whole process: OpenBLAS has no setting of its own for each thread (even its
    openblas_set_num_threads_local sets them all). Nothing changes where blas_library() is None.
    """
    controls = blas_library()
    if controls is None:
        yield
        return
    set_threads, get_threads = controls
    previous = get_threads()
    set_threads(n)
    try:
        yield
    finally:
        set_threads(previous)


class DataParallel:
    """loss_and_grads over a batch, computed by `threads` threads, each on a slice of its rows.

    Use as `with DataParallel(threads) as parallel: loss, grads = parallel.loss_and_grads(...)`.
    The slices are fixed by the batch's rows and the thread count, and added up in order, so the
    same batch gives the same bits every time.
    """

    def __init__(self, threads):
        assert threads >= 1, f"threads must be 1 or more, got {threads}"
        self.threads = threads
        self.pool = ThreadPoolExecutor(threads) if threads > 1 else None

    def loss_and_grads(self, params, ids, targets, cfg):  # (B, T) ids and targets -> loss, grads
        ids, targets = np.asarray(ids), np.asarray(targets)
        with blas_threads(1):
            if self.pool is None or ids.ndim != 2 or len(ids) == 1:
                return loss_and_grads(params, ids, targets, cfg)
            slices = list(zip(np.array_split(ids, self.threads), np.array_split(targets, self.threads)))
            slices = [(slice_ids, slice_targets) for slice_ids, slice_targets in slices if len(slice_ids)]
            results = list(self.pool.map(lambda s: loss_and_grads(params, s[0], s[1], cfg), slices))
        # loss = sum_k (N_k / N) loss_k and grads = sum_k (N_k / N) grads_k, added in place into the first
        shares = [len(slice_ids) / len(ids) for slice_ids, _ in slices]
        loss = sum(share * slice_loss for share, (slice_loss, _) in zip(shares, results))
        grads = results[0][1]
        total = flat_buffer(grads)
        total *= shares[0]
        for share, (_, slice_grads) in zip(shares[1:], results[1:]):
            weighted = flat_buffer(slice_grads)
            weighted *= share
            total += weighted
        return loss, grads

    def close(self):
        if self.pool is not None:
            self.pool.shutdown()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
