"""Exercise 11: the learning rate of each step, a linear warmup then a cosine decay.

Write the body of lr_schedule below, then run

    python exercises/judge.py lr_schedule

It is judged on the page's steps (step 25 of 1000 gets 5e-4, the last step lr_min) and on every step
of four runs against the project's. docs/08-training.md derives it (The learning-rate schedule); the
solution is the project's own lr_schedule in train.py.
"""

import math


def lr_schedule(step, total_steps, lr_max, lr_min, warmup_steps):
    """The learning rate of step `step`, counted 1 .. total_steps.

    Warmup, for step <= warmup_steps: a line from 0 that reaches lr_max at warmup_steps,
        lr = lr_max * step / warmup_steps
    then a cosine from lr_max down to lr_min, which the last step gets exactly:
        progress = (step - warmup_steps) / (total_steps - warmup_steps)            0 .. 1
        lr = lr_min + (lr_max - lr_min) * (1 + cos(pi * progress)) / 2

    Hints:
    - A run shorter than its warmup must still end at lr_min: take the warmup as at most
      total_steps - 1 steps.
    Return lr, a float.
    """
    raise NotImplementedError  # your code, in place of this line
