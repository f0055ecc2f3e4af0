"""Watching backprop happen: the backward pass as a sequence of graph pictures.

``record_backward(y)`` runs ``y.backward()`` and notes, each time a function's
backward is about to run, which function it is and which gradients are known
at that moment. The result, a :class:`BackpropAnimation`, draws one frame per
function (that function highlighted in orange, every gradient known so far
written into its variable's node, ``-`` where none is known yet) and a last
frame with the finished gradients:

    anim = record_backward(y)
    anim                       # in a notebook: plays as an animated GIF
    anim.order                 # the functions, in the order backward ran them
    anim.frame(2)              # one frame as a graph image
    anim.save("backprop.gif")  # or .png for an animated PNG (APNG)

The recorder works with the package and with the step snapshots (steps 15-22
define their own, simpler ``Variable`` and ``Function`` classes): it watches
each function class's ``backward`` method while the pass runs and puts it back
afterwards. ``backward=`` takes any callable that runs the pass, so a step can
show a different (even a wrong) order, e.g. ``backward=lambda:
backward_stack_order(y)`` in step 16. The gradients are copied when a frame is
taken, so a gradient that is later changed in place (the aliasing bug of step
15) shows its old value in the earlier frames and its new one in the later.

Frames are rendered with :func:`dezero_like.graph.render_dot` (Graphviz ``dot``
or graphviz-pure) and put together with Pillow, which comes with matplotlib.
"""

from __future__ import annotations

import base64
import io
import tempfile
from pathlib import Path

import numpy as np

from dezero_like import cuda
from dezero_like import graph as _graph

#: Milliseconds each frame shows when the animation plays.
FRAME_MS = 1200


def _graph_nodes(output, functions):
    """Every variable node of the graph, by key (the objects alive now)."""
    nodes = {_graph._var_key(output): output}
    for f in functions:
        for ref in _graph.function_outputs(f):
            y = _graph._deref(ref)
            if y is not None:
                nodes.setdefault(_graph._var_key(y), y)
        for x in _graph.function_inputs(f):
            nodes.setdefault(_graph._var_key(x), x)
    return nodes


def _known_grads(nodes):
    """{key: copy of the gradient} for every node whose gradient is known now."""
    known = {}
    for key, v in nodes.items():
        g = _graph.node_grad(v)
        if g is not None:
            known[key] = np.array(cuda.as_numpy(_graph._array(g)), copy=True)  # GPU: a host copy
    return known


