"""``tensordict.memmap``: upstream's function, and this package (core's
tensordict.extending.resolve_on_access makes the module callable)."""

import subprocess
import sys

import torch

import tensordict
from tensordict import TensorDict


def test_the_module_is_the_function_and_keeps_its_submodules(tmp_path):
    import tensordict.memmap._atomic as atomic
    from tensordict.memmap import MemoryMappedTensor

    assert tensordict.memmap is sys.modules["tensordict.memmap"]
    assert atomic is sys.modules["tensordict.memmap._atomic"]
    saved = tensordict.memmap(TensorDict(a=torch.arange(3)), tmp_path)
    assert isinstance(saved["a"], MemoryMappedTensor) and saved.is_locked
    assert TensorDict.load_memmap(tmp_path)["a"].tolist() == [0, 1, 2]


def test_importing_the_module_first_keeps_it_callable(tmp_path):
    code = ("import tensordict.memmap as m, tensordict, torch\n"
            f"td = m(tensordict.TensorDict(a=torch.ones(2)), {str(tmp_path)!r})\n"
            "print(m is tensordict.memmap, type(td['a']).__name__)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.split() == ["True", "MemoryMappedTensor"]
