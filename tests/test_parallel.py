"""parallel.py: a batch cut into slices, one process each, gives the gradients of the whole batch."""

import os
import signal
import subprocess
import sys
import threading

import numpy as np
import pytest
from threadpoolctl import threadpool_info

from conftest import REPO
from engineering import parallel
from transformer import ModelConfig, flat_buffer, init_params, loss_and_grads

REFERENCE = ModelConfig(vocab_size=575, context_len=16, emb_dim=32, num_heads=2, num_layers=2, ff_dim=128, ln_eps=1e-5)
LARGE = ModelConfig(vocab_size=575, context_len=128, emb_dim=256, num_heads=4, num_layers=4, ff_dim=1024, ln_eps=1e-5)
needs_blas_control = pytest.mark.skipif(not parallel.blas_controlled(),
                                        reason="threadpoolctl cannot set the threads of numpy's BLAS here")


def blas_threads():
    """The threads numpy's BLAS runs on now, as threadpoolctl sees them (not another library's, such as one that
    transformers loaded after parallel.thread_pools first looked)."""
    return [pool["num_threads"] for pool in threadpool_info()
            if pool["user_api"] == "blas" and "numpy" in pool["filepath"]]


@pytest.mark.parametrize("processes", [1, 2, 3, 5])  # 3 slices of the 3 rows; 5 processes for 3 rows leave 2 idle
def test_slices_give_the_loss_and_gradients_of_the_whole_batch(tiny_cfg, tiny_params, tiny_batch, processes):
    ids, targets = tiny_batch  # (3, 5): with 2 processes, slices of 2 rows and 1 row, weighted 2/3 and 1/3
    loss, grads = loss_and_grads(tiny_params, ids, targets, tiny_cfg)
    with parallel.DataParallel(processes) as workers:
        sliced_loss, sliced_grads = workers.loss_and_grads(tiny_params, ids, targets, tiny_cfg)
    assert sliced_loss == pytest.approx(loss, abs=1e-14)
    assert list(sliced_grads) == list(grads)
    np.testing.assert_allclose(flat_buffer(sliced_grads), flat_buffer(grads), rtol=0, atol=1e-14)


def test_two_slices_weigh_each_by_its_share_of_the_positions(tiny_cfg, tiny_params, tiny_batch):
    ids, targets = tiny_batch
    first, second = (loss_and_grads(tiny_params, ids[rows], targets[rows], tiny_cfg) for rows in (slice(0, 2), slice(2, 3)))
    with parallel.DataParallel(2) as workers:
        loss, grads = workers.loss_and_grads(tiny_params, ids, targets, tiny_cfg)
    assert loss == pytest.approx(2 / 3 * first[0] + 1 / 3 * second[0], abs=1e-15)
    expected = 2 / 3 * flat_buffer(first[1]) + 1 / 3 * flat_buffer(second[1])
    np.testing.assert_allclose(flat_buffer(grads), expected, rtol=0, atol=1e-15)


def test_the_same_batch_gives_the_same_bits_every_time(tiny_cfg, tiny_params, tiny_batch):
    with parallel.DataParallel(2) as workers:
        runs = [workers.loss_and_grads(tiny_params, *tiny_batch, tiny_cfg) for _ in range(5)]
    for loss, grads in runs[1:]:
        assert loss == runs[0][0]
        assert flat_buffer(grads).tobytes() == flat_buffer(runs[0][1]).tobytes()


def test_the_workers_see_each_steps_parameters(tiny_cfg, tiny_params, tiny_batch):
    # the parameters change between steps, as Adam changes them: the workers must use the new ones
    with parallel.DataParallel(2) as workers:
        workers.loss_and_grads(tiny_params, *tiny_batch, tiny_cfg)
        flat_buffer(tiny_params)[:] *= 0.5
        loss, grads = workers.loss_and_grads(tiny_params, *tiny_batch, tiny_cfg)
    expected_loss, expected_grads = loss_and_grads(tiny_params, *tiny_batch, tiny_cfg)
    assert loss == pytest.approx(expected_loss, abs=1e-14)
    np.testing.assert_allclose(flat_buffer(grads), flat_buffer(expected_grads), rtol=0, atol=1e-14)


def test_other_parameters_start_new_workers(tiny_cfg, tiny_params, tiny_batch):
    other_cfg = ModelConfig(vocab_size=7, context_len=8, emb_dim=6, num_heads=3, num_layers=1, ff_dim=5, ln_eps=1e-5)
    other_params = init_params(other_cfg, np.random.default_rng(2))
    with parallel.DataParallel(2) as workers:
        for cfg, params in ((tiny_cfg, tiny_params), (other_cfg, other_params), (tiny_cfg, tiny_params.copy())):
            loss, grads = workers.loss_and_grads(params, *tiny_batch, cfg)
            expected_loss, expected_grads = loss_and_grads(params, *tiny_batch, cfg)
            assert loss == pytest.approx(expected_loss, abs=1e-14)
            np.testing.assert_allclose(flat_buffer(grads), flat_buffer(expected_grads), rtol=0, atol=1e-14)


