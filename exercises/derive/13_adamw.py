"""Exercise 13, derive track: one step of Adam with decoupled weight decay (AdamW).

Read "AdamW" on docs/08-training.md, then write the body of Adam.step below and run

    python exercises/judge.py adamw --track derive

Only step is yours: the judge and train.py make the optimizer with the project's Adam.__init__ and
call your step with it as self. The guided stub, exercises/guided/13_adamw.py, gives the equations
and hints if you get stuck.
"""

import numpy as np

from transformer import decay_group, flat_buffer


class Adam:
    def step(self, params, grads, lr):
        """One update of params, in place, from grads at learning rate lr; return nothing.

        self.beta1, self.beta2, self.eps, self.weight_decay: the settings. self.m, self.v: the running
        means of the gradient and of its square, flat arrays laid out as flat_buffer(params). self.t:
        the steps taken before this one. params, grads: tensors by name, each a view into its flat
        buffer. decay_group(params): the tensors weight decay applies to.
        """
        raise NotImplementedError  # your code, in place of this line
