"""``tensordict.memmap``: the function as an attribute, as upstream's, and this package's
module path for imports (core's tensordict._upstream_paths)."""

import subprocess
import sys
import types

import torch

import tensordict
from tensordict import TensorDict


def test_attribute_is_the_function_and_the_module_imports(tmp_path):
    import tensordict.memmap as alias
    from tensordict.memmap import MemoryMappedTensor, memmap

    assert alias is memmap and tensordict.memmap is memmap
    assert isinstance(tensordict.memmap, types.FunctionType)
    module = sys.modules["tensordict.memmap"]
    assert isinstance(module, types.ModuleType) and module.MemoryMappedTensor is MemoryMappedTensor
    saved = tensordict.memmap(TensorDict(a=torch.arange(3)), tmp_path)
    assert isinstance(saved["a"], MemoryMappedTensor)
    assert TensorDict.load_memmap(tmp_path)["a"].tolist() == [0, 1, 2]


def test_importing_the_module_first_keeps_the_function():
    code = ("import tensordict.memmap, tensordict, types\n"
            "print(type(tensordict.memmap).__name__, tensordict.memmap.__name__)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.split() == ["function", "memmap_function"]
