"""The package's dependencies have lower bounds only.

The Colab set-up cell installs dezero_like into Colab's own environment. An
upper bound or a pin there (``numpy==1.26``, ``numpy<2``) would make pip
downgrade what Colab ships, and break every notebook the day Colab moves on.
"""

from __future__ import annotations

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
