"""DataLoader: mini-batches, shuffling per epoch, the last partial batch."""

from __future__ import annotations

import numpy as np
import pytest

from dezero_like import DataLoader, cuda
from dezero_like.datasets import Dataset, Spiral


class Range(Dataset):
    """x_i = [i, -i] as float32, t_i = i: batches show which examples they hold."""

    def __init__(self, n, **kwargs):
        self.n = n
        super().__init__(**kwargs)

    def prepare(self):
        i = np.arange(self.n)
        self.data = np.stack([i, -i], axis=1).astype(np.float32)
        self.label = i


class NoLabels(Dataset):
    def prepare(self):
        self.data = np.arange(6.0)


def _epoch(loader):
    return [(x.copy(), t.copy()) for x, t in loader]


def test_batches_in_order_without_shuffle_and_last_batch_kept():
    loader = DataLoader(Range(10), batch_size=4, shuffle=False)
    batches = _epoch(loader)
    assert len(loader) == 3 and len(batches) == 3
    assert [t.tolist() for _, t in batches] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    x, _ = batches[0]
    assert x.shape == (4, 2) and x.dtype == np.float32
    np.testing.assert_array_equal(x[:, 1], -np.arange(4))


def test_each_epoch_uses_every_example_once_in_a_new_order():
    loader = DataLoader(Range(23), batch_size=5, seed=0)
    orders = []
    for _ in range(3):
        labels = np.concatenate([t for _, t in loader])
        assert sorted(labels.tolist()) == list(range(23))
        orders.append(labels.tolist())
    assert orders[0] != orders[1] != orders[2]


def test_same_seed_same_batches():
    a = DataLoader(Range(20), batch_size=6, seed=3)
    b = DataLoader(Range(20), batch_size=6, seed=3)
    reference = np.random.default_rng(3)  # the loader's own generator, drawn independently
    for _ in range(2):
        expected = reference.permutation(20)
        got = []
        for (xa, ta), (xb, tb) in zip(a, b, strict=True):
            np.testing.assert_array_equal(xa, xb)
            np.testing.assert_array_equal(ta, tb)
            got += ta.tolist()
        assert got == expected.tolist()  # one permutation per epoch, from seed 3
    other = np.concatenate([t for _, t in DataLoader(Range(20), batch_size=6, seed=4)])
    assert other.tolist() != np.random.default_rng(3).permutation(20).tolist()


def test_shuffle_follows_numpy_global_seed_like_the_book():
    np.random.seed(0)
    first = np.concatenate([t for _, t in DataLoader(Range(12), batch_size=5)]).tolist()
    assert first == np.random.RandomState(0).permutation(12).tolist()  # np.random's order
    np.random.seed(1)
    again = np.concatenate([t for _, t in DataLoader(Range(12), batch_size=5)]).tolist()
    assert again == np.random.RandomState(1).permutation(12).tolist() and again != first


def test_next_and_reset_and_break_mid_epoch():
    loader = DataLoader(Range(10), batch_size=3, shuffle=False)
    x, t = loader.next()
    assert t.tolist() == [0, 1, 2]
    assert next(loader)[1].tolist() == [3, 4, 5]
    # a new `for` loop after a partial epoch starts again from the beginning
    assert [t.tolist() for _, t in loader][0] == [0, 1, 2]
    for _batch in loader:
        break
    assert len(list(loader)) == 4
    with pytest.raises(StopIteration):
        loader.iteration = loader.max_iter
        next(loader)
    assert loader.iteration == 0  # reset after StopIteration


def test_transforms_are_applied_per_example():
    loader = DataLoader(Range(4, transform=lambda x: x * 2, target_transform=lambda t: t + 100),
                        batch_size=4, shuffle=False)
    x, t = next(iter(loader))
    np.testing.assert_array_equal(x[:, 0], [0, 2, 4, 6])
    assert t.tolist() == [100, 101, 102, 103]


def test_unlabelled_data_gives_none():
    x, t = next(iter(DataLoader(NoLabels(), batch_size=4, shuffle=False)))
    assert t is None and x.tolist() == [0, 1, 2, 3]


def test_spiral_batches():
    loader = DataLoader(Spiral(), batch_size=30)
    x, t = next(iter(loader))
    assert x.shape == (30, 2) and t.shape == (30,) and t.dtype == np.int64
    assert len(loader) == 10


def test_bad_arguments():
    with pytest.raises(ValueError, match="positive int"):
        DataLoader(Range(3), batch_size=0)
    with pytest.raises(ValueError, match="positive int"):
        DataLoader(Range(3), batch_size=2.5)
    with pytest.raises(ValueError, match="empty dataset"):
        DataLoader(Range(0), batch_size=2)


