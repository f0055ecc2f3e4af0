"""DataLoader: mini-batches from a Dataset, one epoch per ``for`` loop.

::

    loader = DataLoader(train_set, batch_size=100)
    for epoch in range(5):
        for x, t in loader:      # x: (100, 784) array, t: (100,) labels
            ...

Each ``for`` starts a new epoch (reshuffled when ``shuffle=True``). Every
example is used exactly once per epoch: the last batch is smaller when the
batch size does not divide the data set. Batches are plain arrays, NumPy or,
after :meth:`DataLoader.to_gpu`, CuPy.
"""

from __future__ import annotations

import math

import numpy as np

from dezero_like import cuda

__all__ = ["DataLoader"]


class DataLoader:
    """Iterate over ``dataset`` in mini-batches of ``batch_size`` examples.

    ``shuffle=True`` draws a new order at the start of every epoch, from
    ``np.random`` (so ``np.random.seed`` makes runs repeatable) or from its own
    generator when ``seed`` is given. ``gpu=True`` (or :meth:`to_gpu`) returns
    CuPy arrays. ``len(loader)`` is the number of batches per epoch.
    Unlabelled datasets give ``t = None``.
    """

    def __init__(self, dataset, batch_size, shuffle=True, gpu=False, seed=None):
        if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) \
                or batch_size < 1:
            raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
        if len(dataset) == 0:
            raise ValueError("DataLoader got an empty dataset")
        self.dataset = dataset
        self.batch_size = int(batch_size)
        self.shuffle = shuffle
        self.data_size = len(dataset)
        self.max_iter = math.ceil(self.data_size / self.batch_size)
        self.gpu = False
        self._rng = None if seed is None else np.random.default_rng(seed)
        if gpu:
            self.to_gpu()
        self.reset()

    def reset(self):
        """Start a new epoch: iteration 0, and a fresh order when shuffling."""
        self.iteration = 0
        if not self.shuffle:
            self.index = np.arange(self.data_size)
        elif self._rng is None:
            self.index = np.random.permutation(self.data_size)
        else:
            self.index = self._rng.permutation(self.data_size)

    def __len__(self):
        return self.max_iter

    def __iter__(self):
        # a `for` loop over the loader is one epoch; resetting here lets the
        # same loader be used in the next epoch's loop
        if self.iteration != 0:
            self.reset()
        return self

    def __next__(self):
        if self.iteration >= self.max_iter:
            self.reset()
            raise StopIteration
        batch = self._collate(self._batch_index())
        self.iteration += 1
        return batch

    def _batch_index(self):
        """Which examples make up the current batch."""
        i, size = self.iteration, self.batch_size
        return self.index[i * size:(i + 1) * size]

    def _collate(self, batch_index):
        """Stack the examples at ``batch_index`` into arrays ``(x, t)`` on the loader's device."""
        examples = [self.dataset[int(j)] for j in batch_index]
        x = np.stack([np.asarray(ex[0]) for ex in examples])
        labels = [ex[1] for ex in examples]
        t = None if labels[0] is None else np.stack([np.asarray(lb) for lb in labels])
        if self.gpu:
            x = cuda.as_cupy(x)
            t = None if t is None else cuda.as_cupy(t)
        return x, t

    def next(self):
        """The next batch (the book's spelling of ``next(loader)``)."""
        return self.__next__()

    def to_cpu(self):
        """Return NumPy batches from now on."""
        self.gpu = False
        return self

    def to_gpu(self):
        """Return CuPy batches from now on; a clear error when no GPU can be used."""
        cuda.require_gpu()
        self.gpu = True
        return self

    def __repr__(self):
        return (f"DataLoader({self.dataset!r}, batch_size={self.batch_size}, "
                f"shuffle={self.shuffle}, batches={self.max_iter})")
