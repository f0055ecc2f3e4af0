"""Sixth sweep of learner mistakes, in the tools around training (debug mode, hooks, plots,
weight files): each case gave a misleading message or a silent wrong result before, and now
says what happened and what to do."""

import io
import sys
import types
import warnings

import numpy as np
import pytest

import dezero_like as dz
import dezero_like.functions as F
import dezero_like.layers as L
import dezero_like.optimizers as O
from dezero_like import plot
from dezero_like.hooks import DebugError, PrintHook, TimerHook

# --------------------------------------------------------------------------- A: Jupyter cells


def _run_as_cell(source, filename, namespace):
    exec(compile(source, filename, "exec"), namespace)


CELL = """
x = dz.Variable(np.array([1.0, 0.0]))
with dz.debug_mode(), np.errstate(divide="ignore"):
    F.log(x)
"""


def test_debug_mode_names_a_notebook_cell_as_ipython_does(monkeypatch):
    """A cell's code is compiled under a temporary file name; IPython's compiler maps it."""
    cell_file = "/tmp/ipykernel_4242/2179349065.py"

    class Compiler:
        def format_code_name(self, name):
            return ("Cell", "In[7]") if name == cell_file else None

    shell = types.SimpleNamespace(compile=Compiler())
    fake = types.ModuleType("IPython")
    fake.get_ipython = lambda: shell
    monkeypatch.setitem(sys.modules, "IPython", fake)
    with pytest.raises(DebugError) as info:
        _run_as_cell(CELL, cell_file, {"dz": dz, "np": np, "F": F})
    msg = str(info.value)
    assert "called at Cell In[7], line 4;" in msg
    assert "2179349065" not in msg
    # code in a file, not a cell (the compiler does not know it): file:line as before
    with pytest.raises(DebugError, match=r"called at learner_script\.py:4;"):
        _run_as_cell(CELL, "/home/me/learner_script.py", {"dz": dz, "np": np, "F": F})
    for shell in [None, types.SimpleNamespace()]:  # no shell running; a shell without .compile
        fake.get_ipython = lambda shell=shell: shell
        with pytest.raises(DebugError, match=r"called at 2179349065\.py:4;"):
            _run_as_cell(CELL, cell_file, {"dz": dz, "np": np, "F": F})


def test_debug_mode_in_a_real_ipython_shell_says_cell_in(tmp_path, monkeypatch):
    pytest.importorskip("IPython", reason="IPython is not installed")
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    if InteractiveShell.initialized():
        pytest.skip("an IPython shell is already running in this process")
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))
    config = Config()
    config.HistoryManager.enabled = False
    shell = InteractiveShell.instance(config=config)
    try:
        shell.run_cell("import numpy as np, dezero_like as dz, dezero_like.functions as F",
                       store_history=True)
        count = shell.execution_count
        shell.run_cell("x = dz.Variable(np.array([0.0]))\n"
                       "try:\n"
                       "    with dz.debug_mode(), np.errstate(divide='ignore'):\n"
                       "        F.log(x)\n"
                       "except Exception as e:\n"
                       "    msg = str(e)\n", store_history=True)
        msg = shell.user_ns["msg"]
    finally:
        InteractiveShell.clear_instance()
    assert f"called at Cell In[{count}], line 4;" in msg, msg


# --------------------------------------------------------------------------- B: updates


def test_debug_mode_suspects_the_update_when_a_parameter_went_bad():
    np.random.seed(0)
    model = L.Linear(1, in_size=2)
    x = np.array([[3.0, 4.0]])
    optimizer = O.SGD(lr=1e308).setup(model)  # the update overflows W and b to -inf
    with pytest.raises(DebugError) as info, np.errstate(over="ignore", invalid="ignore"):
        with dz.debug_mode():
            for _ in range(2):
                loss = F.sum(model(x))
                model.cleargrads()
                loss.backward()
                optimizer.update()
    msg = str(info.value)
    assert msg.startswith("forward of Linear produced")
    assert "input 1 (the Parameter 'W') and input 2 (the Parameter 'b')" in msg
    assert "an optimizer update (a learning rate too large?) may have made them so" in msg
    assert "not checked by debug_mode" in msg
    assert "in the data" not in msg  # input 0, the data, is finite


def test_debug_mode_names_an_unnamed_parameter_and_still_suspects_the_data():
    w = dz.Parameter(np.array([np.inf, 1.0]))
    x = dz.Variable(np.array([1.0, np.nan]))
    with pytest.raises(DebugError) as info, np.errstate(invalid="ignore"):
        with dz.debug_mode():
            w * x
    msg = str(info.value)
    assert "input 0 (a Parameter): an optimizer update" in msg
    assert "may have made it so" in msg
    assert "the other bad inputs started earlier (in the data" in msg
    # no bad Parameter: the data is blamed as before
    w = dz.Parameter(np.array([1.0, 2.0]), name="w")
    with pytest.raises(DebugError) as info:
        with dz.debug_mode():
            F.exp(x * w)
    msg = str(info.value)
    assert "the problem started earlier (in the data" in msg
    assert "Parameter" not in msg


