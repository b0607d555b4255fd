"""What turns gradients into better parameters: AdamW, gradient clipping, the learning-rate schedule.

The parameters and gradients are packed dicts (transformer.pack): every tensor is a view into
one flat buffer, so each update below is a handful of operations on one long vector.
"""

import math

import numpy as np

from errors import InputError
from transformer import flat_buffer


def lr_schedule(step, total_steps, lr_max, lr_min, warmup_steps):
    """The learning rate of step `step` (1 .. total_steps): linear warmup, then cosine decay.

    Warmup: lr = lr_max * step / warmup_steps, a line from 0 that reaches lr_max at warmup_steps.
    Then lr = lr_min + (lr_max - lr_min) * (1 + cos(pi * progress)) / 2, where progress runs from
    0 after warmup to 1 at the last step, which therefore gets exactly lr_min.
    Example: lr_schedule(25, 1000, 1e-3, 1e-4, 50) -> 5e-4
    """
    warmup_steps = min(warmup_steps, total_steps - 1)  # a run shorter than warmup still ends at lr_min
    if step <= warmup_steps:
        return lr_max * step / warmup_steps
    progress = (step - warmup_steps) / (total_steps - warmup_steps)
    return lr_min + (lr_max - lr_min) * 0.5 * (1.0 + math.cos(math.pi * progress))


def clip_grad_norm(grads, max_norm):
    """Scale all gradients in place so their global L2 norm is at most max_norm; return the norm before.

    Example: grads with entries [3, 4] (norm 5), max_norm 1 -> entries [0.6, 0.8], returns 5.0
    """
    flat = flat_buffer(grads)
    norm = math.sqrt(float(np.dot(flat, flat)))
    if norm > max_norm:
        flat *= max_norm / norm
    return norm


def decay_group(params):
    """The tensors weight decay applies to: every matrix, both embedding tables included; no gain, no bias."""
    return [tensor for tensor in params.values() if tensor.ndim == 2]


class Adam:
    """Adam with decoupled weight decay (AdamW), over one flat vector of parameters.

    m = beta1 m + (1 - beta1) g             running mean of the gradient
    v = beta2 v + (1 - beta2) g^2           running mean of its square
    p = p - lr * weight_decay * p           on matrices only (both embedding tables included),
                                            whatever the gradient: this is what "decoupled" means
    p = p - lr * m_hat / (sqrt(v_hat) + eps), with m_hat = m / (1 - beta1^t), v_hat = v / (1 - beta2^t)
    """

    def __init__(self, params, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.01):
        self.beta1, self.beta2, self.eps, self.weight_decay = beta1, beta2, eps, weight_decay
        flat = flat_buffer(params)
        self.m = np.zeros_like(flat)
        self.v = np.zeros_like(flat)
        self.t = 0  # steps taken; the bias corrections need it

    def step(self, params, grads, lr):
        """One update of params, in place, from grads at learning rate lr."""
        p, g = flat_buffer(params), flat_buffer(grads)
        self.t += 1
        self.m *= self.beta1  # m and v are updated where they are: at GPT-2's size each copy is 650 MB
        self.m += (1.0 - self.beta1) * g
        self.v *= self.beta2
        self.v += (1.0 - self.beta2) * g * g
        for matrix in decay_group(params):  # views of p
            matrix -= lr * self.weight_decay * matrix  # decoupled: on matrices only, whatever the gradient
        m_hat = self.m / (1.0 - self.beta1 ** self.t)  # the bias corrections: m and v start at 0
        v_hat = self.v / (1.0 - self.beta2 ** self.t)
        p -= lr * m_hat / (np.sqrt(v_hat) + self.eps)

    def state(self):
        """What a resumed run needs: the two moments and the step count."""
        return {"m": self.m, "v": self.v, "t": self.t}

    def load_state(self, state):
        """Take up the moments and step count saved by state(); shapes and dtype must match."""
        for name in ("m", "v"):
            if state[name].shape != self.m.shape:
                raise InputError(f"the optimizer state's {name} holds {state[name].size} numbers, the model has "
                                 f"{self.m.size}: it was saved for another model")
        self.m[...] = state["m"]
        self.v[...] = state["v"]
        self.t = int(state["t"])