class BackpropAnimation:
    """The frames of one backward pass: ``(function or None, {node key: gradient})``."""

    def __init__(self, output, frames, values=True):
        self.output = output
        self.frames = frames
        self.values = values
        self._images = {}  # renderer -> rendered frames: save() and display render once

    @property
    def order(self):
        """The functions in the order backward processed them."""
        return [f for f, _ in self.frames if f is not None]

    def gradients(self, variable):
        """The gradient of ``variable`` in each frame (None where not known yet)."""
        key = _graph._var_key(variable)
        return [grads.get(key) for _, grads in self.frames]

    def __len__(self):
        return len(self.frames)

    def __repr__(self):
        names = " -> ".join(type(f).__name__ for f in self.order)
        return f"BackpropAnimation({len(self.frames)} frames: {names})"

    def dot(self, i):
        """DOT text of frame ``i``."""
        if not -len(self.frames) <= i < len(self.frames):
            raise IndexError(f"frame {i} does not exist: the animation has {len(self.frames)}")
        i %= len(self.frames)
        f, grads = self.frames[i]
        text = _graph.get_dot_graph(self.output, verbose=False, values=self.values,
                                    grads=grads, active=f)
        if f is None:
            caption = f"{i + 1}/{len(self.frames)}: done, every gradient is known"
        else:
            caption = f"{i + 1}/{len(self.frames)}: backward of {type(f).__name__}"
        head = f"  labelloc=t; fontname=Helvetica; label={_graph._quote(caption)};"
        return text.replace("\n", "\n" + head + "\n", 1)

    def frame(self, i, to_file=None, renderer="auto"):
        """Frame ``i`` rendered (into ``to_file``, default a temporary PNG) as a GraphImage."""
        if to_file is None:
            to_file = Path(tempfile.mkdtemp(prefix="backprop-")) / f"frame{i:03d}.png"
        return _graph.render_dot(self.dot(i), to_file, renderer)

    def images(self, renderer="auto"):
        """Every frame as a Pillow image, all padded to the same size (rendered once)."""
        if renderer not in self._images:
            self._images[renderer] = self._render(renderer)
        return self._images[renderer]

    def _render(self, renderer):
        from PIL import Image

        pictures = []
        with tempfile.TemporaryDirectory(prefix="backprop-") as tmp:
            for i in range(len(self.frames)):
                path = Path(tmp) / f"frame{i:03d}.png"
                _graph.render_dot(self.dot(i), path, renderer)
                with Image.open(path) as im:
                    pictures.append(im.convert("RGB"))
        width = max(p.width for p in pictures)
        height = max(p.height for p in pictures)
        padded = []
        for p in pictures:
            canvas = Image.new("RGB", (width, height), "white")
            canvas.paste(p, ((width - p.width) // 2, 0))
            padded.append(canvas)
        return padded

    def save(self, to_file, renderer="auto", frame_ms=FRAME_MS):
        """Write the animation as ``.gif`` or ``.png`` (animated PNG); returns the full path."""
        to_file = Path(to_file)
        fmt = to_file.suffix.lower()
        if fmt not in (".gif", ".png"):
            raise ValueError(
                f"cannot tell the animation format from {str(to_file)!r}: use a file name "
                f"ending in .gif or .png (animated PNG)"
            )
        to_file.parent.mkdir(parents=True, exist_ok=True)
        to_file.write_bytes(self._encode(fmt[1:], renderer, frame_ms))
        return to_file.resolve()

    def _encode(self, fmt, renderer="auto", frame_ms=FRAME_MS):
        images = self.images(renderer)
        buffer = io.BytesIO()
        if fmt == "gif":  # a small palette: graphs have few colours
            images = [im.quantize(colors=64) for im in images]
        images[0].save(buffer, format=fmt.upper(), save_all=True,
                       append_images=images[1:], duration=frame_ms, loop=0,
                       optimize=True)
        return buffer.getvalue()

    def _repr_html_(self):
        gif = base64.b64encode(self._encode("gif")).decode()
        return f'<img src="data:image/gif;base64,{gif}" alt="{self!r}"/>'


def record_backward(output, backward=None, values=True):
    """Run the backward pass from ``output`` and return its frames (see the module doc).

    ``backward``: a callable that runs the pass; default ``output.backward()``.
    With the package, it runs inside :class:`dezero_like.graph.keep_values_for_drawing`
    so the gradients of intermediate variables are known without ``retain_grad``
    (run the forward computation inside it too to see intermediate values).
    ``values``: also write the variables' values into the nodes (the gradients
    are written either way; with ``values=False`` a node shows its name and gradient).
    """
    if not _graph._is_variable(output):
        raise TypeError(
            f"record_backward expects a Variable (an object with data, grad and creator), "
            f"got {type(output).__name__}"
        )
    if output.creator is None:
        raise ValueError("record_backward needs the output of a computation, not a leaf variable")
    functions = _graph.graph_functions(output)
    nodes = _graph_nodes(output, functions)
    for f in functions:  # gradients recorded by an earlier pass are not this pass's
        if "_drawing_grads" in getattr(f, "__dict__", {}):
            del f._drawing_grads
    frames = []
    patched = {}

    def watch(cls):
        original = cls.backward

        def backward_watched(self, *gys):
            # a subclass's backward calling super().backward() is one call, one frame
            first = id(self) in members and id(self) not in running
            if first:
                frames.append((self, _known_grads(nodes)))
                running.add(id(self))
            try:
                return original(self, *gys)
            finally:
                if first:
                    running.discard(id(self))

        patched[cls] = cls.__dict__.get("backward")
        cls.backward = backward_watched

    members = {id(f) for f in functions}  # by identity: a function may define __eq__
    running = set()
    for cls in {type(f) for f in functions}:
        watch(cls)
    try:
        with _graph.keep_values_for_drawing():
            if backward is None:
                output.backward()
            else:
                backward()
    finally:
        for cls, own in patched.items():
            if own is None:
                del cls.backward
            else:
                cls.backward = own
    frames.append((None, _known_grads(nodes)))
    return BackpropAnimation(output, frames, values)


__all__ = ["BackpropAnimation", "record_backward", "FRAME_MS"]
