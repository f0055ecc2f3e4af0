"""The benchmark scripts run, print their command and machine, and compute what they claim.

Timings are never asserted: only that each script works and that its arithmetic
(per-step counts, ratios) is right.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import dezero_like
import dezero_like.functions as F

ROOT = Path(__file__).resolve().parent.parent


def run_script(*args, timeout=600):
    proc = subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def test_instruction_counts_are_parsed_and_divided_per_step(load_benchmark):
    bench = load_benchmark("instructions")
    summary = "==12== \n==12== I   refs:      509,052,232\n"
    assert bench.parse_total(summary) == 509_052_232
    assert bench.per_step(1_000_000, 61_000_000, 2, 8) == pytest.approx(10_000)
    with pytest.raises(RuntimeError, match="exit 1"):
        bench.parse_total("Traceback ...\nImportError: no module", returncode=1)
    with pytest.raises(RuntimeError, match="counted run failed"):
        bench.parse_total("no summary here")


def test_chain_runs_the_same_chains_as_overhead_py(load_benchmark):
    bench = load_benchmark("instructions")
    for chain in ("sin", "affine"):
        expected = bench.run_chain("numpy", chain, 1)  # the chain's gradient by hand
        got = bench.run_chain("dezero_like", chain, 1)
        np.testing.assert_allclose(getattr(got, "data", got), expected, rtol=1e-12)
    # the two chains differ, so a swapped chain would fail above
    sin, affine = bench.run_chain("numpy", "sin", 1), bench.run_chain("numpy", "affine", 1)
    assert not np.allclose(sin, affine)


def test_training_chains_train_the_models_of_mnist_gpu(load_benchmark):
    bench = load_benchmark("instructions")
    assert bench.per_step(1_000_000, 5_000_000, 1, 3, steps=100) == pytest.approx(20_000)
    for chain in bench.TRAINING:
        first = float(bench.run_training(chain, 1).data)
        assert 1.5 < first < 3.5, (chain, first)  # about log(10): ten classes, untrained
        # the steps really train: on its two examples the model's loss falls
        assert float(bench.run_chain("dezero_like", chain, 1).data) < first / 3, chain


def test_counted_children_read_their_bytecode_from_one_fresh_folder(load_benchmark, tmp_path,
                                                                    monkeypatch):
    """Whether a checkout holds ``__pycache__`` folders (PYTHONDONTWRITEBYTECODE, a fresh
    worktree) moved instructions.py's count per sin step by 0.8%: a process that compiles its
    modules lays its objects out otherwise. The counted children read every module's bytecode
    from one folder that a run of the chain without Valgrind has filled."""
    bench = load_benchmark("instructions")
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")  # as on a machine that writes none
    env = bench.child_env(str(tmp_path))
    assert env["PYTHONPYCACHEPREFIX"] == str(tmp_path) and env["PYTHONDONTWRITEBYTECODE"] == "1"
    assert env["OPENBLAS_NUM_THREADS"] == "1" and env["PYTHONHASHSEED"] == "0"
    bench.fill_pycache("dezero_like", "sin", str(tmp_path))
    package = Path(dezero_like.__file__).resolve().parent
    written = {p.name.split(".")[0] for p in tmp_path.rglob("*.pyc")
               if p.parent == tmp_path / package.relative_to(package.anchor)}
    assert {"core", "functions", "cuda"} <= written, sorted(written)
    assert "PYTHONPYCACHEPREFIX" not in bench.child_env()


@pytest.mark.skipif(shutil.which("valgrind") is None,
                    reason="valgrind is not installed (apt-get install valgrind)")
def test_instructions_benchmark_counts_a_real_run():
    out = run_script("benchmarks/instructions.py", "--chain", "sin", "--runs", "0", "1")
    assert out.startswith("command: ") and "machine: " in out
    rows = {line.split()[1]: float(line.split()[2].replace(",", ""))
            for line in out.splitlines() if line.startswith("sin ")}
    # NumPy's calls are part of every framework's step, so the framework costs more
    assert rows["dezero_like"] > rows["numpy"] > 1000


def test_overhead_chains_compute_numpys_gradient(load_benchmark):
    bench = load_benchmark("overhead")
    a = np.array([0.5])
    ours = bench.framework_sin(dezero_like, F)(a)
    np.testing.assert_allclose(ours.data, bench.numpy_sin(a))  # same math, same gradient
    np.testing.assert_allclose(bench.framework_affine(dezero_like)(a).data, bench.numpy_affine(a))


def test_hot_path_probe_times_every_case_on_the_finished_package(load_benchmark):
    hot_path = load_benchmark("hot_path")
    result = hot_path.measure(ROOT, repeat=1)
    assert set(result) == {
        "sin chain, 1 element (per step)", "affine chain, 1 element (per step)",
        "with no_grad(): F.sin(x) (per call)", "sin chain, 1000x1000 float32 (per step)",
    }
    assert all(t > 0 for t in result.values())


def test_mnist_gpu_columns_take_turns_and_ratios_are_per_round(load_benchmark):
    bench = load_benchmark("mnist_gpu")
    order = []

    def column(name):
        def run_epoch():
            order.append(name)
            return len(order)  # the "loss": which call this was
        return name, run_epoch, lambda: None

    results = bench.timed([column("dezero_like"), column("PyTorch eager")], 3)
    # one warm-up each, then one epoch of each column per round, in turn
    assert order == ["dezero_like", "PyTorch eager"] * 4
    assert [len(results[name][4]) for name in results] == [3, 3]
    assert results["PyTorch eager"][3] == 8  # the last epoch's loss is reported
    results = {"dezero_like": (0, 0, 0, 0, [2.0, 3.0]), "PyTorch eager": (0, 0, 0, 0, [1.0, 2.0])}
    assert bench.round_ratios(results, "PyTorch eager") == "2.00, 1.50"


def test_mnist_gpu_fused_column_refuses_labels_its_kernel_would_read_out_of_its_row(
        load_benchmark):
    """The hand-fused loss kernel indexes a row of logits with each label, unchecked, and
    reads the labels as 64-bit ints: the column checks them once, before building it."""
    bench = load_benchmark("mnist_gpu")
    x = np.zeros((4, 784), np.float32)
    for t, what in [(np.array([0, 1, 2, 10]), "from 0 to 10"),
                    (np.array([0, -1, 2, 3]), "from -1 to 3"),
                    (np.array([0, 1, 2, 3], np.int32), "int32")]:
        with pytest.raises(ValueError, match=f"int64 labels in \\[0, 10\\).*{what}"):
            bench.by_hand((784, 16, 10), x, t, np, fused=True)
    bench.by_hand((784, 16, 10), x, np.array([0, 1, 2, 9]), np, fused=False)  # unchecked


def test_mnist_gpu_benchmark_runs_the_small_cnn_on_the_cpu(monkeypatch):
    monkeypatch.setenv("DEZERO_LIKE_DATA", str(ROOT.parent / "shared" / "data"))
    if not (ROOT.parent / "shared" / "data" / "mnist").is_dir():
        pytest.skip("../shared/data/mnist is not beside the checkout")
    out = run_script("benchmarks/mnist_gpu.py", "--device", "cpu", "--epochs", "1",
                     "--skip-mlp")
    assert out.startswith("command: ") and "machine: " in out
    assert "small CNN" in out and "dezero_like" in out


@pytest.mark.skipif(shutil.which("g++") is None,
                    reason="needs g++ (12 or newer): the CuPy emulator compiles the CUDA kernels")
def test_launches_benchmark_prints_command_machine_and_a_row_per_column():
    out = run_script("benchmarks/launches.py", "--top", "2", "--calls")
    assert "command: python benchmarks/launches.py --top 2 --calls" in out
    assert "machine:" in out
    launches, calls = out.split("Python calls dezero_like makes")

    def rows(table):
        return [line.split("|")[1:-1] for line in table.splitlines()
                if line.startswith("| ") and "column" not in line and "---" not in line]

    assert [row[0].strip() for row in rows(launches)] == [
        "dezero_like", "by hand", "by hand, fused", "dezero_like, small CNN"]
    assert all(int(row[1]) > 0 for row in rows(launches))
    assert "dezero_like / by hand, fused:" in launches
    # --calls: the Python work of the dezero_like columns' step, the emulator's frames left out
    assert [row[0].strip() for row in rows(calls)] == ["dezero_like", "dezero_like, small CNN"]
    mlp, cnn = (int(row[1]) for row in rows(calls))
    assert 0 < mlp < cnn  # the CNN has more layers and functions
    for row in rows(calls):
        top = [item.rsplit(" ", 1) for item in row[2].strip().split(", ")]
        assert len(top) == 2 and all(int(n) > 0 for _, n in top), row
        assert all(":" in where for where, _ in top), row  # "core.py:Function.__call__"
    assert "cupy_on_cpu.py" not in calls


def test_batch_norm_benchmark_times_both_versions_on_checked_gradients():
    out = run_script("benchmarks/batch_norm.py", "--repeat", "1", "--shape", "6", "3", "4", "4")
    assert out.startswith("command: ") and "machine: " in out
    assert "batch_norm (one Function)" in out and "batch_norm_simple (composed)" in out
    assert "composed / one Function: " in out
