"""Training on every core: each batch is cut into slices of rows, and the gradients of the slices are
averaged. This is data parallelism, as nanoGPT does across GPUs with one process per GPU, here across
the cores of one CPU, in one of two ways that the setting `processes` chooses (sharing):

- threads of the person's own process (0, the default), where a slice holds enough work to pay. NumPy
  lets go of Python's global lock inside its products and its element-wise loops, so two threads, each
  on a slice, keep two cores busy through most of a step; between two calls each thread needs the lock,
  and waits while the other holds it. A breakpoint() stops in this process, and nothing is copied.
- processes (2 or more): workers that share nothing but the numbers, and never wait on each other's
  lock. On 2 cores their step was 1.18 times as fast as the threads' at the book recipe's shape, twice
  as fast at the default model's, where threads do not pay at all, and 1.01 to 1.08 times at a model
  of 4 blocks of width 256 (docs/engineering/processes.md).
  The parameters are copied into shared memory before each step, each worker writes its slice's
  gradients into shared memory of its own, and a pipe carries the slices of ids and the losses.

Either way the calling thread computes the first slice itself, and while slices run side by side,
numpy's BLAS is held to one thread (threadpoolctl), so that they do not fight over the cores; with one
slice, BLAS keeps all its threads. The loss is the mean over the N positions of the batch. With slices
of N_k positions,
    loss = sum_k (N_k / N) loss_k,    grads = sum_k (N_k / N) grads_k,
which are the numbers of one loss_and_grads over the whole batch, up to float rounding; the slices are
added in their order, so K slices give the same bits on threads or on processes, every time.
"""

import contextlib
import contextvars
import ctypes
import functools
import multiprocessing
import os
import signal
import sys
import threading
import time
import traceback
import types
from concurrent.futures import ThreadPoolExecutor, wait

import numpy as np
from threadpoolctl import ThreadpoolController

from transformer import flat_buffer, loss_and_grads, views_into

# A slice is worth a thread when its matrix products take at least this many FLOPs per step: below it,
# the fixed cost of a step (hundreds of short numpy calls, whatever the batch, between which the threads
# take turns at Python's lock) outweighs the second core. Measured on 2 cores, a whole step on 2 threads
# against 1, two runs: the reference model at B = 32 (6.9e7 FLOPs a slice) 0.89 and 0.87 times as fast,
# B = 64 (1.4e8) 1.17 twice; the book recipe's at B = 2 (1.1e8) 0.85 and 0.84, B = 4 (2.2e8) 1.03 and 0.92,
# B = 6 (3.3e8) 1.18 and 1.17, B = 12 (6.6e8) 1.46 to 1.48.
FLOPS_PER_THREAD = 2 ** 27


def matmul_flops(cfg, batch_size, seq_len):
    """FLOPs of one training step's matrix products: forward, then backward (two per forward one).

    A product (m, k) @ (k, n) costs 2 m k n. Per block: Q, K, V three (N, C) @ (C, C), scores (T, hs) @ (hs, T)
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
    """The number of CPU cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


@functools.lru_cache(maxsize=None)
def thread_pools():
    """threadpoolctl's handle on the thread pools loaded in this process, found once: finding them
    scans every loaded library, 0.5 ms each time, which threadpool_limits would spend every step."""
    return ThreadpoolController()


def one_blas_thread():
    """A with-block inside which numpy's BLAS runs on one thread, as many as before after it. The limit
    is the whole process's, not a thread's (OpenBLAS keeps one count for all its callers): only the thread
    that hands out the slices sets it, around all of them, so that no slice's end lifts it under another."""
    return thread_pools().limit(limits=1, user_api="blas")


def blas_controlled():
    """Whether threadpoolctl can set the threads of numpy's BLAS (OpenBLAS, MKL, BLIS: yes; Apple's
    Accelerate: no, and there the slices would fight BLAS's own threads over the cores)."""
    return any(pool["user_api"] == "blas" for pool in thread_pools().info())


def threads_for(cfg, batch_size, seq_len, available=None):
    """How many threads share a batch: one per core, as long as each slice of the batch keeps at least
    FLOPS_PER_THREAD of products; 1 where numpy's BLAS cannot be held to one thread.

    Example: the book recipe's shape (1.3e9 FLOPs a step) -> 2 on 2 or more cores; the reference shape (6.9e7) -> 1
    """
    if not blas_controlled():
        return 1
    available = cores() if available is None else available
    worth = matmul_flops(cfg, batch_size, seq_len) // FLOPS_PER_THREAD
    return max(1, min(available, batch_size, worth))


