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

import pickle
import random
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import torch
import torch.distributed as dist

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


def encode_objects(objects: Any) -> torch.Tensor:
    """Pickle ``objects`` into a ``uint8`` tensor (for non-tensor data of a trusted group)."""
    return torch.frombuffer(bytearray(pickle.dumps(objects)), dtype=torch.uint8)


def decode_objects(payload: torch.Tensor) -> Any:
    """Inverse of :func:`encode_objects`."""
    return pickle.loads(payload.cpu().numpy().tobytes())


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
