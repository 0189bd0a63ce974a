"""A tour of tensordict: run ``tox -e demo`` (or ``python examples/tour.py``).

Each section is a function listed in SECTIONS. A section that needs a plugin package
catches the error raised when the package is missing and says what to install, so the
tour runs with any subset of the packages installed. The whole tour takes well under a
minute on a laptop; the documentation (docs/) explains each part at length.
"""

from __future__ import annotations

import datetime
import os
import tempfile
import time
from collections.abc import Callable

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn

import tensordict
from tensordict import TensorDict, lazy_stack
from tensordict.plugins import MissingMethodError


def sample() -> TensorDict:
    """Four steps of a toy episode."""
    return TensorDict(
        obs=torch.randn(4, 3),
        reward=torch.zeros(4, 1),
        agent=TensorDict(position=torch.zeros(4, 2), batch_size=[4]),
        batch_size=[4],
    )


def build() -> None:
    """A TensorDict: tensors (and sub-TensorDicts) sharing leading batch dims."""
    print(sample())


def index() -> None:
    """Indexing applies to every leaf at once; keys reach into nested TensorDicts."""
    td = sample()
    print("td[0]          ->", td[0])
    print("td[1:3]        ->", td[1:3])
    print("td['agent', 'position'].shape ->", tuple(td["agent", "position"].shape))
    print("td.reshape(2, 2).shape ->", tuple(td.reshape(2, 2).shape),
          "| (td + 1)['reward'].sum() ->", (td + 1)["reward"].sum().item())


def preallocate() -> None:
    """Lazy preallocation: an empty TensorDict fills itself in at the first write."""

    def step() -> TensorDict:
        return TensorDict(a=torch.randn(3), b=TensorDict(c=torch.zeros(2)))

    data = TensorDict(batch_size=[10])
    for i in torch.randperm(10).tolist():  # any order works
        data[i] = step()
    print("10 writes of a [] TensorDict into TensorDict(batch_size=[10]) ->", data)


def stack_lazily() -> None:
    """A lazy stack keeps its parts: heterogeneous shapes, writes that reach them."""
    episodes = [TensorDict(obs=torch.randn(n, 3), length=torch.tensor(n)) for n in (2, 3, 5)]
    stacked = lazy_stack(episodes)
    print(stacked)
    print("lengths:", stacked["length"].tolist(),
          "| padded obs:", tuple(stacked.get("obs", as_padded_tensor=True).shape))
    stacked["length"] = torch.zeros(3, dtype=torch.long)
    print("after a write to the stack, episodes[2]['length'] =", episodes[2]["length"].item())
    dense = torch.stack([TensorDict(a=torch.zeros(2)) for _ in range(3)])
    print("torch.stack is dense (as in 0.15.3):", type(dense).__name__, tuple(dense.shape))


def plugins() -> None:
    """Plugins found through the `tensordict` entry-point group."""
    installed = tensordict.plugins.plugin_distributions()
    if not installed:
        print("no plugin installed: pip install './packages/tensordict[all]' (see README)")
    for name, distribution in installed.items():
        print(f"  {name:<12} from {distribution}")


def needs_plugin(section: Callable[[], None]) -> Callable[[], None]:
    """Run ``section``; when a plugin it needs is missing, say which package to install."""

    def run() -> None:
        try:
            section()
        except (ImportError, MissingMethodError) as err:  # MissingPluginError is an ImportError
            print(f"skipped, a plugin is missing: {err}")

    run.__name__ = section.__name__
    run.__doc__ = section.__doc__
    return run


@needs_plugin
def storage() -> None:
    """Saving: td.save(prefix) and TensorDict.load(prefix) (the memmap storage backend)."""
    td = sample()
    with tempfile.TemporaryDirectory() as folder:
        td.save(folder)
        loaded = TensorDict.load(folder)
        print("saved to", folder, "and loaded back:", bool((loaded == td).all()))