# --------------------------------------------------------------------------- C: plot_curves


def test_plot_curves_given_a_list_says_it_takes_a_dict():
    with pytest.raises(TypeError, match=r"takes a dict .*got list; e\.g\. plot_curves\("
                                        r"\{'loss': losses\}\)"):
        plot.plot_curves([1.0, 0.5])


def test_plot_curves_refuses_an_empty_curve_by_name():
    with pytest.raises(ValueError, match=r"curve 'loss' is empty"):
        plot.plot_curves({"loss": []})
    with pytest.raises(ValueError, match=r"curve 'accuracy/test' is empty"):
        plot.plot_curves({"accuracy": {"train": [0.5, 0.7], "test": []}})


def test_plot_curves_warns_where_training_diverged():
    losses = [2.0, 1.0, np.inf, np.nan, np.nan]
    with pytest.warns(UserWarning, match=r"curve 'loss' is NaN or inf from point 3 on "
                                         r"\(training diverged at point 3\?\)") as record:
        plot.plot_curves({"loss": losses})
    assert record[0].filename == __file__  # the warning points at the learner's call
    with pytest.warns(UserWarning, match=r"from point 1 on .*nothing is drawn"):
        plot.plot_curves({"loss": [np.nan] * 4})
    with warnings.catch_warnings():  # finite curves: no warning
        warnings.simplefilter("error")
        plot.plot_curves({"loss": [3.0, 2.0, 1.0]})


def test_plot_curves_warns_about_a_nan_in_the_middle():
    with pytest.warns(UserWarning, match=r"curve 'loss/SGD' has 2 NaN/inf values, the first at "
                                         r"point 2 \(nan\)"):
        plot.plot_curves({"loss": {"SGD": [3.0, np.nan, 2.0, np.inf, 1.0], "Adam": [1.0, 0.5]}})


def test_save_figure_names_the_file_it_really_writes(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    plot.plot_curves({"loss": [3.0, 2.0]}, to_file="curves")
    assert (tmp_path / "curves.png").read_bytes().startswith(b"\x89PNG")
    assert not (tmp_path / "curves").exists()
    assert f"wrote {tmp_path.resolve() / 'curves.png'}" in capsys.readouterr().out
    import matplotlib.pyplot as plt

    fig = plt.figure()
    assert plot.save_figure(fig, tmp_path / "fig") == (tmp_path / "fig.png").resolve()
    plt.close(fig)


def test_save_figure_expands_the_home_folder(tmp_path, capsys, monkeypatch):
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(work)
    plot.plot_curves({"loss": [3.0, 2.0]}, to_file="~/loss.png")
    assert (home / "loss.png").is_file()
    assert not (work / "~").exists()


# --------------------------------------------------------------------------- D: hooks' file


def test_a_file_name_instead_of_an_open_file_is_refused_at_once(tmp_path, capsys):
    advice = r"pass an open file \(what open\(path, 'w'\) returns\), or None for the screen"
    name = str(tmp_path / "log.txt")
    with pytest.raises(TypeError, match=r"PrintHook: file must be an open file.*" + advice):
        PrintHook(file=name)
    with pytest.raises(TypeError, match=r"print_report: file must be an open file.*" + advice):
        TimerHook().print_report(file=name)
    buf = io.StringIO()  # open files and None are accepted as before
    x = dz.Variable(np.ones(2))
    with TimerHook() as timer, PrintHook(file=buf):
        F.sum(F.exp(x))
    assert "forward  Exp" in buf.getvalue()
    timer.print_report(file=buf)
    timer.print_report()
    assert "function" in capsys.readouterr().out


# --------------------------------------------------------------------------- E: weight files


def _model():
    np.random.seed(0)
    return L.Linear(2, in_size=3)


def test_load_weights_names_the_file_saved_without_npz(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _model().save_weights("w")  # writes exactly "w"
    with pytest.raises(FileNotFoundError, match=r"no file w\.npz, but there is w: "
                                                r"load_weights\('w'\)"):
        _model().load_weights("w.npz")
    with pytest.raises(FileNotFoundError, match="No such file"):  # neither exists: as before
        _model().load_weights(tmp_path / "nothing.npz")


def test_load_weights_names_the_file_saved_with_npz(tmp_path):
    _model().save_weights(tmp_path / "v.npz")
    with pytest.raises(FileNotFoundError, match=r"but there is .*v\.npz: load_weights\("):
        _model().load_weights(tmp_path / "v")


def test_save_and_load_weights_expand_the_home_folder(tmp_path, monkeypatch):
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(work)
    model = _model()
    model.save_weights("~/w.npz")
    assert (home / "w.npz").is_file()
    assert not (work / "~").exists()
    other = L.Linear(2, in_size=3)
    other.load_weights("~/w.npz")
    np.testing.assert_array_equal(other.W.data, model.W.data)
