"""pytest setup shared by every test run of the repository."""

import pytest


@pytest.fixture(autouse=True)
def _doctest_names(doctest_namespace: dict) -> None:
    """``torch`` and ``TensorDict`` are available to every doctest (docstrings, *.md)."""
    import torch

    from tensordict import TensorDict

    doctest_namespace.setdefault("torch", torch)
    doctest_namespace.setdefault("TensorDict", TensorDict)
