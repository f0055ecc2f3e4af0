"""dezero_like: a deep-learning framework you build one step at a time.

>>> import numpy as np
>>> import dezero_like as dz
>>> x = dz.Variable(np.array(3.0))
>>> y = x ** 2 + 2 * x
>>> y.backward()
>>> x.grad
variable(8.0)
"""

from dezero_like import (  # noqa: E402  (after core on purpose)
    cuda,
    datasets,
    functions,
    layers,
    models,
    optimizers,
    transforms,
    utils,
)
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
    "test_mode", "using_config", "cuda", "functions", "layers", "models", "optimizers", "utils",
    "__version__", "datasets", "transforms", "DataLoader",
]
