"""dezero_like.plot: the output folder of a step, training curves, paths on a surface."""

import subprocess
import sys
import types

import numpy as np
import pytest

from dezero_like import plot


def test_output_dir_is_absolute_per_step_and_created(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    folder = plot.output_dir(7)
    assert folder == (tmp_path / "outputs" / "step07").resolve()
    assert folder.is_dir() and folder.is_absolute()
    assert plot.output_dir(7) == folder  # a second call reuses it


def test_output_dir_falls_back_to_the_home_folder_where_the_current_one_cannot_hold_it(
        tmp_path, monkeypatch, capsys):
    """A step run from a folder it cannot write into (read-only, or where 'outputs' is a
    file) still runs: its files go under ~/.dezero_like/outputs, and it says so."""
    here, home = tmp_path / "here", tmp_path / "home"
    here.mkdir()
    (here / "outputs").write_text("not a folder")
    monkeypatch.chdir(here)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("USERPROFILE", str(home))  # Path.home() on Windows
    folder = plot.output_dir(7)
    assert folder == (home / ".dezero_like" / "outputs" / "step07").resolve() and folder.is_dir()
    said = capsys.readouterr().out
    assert said.startswith("note: ") and str(folder) in said
    assert (here / "outputs").read_text() == "not a folder"
    assert plot.output_dir(7) == folder and capsys.readouterr().out == ""  # said once
    (home / ".dezero_like").rename(home / "moved")
    (home / ".dezero_like").write_text("not a folder either")  # the home folder cannot either
    monkeypatch.setattr(plot.tempfile, "tempdir", str(tmp_path / "tmp"))
    assert plot.output_dir(8) == (tmp_path / "tmp" / "dezero_like" / "outputs" / "step08").resolve()


@pytest.mark.parametrize("bad", [0, 100, "07", 7.0, True])
def test_output_dir_rejects_what_is_not_a_step_number(bad):
    with pytest.raises(ValueError, match="step number"):
        plot.output_dir(bad)


def test_plot_curves_draws_one_panel_per_quantity_and_saves(tmp_path, capsys):
    fig = plot.plot_curves(
        {"loss": [3.0, 2.0, 1.5], "accuracy": {"train": [0.5, 0.7, 0.8], "test": [0.4, 0.6, 0.7]}},
        to_file=tmp_path / "curves.png",
    )
    loss_ax, acc_ax = fig.axes
    assert loss_ax.get_ylabel() == "loss" and acc_ax.get_ylabel() == "accuracy"
    assert len(acc_ax.lines) == 2
    np.testing.assert_array_equal(loss_ax.lines[0].get_xdata(), [1, 2, 3])
    np.testing.assert_array_equal(loss_ax.lines[0].get_ydata(), [3.0, 2.0, 1.5])
    png = tmp_path / "curves.png"
    assert png.read_bytes().startswith(b"\x89PNG")
    assert f"wrote {png.resolve()}" in capsys.readouterr().out


def test_plot_curves_rejects_empty_and_nested_input():
    with pytest.raises(ValueError, match="at least one curve"):
        plot.plot_curves({})
    with pytest.raises(ValueError, match="1-D sequence"):
        plot.plot_curves({"loss": [[1.0, 2.0]]})


def test_plot_paths_draws_each_path_over_the_contours(tmp_path):
    paths = {"a": [(1.0, 1.0), (0.5, 0.2), (0.0, 0.0)], "b": np.zeros((4, 2))}
    fig = plot.plot_paths(lambda u, v: u**2 + v**2, paths, xlim=(-1, 1), ylim=(-1, 1),
                          to_file=tmp_path / "paths.svg")
    (ax,) = fig.axes
    np.testing.assert_array_equal(ax.lines[0].get_ydata(), [1.0, 0.2, 0.0])
    assert len(ax.lines) == 2
    assert "<svg" in (tmp_path / "paths.svg").read_text()
    with pytest.raises(ValueError, match=r"\(x, y\) points"):
        plot.plot_paths(lambda u, v: u + v, {"bad": [1.0, 2.0]}, xlim=(0, 1), ylim=(0, 1))


def test_written_prints_both_full_paths_and_returns_the_image(tmp_path, capsys):
    image = types.SimpleNamespace(path=tmp_path / "g.png", dot_path=tmp_path / "g.dot")
    assert plot.written(image) is image
    out = capsys.readouterr().out
    assert str(tmp_path / "g.png") in out and str(tmp_path / "g.dot") in out


def test_importing_the_package_does_not_import_matplotlib():
    code = "import sys, dezero_like, dezero_like.plot; print('matplotlib' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True)
    assert result.stdout.strip() == "False"


def test_draw_cells_numbers_each_cell_in_its_colour_and_refuses_more_than_two_axes():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    colours = np.array([["red", "blue", "red"], ["blue", "red", "blue"]])
    plot.draw_cells(ax, np.arange(6.0).reshape(2, 3), 1, 5, "x (2, 3)", colours)
    cells = ax.patches
    assert len(cells) == 6
    assert cells[1].get_xy() == (2, 4) and cells[3].get_xy() == (1, 3)  # row 1 one unit lower
    assert matplotlib.colors.to_hex(cells[1].get_facecolor()) == "#0000ff"
    assert [t.get_text() for t in ax.texts] == ["0", "1", "2", "3", "4", "5", "x (2, 3)"]
    plot.draw_cells(ax, [7.5, 8.0], 0, 0, "y (2,)")  # a 1-D array is one row, one colour
    assert len(ax.patches) == 8 and ax.texts[-3].get_text() == "7.5"
    with pytest.raises(ValueError, match="one or two axes"):
        plot.draw_cells(ax, np.zeros((2, 2, 2)), 0, 0, "cube")
    plt.close(fig)


def test_draw_arrow_points_from_start_to_end_with_its_label_above_the_middle():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    plot.draw_arrow(ax, (1, 2), (5, 4), "sum", lift=0.5)
    arrow, label = ax.texts
    assert arrow.xy == (5, 4) and arrow.xyann == (1, 2)  # the head at the end
    assert label.get_text() == "sum" and label.get_position() == (3, 3.5)
    plt.close(fig)


def test_save_figure_warns_when_one_figure_is_saved_under_a_second_name(tmp_path):
    """A script keeps its last figure open: a step that plots its next picture without a new
    figure draws it into the old one and saves both pictures as one (steps 56, 61, 62 and 67
    did). The second save of one figure under another name says so; pyproject.toml makes that
    an error in the tests, so every step run by the suite is checked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    plot.save_figure(fig, tmp_path / "loss.png")
    plot.save_figure(fig, tmp_path / "loss.svg")  # the same picture in another format: quiet
    ax.plot([0, 1], [0, 1])
    with pytest.warns(UserWarning, match="saved before as loss.svg.*plt.subplots"):
        plot.save_figure(fig, tmp_path / "prediction.png")
    fig2, ax2 = plt.subplots()  # a new picture: quiet
    ax2.plot([0, 1], [0, 1])
    plot.save_figure(fig2, tmp_path / "prediction2.png")
    plt.close("all")
