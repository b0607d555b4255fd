"""parallel.py: a batch cut into slices, one thread or process each, gives the gradients of the whole batch."""

import os
import signal
import subprocess
import sys
import threading
import types

import numpy as np
import pytest
from threadpoolctl import threadpool_info

import config
from conftest import REPO
from engineering import parallel, settings
from engineering.run_log import StopRequest
from transformer import ModelConfig, flat_buffer, init_params, loss_and_grads

REFERENCE = ModelConfig(vocab_size=575, context_len=16, emb_dim=32, num_heads=2, num_layers=2, ff_dim=128, ln_eps=1e-5)
BOOK = ModelConfig(vocab_size=573, context_len=64, emb_dim=128, num_heads=4, num_layers=1, ff_dim=512, ln_eps=1e-5)
LARGE = ModelConfig(vocab_size=575, context_len=128, emb_dim=256, num_heads=4, num_layers=4, ff_dim=1024, ln_eps=1e-5)
needs_blas_control = pytest.mark.skipif(not parallel.blas_controlled(),
                                        reason="threadpoolctl cannot set the threads of numpy's BLAS here")
SHARED_BY = {"threads": lambda count: parallel.OnThreads(count, loss_and_grads), "processes": parallel.OnProcesses}


def blas_threads():
    """The threads numpy's BLAS runs on now, as threadpoolctl sees them (not another library's, such as one that
    transformers loaded after parallel.thread_pools first looked)."""
    return [pool["num_threads"] for pool in threadpool_info()
            if pool["user_api"] == "blas" and "numpy" in pool["filepath"]]


def noting(seen, what):
    """loss_and_grads that first notes what(ids) of each call in seen, in the order the calls come."""
    def spy(params, ids, targets, cfg):
        seen.append(what(ids))
        return loss_and_grads(params, ids, targets, cfg)
    return spy


# --- what both ways compute ---------------------------------------------------------------------------------

@pytest.mark.parametrize("way", SHARED_BY)
@pytest.mark.parametrize("count", [1, 2, 3, 5])  # 3 slices of the 3 rows; 5 for 3 rows leave 2 idle
def test_slices_give_the_loss_and_gradients_of_the_whole_batch(tiny_cfg, tiny_params, tiny_batch, way, count):
    ids, targets = tiny_batch  # (3, 5): in 2 slices, 2 rows and 1 row, weighted 2/3 and 1/3
    loss, grads = loss_and_grads(tiny_params, ids, targets, tiny_cfg)
    with SHARED_BY[way](count) as shared:
        sliced_loss, sliced_grads = shared.loss_and_grads(tiny_params, ids, targets, tiny_cfg)
    assert sliced_loss == pytest.approx(loss, abs=1e-12)
    assert list(sliced_grads) == list(grads)
    np.testing.assert_allclose(flat_buffer(sliced_grads), flat_buffer(grads), rtol=0, atol=1e-12)


@pytest.mark.parametrize("way", SHARED_BY)
def test_two_slices_weigh_each_by_its_share_of_the_positions(tiny_cfg, tiny_params, tiny_batch, way):
    ids, targets = tiny_batch
    first, second = (loss_and_grads(tiny_params, ids[rows], targets[rows], tiny_cfg) for rows in (slice(0, 2), slice(2, 3)))
    with SHARED_BY[way](2) as shared:
        loss, grads = shared.loss_and_grads(tiny_params, ids, targets, tiny_cfg)
    assert loss == pytest.approx(2 / 3 * first[0] + 1 / 3 * second[0], abs=1e-15)
    expected = 2 / 3 * flat_buffer(first[1]) + 1 / 3 * flat_buffer(second[1])
    np.testing.assert_allclose(flat_buffer(grads), expected, rtol=0, atol=1e-15)


def test_the_same_batch_gives_the_same_bits_every_time_on_threads_or_processes(tiny_cfg, tiny_params, tiny_batch):
    runs = []
    for way in ("threads", "processes", "threads"):
        with SHARED_BY[way](3) as shared:
            runs += [shared.loss_and_grads(tiny_params, *tiny_batch, tiny_cfg) for _ in range(2)]
    for loss, grads in runs[1:]:
        assert loss == runs[0][0]
        assert flat_buffer(grads).tobytes() == flat_buffer(runs[0][1]).tobytes()


