"""Upstream's module paths: facades that only re-export, and the one mechanism for a name
that is both a module and an attribute (tensordict._upstream_paths)."""

import ast
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

import tensordict
from tensordict._upstream_paths import resolve_on_access

SRC = Path(tensordict.__file__).parent
FACADES = ["base.py", "utils.py", "tensordict.py", "functional.py", "typedtensordict.py",
           "_C.py", "tensorclass.py"]


@pytest.mark.parametrize("name", FACADES)
def test_facade_only_reexports(name):
    """Imports, ``__all__``, the names looked up on access: no def, class or own value."""
    tree = ast.parse((SRC / name).read_text())
    for node in tree.body[1:]:  # after the docstring
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            assert node.value.func.id == "resolve_on_access", ast.unparse(node)
            continue
        assert isinstance(node, ast.Assign), f"{name}: {ast.unparse(node)}"
        target = node.targets[0].id
        if target in ("__all__", "_FROM_PACKAGE"):
            continue
        # tensorclass.py: the plugin's names, looked up (not defined) here
        assert ast.unparse(node.value) == f"top_level_name({target!r})", ast.unparse(node)


def test_moved_helpers_keep_upstream_paths():
    from tensordict._options import BEST_ATTEMPT_INPLACE as moved_marker
    from tensordict._shapes import convert_ellipsis_to_idx as moved
    from tensordict.base import BEST_ATTEMPT_INPLACE, convert_ellipsis_to_idx
    from tensordict.utils import _is_non_tensor, _is_tensorclass

    assert convert_ellipsis_to_idx is moved and BEST_ATTEMPT_INPLACE is moved_marker
    assert convert_ellipsis_to_idx((..., 1), [2, 3, 4]) == (slice(None), slice(None), 1)
    with pytest.raises(NotImplementedError, match="truth value"):
        bool(BEST_ATTEMPT_INPLACE)
    assert _is_non_tensor(tensordict.NonTensorData) and not _is_non_tensor(tensordict.TensorDict)
    assert not _is_tensorclass(tensordict.TensorDict)


def test_resolve_on_access_looks_up_each_time_and_keeps_the_attribute():
    module = types.ModuleType("fx45_demo")
    sys.modules["fx45_demo"] = module
    try:
        answers = iter([1, 2])
        resolve_on_access("fx45_demo", ["answer"], lambda name: next(answers))
        assert (module.answer, module.answer) == (1, 2)
        module.answer = types.ModuleType("fx45_demo.answer")  # what an import does: ignored
        with pytest.raises(StopIteration):
            module.answer
        with pytest.raises(AttributeError, match="fx45_demo.answer is looked up on access"):
            module.answer = 3
        assert "answer" not in vars(module)
    finally:
        del sys.modules["fx45_demo"]


def test_base_names_from_the_package():
    """``tensordict.base.from_dict`` is the package's; a plugin's name follows the plugin."""
    import tensordict.base

    assert tensordict.base.from_dict is tensordict.from_dict
    assert "from_dict" not in vars(tensordict.base)


def test_tensorclass_module_path_without_the_plugin_names_the_package():
    """Core provides ``tensordict.tensorclass``; without the plugin importing it says what
    to install, and ``import tensordict`` alone imports no plugin."""
    code = (
        "import sys, tensordict\n"
        "try:\n"
        "    import tensordict.tensorclass\n"
        "except ModuleNotFoundError as err:\n"
        "    print(err)\n"
        "print(sorted(m for m in sys.modules if m.startswith('tensordict.tensorclass')))\n"
    )
    env = {**os.environ, "TENSORDICT_DISABLED_PLUGINS": "tensorclass"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True).stdout.splitlines()
    assert out == ["tensordict.tensorclass is provided by the tensordict-tensorclass "
                   "package: install tensordict-tensorclass, or tensordict[tensorclass].",
                   "[]"]