@needs_plugin
def files() -> None:
    """Storage backends: HDF5, Zarr, safetensors, Parquet and MDS files (plugin packages).

    An HDF5 file or a Zarr store opens as a PersistentTensorDict: reads are lazy (only
    the rows an index selects), writes go to the file. A Redis server keeps a
    TensorDictStore that several processes share (tensordict-redis; not run here: it
    needs a server)."""
    td = sample()
    with tempfile.TemporaryDirectory() as folder:
        for name, to_file, open_file in (("h5", td.to_h5, tensordict.from_h5),
                                         ("zarr", td.to_zarr, tensordict.from_zarr)):
            to_file(os.path.join(folder, f"data.{name}")).close()
            with open_file(os.path.join(folder, f"data.{name}"), mode="r+") as ptd:
                ptd[0] = td[1]  # written to the file, checked first
                ptd[2:].zero_()  # an index is a view: in-place ops write the file too
                rows = ptd[:3].to_tensordict()  # reads three rows of each array
            print(f"  {name:<12} {type(ptd).__name__} batch {list(ptd.batch_size)}: row 0 "
                  f"is now row 1: {bool((rows[0] == td[1]).all())}, "
                  f"row 2 zeroed: {bool((rows[2] == 0).all())}")
        path = os.path.join(folder, "data.safetensors")
        td.to_safetensors(path)
        same = (tensordict.from_safetensors(path) == td).all()
        print(f"  {'safetensors':<12} one file, no pickle; loaded back equal: {bool(same)}")
        flat = TensorDict(x=td["obs"][:, 0], reward=td["reward"][:, 0], batch_size=[4])
        flat.to_parquet(os.path.join(folder, "data.parquet"))
        table = tensordict.from_parquet(os.path.join(folder, "data.parquet"))
        print(f"  {'parquet':<12} one row per element: {table.batch_size[0]} rows, "
              f"columns {sorted(table.keys())}")
        flat.to_mds(out=os.path.join(folder, "mds"))  # MosaicML Streaming shards
        print(f"  {'mds':<12} one sample per element: "
              f"{sorted(os.listdir(os.path.join(folder, 'mds')))}")


@needs_plugin
def tensorclass() -> None:
    """A tensorclass: a typed dataclass that behaves like a TensorDict (tensordict-tensorclass)."""
    from tensordict import TensorClass

    class Transition(TensorClass):
        obs: torch.Tensor
        reward: torch.Tensor
        info: str = ""

    batch = Transition(obs=torch.randn(8, 3), reward=torch.ones(8), info="run-1", batch_size=[8])
    print(batch[2:4])
    both = torch.stack([batch, batch])
    print("torch.stack ->", type(both).__name__, tuple(both.shape),
          "| batch[0].info ->", repr(batch[0].info))


def flip_and_cluster(data: TensorDict) -> None:
    """The preprocessing of the `dataset` section: runs in the worker processes of map."""
    data.set_("images", data["images"].flip(-2).clone())
    data.set_("labels", data["labels"] // 10)


@needs_plugin
def dataset() -> None:
    """A memory-mapped dataset, preprocessed in place by td.map with a progress bar."""
    n = 20_000
    template = TensorDict(images=torch.zeros(16, 16, 3, dtype=torch.uint8),
                          labels=torch.zeros((), dtype=torch.int64))
    with tempfile.TemporaryDirectory() as folder:
        start = time.perf_counter()
        data = template.expand(n).memmap_like(folder)  # sparse files: nothing written yet
        data["labels"][:] = torch.arange(n)
        data["images"][:, :, 0] = 1
        print(f"allocated {n} images on disk in {time.perf_counter() - start:.3f}s:", data)
        start = time.perf_counter()
        data.map(flip_and_cluster, num_workers=2, chunksize=1000, pbar=True)
        print(f"map over {n // 1000} chunks, 2 workers: {time.perf_counter() - start:.2f}s;",
              "labels[::4000] ->", data["labels"][::4000].tolist(),
              "| images flipped:", bool((data["images"][:, :, -1] == 1).all()))
        again = TensorDict.load_memmap(folder)
        print("reloaded from disk, a fancy index ->", again[torch.tensor([1, 10_000, 19_999])])


@needs_plugin
def training() -> None:
    """A TensorDictModule training loop: modules read and write keys (tensordict-nn)."""
    from tensordict.nn import TensorDictModule, TensorDictSequential

    x = torch.randn(512, 3)
    data = TensorDict(x=x, y=x @ torch.tensor([[1.0], [-2.0], [0.5]]) + 0.3, batch_size=[512])
    model = TensorDictSequential(
        TensorDictModule(nn.Linear(3, 32), in_keys=["x"], out_keys=["hidden"]),
        TensorDictModule(nn.ReLU(), in_keys=["hidden"], out_keys=["hidden"]),
        TensorDictModule(nn.Linear(32, 1), in_keys=["hidden"], out_keys=["y_hat"]),
    )
    loss_module = TensorDictModule(nn.MSELoss(reduction="none"), in_keys=["y_hat", "y"],
                                   out_keys=["loss"])
    optimizer = torch.optim.Adam(model.parameters(), lr=0.02)
    print("model:", model.in_keys, "->", model.out_keys)
    for epoch in range(1, 13):
        for batch in data[torch.randperm(512)].split(64):
            loss = loss_module(model(batch))["loss"].mean()
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
        if epoch % 4 == 0:
            with torch.no_grad():
                full = loss_module(model(data.clone()))["loss"].mean().item()
            print(f"  epoch {epoch:2d}: mse {full:.4f}")


def _best_time(fn: Callable[[], object], repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


@needs_plugin
def checkpoint() -> None:
    """A checkpoint with memmap: one file per tensor, a slice loads alone (tensordict-memmap)."""
    model = nn.Sequential(*[nn.Linear(1024, 1024) for _ in range(8)])
    params = TensorDict.from_module(model)
    size = sum(p.numel() * p.element_size() for p in model.parameters()) / 2**20
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "ckpt")
        memmap_s = _best_time(lambda: params.memmap(path, num_threads=2), repeat=5)
        torch_s = _best_time(lambda: torch.save(model.state_dict(), path + ".pt"), repeat=5)
        print(f"{size:.1f} MiB of parameters: td.memmap {memmap_s * 1e3:.1f} ms, "
              f"torch.save {torch_s * 1e3:.1f} ms (memmap / torch.save = "
              f"{memmap_s / torch_s:.2f})")
        expected = params.clone()
        with torch.no_grad():
            params.zero_()  # the live parameters of the model
        TensorDict.load_memmap(path).to_module(model)
        layer3 = TensorDict.load_memmap(os.path.join(path, "3"))  # one layer, alone
        print("loaded back into the model:",
              torch.equal(model[3].weight, expected["3", "weight"]),
              "| layer 3 alone:", layer3)


def _exchange(rank: int, store: str) -> None:
    """One of the two processes of the `distributed` section."""
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=2,
                            timeout=datetime.timedelta(seconds=30))
    try:
        data = TensorDict(obs=torch.zeros(3, 4), meta=TensorDict(step=torch.zeros(3)),
                          batch_size=[3])
        if rank == 1:
            data["obs"] += 1
            data["meta", "step"] = torch.arange(3.0)
            data.send(dst=0)
        else:
            data.recv(src=1)
            print(f"  rank 0 received from rank 1: obs.sum()={data['obs'].sum().item():.0f}, "
                  f"meta.step={data['meta', 'step'].tolist()}")
        data.all_reduce()
        if rank == 0:
            print(f"  after all_reduce on both ranks: obs.sum()={data['obs'].sum().item():.0f}")
    finally:
        dist.destroy_process_group()