@pytest.mark.parametrize("way", SHARED_BY)
def test_a_single_sequence_is_not_sliced(tiny_cfg, tiny_params, tiny_batch, way, monkeypatch):
    ids, targets = tiny_batch[0][0], tiny_batch[1][0]  # (T,)
    seen = []
    monkeypatch.setattr(parallel, "loss_and_grads", noting(seen, np.shape))  # the processes' own, in this process
    with parallel.OnThreads(2, noting(seen, np.shape)) if way == "threads" else parallel.OnProcesses(2) as shared:
        loss, grads = shared.loss_and_grads(tiny_params, ids, targets, tiny_cfg)
        assert getattr(shared, "workers", []) == []  # nothing to cut, so no worker was started
    assert seen == [(5,)]  # one call, of the whole sequence
    expected_loss, expected_grads = loss_and_grads(tiny_params, ids, targets, tiny_cfg)
    assert loss == expected_loss
    assert flat_buffer(grads).tobytes() == flat_buffer(expected_grads).tobytes()


@pytest.mark.parametrize("way", SHARED_BY)
def test_a_breakpoint_in_a_slice_stops_in_this_thread_with_the_whole_batch(tiny_cfg, tiny_params, tiny_batch,
                                                                         monkeypatch, way):
    stopped = []

    def hook(*args, **kwargs):  # what PYTHONBREAKPOINT would name: it notes where it stopped, and goes on
        stopped.append(threading.current_thread())

    row = tiny_batch[0][2 if way == "threads" else 0]  # in another thread's slice; in this process's (a worker's
    # functions are the project's, which this test cannot reach)

    def breaks_on_the_row(params, ids, targets, cfg):  # a breakpoint() that only one slice meets
        if (ids == row).all(axis=-1).any():
            breakpoint()
        return loss_and_grads(params, ids, targets, cfg)

    monkeypatch.setattr(sys, "breakpointhook", hook)
    monkeypatch.setattr(parallel, "loss_and_grads", breaks_on_the_row)  # the processes' own, in this process
    with parallel.OnThreads(2, breaks_on_the_row) if way == "threads" else parallel.OnProcesses(2) as shared:
        loss, grads = shared.loss_and_grads(tiny_params, *tiny_batch, tiny_cfg)
    assert stopped == [threading.main_thread()]  # once, in this thread, as with one slice
    whole_loss, whole_grads = loss_and_grads(tiny_params, *tiny_batch, tiny_cfg)
    assert loss == whole_loss and flat_buffer(grads).tobytes() == flat_buffer(whole_grads).tobytes()  # the whole batch
    assert sys.breakpointhook is hook  # the person's hook is back


@needs_blas_control
def test_the_default_model_trains_on_this_thread_alone_as_before():
    # config.py's settings on the sample corpus (V = 560): one thread, whatever the cores, so that the default
    # run's checkpoint is the one it was, bit for bit
    s = types.SimpleNamespace(**settings.defaults(config))
    cfg = ModelConfig(560, s.context_len, s.emb_dim, s.num_heads, s.num_layers, s.ff_dim, s.ln_eps)
    for available in (2, 64):
        assert parallel.threads_for(cfg, s.batch_size, s.seq_len, available) == 1
    with parallel.sharing(s, cfg, loss_and_grads) as shared:
        assert (type(shared), shared.count) == (parallel.OnThreads, 1)


def test_sharing_follows_the_setting(tiny_cfg, monkeypatch):
    monkeypatch.setattr(parallel, "threads_for", lambda cfg, batch_size, seq_len: 2 if batch_size >= 8 else 1)
    chosen = {}
    for processes, batch_size in ((0, 8), (0, 4), (1, 8), (3, 8)):
        with parallel.sharing(types.SimpleNamespace(processes=processes, batch_size=batch_size, seq_len=5), tiny_cfg,
                              loss_and_grads) as shared:
            chosen[processes, batch_size] = (type(shared).__name__, shared.count)
    assert chosen == {(0, 8): ("OnThreads", 2), (0, 4): ("OnThreads", 1), (1, 8): ("OnThreads", 1),
                      (3, 8): ("OnProcesses", 3)}


