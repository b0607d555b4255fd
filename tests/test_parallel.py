"""parallel.py: a batch cut into slices, one thread each, gives the gradients of the whole batch."""

import numpy as np
import pytest

import parallel
from transformer import ModelConfig, flat_buffer, loss_and_grads

REFERENCE = ModelConfig(vocab_size=575, context_len=16, emb_dim=32, num_heads=2, num_layers=2, ff_dim=128, ln_eps=1e-5)
LARGE = ModelConfig(vocab_size=575, context_len=128, emb_dim=256, num_heads=4, num_layers=4, ff_dim=1024, ln_eps=1e-5)
needs_openblas = pytest.mark.skipif(parallel.blas_library() is None,
                                    reason="numpy's BLAS is not an OpenBLAS that sets a thread's own thread count")


@pytest.mark.parametrize("threads", [1, 2, 3, 5])  # 3 slices of the 3 rows; 5 threads for 3 rows leave 2 idle
def test_slices_give_the_loss_and_gradients_of_the_whole_batch(tiny_cfg, tiny_params, tiny_batch, threads):
    ids, targets = tiny_batch  # (3, 5): with 2 threads, slices of 2 rows and 1 row, weighted 2/3 and 1/3
    loss, grads = loss_and_grads(tiny_params, ids, targets, tiny_cfg)
    with parallel.DataParallel(threads) as workers:
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


def test_a_single_sequence_is_not_sliced(tiny_cfg, tiny_params, tiny_batch):
    ids, targets = tiny_batch[0][0], tiny_batch[1][0]  # (T,)
    with parallel.DataParallel(2) as workers:
        loss, grads = workers.loss_and_grads(tiny_params, ids, targets, tiny_cfg)
    expected_loss, expected_grads = loss_and_grads(tiny_params, ids, targets, tiny_cfg)
    assert loss == expected_loss
    assert flat_buffer(grads).tobytes() == flat_buffer(expected_grads).tobytes()


def test_matmul_flops_of_the_reference_shape():
    # N = 256, C = 32, F = 128, V = 575, hs = 16, 32 heads of T = 16. Per block, forward:
    # QKV 2*256*32*96 = 1,572,864; scores and attn @ V 2 * (2*32*16*16*16) = 524,288;
    # Wo 2*256*32*32 = 524,288; W1 and W2 2 * (2*256*32*128) = 4,194,304: 6,815,744.
    # Two blocks and the head 2*256*32*575 = 9,420,800: 23,052,288; with the backward, 3 times that.
    assert parallel.matmul_flops(REFERENCE, 16, 16) == 3 * (2 * 6_815_744 + 9_420_800) == 69_156_864


@needs_openblas
def test_threads_follow_the_work_per_slice():
    assert parallel.threads_for(REFERENCE, 16, 16, available=2) == 1  # 6.9e7 FLOPs: under one slice's worth
    assert parallel.threads_for(REFERENCE, 64, 16, available=2) == 2  # 2.8e8 FLOPs: two slices' worth
    assert parallel.threads_for(LARGE, 32, 128, available=2) == 2
    assert parallel.threads_for(LARGE, 32, 128, available=64) == 32  # never more slices than rows
    assert parallel.threads_for(LARGE, 32, 128, available=1) == 1


@needs_openblas
def test_blas_threads_hold_inside_the_block_and_come_back_after():
    set_threads, get_threads = parallel.blas_library()
    before = get_threads()
    with parallel.blas_threads(1):
        assert get_threads() == 1
    assert get_threads() == before
    with pytest.raises(RuntimeError), parallel.blas_threads(1):
        raise RuntimeError("a failed step")
    assert get_threads() == before


@needs_openblas
def test_a_step_runs_its_products_on_one_core_and_gives_the_cores_back(tiny_cfg, tiny_params, tiny_batch,
                                                                        monkeypatch):
    _, get_threads = parallel.blas_library()
    before, seen = get_threads(), []

    def spy(*args):
        seen.append(get_threads())
        return loss_and_grads(*args)

    monkeypatch.setattr(parallel, "loss_and_grads", spy)
    for threads in (1, 2):
        with parallel.DataParallel(threads) as workers:
            workers.loss_and_grads(tiny_params, *tiny_batch, tiny_cfg)
    assert seen == [1, 1, 1]  # one call for 1 thread, one for each of the 2 slices
    assert get_threads() == before
