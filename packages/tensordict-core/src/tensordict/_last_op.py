"""``LAST_OP_MAPS``: the inverse of each TensorDict op that can be undone, by name.

``LAST_OP_MAPS[name](result, args, kwargs, original)`` takes ``result = original.<name>
(*args, **kwargs)`` (possibly modified since), applies the inverse op and writes it back
into ``original`` (in place when ``original`` is locked), then returns ``original``.

Each of these ops remembers on its result how it was made (:func:`made_by`, one small
tuple), so that leaving ``with original.<name>(...) as result:`` writes ``result`` back
(:func:`write_back`): its new values and new keys land in ``original``; keys deleted from
``result`` stay; nothing is written when the block raises.

Example:
    >>> import torch
    >>> from tensordict import TensorDict
    >>> from tensordict.base import LAST_OP_MAPS
    >>> td = TensorDict(a=torch.zeros(2, 3), batch_size=[2, 3])
    >>> t = td.transpose(0, 1).clone()
    >>> t["a"] += 1
    >>> LAST_OP_MAPS["transpose"](t, (0, 1), {}, td)["a"].sum()
    tensor(6.)
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import Any

import torch

_Reverse = Callable[[Any, Sequence[Any], dict[str, Any], Any], Any]

#: How a result was made: ``(op name, args, kwargs or None, weak reference to the
#: original)``; a plain tuple, told apart from the lock actions of an exit stack by its
#: class.
OpRecord = tuple[str, tuple[Any, ...], "dict[str, Any] | None", "weakref.ref[Any]"]


def made_by(result: Any, op: str, args: tuple[Any, ...], kwargs: dict[str, Any] | None,
            original: Any) -> Any:
    """Remember on ``result`` that it is ``original.<op>(*args, **kwargs)`` (``op`` one of
    :data:`LAST_OP_MAPS`), for ``with`` to write it back; returns ``result``.

    The record replaces whatever ``result``'s exit stack held (the ``lock_`` of a result
    locked like its original is no exit of the caller's). It keeps ``original`` only
    weakly: a result does not keep the collection it came from alive. A result that is
    ``original`` itself was written in place: nothing is recorded.

    >>> td = TensorDict(a=torch.zeros(2, 3), batch_size=[2, 3])
    >>> with td.flatten(0, 1) as flat:
    ...     flat["b"] = torch.ones(6)
    >>> td["b"].shape
    torch.Size([2, 3])
    """
    if result is not original and hasattr(result, "_exit_stack"):
        result._exit_stack = [(op, args, kwargs, weakref.ref(original))]
    return result


def write_back(result: Any, record: OpRecord) -> None:
    """Write ``result`` back into the original it was made from (see :func:`made_by`)
    through the inverse op; nothing when that original is gone."""
    op, args, kwargs, original_ref = record
    original = original_ref()
    if original is not None:
        LAST_OP_MAPS[op](result, args, kwargs or {}, original)


def _write_back(out: Any, value: Any) -> Any:
    if out.is_locked:
        out.update_(value)
    else:
        out.update(value)
    return out


def _arg(args: Sequence[Any], kwargs: dict[str, Any], i: int, name: str,
         default: Any = None) -> Any:
    return args[i] if len(args) > i else kwargs.get(name, default)


def _reverse_reshape(self: Any, args: Sequence[Any], kwargs: dict[str, Any], out: Any) -> Any:
    """view, flatten, unflatten, unsqueeze, squeeze(dim), atleast_*d: back to the shape."""
    return _write_back(out, self.reshape(out.batch_size))


def _reverse_squeeze(self: Any, args: Sequence[Any], kwargs: dict[str, Any], out: Any) -> Any:
    if _arg(args, kwargs, 0, "dim") is None:
        raise RuntimeError("Cannot use td.squeeze() as a decorator if the dimension is "
                           "implicit.")
    return _reverse_reshape(self, args, kwargs, out)


def _reverse_transpose(self: Any, args: Sequence[Any], kwargs: dict[str, Any], out: Any
                       ) -> Any:
    dims = list(args) or [kwargs.get("dim0"), kwargs.get("dim1")]
    return _write_back(out, self.transpose(*dims))


def _reverse_permute(self: Any, args: Sequence[Any], kwargs: dict[str, Any], out: Any) -> Any:
    dims = args[0] if len(args) == 1 and not isinstance(args[0], int) else args
    dims = dims or kwargs["dims"]
    inverse = torch.argsort(torch.tensor([d % len(dims) for d in dims])).tolist()
    return _write_back(out, self.permute(*inverse))


def _reverse_movedim(self: Any, args: Sequence[Any], kwargs: dict[str, Any], out: Any) -> Any:
    source = _arg(args, kwargs, 0, "source")
    destination = _arg(args, kwargs, 1, "destination")
    return _write_back(out, self.movedim(destination, source))


def _reverse_flip(self: Any, args: Sequence[Any], kwargs: dict[str, Any], out: Any) -> Any:
    return _write_back(out, self.flip(_arg(args, kwargs, 0, "dims")))


def _reverse_fliplr(self: Any, args: Sequence[Any], kwargs: dict[str, Any], out: Any) -> Any:
    return _write_back(out, self.fliplr())


def _reverse_flipud(self: Any, args: Sequence[Any], kwargs: dict[str, Any], out: Any) -> Any:
    return _write_back(out, self.flipud())


def _reverse_roll(self: Any, args: Sequence[Any], kwargs: dict[str, Any], out: Any) -> Any:
    shifts = _arg(args, kwargs, 0, "shifts")
    negated = -shifts if isinstance(shifts, int) else [-s for s in shifts]
    return _write_back(out, self.roll(negated, _arg(args, kwargs, 1, "dims")))


def _reverse_rot90(self: Any, args: Sequence[Any], kwargs: dict[str, Any], out: Any) -> Any:
    k = _arg(args, kwargs, 0, "k", 1)
    return _write_back(out, self.rot90(-k, _arg(args, kwargs, 1, "dims", (0, 1))))


def _reverse_flatten_keys(self: Any, args: Sequence[Any], kwargs: dict[str, Any], out: Any
                          ) -> Any:
    return _write_back(out, self.unflatten_keys(_arg(args, kwargs, 0, "separator", ".")))


def _reverse_unflatten_keys(self: Any, args: Sequence[Any], kwargs: dict[str, Any], out: Any
                            ) -> Any:
    return _write_back(out, self.flatten_keys(_arg(args, kwargs, 0, "separator", ".")))


def _reverse_to(self: Any, args: Sequence[Any], kwargs: dict[str, Any], out: Any) -> Any:
    """Back on the device and dtype of each original leaf."""
    def back(value: Any, original: Any) -> Any:
        if isinstance(original, torch.Tensor):
            return value.to(device=original.device, dtype=original.dtype)
        return value

    return _write_back(out, self.apply(back, out, default=None))


def _reverse_lock(self: Any, args: Sequence[Any], kwargs: dict[str, Any], out: Any) -> Any:
    return out.unlock_()


def _reverse_unlock(self: Any, args: Sequence[Any], kwargs: dict[str, Any], out: Any) -> Any:
    return out.lock_()


def _reverse_to_module(self: Any, args: Sequence[Any], kwargs: dict[str, Any], out: Any
                       ) -> Any:
    """``self`` is the swap ``to_module`` returned: put it back into the module."""
    self.to_module(_arg(args, kwargs, 0, "module"), return_swap=False)
    return out


LAST_OP_MAPS: dict[str, _Reverse] = {
    "lock_": _reverse_lock, "unlock_": _reverse_unlock,
    "transpose": _reverse_transpose, "swapaxes": _reverse_transpose,
    "swapdims": _reverse_transpose, "permute": _reverse_permute,
    "movedim": _reverse_movedim, "moveaxis": _reverse_movedim,
    "view": _reverse_reshape, "flatten": _reverse_reshape, "unflatten": _reverse_reshape,
    "unsqueeze": _reverse_reshape, "squeeze": _reverse_squeeze,
    "atleast_1d": _reverse_reshape, "atleast_2d": _reverse_reshape,
    "atleast_3d": _reverse_reshape, "flip": _reverse_flip, "fliplr": _reverse_fliplr,
    "flipud": _reverse_flipud, "roll": _reverse_roll, "rot90": _reverse_rot90,
    "flatten_keys": _reverse_flatten_keys, "unflatten_keys": _reverse_unflatten_keys,
    "to": _reverse_to, "to_module": _reverse_to_module,
}