def test_a_single_sequence_is_not_sliced(tiny_cfg, tiny_params, tiny_batch):
    ids, targets = tiny_batch[0][0], tiny_batch[1][0]  # (T,)
    with parallel.DataParallel(2) as workers:
        loss, grads = workers.loss_and_grads(tiny_params, ids, targets, tiny_cfg)
        assert workers.workers == []  # nothing to cut, so no worker was started
    expected_loss, expected_grads = loss_and_grads(tiny_params, ids, targets, tiny_cfg)
    assert loss == expected_loss
    assert flat_buffer(grads).tobytes() == flat_buffer(expected_grads).tobytes()


def test_an_error_in_a_workers_slice_is_raised_here_and_the_next_step_works(tiny_cfg, tiny_params, tiny_batch):
    ids, targets = tiny_batch
    bad = ids.copy()
    bad[1, 0] = tiny_cfg.vocab_size  # 3 slices of a row each: the first worker finds it, the second has none
    with parallel.DataParallel(3) as workers:
        with pytest.raises(ValueError, match="outside the vocabulary") as raised:
            workers.loss_and_grads(tiny_params, bad, targets, tiny_cfg)
        assert "in the training worker" in str(raised.value.__cause__)  # with the worker's traceback
        # other rows for each worker than last time: an answer left over from the failed step would show
        loss, grads = workers.loss_and_grads(tiny_params, ids[::-1], targets[::-1], tiny_cfg)
    expected_loss, expected_grads = loss_and_grads(tiny_params, ids[::-1], targets[::-1], tiny_cfg)
    assert loss == pytest.approx(expected_loss, abs=1e-14)
    np.testing.assert_allclose(flat_buffer(grads), flat_buffer(expected_grads), rtol=0, atol=1e-14)


def test_a_worker_that_died_is_reported_with_its_exit_code(tiny_cfg, tiny_params, tiny_batch):
    with parallel.DataParallel(2) as workers:
        workers.loss_and_grads(tiny_params, *tiny_batch, tiny_cfg)
        workers.workers[0].process.kill()
        workers.workers[0].process.join()
        with pytest.raises(RuntimeError, match=r"the training worker 1 stopped \(exit code -9\)"):
            workers.loss_and_grads(tiny_params, *tiny_batch, tiny_cfg)


def test_ctrl_c_is_left_to_the_process_that_trains_and_close_stops_the_workers(tiny_cfg, tiny_params, tiny_batch):
    with parallel.DataParallel(3) as workers:
        workers.loss_and_grads(tiny_params, *tiny_batch, tiny_cfg)
        processes = [worker.process for worker in workers.workers]
        for process in processes:
            os.kill(process.pid, signal.SIGINT)  # what Ctrl-C in a terminal sends to all of them
        loss, _ = workers.loss_and_grads(tiny_params, *tiny_batch, tiny_cfg)
        assert all(process.is_alive() for process in processes)
    assert not any(process.is_alive() for process in processes)
    assert loss == pytest.approx(loss_and_grads(tiny_params, *tiny_batch, tiny_cfg)[0], abs=1e-14)


def test_a_message_is_received_whether_it_comes_while_polling_or_after():
    import multiprocessing
    ours, theirs = multiprocessing.Pipe()
    theirs.send("waiting already")
    assert parallel.received(ours) == "waiting already"
    late = threading.Timer(10 * parallel.SPIN_SECONDS, theirs.send, args=("after the polling",))
    late.start()  # comes once received has stopped polling and gone to sleep on the pipe
    assert parallel.received(ours) == "after the polling"
    late.join()
    theirs.close()
    with pytest.raises(EOFError):  # the other end closed: what ends a worker's loop
        parallel.received(ours)


def test_matmul_flops_of_the_reference_shape():
    # N = 256, C = 32, F = 128, V = 575, hs = 16, 32 heads of T = 16. Per block, forward:
    # Q, K, V 3*2*256*32*32 = 1,572,864; scores and attn @ V 2 * (2*32*16*16*16) = 524,288;
    # Wo 2*256*32*32 = 524,288; W1 and W2 2 * (2*256*32*128) = 4,194,304: 6,815,744.
    # Two blocks and the head 2*256*32*575 = 9,420,800: 23,052,288; with the backward, 3 times that.
    assert parallel.matmul_flops(REFERENCE, 16, 16) == 3 * (2 * 6_815_744 + 9_420_800) == 69_156_864