def sharing(settings, cfg, loss_and_grads):
    """The with-block that computes each batch's loss and gradients as the setting `processes` asks: 0, threads
    of this process where they pay (threads_for), each slice computed by loss_and_grads; 1, this thread alone;
    2 or more, that many processes (which compute the project's own loss_and_grads)."""
    if settings.processes >= 2:
        return OnProcesses(settings.processes)
    return OnThreads(settings.processes or threads_for(cfg, settings.batch_size, settings.seq_len), loss_and_grads)


def sliced(ids, targets, count):  # (B, T) ids and targets -> [(slice_ids, slice_targets)] of the non-empty slices
    pairs = zip(np.array_split(ids, count), np.array_split(targets, count))
    return [(slice_ids, slice_targets) for slice_ids, slice_targets in pairs if len(slice_ids)]


def combined(slices, results, rows):  # the slices, their [(loss, grads)], the batch's rows -> loss, grads
    """loss = sum_k (N_k / N) loss_k and grads = sum_k (N_k / N) grads_k, added in order, in place into the
    first slice's gradients; each other slice's are scaled in place (a thread's let go of, a worker's written
    over at the next step)."""
    shares = [len(slice_ids) / rows for slice_ids, _ in slices]
    loss = sum(share * slice_loss for share, (slice_loss, _) in zip(shares, results))
    grads = results[0][1]
    total = flat_buffer(grads)
    total *= shares[0]
    for share, (_, slice_grads) in zip(shares[1:], results[1:]):
        weighted = flat_buffer(slice_grads)
        weighted *= share
        total += weighted
    return loss, grads


class Slices:
    """loss_and_grads over a batch, cut into `count` slices of its rows that the subclass computes at once
    (compute), each by model_loss_and_grads. Use as a with-block; a batch that cannot be cut goes whole to
    model_loss_and_grads, in this thread."""

    def __init__(self, count, model_loss_and_grads):
        assert count >= 1, f"a batch is cut into 1 or more slices, not {count}"
        keep_freed_memory()
        self.count, self.model_loss_and_grads = count, model_loss_and_grads

    def loss_and_grads(self, params, ids, targets, cfg):  # (B, T) ids and targets -> loss, grads
        ids, targets = np.asarray(ids), np.asarray(targets)
        if self.count == 1 or ids.ndim != 2 or len(ids) == 1:
            return self.model_loss_and_grads(params, ids, targets, cfg)
        slices = sliced(ids, targets, self.count)
        try:
            with one_blas_thread(), breakpoints_deferred():
                return combined(slices, self.compute(params, slices, cfg), len(ids))
        except BreakpointInASlice:  # left here: an error of the step below is not told as met while handling it
            pass
        return self.model_loss_and_grads(params, ids, targets, cfg)  # the step again, whole: where it stops

    def close(self):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class OnThreads(Slices):
    """The slices computed by threads of this process, each by the loss_and_grads handed in (the loop's: with
    --exercises, the learner's), the first in the calling thread. Nothing is copied: every thread reads the
    parameters as they are."""

    def __init__(self, threads, loss_and_grads):
        super().__init__(threads, loss_and_grads)
        self.pool = ThreadPoolExecutor(threads - 1, thread_name_prefix="slice") if threads > 1 else None

    def compute(self, params, slices, cfg):  # -> [(loss, grads)] of each slice, in order
        """The first slice here, each of the others in a thread of the pool, all at once. Each slice runs in a
        copy of this thread's context, so numpy's error state (np.errstate) is the loop's in every slice."""
        others = [self.pool.submit(contextvars.copy_context().run, self.model_loss_and_grads, params, *job, cfg)
                  for job in slices[1:]]
        try:
            first = self.model_loss_and_grads(params, *slices[0], cfg)
        finally:  # every slice handed out ends before the step does, even when this one failed
            wait(others)
        return [first] + [other.result() for other in others]

    def close(self):
        if self.pool is not None:
            self.pool.shutdown()


