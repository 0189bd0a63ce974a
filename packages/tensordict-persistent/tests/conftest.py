"""The file formats every generic PersistentTensorDict test runs over: ``backend`` is
"h5" or "zarr", each skipped when its package is not installed."""

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