# --- threads ------------------------------------------------------------------------------------------------

def test_each_slice_goes_to_the_function_handed_in_and_the_first_stays_in_this_thread(tiny_cfg, tiny_params,
                                                                                      tiny_batch):
    # with --exercises the loop hands the learner's loss_and_grads: the slices must run it, not the project's
    seen = []
    with parallel.OnThreads(2, noting(seen, lambda ids: (threading.current_thread(), len(ids)))) as shared:
        shared.loss_and_grads(tiny_params, *tiny_batch, tiny_cfg)
    assert sorted(rows for _, rows in seen) == [1, 2]
    in_this_thread = [rows for thread, rows in seen if thread is threading.current_thread()]
    assert in_this_thread == [2]  # the first slice, rows 0 and 1; the other thread took row 2


def test_an_error_in_a_threads_slice_is_raised_here_with_its_traceback_and_the_next_step_works(tiny_cfg, tiny_params,
                                                                                              tiny_batch):
    ids, targets = tiny_batch
    bad = ids.copy()
    bad[1, 0] = tiny_cfg.vocab_size  # 3 slices of a row each: the second, in a thread of the pool, finds it
    with parallel.OnThreads(3, loss_and_grads) as shared:
        with pytest.raises(ValueError, match="outside the vocabulary") as raised:
            shared.loss_and_grads(tiny_params, bad, targets, tiny_cfg)
        assert raised.traceback[-1].name == "check_ids"  # where the slice met it, in its own thread
        loss, grads = shared.loss_and_grads(tiny_params, ids[::-1], targets[::-1], tiny_cfg)
    expected_loss, expected_grads = loss_and_grads(tiny_params, ids[::-1], targets[::-1], tiny_cfg)
    assert loss == pytest.approx(expected_loss, abs=1e-12)
    np.testing.assert_allclose(flat_buffer(grads), flat_buffer(expected_grads), rtol=0, atol=1e-12)


def test_every_slice_ends_before_an_error_of_the_first_is_raised(tiny_cfg, tiny_params, tiny_batch):
    ended = []

    def first_fails(params, ids, targets, cfg):
        if threading.current_thread() is threading.main_thread():
            raise ValueError("the first slice's error")
        threading.Event().wait(0.2)  # the other slice takes longer than the first
        ended.append(len(ids))
        return loss_and_grads(params, ids, targets, cfg)

    with parallel.OnThreads(2, first_fails) as shared:
        with pytest.raises(ValueError, match="the first slice's error"):
            shared.loss_and_grads(tiny_params, *tiny_batch, tiny_cfg)
        assert ended == [1]  # the second slice was done before the step failed: none runs on into the next


def test_the_slices_run_under_the_callers_numpy_error_state(tiny_cfg, tiny_params, tiny_batch):
    # np.errstate belongs to a thread's context: the loop's "ignore" must hold in every slice, not only the first
    seen = []
    with parallel.OnThreads(3, noting(seen, lambda ids: np.geterr()["over"])) as shared:
        with np.errstate(over="ignore"):
            shared.loss_and_grads(tiny_params, *tiny_batch, tiny_cfg)
        assert seen == ["ignore"] * 3
        shared.loss_and_grads(tiny_params, *tiny_batch, tiny_cfg)
    assert seen[3:] == [np.geterr()["over"]] * 3


