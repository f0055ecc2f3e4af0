"""dezero_like: a deep-learning framework you build one step at a time.

>>> import numpy as np
>>> import dezero_like as dz
>>> x = dz.Variable(np.array(3.0))
>>> y = x ** 2 + 2 * x
>>> y.backward()
>>> x.grad
variable(8.0)
"""

from dezero_like import (
    cuda,
    datasets,
    functions,
    hooks,
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
from dezero_like.datasets_seq import SeqDataLoader
from dezero_like.graph import keep_values_for_drawing
from dezero_like.hooks import debug_mode

__version__ = "0.1.0"

__all__ = [
    "Config", "DataLoader", "Function", "Parameter", "SeqDataLoader", "Variable", "as_array",
    "as_variable", "cuda", "datasets", "debug_mode", "functions", "hooks",
    "keep_values_for_drawing", "layers", "models", "no_grad", "optimizers", "test_mode",
    "transforms", "using_config", "utils", "__version__",
]
