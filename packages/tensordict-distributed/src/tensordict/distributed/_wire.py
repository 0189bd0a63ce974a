"""Moving bytes between ranks: wire devices, byte views, headers and clear failures.

Point-to-point transfers move every tensor as its raw bytes (a ``uint8`` view), so any
dtype travels. A tensor that is not contiguous, or not on the device the backend needs
(CPU for gloo, CUDA for NCCL), goes through a staging copy.

Example:
    >>> import torch
    >>> byte_view(torch.ones(2, dtype=torch.float16)).shape
    torch.Size([4])
"""

from __future__ import annotations

import base64
import json
import math
import pickle
import random
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import torch
import torch.distributed as dist

from tensordict.extending import UnsafePickleError, loads_data

#: First word of every TensorDict header ("TDIC").
MAGIC = 0x54444943


class PeerError(RuntimeError):
    """A transfer with another rank failed: the peer exited, timed out, or did not call
    the matching method."""


class StructureMismatchError(ValueError):
    """Two ranks tried to exchange TensorDicts of different structures."""


def wire_device(group: Any = None) -> torch.device:
    """The device tensors must be on for ``group``'s backend (CUDA for NCCL, else CPU)."""
    if dist.get_backend(group) == "nccl":
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def byte_view(tensor: torch.Tensor) -> torch.Tensor:
    """A flat ``uint8`` view of a contiguous tensor."""
    return tensor.reshape(-1).view(torch.uint8)


def from_bytes(data: bytes, device: torch.device) -> torch.Tensor:
    """``data`` as a ``uint8`` tensor on ``device``."""
    return torch.frombuffer(bytearray(data), dtype=torch.uint8).to(device)


def to_bytes(tensor: torch.Tensor) -> bytes:
    """The bytes of a ``uint8`` tensor (inverse of :func:`from_bytes`)."""
    return tensor.cpu().numpy().tobytes()


def outgoing(tensor: torch.Tensor, device: torch.device) -> torch.Tensor:
    """The bytes to send for ``tensor`` (staged on ``device`` and made contiguous)."""
    if tensor.device != device:
        if tensor.device.type == "meta":
            raise ValueError("cannot send a tensor on the 'meta' device")
        tensor = tensor.to(device)
    return byte_view(tensor.contiguous())


class Incoming:
    """Where the data of one received (or reduced in place) tensor lands, and how it
    reaches the tensor: directly, or through a staging buffer on ``device``."""

    __slots__ = ("target", "buffer")

    def __init__(self, target: torch.Tensor, device: torch.device, load: bool = False) -> None:
        self.target = target
        if target.device == device and target.is_contiguous():
            self.buffer = target
        elif load:
            self.buffer = target.to(device).contiguous()
        else:
            self.buffer = torch.empty(target.shape, dtype=target.dtype, device=device)

    @property
    def bytes(self) -> torch.Tensor:
        return byte_view(self.buffer)

    def finish(self) -> None:
        """Copy a staged buffer into the target tensor."""
        if self.buffer is not self.target:
            self.target.copy_(self.buffer)


def tags(init_tag: int, count: int, pseudo_rand: bool) -> list[int]:
    """``count`` message tags from ``init_tag``: consecutive, or (``pseudo_rand``) drawn
    by a generator seeded with ``init_tag``, which both ranks reproduce."""
    if not pseudo_rand:
        return list(range(init_tag, init_tag + count))
    return random.Random(init_tag).sample(range(init_tag, init_tag + (1 << 20)), count)


class PickledDataError(ValueError):
    """A peer sent non-tensor data that only ``pickle`` can rebuild (which could run any
    code of the peer's choosing here), and the receiving call did not pass
    ``allow_pickle=True``."""


# Non-tensor values travel as JSON. A JSON object is always one of these tags, so plain
# values never collide with them (dicts travel as "$m" too). "$d" holds a pickle of plain
# data (the restricted unpickler rebuilds it: no permission needed), "$p" any other.
_TUPLE, _MAP, _BYTES, _FLOAT, _DATA, _PICKLE = "$t", "$m", "$b", "$f", "$d", "$p"


def encode_objects(objects: list[Any]) -> tuple[bytes, bool]:
    """``(payload, pickled)``: ``objects`` as JSON, with tags for what JSON lacks
    (tuples, dicts with any keys, bytes, NaN and infinities); a value of any other type
    is pickled inside its tag, and ``pickled`` tells whether any pickle needs more than
    plain data (:func:`tensordict._restricted_pickle.loads_data`: sets, tensors...).

    >>> payload, pickled = encode_objects([("a", 1), {2: b"x"}, float("nan"), {3}])
    >>> pickled, decode_objects(payload)
    (False, [('a', 1), {2: b'x'}, nan, {3}])
    """
    pickled: list[bool] = []
    encoded = [_encode(obj, pickled) for obj in objects]
    return json.dumps(encoded, allow_nan=False, separators=(",", ":")).encode(), bool(pickled)


