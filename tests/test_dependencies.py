"""The package's dependencies have lower bounds only.

The Colab set-up cell installs dezero_like into Colab's own environment. An
upper bound or a pin there (``numpy==1.26``, ``numpy<2``) would make pip
downgrade what Colab ships, and break every notebook the day Colab moves on.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from packaging.requirements import InvalidRequirement, Requirement

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
FORBIDDEN = ("==", "===", "<", "<=", "~=")


def bound_problems(requirement):
    """What is wrong with one requirement string (empty when it has lower bounds only)."""
    try:
        req = Requirement(requirement)
    except InvalidRequirement as e:
        return [f"{requirement!r} is not a valid requirement: {e}"]
    problems = [
        f"{requirement!r} has {spec.operator}{spec.version}: use a lower bound (>=) only"
        for spec in req.specifier
        if spec.operator in FORBIDDEN
    ]
    if req.url:
        problems.append(f"{requirement!r} pins a direct reference ({req.url}): use a version range")
    return problems


@pytest.mark.parametrize(
    ("requirement", "ok"),
    [
        ("numpy>=2.0", True),
        ("numpy", True),
        ("tomli>=2.0; python_version < '3.11'", True),
        ("numpy!=2.1.0,>=2.0", True),
        ("numpy==1.26.4", False),
        ("numpy>=2.0,<3", False),
        ("numpy<=2.2", False),
        ("numpy~=2.0", False),
        ("numpy===2.0", False),
        ("numpy @ https://example.org/numpy.whl", False),
    ],
)
def test_bound_checker(requirement, ok):
    assert (bound_problems(requirement) == []) is ok


def test_dependencies_have_lower_bounds_only():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    dependencies = project["dependencies"]
    assert dependencies, "pyproject.toml [project].dependencies is empty"
    problems = [p for requirement in dependencies for p in bound_problems(requirement)]
    assert not problems, (
        "pyproject.toml [project].dependencies must have lower bounds only, so that the "
        "Colab install never downgrades a package:\n" + "\n".join(problems)
    )


def _skips_without(stmt, module):
    """True for ``pytest.importorskip("module", ...)``, alone or assigned (``torch = ...``)."""
    call = stmt.value if isinstance(stmt, (ast.Expr, ast.Assign, ast.AnnAssign)) else None
    return (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
            and call.func.attr == "importorskip" and bool(call.args)
            and isinstance(call.args[0], ast.Constant) and call.args[0].value == module)


def _unguarded_imports(tree, module):
    """Line numbers of ``import module`` / ``from module ...`` not inside a ``try`` whose
    handlers catch ImportError (or ModuleNotFoundError, or everything), nor after a
    ``pytest.importorskip("module")`` of the same block (``import torch.nn`` after it is safe:
    the test or the module has been skipped already)."""
    guarded = set()
    for node in ast.walk(tree):
        for block in (getattr(node, field, None) for field in ("body", "orelse", "finalbody")):
            if not isinstance(block, list):
                continue
            after = False
            for stmt in block:
                if after:
                    guarded |= {id(n) for n in ast.walk(stmt)}
                after = after or _skips_without(stmt, module)
    for node in ast.walk(tree):
        if isinstance(node, ast.Try) and any(
                h.type is None or any(isinstance(n, ast.Name) and n.id in (
                    "ImportError", "ModuleNotFoundError", "Exception") for n in ast.walk(h.type))
                for h in node.handlers):
            guarded |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
    lines = []
    for node in ast.walk(tree):
        names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                 [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
        ours = any(n == module or n.startswith(module + ".") for n in names)
        if ours and id(node) not in guarded:
            lines.append(node.lineno)
    return lines


def test_the_tests_run_without_pytorch():
    """PyTorch is an optional oracle: the README's test command (``pip install -e ".[test]"``)
    does not install it, and a test that imports it unguarded fails there instead of
    skipping. Use ``torch = pytest.importorskip("torch")``, or import it in a try/except
    ImportError."""
    found = []
    for path in sorted((ROOT / "tests").rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        found += [f"{path.relative_to(ROOT)}:{line}" for line in _unguarded_imports(tree, "torch")]
    assert not found, f"unguarded `import torch` (use pytest.importorskip): {found}"


def test_the_unguarded_import_finder_can_fail():
    tree = ast.parse("import torch\ntry:\n    import torch.nn\nexcept ImportError:\n    pass\n"
                     "def f():\n    from torch import nn\n")
    assert _unguarded_imports(tree, "torch") == [1, 7]


def test_an_import_after_importorskip_counts_as_guarded():
    tree = ast.parse("def f():\n    import torch.nn\n    torch = pytest.importorskip('torch')\n"
                     "    import torch.nn.functional as tF\n"
                     "pytest.importorskip('numpy')\nimport torch\n")
    assert sorted(_unguarded_imports(tree, "torch")) == [2, 6]
