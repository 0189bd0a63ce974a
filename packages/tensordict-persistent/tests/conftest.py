"""The file formats every generic PersistentTensorDict test runs over: ``backend`` is
"h5" or "zarr", each skipped when its package is not installed; ``read_text``: a string
as each format reads it back."""

import importlib.util

import pytest

FORMATS = [
    pytest.param(name, marks=pytest.mark.skipif(
        importlib.util.find_spec(f"tensordict.{name}") is None,
        reason=f"tensordict-{name} is not installed"))
    for name in ("h5", "zarr")
]


@pytest.fixture(params=FORMATS)
def backend(request):
    return request.param


@pytest.fixture
def read_text(backend):
    """A string written to the file as it reads back: bytes from HDF5 (as upstream reads
    them), str from Zarr."""
    return lambda text: text.encode() if backend == "h5" else text
