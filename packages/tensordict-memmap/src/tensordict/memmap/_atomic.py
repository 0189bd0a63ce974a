"""Atomic saves: a save is written in a temporary folder beside its target and swapped in
with renames, so that a crash at any moment leaves the old save or the new one.

A save to ``parent/name``:

1. writes everything in ``parent/.name.tmp-<id>`` (``<id>``: host, process, random);
2. if ``parent/name`` exists, renames it to ``parent/.name.old-<id>``, then renames the new
   folder to ``parent/name``;
3. moves what no save wrote (a user's notes, say) from the old folder into the new one and
   deletes the old folder (its ``meta.json`` last, so that a half-deleted folder is still
   merged right by the next save).

Between the two renames of step 2, ``parent/name`` is missing for an instant. A process
killed there leaves the old save complete in ``.name.old-<id>``, and :func:`recover`
(used by ``load_memmap``) loads it from there. What dead processes of this host left
beside a folder is cleaned by the next save to it: temporary folders are deleted, old
folders are merged into the new save as in step 3.

Example:
    >>> import os, tempfile
    >>> target = os.path.join(tempfile.mkdtemp(), "data")
    >>> staging = Staging(target)
    >>> with open(staging.path(os.path.join(target, "meta.json")), "w") as file:
    ...     _ = file.write("{}")
    >>> staging.commit()
    >>> staging.tidy()
    >>> os.listdir(target), os.listdir(os.path.dirname(target))
    (['meta.json'], ['data'])
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import shutil
import socket
import stat
import warnings
import zlib
from collections.abc import Callable, Collection, Mapping

from tensordict.memmap import _layout

_HOST = f"{zlib.crc32(socket.gethostname().encode()):08x}"
_LEFTOVER = re.compile(r"(tmp|old)-([0-9a-f]{8})-([0-9]+)-[0-9a-f]+")
_LONG_NAME = 180  # bytes: longer folder names are hashed in the names of their leftovers


def _stem(name: str) -> str:
    """The start of the names of ``name``'s temporary and old folders."""
    if len(os.fsencode(name)) > _LONG_NAME:
        name = hashlib.sha256(os.fsencode(name)).hexdigest()[:32]
    return f".{name}."


def _new_name(name: str, kind: str) -> str:
    return f"{_stem(name)}{kind}-{_HOST}-{os.getpid()}-{secrets.token_hex(4)}"


def _leftovers(parent: str, name: str, names: list[str]) -> list[tuple[str, str, bool]]:
    """``(path, kind, dead)`` for every temporary (``tmp``) and old (``old``) folder among
    ``names`` (the listing of ``parent``) beside ``parent/name``; ``dead``: made by a
    process of this host that no longer runs."""
    stem = _stem(name)
    found = []
    for entry in names:
        match = _LEFTOVER.fullmatch(entry, len(stem)) if entry.startswith(stem) else None
        if match is not None and _real_dir(path := os.path.join(parent, entry)):
            kind, host, pid = match.groups()
            found.append((path, kind, host == _HOST and not _alive(int(pid))))
    return found


def _listdir(folder: str) -> list[str]:
    try:
        return os.listdir(folder)
    except OSError:
        return []


def _mode(path: str, stat_call: Callable[[str], os.stat_result]) -> int:
    """The ``st_mode`` of ``path`` (0 if there is nothing)."""
    try:
        return stat_call(path).st_mode
    except OSError:
        return 0


def _real_dir(path: str) -> bool:
    return stat.S_ISDIR(_mode(path, os.lstat))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


