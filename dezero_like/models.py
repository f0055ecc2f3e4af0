"""Models: layers that are whole networks, ``from dezero_like.models import MLP``."""

from __future__ import annotations

import dezero_like.functions as F
import dezero_like.layers as L
from dezero_like.layers import Layer


class Model(Layer):
    """A Layer that is a whole network; adds :meth:`plot`."""

    def plot(self, *inputs, to_file="model.png"):
        """Run the model on ``inputs`` and draw the resulting graph to ``to_file``."""
        from dezero_like.utils import plot_dot_graph  # graphviz is needed only here

        y = self.forward(*inputs)
        return plot_dot_graph(y, verbose=True, to_file=to_file)


class MLP(Model):
    """Multi-layer perceptron: Linear layers with ``activation`` between them.

    ``MLP((10, 1))`` is Linear(10) -> activation -> Linear(1). Input sizes are
    inferred on the first call.
    """

    def __init__(self, fc_output_sizes, activation=F.sigmoid):
        super().__init__()
        self.activation = activation
        self.layers = []
        for i, out_size in enumerate(fc_output_sizes):
            layer = L.Linear(out_size)
            setattr(self, f"l{i}", layer)
            self.layers.append(layer)

    def forward(self, x):
        for layer in self.layers[:-1]:
            x = self.activation(layer(x))
        return self.layers[-1](x)


class Sequential(Model):
    """Apply layers (or plain functions such as ``F.relu``) one after the other."""

    def __init__(self, *layers):
        super().__init__()
        self.layers = []
        for i, layer in enumerate(layers):
            if not callable(layer):
                raise TypeError(f"Sequential item {i} is a {type(layer).__name__}, not callable")
            if isinstance(layer, Layer):
                setattr(self, f"l{i}", layer)
            self.layers.append(layer)

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


# CNN models live in models_conv; models.VGG16 works too.
from dezero_like.models_conv import VGG16, SimpleConvNet  # noqa: E402, F401