def _encode(value: Any, pickled: list[bool]) -> Any:
    kind = type(value)
    if value is None or kind in (bool, int, str):
        return value
    if kind is float:
        return value if math.isfinite(value) else {_FLOAT: repr(value)}
    if kind is list:
        return [_encode(item, pickled) for item in value]
    if kind is tuple:
        return {_TUPLE: [_encode(item, pickled) for item in value]}
    if kind is dict:
        return {_MAP: [[_encode(k, pickled), _encode(v, pickled)] for k, v in value.items()]}
    if kind is bytes:
        return {_BYTES: base64.b64encode(value).decode()}
    data = pickle.dumps(value)
    if _plain(data):
        return {_DATA: base64.b64encode(data).decode()}
    pickled.append(True)
    name = f"{kind.__module__}.{kind.__qualname__}"
    return {_PICKLE: [name, base64.b64encode(data).decode()]}


def _plain(data: bytes) -> bool:
    """Whether the restricted unpickler rebuilds ``data`` (so a receiver may)."""
    try:
        loads_data(data)
    except (pickle.UnpicklingError, RuntimeError, ValueError):
        return False
    return True


def decode_objects(payload: bytes, allow_pickle: bool = False,
                   names: list[str] | None = None) -> list[Any]:
    """Inverse of :func:`encode_objects`. A pickled value raises
    :class:`PickledDataError` naming its entry (``names[i]`` for the i-th object)
    unless ``allow_pickle`` is true.

    >>> payload, _ = encode_objects([range(2)])
    >>> try:
    ...     decode_objects(payload, names=["'steps'"])
    ... except PickledDataError as err:
    ...     print(str(err).split(":")[0])
    the non-tensor entries 'steps' (a builtins.range) were pickled by the sender
    """
    try:
        items = json.loads(payload.decode())
    except ValueError as err:  # not UTF-8, or not JSON (e.g. a raw pickle)
        raise ValueError(f"malformed non-tensor data received (not JSON: {err})") from None
    if not isinstance(items, list):
        raise ValueError(f"malformed non-tensor data received: {items!r:.80}")
    refused: list[str] = []
    out = []
    for i, item in enumerate(items):
        try:
            out.append(_decode(item, allow_pickle))
        except _Refused as refusal:
            refused.append(f"{names[i] if names else i} (a {refusal.args[0]})")
    if refused:
        raise PickledDataError(
            f"the non-tensor entries {', '.join(refused)} were pickled by the sender: "
            "unpickling data from another rank lets that rank run code here. Pass "
            "allow_pickle=True to the receiving call only if you trust every sender, or "
            "send JSON-like values (None, bool, int, float, str, bytes, list, tuple, dict)."
        )
    return out


class _Refused(Exception):
    """A pickled value met while pickles are not allowed (args: its type's name)."""


def _decode(value: Any, allow_pickle: bool) -> Any:
    if isinstance(value, list):
        return [_decode(item, allow_pickle) for item in value]
    if not isinstance(value, dict):
        return value
    if len(value) != 1:
        raise ValueError(f"malformed non-tensor data received: {value!r:.80}")
    ((tag, body),) = value.items()
    if tag == _TUPLE:
        return tuple(_decode(item, allow_pickle) for item in body)
    if tag == _MAP:
        return {_decode(k, allow_pickle): _decode(v, allow_pickle) for k, v in body}
    if tag == _BYTES:
        return base64.b64decode(body)
    if tag == _FLOAT:
        return float(body)
    if tag == _DATA:
        data = base64.b64decode(body)
        if allow_pickle:
            return pickle.loads(data)
        try:
            return loads_data(data)
        except UnsafePickleError as err:  # a sender that hid code in a data pickle
            raise _Refused(err.name) from None
    if tag == _PICKLE:
        if not allow_pickle:
            raise _Refused(body[0])
        return pickle.loads(base64.b64decode(body[1]))
    raise ValueError(f"malformed non-tensor data received: unknown tag {tag!r}")


@contextmanager
def peer_errors(action: str, peer: int | str) -> Iterator[None]:
    """Turn a backend failure into a :class:`PeerError` naming the action and the peer."""
    try:
        yield
    except (StructureMismatchError, PeerError):
        raise
    except RuntimeError as err:
        raise PeerError(
            f"{action} with rank {peer} failed: {err}\nThe other rank may have exited or "
            "crashed, or it did not call the matching method (with the same init_tag and "
            "group) before the process group's timeout."
        ) from err


class Pending:
    """An asynchronous operation: :meth:`wait` completes it, then runs ``on_done`` (copy a
    staging buffer into its leaf, set non-tensor leaves...)."""

    def __init__(self, work: Any, on_done: Callable[[], None] | None, action: str,
                 peer: int | str) -> None:
        self._work, self._on_done, self._action, self._peer = work, on_done, action, peer
        self._done = False

    def wait(self) -> bool:
        if not self._done:
            wait_all([self._work], self._action, self._peer, self._on_done)
            self._done = True
        return True

    def is_completed(self) -> bool:
        return self._done or self._work.is_completed()


def wait_all(works: list[Any], action: str, peer: int | str,
             then: Callable[[], None] | None = None) -> None:
    """Wait for ``works`` (failures become :class:`PeerError`), then run ``then``."""
    with peer_errors(action, peer):
        for work in works:
            work.wait()
    if then is not None:
        then()
