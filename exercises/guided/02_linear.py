"""Exercise 2: the linear layer, y = x W + b.

Write the bodies of linear_forward and linear_backward below, the forward first, then run

    python exercises/judge.py linear

The forward is judged against the project's and the page's worked example; the backward by central
differences, a row for each of dx, dW and db, so you can get them right one at a time.
docs/02-layernorm.md derives the equations (Linear layer); the solution is the project's own
linear_forward and linear_backward in transformer.py: read them when yours passes, or when stuck.
"""


def linear_forward(x, W, b):  # (..., n_in), (n_in, n_out), (n_out,) -> (..., n_out)
    """y = x W + b for every row of x, and the cache the backward needs.

        y_ri = sum_j x_rj W_ji + b_i                                            (..., n_out)

    Hints:
    - x @ W works on every leading axis of x at once; b broadcasts over the rows.
    Return y and cache = (x, W), that pair in that order: the project's linear_backward reads it.
    """
    raise NotImplementedError  # your code, in place of this line


def linear_backward(dout, cache):  # (..., n_out) -> dx (..., n_in), dW (n_in, n_out), db (n_out,)
    """dx, dW and db from dout = dL/dy, the gradient on the layer's output.

    cache = (x, W), as linear_forward kept them: x (..., n_in) as it came in, W (n_in, n_out).

    The gradients, with r running over all N rows (every leading axis of x together):
        dx_rj = sum_i dout_ri W_ji     dx = dout W^T                   (..., n_in)
        dW_ji = sum_r x_rj dout_ri     dW = x^T dout, over all N rows  (n_in, n_out)
        db_i  = sum_r dout_ri          db = dout summed over all rows  (n_out,)

    Hints:
    - dx is one row at a time: dout @ W.T works on the (..., n_out) array as it is.
    - W and b are used by every row, so every row adds its share to dW and db: the sums run over
      every leading axis, not only the first. x.reshape(-1, n_in) and dout.reshape(-1, n_out) make
      the leading axes one axis of N rows; then dW is a single matrix product.
    - Each gradient has the shape of its tensor: dW (n_in, n_out), db (n_out,). The table names a
      gradient of the wrong shape.
    - Return new arrays and leave x, W and dout as they are: the check calls you twice on one cache.
    Return dx, dW, db.
    """
    raise NotImplementedError  # your code, in place of this line
