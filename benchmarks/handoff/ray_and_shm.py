"""Hand-off timings for the README table (issue 47): ``ray.put`` + ``ray.get`` of
TensorDicts of 1, 64 and 256 MB (10 and 1,000 leaves), of one raw tensor and one NumPy
array of the same bytes (the baselines), and a shared-memory hand-off to a child process
against ``torch.multiprocessing`` queues. Runs under any environment with ``ray`` and a
``tensordict`` (ours or upstream's: run it under both); prints one JSON object.

    python benchmarks/handoff/ray_and_shm.py [--rounds 5] [--no-ray] [--no-shm]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from functools import partial

import torch
import torch.multiprocessing as mp

from tensordict import TensorDict

SIZES_MB = (1, 64, 256)
LEAVES = (10, 1000)


def make(megabytes: int, leaves: int) -> TensorDict:
    per_leaf = (megabytes << 20) // 4 // leaves
    return TensorDict({f"k{i}": torch.ones(per_leaf) for i in range(leaves)})


def median_ms(fn, rounds: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def ray_timings(rounds: int) -> dict[str, float]:
    import ray
    ray.init(num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1",
             log_to_driver=False, object_store_memory=3 << 30)
    out = {}
    try:
        for megabytes in SIZES_MB:
            tensor = torch.ones((megabytes << 20) // 4)
            out[f"ray {megabytes} MB: raw tensor"] = median_ms(
                lambda t=tensor: ray.get(ray.put(t)), rounds)
            array = tensor.numpy()
            out[f"ray {megabytes} MB: numpy array"] = median_ms(
                lambda a=array: ray.get(ray.put(a)), rounds)
            for leaves in LEAVES:
                td = make(megabytes, leaves)
                out[f"ray {megabytes} MB: TensorDict, {leaves} leaves"] = median_ms(
                    lambda td=td: ray.get(ray.put(td)), rounds)
                if leaves > 10:  # one buffer in place of many (consolidate's copy counted)
                    out[f"ray {megabytes} MB: TensorDict, {leaves} leaves, consolidated"] = \
                        median_ms(lambda td=td: ray.get(ray.put(td.consolidate())), rounds)
    finally:
        ray.shutdown()
    return out


def _child(inbox, outbox, shm: bool) -> None:
    if shm:
        from tensordict.shared_memory import receive
    while True:
        item = inbox.get()
        if item is None:
            return
        td = receive(item) if shm else item
        outbox.put(float(td["k0"][0]))
        del td


def _hand_off(megabytes, leaves, share, inbox, outbox) -> None:
    td = make(megabytes, leaves)  # fresh: a queue moves storages once
    if share is not None:
        with share(td) as handle:
            inbox.put(handle.name)
            outbox.get()
    else:
        inbox.put(td)
        outbox.get()


def shm_timings(rounds: int) -> dict[str, float]:
    out = {}
    ctx = mp.get_context("spawn")
    for shm in (True, False):
        inbox, outbox = ctx.Queue(), ctx.Queue()
        child = ctx.Process(target=_child, args=(inbox, outbox, shm))
        child.start()
        try:
            from tensordict.shared_memory import share
        except ImportError:
            share = None
        for megabytes in SIZES_MB:
            for leaves in LEAVES:
                if shm and share is None:
                    continue
                build = median_ms(partial(make, megabytes, leaves), rounds)
                label = "shared_memory.share/receive" if shm else "torch.multiprocessing queue"
                out[f"process hand-off {megabytes} MB, {leaves} leaves: {label}"] = median_ms(
                    partial(_hand_off, megabytes, leaves, share if shm else None, inbox, outbox),
                    rounds) - build
        inbox.put(None)
        child.join()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--no-ray", action="store_true")
    parser.add_argument("--no-shm", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(1)
    results = {}
    if not args.no_ray:
        results.update(ray_timings(args.rounds))
    if not args.no_shm:
        results.update(shm_timings(args.rounds))
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