def test_ctrl_c_while_the_threads_run_ends_the_step_whole(tiny_cfg, tiny_params, tiny_batch):
    def presses_ctrl_c(params, ids, targets, cfg):  # in the other thread, while the first slice runs here
        if threading.current_thread() is not threading.main_thread():
            os.kill(os.getpid(), signal.SIGINT)
        return loss_and_grads(params, ids, targets, cfg)

    with StopRequest().installed() as stop, parallel.OnThreads(2, presses_ctrl_c) as shared:
        loss, grads = shared.loss_and_grads(tiny_params, *tiny_batch, tiny_cfg)
        assert stop.requested  # heard in this thread, which trains: the loop stops after this step
    expected_loss, expected_grads = loss_and_grads(tiny_params, *tiny_batch, tiny_cfg)
    assert loss == pytest.approx(expected_loss, abs=1e-12)
    np.testing.assert_allclose(flat_buffer(grads), flat_buffer(expected_grads), rtol=0, atol=1e-12)


@needs_blas_control
def test_slices_run_on_one_blas_thread_and_one_slice_keeps_them_all(tiny_cfg, tiny_params, tiny_batch):
    before, seen = blas_threads(), []
    for threads in (1, 3):
        with parallel.OnThreads(threads, noting(seen, lambda ids: blas_threads())) as shared:
            shared.loss_and_grads(tiny_params, *tiny_batch, tiny_cfg)
    assert seen == [before] + [[1] * len(before)] * 3  # the whole batch with every thread, then each of 3 slices
    assert blas_threads() == before


def test_matmul_flops_of_the_reference_shape():
    # N = 256, C = 32, F = 128, V = 575, hs = 16, 32 heads of T = 16. Per block, forward:
    # Q, K, V 3*2*256*32*32 = 1,572,864; scores and attn @ V 2 * (2*32*16*16*16) = 524,288;
    # Wo 2*256*32*32 = 524,288; W1 and W2 2 * (2*256*32*128) = 4,194,304: 6,815,744.
    # Two blocks and the head 2*256*32*575 = 9,420,800: 23,052,288; with the backward, 3 times that.
    assert parallel.matmul_flops(REFERENCE, 16, 16) == 3 * (2 * 6_815_744 + 9_420_800) == 69_156_864


@needs_blas_control
def test_threads_follow_the_work_per_slice():
    assert parallel.threads_for(REFERENCE, 16, 16, available=2) == 1  # 6.9e7 FLOPs: not two slices' worth
    assert parallel.threads_for(BOOK, 12, 64, available=2) == 2  # 1.3e9 FLOPs: two slices' worth and more
    assert parallel.threads_for(BOOK, 12, 64, available=8) == 8
    assert parallel.threads_for(BOOK, 2, 64, available=2) == 1  # 2.2e8 FLOPs: one slice's worth
    assert parallel.threads_for(LARGE, 32, 128, available=64) == 32  # never more slices than rows
    assert parallel.threads_for(LARGE, 32, 128, available=1) == 1


def test_a_blas_that_cannot_be_held_to_one_thread_trains_on_one_thread(monkeypatch):
    class OnlyOpenMP:
        def info(self):
            return [{"user_api": "openmp", "num_threads": 2}]
    monkeypatch.setattr(parallel, "thread_pools", OnlyOpenMP)
    assert parallel.threads_for(LARGE, 32, 128, available=2) == 1


# --- processes ----------------------------------------------------------------------------------------------

def test_the_workers_see_each_steps_parameters(tiny_cfg, tiny_params, tiny_batch):
    # the parameters change between steps, as Adam changes them: the workers must use the new ones
    with parallel.OnProcesses(2) as workers:
        workers.loss_and_grads(tiny_params, *tiny_batch, tiny_cfg)
        flat_buffer(tiny_params)[:] *= 0.5
        loss, grads = workers.loss_and_grads(tiny_params, *tiny_batch, tiny_cfg)
    expected_loss, expected_grads = loss_and_grads(tiny_params, *tiny_batch, tiny_cfg)
    assert loss == pytest.approx(expected_loss, abs=1e-12)
    np.testing.assert_allclose(flat_buffer(grads), flat_buffer(expected_grads), rtol=0, atol=1e-12)