@needs_blas_control
def test_processes_follow_the_work_per_slice():
    assert parallel.processes_for(REFERENCE, 16, 16, available=2) == 2  # 6.9e7 FLOPs: two slices' worth
    assert parallel.processes_for(REFERENCE, 16, 16, available=8) == 2  # and no more
    assert parallel.processes_for(REFERENCE, 8, 16, available=2) == 1  # 3.5e7 FLOPs: one slice's worth
    assert parallel.processes_for(LARGE, 32, 128, available=2) == 2
    assert parallel.processes_for(LARGE, 32, 128, available=64) == 32  # never more slices than rows
    assert parallel.processes_for(LARGE, 32, 128, available=1) == 1


def test_a_blas_that_cannot_be_held_to_one_thread_trains_on_one_process(monkeypatch):
    class OnlyOpenMP:
        def info(self):
            return [{"user_api": "openmp", "num_threads": 2}]
    monkeypatch.setattr(parallel, "thread_pools", OnlyOpenMP)
    assert parallel.processes_for(LARGE, 32, 128, available=2) == 1


def where_it_runs(monkeypatch):
    """Make parallel.loss_and_grads note the BLAS threads of each call here."""
    seen = []

    def spy(*args):
        seen.append(blas_threads())
        return loss_and_grads(*args)

    monkeypatch.setattr(parallel, "loss_and_grads", spy)
    return seen


@needs_blas_control
def test_slices_run_on_one_blas_thread_and_one_process_keeps_them_all(tiny_cfg, tiny_params, tiny_batch, monkeypatch):
    before = blas_threads()
    seen = where_it_runs(monkeypatch)
    for processes in (1, 2):
        with parallel.DataParallel(processes) as workers:
            workers.loss_and_grads(tiny_params, *tiny_batch, tiny_cfg)
    assert seen == [before, [1] * len(before)]  # the whole batch with every thread, then the first of 2 slices
    assert blas_threads() == before


@needs_blas_control
def test_a_worker_runs_on_one_blas_thread_and_answers_its_slice(tiny_cfg, tiny_params, tiny_batch, monkeypatch):
    # serve, the worker's loop, run in a thread of this process so that the spy can see it
    import multiprocessing
    before = blas_threads()
    seen = where_it_runs(monkeypatch)
    flat = flat_buffer(tiny_params)
    shared_grads = multiprocessing.RawArray("b", flat.nbytes)
    ours, theirs = multiprocessing.Pipe()
    shapes = {name: p.shape for name, p in tiny_params.items()}
    worker = threading.Thread(target=parallel.serve, args=(theirs, flat, shared_grads, shapes, flat.dtype, tiny_cfg))
    worker.start()
    ids, targets = tiny_batch
    ours.send((ids[2:], targets[2:]))
    loss, error, trace = ours.recv()
    ours.send((ids[2:], targets[2:] + tiny_cfg.vocab_size))  # targets out of range: sent back, not raised there
    _, bad_target, _ = ours.recv()
    ours.send(None)
    worker.join(timeout=10)
    assert not worker.is_alive()
    assert seen[0] == [1] * len(before) and blas_threads() == before
    expected_loss, expected_grads = loss_and_grads(tiny_params, ids[2:], targets[2:], tiny_cfg)
    assert (loss, error, trace) == (expected_loss, None, None)
    assert np.frombuffer(shared_grads, flat.dtype).tobytes() == flat_buffer(expected_grads).tobytes()
    assert isinstance(bad_target, ValueError) and "outside the vocabulary" in str(bad_target)


def test_a_script_without_a_main_guard_is_not_run_again_by_the_workers(tmp_path):
    script = tmp_path / "no_guard.py"
    script.write_text(
        "import numpy as np\n"
        "from engineering import parallel\n"
        "from transformer import ModelConfig, init_params\n"
        "print('the script ran', flush=True)\n"
        "cfg = ModelConfig(7, 8, 4, 2, 1, 8, 1e-5)\n"
        "params = init_params(cfg, np.random.default_rng(0))\n"
        "ids = np.arange(12).reshape(3, 4) % 7\n"
        "with parallel.DataParallel(2) as workers:\n"
        "    loss, _ = workers.loss_and_grads(params, ids, ids, cfg)\n"
        "print(f'loss {loss:.6f}')\n", encoding="utf-8")
    # a script of the person's own, run as they run it: the workers start in processes of their own
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120,
                            env={**os.environ, "PYTHONPATH": str(REPO)})  # this tree's modules, not an installed one
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("the script ran") == 1 and "loss " in result.stdout