class BreakpointInASlice(BaseException):
    """A breakpoint() met while the slices run. A BaseException, so that no `except Exception` of the step's
    own code catches it on its way out."""


def slices_stop(*args, **kwargs):
    raise BreakpointInASlice


@contextlib.contextmanager
def breakpoints_deferred():
    """Inside the with-block, breakpoint() in any thread ends the slices, and the step is then computed whole
    in the calling thread, where the breakpoint stops as it would with one thread: the debugger never stops in
    two threads at once, each with half a batch and both reading the terminal, nor in a worker process."""
    hook = sys.breakpointhook  # the person's, or PYTHONBREAKPOINT's
    sys.breakpointhook = slices_stop
    try:
        yield
    finally:
        sys.breakpointhook = hook


# ---------------------------------------------------------------------------------------------
# The processes.

class OnProcesses(Slices):
    """The slices computed by `processes` processes: the first here, the others by processes - 1 workers,
    started at the first batch there is to cut. The workers start as fresh interpreters that import only
    this module and what it imports, never the main script (main_script_hidden), so a script that trains
    need not keep its work under a main guard; they compute the project's own loss_and_grads."""

    def __init__(self, processes):
        super().__init__(processes, loss_and_grads)
        self.workers = []  # a Worker for each slice after the first
        self.layout = None  # (cfg, names and shapes, dtype) of the parameters the workers were started for

    def compute(self, params, slices, cfg):  # -> [(loss, grads)] of each slice, in order
        """The first slice here, each of the others in a worker, all at once."""
        flat = flat_buffer(params)
        self.start(params, flat, cfg)
        np.copyto(self.shared_params, flat)  # what every worker's parameters are views of
        asked = []
        try:
            for worker, job in zip(self.workers, slices[1:]):
                worker.ask(job)
                asked.append(worker)
            results = [self.model_loss_and_grads(params, *slices[0], cfg)]
        finally:  # every worker asked is heard from, even when something failed, so none is left a step behind
            answers = [worker.answer() for worker in asked]
        for _, error in answers:
            if error is not None:
                raise error
        return results + [(loss, views_into(worker.grads, self.shapes)) for (loss, _), worker in zip(answers, asked)]

    def start(self, params, flat, cfg):
        """Start the workers for parameters of this layout (flat: their buffer), unless they run for it already."""
        shapes = {name: p.shape for name, p in params.items()}
        dtype = flat.dtype
        layout = (cfg, tuple(shapes.items()), dtype.str)
        if layout == self.layout:
            return
        self.close()
        self.shapes = shapes  # of the gradients each worker writes, flat, in the parameters' order
        context = multiprocessing.get_context("spawn")  # a fresh interpreter, alike on Linux, macOS and Windows
        shared = context.RawArray("b", flat.nbytes)
        self.shared_params = np.frombuffer(shared, dtype)
        with sigint_ignored(), main_script_hidden():  # Ctrl-C is for this process to handle
            self.workers = [Worker(context, shared, shapes, dtype, cfg, number) for number in range(1, self.count)]
        self.layout = layout

    def close(self):
        for worker in self.workers:
            worker.stop()
        self.workers, self.layout = [], None


class Worker:
    """A worker process, this process's end of the pipe to it, and the gradients it writes."""

    def __init__(self, context, shared_params, shapes, dtype, cfg, number):
        shared_grads = context.RawArray("b", len(shared_params))
        self.grads = np.frombuffer(shared_grads, dtype)
        self.connection, theirs = context.Pipe()
        self.process = context.Process(target=serve, args=(theirs, shared_params, shared_grads, shapes, dtype, cfg),
                                       name=f"training worker {number}", daemon=True)
        self.process.start()
        theirs.close()

    def ask(self, job):
        """Hand the worker (ids, targets) of its slice."""
        try:
            self.connection.send(job)
        except OSError:
            raise self.stopped() from None

    def answer(self):
        """(loss, None) once the worker has its slice's loss, and its gradients in self.grads (flat, in
        shared memory); or (None, the error it met), with the worker's traceback as its cause."""
        try:
            loss, error, trace = received(self.connection)
        except (EOFError, OSError):
            return None, self.stopped()
        if error is not None:
            error.__cause__ = RuntimeError(f"in the {self.process.name}:\n{trace}")
        return loss, error

    def stopped(self):
        self.process.join(timeout=1)  # for its exit code
        return RuntimeError(f"the {self.process.name} stopped (exit code {self.process.exitcode}); "
                            f"a step cannot go on without it")

    def stop(self):
        with contextlib.suppress(OSError):  # OSError: it has stopped already
            self.connection.send(None)
        self.process.join(timeout=10)
        if self.process.is_alive():
            self.process.terminate()
        self.connection.close()