class Staging:
    """The temporary folder a save to ``target`` is written in, and its swap into place.

    Raises FileExistsError if ``target`` is a file, ValueError if it is a file-system
    root. A symbolic link ``target`` stays: the folder it points to is replaced.
    """

    def __init__(self, target: str) -> None:
        self.target = target
        physical, mode = target, _mode(target, os.lstat)
        if stat.S_ISLNK(mode):
            physical = os.path.realpath(target)
            mode = _mode(physical, os.stat)
        if mode and not stat.S_ISDIR(mode):
            raise FileExistsError(f"cannot save to {target}: it is a file, not a folder")
        self._parent, self._name = os.path.split(physical)
        if not self._name:
            raise ValueError(f"cannot save to {target}: a save replaces its folder, and "
                             "this is the root of the file system")
        self._physical = physical
        self._old: str | None = None
        try:
            names = os.listdir(self._parent)
        except OSError:  # missing (made here), or not a folder (the error is raised here)
            os.makedirs(self._parent, exist_ok=True)
            names = []
        # one listing of the parent, for the leftovers of dead processes: their temporary
        # folders go now, their old folders are merged by tidy
        self._dead_olds: list[str] = []
        for path, kind, dead in _leftovers(self._parent, self._name, names):
            if dead and kind == "tmp":
                shutil.rmtree(path, ignore_errors=True)
            elif dead:
                self._dead_olds.append(path)
        self.root = os.path.join(self._parent, _new_name(self._name, "tmp"))
        try:
            os.mkdir(self.root)
        except PermissionError as err:
            raise PermissionError(
                err.errno, f"cannot save to {target}: a save is written beside its folder, "
                f"then renamed into place, and {self._parent} is not writable", self.root
            ) from err

    def path(self, final: str) -> str:
        """Where the file or folder that will be ``final`` (inside ``target``) is written."""
        return self.root + final[len(self.target):]

    def commit(self) -> None:
        """Swap the written folder in; the old folder, if any, is set aside."""
        mode = _mode(self._physical, os.stat)
        if not stat.S_ISDIR(mode):
            os.rename(self.root, self._physical)
            return
        os.chmod(self.root, stat.S_IMODE(mode))
        old = os.path.join(self._parent, _new_name(self._name, "old"))
        os.rename(self._physical, old)
        try:
            os.rename(self.root, self._physical)
        except BaseException:
            os.rename(old, self._physical)
            raise
        self._old = old

    def abort(self) -> None:
        """Delete the temporary folder (the target was never touched)."""
        shutil.rmtree(self.root, ignore_errors=True)

    def tidy(self, written: Mapping[str, Collection[str]] | None = None) -> None:
        """After :meth:`commit`: merge the old folder and the old folders dead processes
        left into the new save, and delete them. Only warns on failure: the save is done.

        ``written``: the names the save wrote in each of its folders (keyed by their path
        relative to ``target``, ``""`` for itself); with it, the new folder is not read.
        """
        try:
            if self._old is not None:
                _merge(self._old, self._physical, written)
            for path in self._dead_olds:
                _merge(path, self._physical)
        except OSError as err:
            warnings.warn(f"the save to {self.target} is complete, but removing the previous "
                          f"save beside it failed: {err}", RuntimeWarning, stacklevel=2)


def _merge(old: str, new: str, written: Mapping[str, Collection[str]] | None = None) -> None:
    """Move what no save wrote from ``old`` into ``new``, and delete the rest of ``old``
    (the ``meta.json`` of each folder last: a folder half deleted is merged right by the
    next save). ``written``: see :meth:`Staging.tidy`; without it, ``new`` is looked at."""
    _carry_foreign(old, new, written, "")


def _carry_foreign(old: str, new: str, written: Mapping[str, Collection[str]] | None,
                   rel: str) -> None:
    """Move into ``new`` what the save in ``old`` did not write (a folder the new save has
    too is merged entry by entry), deleting the rest; then ``old`` goes."""
    ours = None if written is None else written.get(rel, ())
    owned: set[str] | None = None  # what the old save wrote: read only when needed
    has_meta = False
    for entry in list(os.scandir(old)):
        name = entry.name
        if name == _layout.META:
            has_meta = True
            continue
        dest = os.path.join(new, name)
        exists = os.path.lexists(dest) if ours is None else name in ours
        if not exists and owned is None:
            owned = _layout.owned_names(old)
        is_dir = entry.is_dir(follow_symlinks=False)
        if is_dir and (exists or name in owned):
            sub = os.path.join(rel, name)
            if not exists or (_real_dir(dest) if ours is None else sub in written):
                _carry_foreign(entry.path, dest, written, sub)
                continue
        elif not exists and name not in owned:
            os.makedirs(new, exist_ok=True)
            os.rename(entry.path, dest)
            continue
        if is_dir:
            shutil.rmtree(entry.path)
        else:
            os.unlink(entry.path)
    if has_meta:
        os.unlink(os.path.join(old, _layout.META))
    os.rmdir(old)


def recover(folder: str) -> str:
    """Where to load ``folder`` from: itself, or, when it is missing because a save died
    between its two renames, the same place in the old save that was set aside.

    >>> recover("/no/such/folder")
    '/no/such/folder'
    """
    real = os.path.realpath(folder)
    if os.path.exists(real):
        return folder
    head, rest = real, []
    while not os.path.exists(head):
        head, tail = os.path.split(head)
        if not tail:
            return folder
        rest.append(tail)
    name = rest.pop()
    olds = [path for path, kind, _ in _leftovers(head, name, _listdir(head))
            if kind == "old" and os.path.isfile(os.path.join(path, _layout.META))]
    if not olds:
        return folder
    newest = max(olds, key=lambda path: os.stat(os.path.join(path, _layout.META)).st_mtime_ns)
    found = os.path.join(newest, *reversed(rest))
    warnings.warn(f"{folder} is missing: a save to it was interrupted; loading the previous "
                  f"save, kept in {found}", RuntimeWarning, stacklevel=3)
    return found
