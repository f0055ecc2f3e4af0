"""Sphinx configuration. Build with ``python tools/build_docs.py`` (not sphinx-build directly).

The build script stages these sources together with generated pages (the
curriculum, one page per executed step notebook, the API pages) and runs
``sphinx-build -W``: every warning fails the build.
"""

import dezero_like

project = "dezero_like"
author = "the dezero_like authors"
copyright = "the dezero_like authors, MIT licence"  # noqa: A001 (a Sphinx setting)
release = version = dezero_like.__version__

extensions = [
    "myst_nb",  # Markdown pages and executed notebooks
    "sphinx.ext.autodoc",  # the API reference, from docstrings
    "sphinx.ext.viewcode",  # [source] links to the package code
    # MathJax served from the site itself (_static/mathjax), so formulas render
    # with no network; the package ships MathJax 3 and sets mathjax_path.
    "sphinx-mathjax-offline",
]

exclude_patterns = ["_build", ".doctrees", "**.ipynb_checkpoints"]
source_suffix = {".md": "myst-nb", ".ipynb": "myst-nb"}

# Notebooks arrive executed (tools/notebooks.py execute): Sphinx never runs them.
nb_execution_mode = "off"
nb_merge_streams = True  # one output block per cell, not one per print()

myst_enable_extensions = ["dollarmath", "colon_fence"]
myst_heading_anchors = 2
# Step prose may jump heading levels (# then ###); that is a style matter, not a broken page.
suppress_warnings = ["myst.header"]

autodoc_member_order = "bysource"
autodoc_typehints = "description"

html_theme = "furo"
html_title = f"dezero_like {release}"
html_static_path = ["_static"]
html_css_files = ["custom.css"]
html_show_sourcelink = False
