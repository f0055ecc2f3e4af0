"""Optimizers: turn gradients into parameter updates.

``optimizer = SGD(lr=0.1).setup(model)``; after each ``loss.backward()`` call
``optimizer.update()``. Updates change ``param.data`` in place, in the
parameter's dtype, and build no graph. Hooks (``add_hook``) see the list of
parameters with gradients before the update: weight decay, gradient clipping,
freezing layers.

If ``loss.backward(loss_scale=S)`` was used (loss scaling for float16), each
leaf remembers ``S`` in ``param.loss_scale``; the optimizer divides the
gradient by it before hooks and update, then resets it to ``None``.
"""

from __future__ import annotations

import math

from dezero_like import cuda
from dezero_like.core import Parameter, Variable, as_array


def _new_grad(data):
    """A fresh gradient Variable; arithmetic on a 0-d array gives a NumPy scalar, made an array."""
    return Variable(as_array(data), requires_grad=False)


class Optimizer:
    """Base class: ``setup(target)``, ``update()``, ``add_hook(f)``.

    Subclasses write ``update_one(param)``, which changes ``param.data`` in place.
    """

    def __init__(self):
        self.target = None
        self.hooks = []

    def setup(self, target):
        """Remember the Layer (or Model) whose parameters ``update()`` changes."""
        if not hasattr(target, "params"):
            raise TypeError(
                f"setup() needs a Layer or Model (something with params()), "
                f"got {type(target).__name__}"
            )
        self.target = target
        return self

    def add_hook(self, f):
        """Call ``f(params)`` before every update (params: those with a gradient)."""
        self.hooks.append(f)
        return self

    def update(self):
        """Apply one update to every parameter of the target that has a gradient."""
        if self.target is None:
            raise RuntimeError("call optimizer.setup(model) before optimizer.update()")
        params = [p for p in self.target.params() if p.grad is not None]
        for p in params:
            if p.loss_scale is not None:
                # a new array: grads may be shared between parameters (never divide in place)
                p.grad = _new_grad(p.grad.data / float(p.loss_scale))
                p.loss_scale = None
        for f in self.hooks:
            f(params)
        self.prepare()
        for p in params:
            if p.grad is not None:  # a hook (FreezeParam) may have removed it
                self.update_one(p)

    def prepare(self):
        """Once per update, before the parameters (Adam counts its steps here)."""

    def update_one(self, param):
        raise NotImplementedError(f"{type(self).__name__} must implement update_one()")

    def _state(self, name, param):
        """Per-parameter state array (zeros of the parameter's shape and dtype on first use)."""
        store = self.__dict__.setdefault("_states", {})
        slot = store.setdefault(name, {})
        key = id(param)
        if key not in slot:
            xp = cuda.get_array_module(param.data)
            slot[key] = xp.zeros_like(param.data)
        return slot[key]


class SGD(Optimizer):
    """Plain gradient descent: W <- W - lr * g."""

    def __init__(self, lr=0.01):
        super().__init__()
        self.lr = lr

    def update_one(self, param):
        if cuda.is_cupy_array(param.data):  # one fused kernel on a GPU (step 71)
            from dezero_like import cuda_kernels

            cuda_kernels.sgd_update(param.data, param.grad.data, self.lr)
        else:
            param.data -= self.lr * param.grad.data


class MomentumSGD(Optimizer):
    """v <- momentum * v - lr * g; W <- W + v (a ball rolling downhill keeps its speed)."""

    def __init__(self, lr=0.01, momentum=0.9):
        super().__init__()
        self.lr = lr
        self.momentum = momentum

    def update_one(self, param):
        v = self._state("v", param)
        v *= self.momentum
        v -= self.lr * param.grad.data
        param.data += v


class AdaGrad(Optimizer):
    """h <- h + g*g; W <- W - lr * g / (sqrt(h) + eps): often-moved weights slow down."""

    def __init__(self, lr=0.001, eps=1e-8):
        super().__init__()
        self.lr = lr
        self.eps = eps

    def update_one(self, param):
        xp = cuda.get_array_module(param.data)
        h = self._state("h", param)
        g = param.grad.data
        h += g * g
        param.data -= self.lr * g / (xp.sqrt(h) + self.eps)


