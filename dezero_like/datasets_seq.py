"""Time series: a noisy sine data set and a loader that keeps time in order.

A recurrent network reads a series one step at a time and carries a hidden
state from step to step, so its mini-batches must not be shuffled the way
image batches are. :class:`SeqDataLoader` cuts the series into ``batch_size``
equally long streams and returns, at each call, the *next* time step of every
stream: row ``i`` of batch ``k+1`` follows row ``i`` of batch ``k`` in time.
"""

from __future__ import annotations

import numpy as np

from dezero_like.dataloaders import DataLoader
from dezero_like.datasets import Dataset

__all__ = ["SinCurve", "get_sin_curve", "SeqDataLoader"]


def get_sin_curve(train=True, num_data=1000, periods=2, noise=0.05, seed=None):
    """A sine wave sampled ``num_data`` times over ``periods`` periods, as a next-value task.

    The training curve is ``sin(t)`` plus uniform noise in ``[-noise, noise]``
    (seed 2019 unless ``seed`` is given; the global NumPy random state is not
    touched). The test curve is the clean ``cos(t)``: the same shape, shifted,
    which the model has never seen. Returns ``x`` (num_data-1, 1) and ``t``
    (num_data-1, 1) float32 with ``t[i] = x[i+1]``: predict the next value.
    """
    if num_data < 2:
        raise ValueError(f"num_data must be at least 2, got {num_data}")
    s = np.linspace(0, 2 * np.pi * periods, num_data)
    if train:
        rng = np.random.default_rng(2019 if seed is None else seed)
        y = np.sin(s) + rng.uniform(-noise, noise, size=num_data)
    else:
        y = np.cos(s)
    y = y.astype(np.float32).reshape(-1, 1)
    return y[:-1], y[1:]


class SinCurve(Dataset):
    """The noisy sine of :func:`get_sin_curve` as a :class:`~dezero_like.datasets.Dataset`.

    ``ds[i]`` is ``(value at time i, value at time i+1)``, each of shape (1,).
    """

    def __init__(self, train=True, transform=None, target_transform=None, num_data=1000,
                 periods=2, noise=0.05, seed=None):
        self.num_data = num_data
        self.periods = periods
        self.noise = noise
        self.seed = seed
        super().__init__(train, transform, target_transform)

    def prepare(self):
        self.data, self.label = get_sin_curve(self.train, self.num_data, self.periods,
                                              self.noise, self.seed)


class SeqDataLoader(DataLoader):
    """Mini-batches for truncated BPTT: ``batch_size`` parallel streams, in time order.

    The data set (length ``L``) is cut into ``batch_size`` consecutive pieces
    of ``jump = L // batch_size`` steps. Batch ``k`` holds element ``k`` of every
    piece: indexes ``[k, jump + k, 2*jump + k, ...]``. One epoch has ``jump``
    batches, so each stream advances one time step per batch and the hidden
    state a model carries from batch to batch belongs to the same stream.
    With ``batch_size=1`` this is simply the series in order. Nothing is
    shuffled.
    """

    def __init__(self, dataset, batch_size, gpu=False):
        super().__init__(dataset, batch_size, shuffle=False, gpu=gpu)
        self.jump = self.data_size // self.batch_size
        if self.jump < 1:
            raise ValueError(
                f"SeqDataLoader: batch_size {batch_size} is larger than the series "
                f"({self.data_size} steps); every stream needs at least one step"
            )
        self.max_iter = self.jump

    def reset(self):
        """Start again at time step 0 of every stream."""
        self.iteration = 0
        self.index = np.arange(self.data_size)

    def __len__(self):
        return self.max_iter

    def _batch_index(self):
        """Element ``iteration`` of every stream: ``[k, jump + k, 2*jump + k, ...]``."""
        return np.arange(self.batch_size) * self.jump + self.iteration

    def __repr__(self):
        return (f"SeqDataLoader({self.dataset!r}, batch_size={self.batch_size}, "
                f"steps per stream={self.jump})")

