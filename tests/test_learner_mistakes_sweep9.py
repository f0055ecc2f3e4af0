"""Ninth sweep: learner mistakes in the data-parallel helpers (step 72) and dropout (step 56) that
gave a wrong result without a word, or an error that did not say what was wrong.

* ``comm.allreduce_mean(a)`` with one array averaged its rows as separate arrays and gave a list;
* ``comm.allreduce_mean([1.5])`` said "'float' object has no attribute 'dtype'";
* the mean of integer arrays failed in NumPy's in-place division (a UFuncTypeError);
* processes passing arrays of other shapes but as many elements were added element by element,
  silently; with other sizes MPI failed with "Message truncated" and no word about the arrays;
* ``comm.allreduce_grads(model)`` said "'MLP' object is not iterable", ``bcast_params`` given
  the parameters "'list' object has no attribute '_flatten_params'";
* ``DistributedDataLoader(data, n, None)`` and ``AllreduceGrads(MPI.COMM_WORLD)`` failed with
  an AttributeError (at the first update, for the hook);
* ``F.dropout(x, "0.5")`` (a value read from a command line) said "'<=' not supported".
"""

import numpy as np
import pytest

import dezero_like.functions as F
from dezero_like import distributed as D
from dezero_like import models
from dezero_like.datasets import Spiral

needs_mpi4py = pytest.mark.skipif(not D.mpi_available(), reason="mpi4py is not installed")


class _TwoProcesses:
    """An mpi4py communicator of two processes seen from rank 0, in one process.

    The other process passes arrays of the layout ``other`` (default: the same as ours) whose
    values are ours plus one; ``fail`` makes Allreduce raise what MPI raises for a size mismatch.
    """

    def __init__(self, other=None, fail=False):
        self.other, self.fail, self.allgathers = other, fail, 0

    def Get_rank(self):
        return 0

    def Get_size(self):
        return 2

    def allgather(self, obj):
        self.allgathers += 1
        return [obj, obj if self.other is None else self.other]

    def Allreduce(self, send, recv, op):
        if self.fail:
            from mpi4py import MPI
            raise MPI.Exception(MPI.ERR_TRUNCATE)
        recv[...] = send + send + 1


def _comm(**kw):
    return D.Communicator(_TwoProcesses(**kw))


# ---- allreduce_mean: a list of arrays, the same on every process -----------------------------

@needs_mpi4py
def test_one_array_given_to_allreduce_mean_is_refused_not_split_into_rows():
    comm = _comm()
    with pytest.raises(TypeError, match=r"takes a list of arrays, got one ndarray of shape "
                                        r"\(2, 3\).*allreduce_mean\(\[a\]\)\[0\]"):
        comm.allreduce_mean(np.ones((2, 3)))
    (mean,) = comm.allreduce_mean([np.ones((2, 3))])  # the list form
    assert mean.shape == (2, 3) and np.all(mean == 1.5)


@needs_mpi4py
def test_a_number_given_to_allreduce_mean_says_to_make_it_an_array():
    with pytest.raises(TypeError, match=r"got float 1\.5 at position 1; .*np\.asarray\(value\) "
                                        r"\(a loss: loss\.data\)"):
        _comm().allreduce_mean([np.zeros(2), 1.5])


@needs_mpi4py
def test_the_mean_of_integer_arrays_is_a_float_mean():
    a, flags = np.array([1, 2, 3]), np.array([True, False])
    mean_a, mean_flags, mean_f32 = _comm().allreduce_mean([a, flags, np.ones(2, np.float32)])
    assert mean_a.dtype == np.float64 and mean_a.tolist() == [1.5, 2.5, 3.5]
    assert mean_flags.dtype == np.float64 and mean_flags.tolist() == [1.5, 0.5]
    assert mean_f32.dtype == np.float32  # floats keep their dtype


@needs_mpi4py
@pytest.mark.parametrize("other, where", [
    ([("float64", (3, 2))], r"array 0 is float64 \(2, 3\) on rank 0 but float64 \(3, 2\) on "
                            r"rank 1"),
    ([("float32", (2, 3))], r"array 0 is float64 \(2, 3\) on rank 0 but float32 \(2, 3\)"),
    ([], r"rank 0 passed 1 arrays, rank 1 passed 0"),
])
def test_processes_passing_other_arrays_are_stopped_before_they_are_added(other, where):
    with pytest.raises(ValueError, match=where + r".*same shapes and dtypes, in the same order"):
        _comm(other=other).allreduce_mean([np.ones((2, 3))])


@needs_mpi4py
def test_the_layouts_are_compared_once_not_on_every_step():
    world = _TwoProcesses()
    comm = D.Communicator(world)
    for _ in range(3):
        comm.allreduce_mean([np.ones(2), np.ones(3, np.float32)])
    assert world.allgathers == 1


@needs_mpi4py
def test_a_failed_allreduce_names_what_this_process_sent():
    with pytest.raises(RuntimeError, match=r"Allreduce failed on rank 0 .*sent 6 float64 values, "
                                           r"from arrays of shapes \[\(2, 3\)\]"):
        _comm(fail=True).allreduce_mean([np.ones((2, 3))])


# ---- which helper takes the model, which the parameters ---------------------------------------

@needs_mpi4py
def test_allreduce_grads_given_the_model_and_bcast_params_given_parameters_say_which_takes_what():
    model, comm = models.MLP((2,)), _comm()
    with pytest.raises(TypeError, match=r"got the MLP itself; .*"
                                        r"allreduce_grads\(model\.params\(\)"):
        comm.allreduce_grads(model)
    with pytest.raises(TypeError, match=r"takes the model \(a Layer\), got list; .*"
                                        r"bcast_params\(model\)"):
        comm.bcast_params(list(model.params()))


def test_the_hook_and_the_loader_need_the_communicator():
    with pytest.raises(TypeError, match=r"AllreduceGrads needs a dezero_like Communicator, got "
                                        r"NoneType; .*Communicator\(MPI\.COMM_WORLD\)"):
        D.AllreduceGrads(None)
    with pytest.raises(TypeError, match=r"needs the communicator, got None; .*Use "
                                        r"DataLoader\(dataset, batch_size, shuffle=True\)"):
        D.DistributedDataLoader(Spiral(), 10, None)


def test_anything_with_an_integer_rank_and_size_still_drives_the_loader():
    class World:
        rank, size = 1, 2

    loader = D.DistributedDataLoader(Spiral(), 10, World(), seed=0)
    assert len(loader._batch_index()) == 5


# ---- dropout ------------------------------------------------------------------------------------

@pytest.mark.parametrize("ratio, fix", [("0.5", r"'0\.5' \(str\); a value read from a command "
                                                r"line .*float\(value\)"),
                                        (None, r"None \(NoneType\); pass a float")])
def test_a_dropout_ratio_that_is_not_a_number_says_what_to_pass(ratio, fix):
    with pytest.raises(TypeError, match=r"dropout_ratio must be a number in \[0, 1\], got " + fix):
        F.dropout(np.ones(3), ratio)


def test_a_dropout_ratio_as_a_numpy_number_still_drops():
    np.random.seed(0)
    y = F.dropout(np.ones(1000), np.array(0.5))
    assert set(np.unique(y.data)) == {0.0, 2.0}
