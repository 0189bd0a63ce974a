"""``print_directory_tree``: log the files under a folder (a saved TensorDict, say).

Example:
    >>> import os, tempfile
    >>> from tensordict.utils import print_directory_tree
    >>> with tempfile.TemporaryDirectory() as path:
    ...     open(os.path.join(path, "a.memmap"), "wb").close()
    ...     tree = print_directory_tree(path, display_metadata=False)
    >>> tree.splitlines()[1]
    '    a.memmap'
"""

from __future__ import annotations

import os

from tensordict._helpers import logger

_UNITS = ("B", "KB", "MB", "GB", "TB", "PB")


def print_directory_tree(path: str, indent: str = "", display_metadata: bool = True) -> str:
    """Log the tree of folders and files under ``path`` (one INFO line each) and return it.

    Folders end with ``/``; each level adds four spaces after ``indent``; entries come in
    :func:`os.listdir` order.

    Args:
        path: the folder (or file) to show.
        indent: put before every line of the tree.
        display_metadata: first log ``Directory size: ...``, the total size of the files.

    Returns:
        The logged lines, joined by newlines.

    >>> import os, tempfile
    >>> with tempfile.TemporaryDirectory() as path:
    ...     os.mkdir(os.path.join(path, "sub"))
    ...     with open(os.path.join(path, "sub", "x.bin"), "wb") as f:
    ...         _ = f.write(bytes(2048))
    ...     lines = print_directory_tree(path).splitlines()
    >>> lines[0], lines[2:]
    ('Directory size: 2.00 KB', ['    sub/', '        x.bin'])
    """
    lines = [f"Directory size: {_readable_size(_total_size(path))}"] if display_metadata else []
    _tree_lines(path, indent, lines)
    for line in lines:
        logger.info(line)
    return "\n".join(lines)


def _tree_lines(path: str, indent: str, lines: list[str]) -> None:
    name = os.path.basename(path)
    if not os.path.isdir(path):
        lines.append(indent + name)
        return
    lines.append(f"{indent}{name}/")
    for entry in os.listdir(path):
        _tree_lines(os.path.join(path, entry), indent + "    ", lines)


def _total_size(path: str) -> int:
    """The bytes of the files under the folder ``path`` (0 for a file or a missing path)."""
    return sum(
        os.path.getsize(file)
        for root, _, files in os.walk(path)
        for file in (os.path.join(root, name) for name in files)
        if os.path.isfile(file)
    )


def _readable_size(size: float) -> str:
    for unit in _UNITS[:-1]:
        if size < 1024:
            return f"{size:.2f} {unit}"
        size /= 1024
    return f"{size:.2f} {_UNITS[-1]}"
