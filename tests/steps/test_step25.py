import re

import numpy as np

import dezero_like as dz


def parse(dot):
    nodes = dict(re.findall(r'^\s*(\w+) \[label="(.*?)"', dot, re.M))
    edges = re.findall(r"^\s*(\w+) -> (\w+);", dot, re.M)
    return nodes, edges


def test_matyas_dot_has_the_expected_nodes_edges_and_shapes(load_step):
    step = load_step(25)
    nodes, edges = parse(step.dot_text)
    labels = sorted(nodes.values())
    # Matyas: x**2, y**2, +, 0.26 * (...), 0.48 * x, (...) * y, - : 7 functions
    assert labels.count("Pow") == 2 and labels.count("Mul") == 3
    assert labels.count("Add") == 1 and labels.count("Sub") == 1
    assert {"x", "y", "z", "0.26", "0.48"} <= set(labels)
    assert step.count_functions(step.dot_text) == 7
    # each function has one output; Pow has one input (the exponent is an attribute),
    # the other five have two
    n_in = sum(1 for a, b in edges if nodes[b] in {"Pow", "Mul", "Add", "Sub"})
    n_out = sum(1 for a, b in edges if nodes[a] in {"Pow", "Mul", "Add", "Sub"})
    assert n_out == 7 and n_in == 2 * 1 + 5 * 2
    key = {v: k for k, v in nodes.items()}
    assert 'shape=box' in re.search(rf"{key['Sub']} \[.*\]", step.dot_text).group()
    assert 'shape=ellipse' in re.search(rf"{key['x']} \[.*\]", step.dot_text).group()
    assert (key["Sub"], key["z"]) in edges


def test_verbose_labels_show_shape_and_dtype(load_step):
    step = load_step(25)
    labels = set(parse(step.dot_text)[0].values()) | set(
        re.findall(r'label="(.*?)"', step.output)
    )
    assert "a: (2, 3) float32" in labels and "b: (3,) float32" in labels


def test_count_nodes_on_a_fresh_graph(load_step):
    step = load_step(25)
    x = dz.Variable(np.array(2.0), name="x")
    y = x * x + 1.0
    dot = dz.utils.get_dot_graph(y, verbose=False)
    # x, x*x, 1.0, y + Mul, Add
    assert step.count_nodes(dot) == 6 and step.count_functions(dot) == 2


def test_demo_output(load_step):
    out = load_step(25).output
    assert "digraph g {" in out and "nodes: 18 functions: 7" in out
    assert "self-check passed" in out
