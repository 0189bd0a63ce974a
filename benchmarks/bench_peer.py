"""The peer process of the distributed benchmarks (rank 0): it sends what rank 1 asks for.

It lives in its own module so that a spawned process can import it by name.
"""

from __future__ import annotations

import datetime

import torch
import torch.distributed as dist

from tensordict import TensorDict

GROUPS, LEAVES_PER_GROUP, BATCH, WIDTH = 10, 10, 16, 10_000  # 100 leaves of 640 kB
SEND, ISEND, HAND, FLAT, TINY, TINY_HAND, STOP = range(7)


def payload() -> TensorDict:
    return TensorDict({
        f"group{g}": {f"leaf{i}": torch.full((BATCH, WIDTH), float(g * 10 + i))
                      for i in range(LEAVES_PER_GROUP)}
        for g in range(GROUPS)
    }, batch_size=[BATCH])


def tiny() -> TensorDict:
    return TensorDict(x=torch.ones(1))


def serve(store: str) -> None:
    """Rank 0: send what rank 1 asks for, until told to stop."""
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=0, world_size=2,
                            timeout=datetime.timedelta(seconds=60))
    td, small = payload(), tiny()
    leaves = [td.get(k) for k in sorted(td.keys(True, True))]
    flat = torch.zeros(GROUPS * LEAVES_PER_GROUP * BATCH * WIDTH)
    command = torch.zeros(1, dtype=torch.int64)
    while True:
        dist.recv(command, 1)
        what = int(command)
        if what == STOP:
            break
        if what == SEND:
            td.send(1)
        elif what == ISEND:
            td.isend(1)
        elif what == HAND:
            for leaf in leaves:
                dist.send(leaf, 1)
        elif what == FLAT:
            dist.send(flat, 1)
        elif what == TINY:
            small.send(1)
        elif what == TINY_HAND:
            dist.send(small["x"], 1)
    dist.destroy_process_group()