@pytest.mark.skipif(cuda.gpu_available(), reason="checks the CPU-only error message")
def test_to_gpu_without_gpu_is_a_clear_error():
    loader = DataLoader(Range(4), batch_size=2)
    with pytest.raises(RuntimeError, match="CuPy"):
        loader.to_gpu()
    assert loader.gpu is False
    assert loader.to_cpu() is loader


@pytest.mark.gpu
@pytest.mark.skipif(not cuda.gpu_available(), reason="needs CuPy and a CUDA GPU")
def test_to_gpu_gives_cupy_batches_with_the_same_values():
    import cupy

    cpu = DataLoader(Range(10), batch_size=4, shuffle=False)
    gpu = DataLoader(Range(10), batch_size=4, shuffle=False, gpu=True)
    for (xc, tc), (xg, tg) in zip(cpu, gpu):
        assert isinstance(xg, cupy.ndarray) and isinstance(tg, cupy.ndarray)
        np.testing.assert_array_equal(xc, cupy.asnumpy(xg))
        np.testing.assert_array_equal(tc, cupy.asnumpy(tg))
    gpu.to_cpu()
    x, _ = next(iter(gpu))
    assert isinstance(x, np.ndarray)


def test_a_bare_array_is_refused_instead_of_split_into_x_and_t():
    data = np.arange(10.0).reshape(5, 2)
    with pytest.raises(TypeError, match=r"\(x, t\) pairs.*ndarray"):
        next(iter(DataLoader(data, 2)))
    x, t = next(iter(DataLoader(list(zip(data, np.arange(5))), 2, shuffle=False)))
    assert x.shape == (2, 2) and t.tolist() == [0, 1]


def test_loader_arguments_are_checked_when_it_is_made():
    for bad in ("no", 1, 0.0):
        with pytest.raises(TypeError, match="shuffle must be None, True or False"):
            DataLoader(Range(3), 2, shuffle=bad)
    with pytest.raises(TypeError, match="gpu must be True or False"):
        DataLoader(Range(3), 2, gpu="no")
    for bad in (1.5, -1, True, "3", b"ab", object(), [1, -2], []):
        with pytest.raises(TypeError, match=r"seed must be None, an int >= 0"):
            DataLoader(Range(3), 2, seed=bad)
    assert DataLoader(Range(3), 2, shuffle=np.bool_(True), seed=np.int64(4)).shuffle is True
    for good in (np.random.default_rng(0), np.random.SeedSequence(1), [1, 2]):  # default_rng's
        assert len(list(DataLoader(Range(5), 2, seed=good))) == 3
    # without shuffling a seed has nothing to do: the order is 0, 1, 2, ... (documented)
    loader = DataLoader(Range(5), 2, shuffle=False, seed=3)
    assert [t.tolist() for _, t in loader] == [[0, 1], [2, 3], [4]]


@pytest.mark.parametrize("what, kwargs, kind", [
    ("input", dict(transform=lambda x: "abc"), "str"),
    ("input", dict(transform=lambda x: b"abc"), "bytes"),
    ("input", dict(transform=lambda x: np.datetime64("2020-01-01")), "datetime64"),
    ("label", dict(target_transform=str), "str"),
])
def test_values_that_are_not_numbers_are_refused(what, kwargs, kind):
    loader = DataLoader(Range(4, **kwargs), 2, shuffle=False)
    transform = "transform" if what == "input" else "target_transform"
    with pytest.raises(TypeError, match=rf"{what}s do not stack into a numeric array \(Range\[0\] "
                                        rf"is a {kind}, .*its {transform} must return"):
        next(iter(loader))


def test_bool_and_complex_values_are_numbers():
    x, t = next(iter(DataLoader(Range(4, transform=lambda x: x.astype(complex),
                                      target_transform=lambda t: t == 1), 4, shuffle=False)))
    assert x.dtype == np.complex128 and t.tolist() == [False, True, False, False]


def test_examples_of_different_shapes_are_named():
    ragged = Range(4, transform=lambda x: np.zeros(2 + int(x[0]) % 2))
    with pytest.raises(ValueError, match=r"inputs of Range have different shapes: Range\[0\] has "
                                         r"\(2,\), Range\[1\] has \(3,\).*its transform\)"):
        next(iter(DataLoader(ragged, 4, shuffle=False)))
    nested = Range(4, target_transform=lambda t: [[1, 2], [3]])
    with pytest.raises(ValueError, match=r"label of Range\[0\] is not an array of one shape"):
        next(iter(DataLoader(nested, 4, shuffle=False)))
