"""Core's modules import one another without cycles.

Every ``import`` of a core module counts: at module level and inside functions (a
function-level import is still a dependency, only a delayed one). Imports under ``if
TYPE_CHECKING:`` never run and are skipped. The mixins reach the concrete classes
through ``tensordict._collection.classes`` (see CONTRIBUTING.md, "How core is built"),
so only ``__init__``, the facades and the concrete class modules import ``_td``/``_lazy``.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path

import pytest

import tensordict

CORE = Path(tensordict.__file__).parent
CONCRETE = {"tensordict._td", "tensordict._lazy"}
# the modules allowed to import the concrete classes: the package, the facades kept for
# upstream's module paths, and the concrete class modules (NonTensorStack is a lazy stack)
MAY_IMPORT_CONCRETE = {"tensordict", "tensordict.tensordict", "tensordict.base",
                       "tensordict.utils", "tensordict._nontensor_stack", "tensordict._typed",
                       *CONCRETE}


def _module_name(path: Path) -> str:
    parts = ("tensordict", *path.relative_to(CORE).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _core_modules() -> dict[str, Path]:
    # only the package itself: plugin packages extend tensordict.__path__ from elsewhere
    return {_module_name(path): path for path in CORE.rglob("*.py")}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST, module: str, is_package: bool,
             is_module: Callable[[str], bool]) -> set[str]:
    """The absolute names of the modules imported anywhere in ``tree``."""
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")
                base = base[: len(base) - node.level + is_package]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            # ``from tensordict import errors`` imports the submodule errors only (the
            # package itself is initialised before any of its modules runs)
            for alias in node.names:
                name = f"{source}.{alias.name}"
                found.add(name if is_module(name) else source)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def import_graph() -> dict[str, set[str]]:
    """Each core module -> the core modules it imports (anywhere in its source)."""
    modules = _core_modules()
    graph = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(), str(path))
        targets = _imports(tree, name, path.name == "__init__.py", modules.__contains__)
        graph[name] = {t for t in targets if t in modules and t != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                connect(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return found


def test_graph_sees_function_level_imports() -> None:
    tree = ast.parse("def f():\n    from tensordict._td import TensorDict\n"
                     "from . import errors\n"
                     "if TYPE_CHECKING:\n    from tensordict._lazy import X\n")
    modules = {"tensordict", "tensordict._td", "tensordict._lazy", "tensordict.errors"}
    assert _imports(tree, "tensordict._x", False, modules.__contains__) == {
        "tensordict._td", "tensordict.errors"}
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_core_modules_import_without_cycles() -> None:
    graph = import_graph()
    assert {"tensordict._td", "tensordict._base", "tensordict._dict_api"} <= set(graph)
    assert cycles(graph) == []


@pytest.mark.parametrize("module", sorted(CONCRETE))
def test_only_allowed_modules_import_concrete_classes(module: str) -> None:
    importers = {name for name, targets in import_graph().items() if module in targets}
    assert importers <= MAY_IMPORT_CONCRETE, sorted(importers - MAY_IMPORT_CONCRETE)


def test_collection_module_is_at_the_bottom() -> None:
    graph = import_graph()
    assert graph["tensordict._collection"] <= {"tensordict.plugins", "tensordict._nested_key",
                                               "tensordict.hookspecs"}
