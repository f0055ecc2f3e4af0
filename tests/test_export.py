"""The package is written in the steps (tools/export.py): generated, complete, and in order.

* the committed modules are exactly what the steps' export cells generate;
* every public name of the framework's modules is written by some step (the registry);
* no step N >= 23 uses a name that a later step writes, and each step runs on the
  package as it stood at step N (``tools/export.py upto N``).
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "dezero_like"


def _tool():
    spec = importlib.util.spec_from_file_location("export_tool", ROOT / "tools" / "export.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["export_tool"] = module
    spec.loader.exec_module(module)
    return module


export = _tool()

# The course's own support code, not part of the framework a learner builds: it draws
# the pictures and animations of steps 04-21 (before the framework exists as a package)
# and formats one-paragraph errors. docs/package-from-steps.md says why it is exempt.
SUPPORT = {"dezero_like.plot", "dezero_like.animate", "dezero_like._fixable"}

def _modules():
    for path in sorted(PACKAGE.glob("*.py")):
        name = "dezero_like" if path.stem == "__init__" else f"dezero_like.{path.stem}"
        yield name, path


def _defined_public_names(path):
    tree = ast.parse(path.read_text())
    names = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.append(node.name)
        elif isinstance(node, ast.Assign):
            names += [t.id for t in node.targets if isinstance(t, ast.Name)]
    return [n for n in names if not n.startswith("_")]


def test_package_matches_the_steps():
    stale = export.stale()
    assert not stale, f"generated modules are stale: {stale}; run `python tools/export.py write`"


def test_every_framework_module_is_generated():
    """Only the course's support modules are written by hand; the framework comes from steps."""
    generated = {export._module_name(p) for p in export.generated()}
    hand_written = {name for name, _ in _modules()} - generated - SUPPORT
    assert not hand_written, "framework modules no step writes (move them into export cells): " \
        + ", ".join(sorted(hand_written))


def test_the_registry_names_the_step_that_first_writes_a_method():
    """A method written in a whole class's body counts at that step, not at the later step
    that rewrites it (Variable.cleargrad is step 23's; step 67 changes it)."""
    registry = export.registry()
    assert registry["dezero_like.core.Variable.cleargrad"] == 23
    assert registry["dezero_like.core.Function.get_retained_outputs"] == 23
    assert registry["dezero_like.core.Variable.to_gpu"] == 54  # added by a later step


def test_every_public_name_is_written_by_a_step():
    registry = export.registry()
    missing = []
    for name, path in _modules():
        if name in SUPPORT:
            continue
        for public in _defined_public_names(path):
            if public != "__all__" and f"{name}.{public}" not in registry:
                missing.append(f"{name}.{public}")
    assert not missing, "public names no step writes (add an export cell): " + ", ".join(missing)


# --------------------------------------------------------------------------- #
# Steps use only what earlier steps wrote
# --------------------------------------------------------------------------- #


def _step_numbers():
    return [export.step_number(p) for p in export.step_paths()]


def _package_references(source):
    """``{(module, name)}`` a step reads from the package (imports and ``alias.name``)."""
    tree = ast.parse(source)
    aliases, refs = {}, set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("dezero_like"):
                    aliases[a.asname or a.name] = a.name
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0 and \
                node.module.startswith("dezero_like"):
            for a in node.names:
                submodule = f"{node.module}.{a.name}"
                if importlib.util.find_spec(node.module) and (PACKAGE / f"{a.name}.py").exists() \
                        and node.module == "dezero_like":
                    aliases[a.asname or a.name] = submodule
                else:
                    refs.add((node.module, a.name))
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and \
                node.value.id in aliases:
            refs.add((aliases[node.value.id], node.attr))
    return refs


def _introduced(registry, module, name):
    """The step that writes ``module.name``; re-exports in ``__init__`` follow the import."""
    key = f"{module}.{name}"
    if key in registry:
        return registry[key]
    if module == "dezero_like":
        init = export.generated().get("dezero_like/__init__.py")
        if init is None:
            return None
        for node in ast.parse(init).body:
            if isinstance(node, ast.ImportFrom) and any(
                    (a.asname or a.name) == name for a in node.names):
                return registry.get(f"{node.module}.{name}")
    return None


@pytest.mark.parametrize("number", _step_numbers())
def test_a_step_uses_nothing_a_later_step_writes(number):
    registry = export.registry()
    source = (export.STEPS / f"step{number:02d}.py").read_text()
    later = []
    for module, name in sorted(_package_references(source)):
        if module in SUPPORT:
            continue
        step = _introduced(registry, module, name)
        if step is not None and step > number:
            later.append(f"{module}.{name} (step {step})")
    assert not later, f"step {number} uses names written only later: {', '.join(later)}"


RUN_ENV = {"MPLBACKEND": "Agg", "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}


@pytest.mark.parametrize("number", _step_numbers())
def test_a_step_runs_on_the_package_as_it_stood(number, tmp_path):
    """``python steps/stepNN.py`` with only what steps 23..N wrote importable."""
    export.upto(number, tmp_path / "pkg")
    env = {**os.environ, **RUN_ENV, "PYTHONPATH": str(tmp_path / "pkg")}
    probe = "import dezero_like; print(dezero_like.__file__)"
    where = subprocess.run([sys.executable, "-c", probe],
                           cwd=tmp_path, env=env, capture_output=True, text=True)
    assert where.stdout.startswith(str(tmp_path / "pkg")), where.stdout + where.stderr
    run = subprocess.run(
        [sys.executable, str(export.STEPS / f"step{number:02d}.py")],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900,
    )
    assert run.returncode == 0, run.stderr[-3000:]
