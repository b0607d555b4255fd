"""Exercise 11, derive track: the learning rate of each step, a warmup then a cosine decay.

Read "The learning-rate schedule" on docs/08-training.md, then write the body of lr_schedule below
and run

    python exercises/judge.py lr_schedule --track derive

The guided stub, exercises/guided/11_lr_schedule.py, gives the equations and hints if you get stuck.
"""

import math


def lr_schedule(step, total_steps, lr_max, lr_min, warmup_steps):
    """The learning rate of step `step`, counted from 1 to total_steps: a line from 0 up to lr_max over
    the warmup, then a half cosine down to lr_min, which the last step gets exactly (a run shorter than
    its warmup too). Return it, a float."""
    raise NotImplementedError  # your code, in place of this line