class AdaDelta(Optimizer):
    """No learning rate: steps are scaled by running RMS of past steps over running RMS of grads.

    msg <- rho msg + (1-rho) g^2;  dx = sqrt((msdx + eps) / (msg + eps)) g;
    msdx <- rho msdx + (1-rho) dx^2;  W <- W - dx.
    """

    def __init__(self, rho=0.95, eps=1e-6):
        super().__init__()
        self.rho = rho
        self.eps = eps

    def update_one(self, param):
        xp = cuda.get_array_module(param.data)
        msg = self._state("msg", param)
        msdx = self._state("msdx", param)
        rho, eps = self.rho, self.eps
        g = param.grad.data
        msg *= rho
        msg += (1 - rho) * g * g
        dx = xp.sqrt((msdx + eps) / (msg + eps)) * g
        msdx *= rho
        msdx += (1 - rho) * dx * dx
        param.data -= dx


class Adam(Optimizer):
    """Momentum plus per-weight scaling, with bias correction for the zero-initialised averages.

    m <- b1 m + (1-b1) g;  v <- b2 v + (1-b2) g^2;
    W <- W - alpha * sqrt(1 - b2^t) / (1 - b1^t) * m / (sqrt(v) + eps), t = 1, 2, ...
    """

    def __init__(self, alpha=0.001, beta1=0.9, beta2=0.999, eps=1e-8):
        super().__init__()
        self.t = 0
        self.alpha = alpha
        self.beta1 = beta1
        self.beta2 = beta2
        self.eps = eps

    def prepare(self):
        self.t += 1

    @property
    def lr(self):
        """The bias-corrected step size at step t."""
        fix1 = 1.0 - self.beta1**self.t
        fix2 = 1.0 - self.beta2**self.t
        return self.alpha * math.sqrt(fix2) / fix1

    def update_one(self, param):
        xp = cuda.get_array_module(param.data)
        m = self._state("m", param)
        v = self._state("v", param)
        g = param.grad.data
        m += (1 - self.beta1) * (g - m)
        v += (1 - self.beta2) * (g * g - v)
        param.data -= self.lr * m / (xp.sqrt(v) + self.eps)


# --------------------------------------------------------------------------- #
# Hooks: called with the list of parameters before the update
# --------------------------------------------------------------------------- #


class WeightDecay:
    """L2 regularisation: g <- g + rate * W (the gradient of rate/2 * ||W||^2)."""

    def __init__(self, rate):
        self.rate = rate

    def __call__(self, params):
        for p in params:
            if p.grad is not None:
                p.grad = _new_grad(p.grad.data + self.rate * p.data)


class ClipGrad:
    """Scale all gradients down together when their global L2 norm exceeds ``max_norm``."""

    def __init__(self, max_norm):
        self.max_norm = max_norm

    def __call__(self, params):
        grads = [p.grad.data for p in params if p.grad is not None]
        total = math.sqrt(sum(float((g * g).sum()) for g in grads))
        rate = self.max_norm / (total + 1e-6)
        if rate < 1:
            for p in params:
                if p.grad is not None:
                    p.grad = _new_grad(p.grad.data * rate)


class FreezeParam:
    """Keep the given layers (or parameters) fixed: their gradients are dropped before updating."""

    def __init__(self, *layers):
        self.frozen = []
        for layer in layers:
            if isinstance(layer, Parameter):
                self.frozen.append(layer)
            else:
                self.frozen.extend(layer.params())

    def __call__(self, params):
        for p in self.frozen:
            p.grad = None


__all__ = [
    "Optimizer", "SGD", "MomentumSGD", "AdaGrad", "AdaDelta", "Adam", "WeightDecay", "ClipGrad",
    "FreezeParam",
]
