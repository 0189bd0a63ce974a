"""Sphinx configuration of the tensordict documentation (``tox -e docs`` builds it).

Pages are Markdown (myst-parser); the API reference is generated from the docstrings
(autodoc + autosummary stubs, Google style through napoleon). No network access:
intersphinx is off, so references to torch objects are plain text.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import tensordict

# autosummary writes one stub page per name here; start afresh so that a name removed
# from the reference leaves no orphan page behind (an orphan is a warning, so an error)
shutil.rmtree(Path(__file__).parent / "reference" / "generated", ignore_errors=True)

project = "tensordict"
author = "tensordict contributors"
copyright = "the tensordict contributors"
release = version = tensordict.__version__

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
templates_path = ["_templates"]
exclude_patterns = ["_build"]

myst_heading_anchors = 3

autosummary_generate = True
autosummary_ignore_module_all = False
autodoc_typehints = "none"  # signatures show the hints; torch types cannot be linked offline
autodoc_member_order = "alphabetical"
autodoc_preserve_defaults = True
napoleon_google_docstring = True
napoleon_numpy_docstring = False

html_theme = "alabaster"
html_title = f"tensordict {release}"
html_static_path: list[str] = []