def serve(connection, shared_params, shared_grads, shapes, dtype, cfg):
    """A worker's life: (ids, targets) slices in, (loss, None, None) or (None, error, traceback) out,
    until it is sent None or this end of the pipe closes."""
    keep_freed_memory()
    params = views_into(np.frombuffer(shared_params, dtype), shapes)
    grads_out = np.frombuffer(shared_grads, dtype)
    with one_blas_thread(), contextlib.suppress(EOFError):
        while (job := received(connection)) is not None:
            try:
                loss, grads = loss_and_grads(params, *job, cfg)
            except Exception as error:  # sent back, to be raised where the step was asked for
                connection.send((None, error, traceback.format_exc()))
                continue
            np.copyto(grads_out, flat_buffer(grads))
            connection.send((loss, None, None))


M_TRIM_THRESHOLD, M_MMAP_MAX = -1, -4  # mallopt's parameters, as glibc's malloc.h numbers them

# glibc's malloc (Linux) serves each block over a threshold, 128 KiB at first, with fresh pages from
# the system and hands them back when the block is freed, and it gives back the free memory at the top
# of its heap over a second threshold. A step's large arrays then come back as page faults, thousands
# a step, each page zeroed anew. So every block is served from the heap (M_MMAP_MAX 0) and the heap
# keeps up to 2 GiB free (M_TRIM_THRESHOLD): what a step frees, the next step uses. Measured on 2
# cores, a whole step against glibc's defaults: GPT-2 124M fine-tuning 2.42 -> 1.21 s at batch 1 x 128
# tokens, 4.87 -> 3.32 s at batch 4 (its gradients alone are 650 MB); at the book recipe's and the
# reference shapes see docs/engineering/performance.md.
def keep_freed_memory():
    """Make glibc's malloc keep the memory a step frees, for the next step. Nothing under another C
    library (no mallopt), nor where the person has tuned glibc's malloc through its environment."""
    if "GLIBC_TUNABLES" in os.environ or any(name.startswith("MALLOC_") for name in os.environ):
        return  # theirs stands: bench_train.py measures memory with MALLOC_MMAP_THRESHOLD_ set
    mallopt = getattr(ctypes.CDLL(None), "mallopt", None)
    if mallopt is not None:
        mallopt(M_MMAP_MAX, 0)
        mallopt(M_TRIM_THRESHOLD, 2 ** 31 - 1)  # a C int: 2 GiB


# Waking a process that sleeps on a pipe takes tens of microseconds, and a step has two such waits:
# the worker's for its slice, and this process's for the answer. So each side polls its pipe for up
# to this long before it sleeps, as OpenBLAS's own threads spin before they sleep. Measured on 2
# cores, a whole step against sleeping at once: 7-8% faster at the reference shape, 0.3% at the book
# recipe's. (Pinning each process to a core gave -2.1% to +2.4% at either shape, so it is gone.)
SPIN_SECONDS = 0.001


def received(connection):
    """The next message on the pipe: polled for up to SPIN_SECONDS, then waited for asleep."""
    deadline = time.perf_counter() + SPIN_SECONDS
    while not connection.poll() and time.perf_counter() < deadline:
        pass
    return connection.recv()


@contextlib.contextmanager
def main_script_hidden():
    """Workers started inside the with-block do not import the script that started them.

    multiprocessing's "spawn" runs the parent's main script again in each worker (as __mp_main__),
    so that functions defined there can be found: a script that calls train.train() without
    `if __name__ == "__main__":` would read its corpus and train again in every worker. A worker
    here runs only serve, which lives in this module, so the main module is left out while it starts.
    """
    main = sys.modules["__main__"]
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        sys.modules["__main__"] = main


@contextlib.contextmanager
def sigint_ignored():
    """Ctrl-C (SIGINT) is ignored inside the with-block, where this is the main thread."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