def test_other_parameters_start_new_workers(tiny_cfg, tiny_params, tiny_batch):
    other_cfg = ModelConfig(vocab_size=7, context_len=8, emb_dim=6, num_heads=3, num_layers=1, ff_dim=5, ln_eps=1e-5)
    other_params = init_params(other_cfg, np.random.default_rng(2))
    with parallel.OnProcesses(2) as workers:
        for cfg, params in ((tiny_cfg, tiny_params), (other_cfg, other_params), (tiny_cfg, tiny_params.copy())):
            loss, grads = workers.loss_and_grads(params, *tiny_batch, cfg)
            expected_loss, expected_grads = loss_and_grads(params, *tiny_batch, cfg)
            assert loss == pytest.approx(expected_loss, abs=1e-12)
            np.testing.assert_allclose(flat_buffer(grads), flat_buffer(expected_grads), rtol=0, atol=1e-12)


def test_an_error_in_a_workers_slice_is_raised_here_and_the_next_step_works(tiny_cfg, tiny_params, tiny_batch):
    ids, targets = tiny_batch
    bad = ids.copy()
    bad[1, 0] = tiny_cfg.vocab_size  # 3 slices of a row each: the first worker finds it, the second has none
    with parallel.OnProcesses(3) as workers:
        with pytest.raises(ValueError, match="outside the vocabulary") as raised:
            workers.loss_and_grads(tiny_params, bad, targets, tiny_cfg)
        assert "in the training worker" in str(raised.value.__cause__)  # with the worker's traceback
        # other rows for each worker than last time: an answer left over from the failed step would show
        loss, grads = workers.loss_and_grads(tiny_params, ids[::-1], targets[::-1], tiny_cfg)
    expected_loss, expected_grads = loss_and_grads(tiny_params, ids[::-1], targets[::-1], tiny_cfg)
    assert loss == pytest.approx(expected_loss, abs=1e-12)
    np.testing.assert_allclose(flat_buffer(grads), flat_buffer(expected_grads), rtol=0, atol=1e-12)


def test_a_worker_that_died_is_reported_with_its_exit_code(tiny_cfg, tiny_params, tiny_batch):
    with parallel.OnProcesses(2) as workers:
        workers.loss_and_grads(tiny_params, *tiny_batch, tiny_cfg)
        workers.workers[0].process.kill()
        workers.workers[0].process.join()
        with pytest.raises(RuntimeError, match=r"the training worker 1 stopped \(exit code -9\)"):
            workers.loss_and_grads(tiny_params, *tiny_batch, tiny_cfg)


def test_ctrl_c_is_left_to_the_process_that_trains_and_close_stops_the_workers(tiny_cfg, tiny_params, tiny_batch):
    with parallel.OnProcesses(3) as workers:
        workers.loss_and_grads(tiny_params, *tiny_batch, tiny_cfg)
        processes = [worker.process for worker in workers.workers]
        for process in processes:
            os.kill(process.pid, signal.SIGINT)  # what Ctrl-C in a terminal sends to all of them
        loss, _ = workers.loss_and_grads(tiny_params, *tiny_batch, tiny_cfg)
        assert all(process.is_alive() for process in processes)
    assert not any(process.is_alive() for process in processes)
    assert loss == pytest.approx(loss_and_grads(tiny_params, *tiny_batch, tiny_cfg)[0], abs=1e-12)


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


@needs_blas_control
def test_a_worker_runs_on_one_blas_thread_and_answers_its_slice(tiny_cfg, tiny_params, tiny_batch, monkeypatch):
    # serve, the worker's loop, run in a thread of this process so that the spy can see it
    import multiprocessing
    before, seen = blas_threads(), []
    monkeypatch.setattr(parallel, "loss_and_grads", noting(seen, lambda ids: blas_threads()))
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
        "with parallel.OnProcesses(2) as workers:\n"
        "    loss, _ = workers.loss_and_grads(params, ids, ids, cfg)\n"
        "print(f'loss {loss:.6f}')\n", encoding="utf-8")
    # a script of the person's own, run as they run it: the workers start in processes of their own
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120,
                            env={**os.environ, "PYTHONPATH": str(REPO)})  # this tree's modules, not an installed one
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("the script ran") == 1 and "loss " in result.stdout
