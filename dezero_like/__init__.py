"""dezero_like: a deep-learning framework you build one step at a time.

>>> import numpy as np
>>> import dezero_like as dz
>>> x = dz.Variable(np.array(3.0))
>>> y = x ** 2 + 2 * x
>>> y.backward()
>>> x.grad
variable(8.0)
"""

from dezero_like import cuda, datasets, functions, transforms, utils  # noqa: E402  (after core on purpose)
from dezero_like.core import (
    Config,
    Function,
    Parameter,
    Variable,
    as_array,
    as_variable,
    no_grad,
    test_mode,
    using_config,
)
from dezero_like.dataloaders import DataLoader

__version__ = "0.1.0"

__all__ = [
    "Config", "Function", "Parameter", "Variable", "as_array", "as_variable", "no_grad",
    "test_mode", "using_config", "cuda", "functions", "utils", "__version__",
    "datasets", "transforms", "DataLoader",
]
