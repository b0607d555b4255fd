"""Exercise 3 of 7, derive track: the backward of the softmax over the last axis, which attention uses.

Read "Softmax" on docs/03-attention.md; derive the gradient on the softmax's input on paper (every
output of a row depends on every input of that row), then write the body of softmax_backward
below and run

    python gradcheck.py --exercise softmax --track derive

The guided stub, exercises/softmax.py, gives the equations and hints if you get stuck.
"""


def softmax_backward(dout, probs):  # (..., n), (..., n) -> (..., n)
    """The gradient on the softmax's input, from dout, the gradient on its output.

    probs: (..., n), the softmax's output, each row summing to 1; all the backward needs.
    dout: (..., n).
    Return (..., n), a new array.
    """
    raise NotImplementedError  # your code, in place of this line