def _receive(name: str, answers: mp.SimpleQueue) -> None:
    """The other process of the `hand_off` section: maps the segment, no copy."""
    from tensordict.shared_memory import receive

    batch = receive(name)
    answers.put((type(batch["obs"]).__name__, batch["obs"].sum().item(), batch.batch_size))


def hand_off() -> None:
    """Hand a TensorDict to another process without copying it (pickle 5, shared memory)."""
    import pickle

    from tensordict.shared_memory import share

    batch = TensorDict(obs=torch.ones(64, 1024), reward=torch.zeros(64), batch_size=[64])
    buffers: list[pickle.PickleBuffer] = []
    data = pickle.dumps(batch, protocol=5, buffer_callback=buffers.append)
    back = pickle.loads(data, buffers=buffers)  # what Ray or Dask do with the buffers
    print(f"pickle 5: a {len(data)}-byte stream and {len(buffers)} out-of-band buffers;",
          "rebuilt leaves view them:", back["obs"].data_ptr() == batch["obs"].data_ptr())
    ctx = mp.get_context("spawn")
    answers = ctx.SimpleQueue()
    with share(batch) as handle:  # one segment in /dev/shm, freed with its last user
        child = ctx.Process(target=_receive, args=(handle.name, answers))
        child.start()
        kind, total, size = answers.get()
        child.join()
    print(f"  the child mapped it by name: {kind} leaves (writes raise), "
          f"obs.sum()={total:.0f}, batch_size={list(size)}")


@needs_plugin
def distributed() -> None:
    """Two processes exchange a TensorDict over gloo (tensordict-distributed)."""
    TensorDict.send  # noqa: B018 - without the plugin: MissingMethodError, naming the package

    with tempfile.TemporaryDirectory() as folder:
        start = time.perf_counter()
        mp.start_processes(_exchange, args=(os.path.join(folder, "store"),), nprocs=2,
                           start_method="spawn")
        print(f"two processes: send/recv then all_reduce, in {time.perf_counter() - start:.1f}s")


SECTIONS: list[Callable[[], None]] = [
    build, index, preallocate, stack_lazily, plugins, storage, files, tensorclass, dataset,
    training, checkpoint, hand_off, distributed,
]


def main() -> None:
    torch.manual_seed(0)
    tour_start = time.perf_counter()
    for number, section in enumerate(SECTIONS, 1):
        title = (section.__doc__ or section.__name__).strip().splitlines()[0]
        print(f"\n== {number}. {title}")
        start = time.perf_counter()
        section()
        print(f"   ({time.perf_counter() - start:.2f}s)")
    print(f"\nThe tour took {time.perf_counter() - tour_start:.1f}s.")


if __name__ == "__main__":
    main()
