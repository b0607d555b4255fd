"""Exercise 13: one step of Adam with decoupled weight decay (AdamW).

Write the body of Adam.step below, then run

    python exercises/judge.py adamw

It is judged on the page's two steps by hand (a matrix decays, a bias does not), on the first step's
move of lr per entry, and on three steps of a model against the project's: the parameters, m, v and
the step count. docs/08-training.md derives it (AdamW); the solution is the project's own Adam.step
in transformer.py. Only step is yours: the judge and train.py make the optimizer with the project's
Adam.__init__, and call your step with it as self.
"""

import numpy as np

from transformer import decay_group, flat_buffer


class Adam:
    def step(self, params, grads, lr):
        """One update of params, in place, from grads at learning rate lr.

        self.beta1, self.beta2, self.eps, self.weight_decay: the settings; self.m and self.v: the running
        means of the gradient and of its square, flat arrays laid out as flat_buffer(params), zero at
        first; self.t: the steps taken before this one. params and grads: tensors by name, each a view
        into its flat buffer. Every step:
            t = t + 1
            p = p - lr * weight_decay * p           on matrices only (decay_group(params): both embedding
                                                    tables included, no gain, no bias), whatever the gradient
            m = beta1 m + (1 - beta1) g
            v = beta2 v + (1 - beta2) g^2
            p = p - lr * m_hat / (sqrt(v_hat) + eps),   m_hat = m / (1 - beta1^t),  v_hat = v / (1 - beta2^t)

        Hints:
        - In place, all of it: p, m and v are read again at the next step. flat_buffer(params) is one
          vector of every parameter, and -= on it changes them all.
        - The decay comes first, on the matrices alone; the Adam update runs on every entry.
        - t counts from 1 at the first step, so the bias corrections divide by 1 - beta^1 then.
        Return nothing.
        """
        raise NotImplementedError  # your code, in place of this line
