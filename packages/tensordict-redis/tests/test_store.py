"""TensorDictStore against a real redis-server: the layout upstream 0.15.3 uses, one
round trip per multi-key read or write, checked writes, several processes on one store,
and a clear error in bounded time when the server is gone."""

from __future__ import annotations

import pickle
import sys
import time
from pathlib import Path

import pytest
import redis
import torch

import tensordict
from tensordict import NonTensorData, TensorDict
from tensordict.storage import IndexView
from tensordict.store import TensorDictStore

sys.path.insert(0, str(Path(__file__).parent))
from store_workers import read_obs, write_row  # noqa: E402


def sample() -> TensorDict:
    return TensorDict({
        "obs": torch.arange(12, dtype=torch.float32).view(4, 3),
        "done": torch.tensor([False, True, False, True]),
        "half": torch.arange(4, dtype=torch.bfloat16),
        "next": {"reward": torch.arange(4, dtype=torch.float64).view(4, 1)},
        "env": "cartpole",
        "cfg": NonTensorData({"lr": 0.5}, batch_size=[4]),
        "tags": ["a", "b", "c", "d"],
    }, batch_size=[4])


@pytest.fixture
def store(server):
    out = sample().to_store(**server)
    yield out
    out.close()


class Counting:
    """Counts the commands sent to the server (a pipeline counts as one)."""

    def __init__(self, store):
        self.calls = 0
        client = store._shared.client
        original = client.execute_command
        pipeline = client.pipeline

        def execute_command(*args, **kwargs):
            self.calls += 1
            return original(*args, **kwargs)

        def counted_pipeline(*args, **kwargs):
            pipe = pipeline(*args, **kwargs)
            execute = pipe.execute

            def run(*a, **k):
                self.calls += 1
                return execute(*a, **k)

            pipe.execute = run
            return pipe

        client.execute_command = execute_command
        client.pipeline = counted_pipeline


def test_round_trip(store, server):
    again = TensorDictStore.from_store(td_id=store._td_id, **server)
    expected = sample()
    assert again.batch_size == torch.Size([4])
    for key in ("obs", "done", "half", ("next", "reward")):
        assert again[key].dtype == expected[key].dtype
        assert torch.equal(again[key], expected[key])
    assert again["env"] == "cartpole" and again["cfg"] == {"lr": 0.5}
    assert again["tags"] == ["a", "b", "c", "d"]
    assert isinstance(again["next"], TensorDictStore)
    assert set(again.keys(True, True)) == set(expected.keys(True, True))
    local = again.to_tensordict()
    assert isinstance(local, TensorDict) and torch.equal(local["obs"], expected["obs"])


def test_upstream_layout(store, server):
    client = redis.Redis(**server)
    space = f"tensordict:{{{store._td_id}}}:"
    assert client.get(space + "__batch_size__") == b"[4]"
    assert client.get(space + "__device__") == b""
    assert client.smembers(space + "__keys__") == {
        b"obs", b"done", b"half", b"next.reward", b"env", b"cfg", b"tags"}
    assert client.hgetall(space + "m:obs") == {b"shape": b"[4, 3]",
                                                b"dtype": b"torch.float32"}
    assert client.get(space + "d:obs") == sample()["obs"].numpy().tobytes()
    assert client.hgetall(space + "m:env") == {b"is_non_tensor": b"1", b"encoding": b"json"}
    assert client.get(space + "d:env") == b'"cartpole"'
    assert client.hget(space + "m:tags", "encoding") == b"json_array"


@pytest.mark.parametrize("index", [2, -1, slice(1, 3), slice(0, 4, 2),
                                   torch.tensor([3, 0, 3]), [1, 2],
                                   torch.tensor([True, False, False, True]), (1,),
                                   (Ellipsis,)])
def test_indexing_matches_in_memory(store, index):
    expected, view = sample()[index], store[index]
    assert isinstance(view, IndexView) and view.batch_size == expected.batch_size
    got = view.to_tensordict()
    assert isinstance(got, TensorDict) and got.batch_size == expected.batch_size
    for key in expected.keys(True, True):
        value = expected[key]
        if isinstance(value, torch.Tensor):
            assert torch.equal(got[key], value), key
        else:
            assert got[key] == value, key


def test_one_round_trip_per_multi_key_read_and_write(store):
    store[0].to_tensordict()  # the keys, shapes and dtypes of the leaves are cached now
    counter = Counting(store)
    view = store[1:3]
    assert counter.calls == 0  # a view: read when read
    view.to_tensordict()
    assert counter.calls == 1
    counter.calls = 0
    view["obs"]  # its rows alone
    assert counter.calls == 1
    counter.calls = 0
    store[torch.tensor([0, 2])] = TensorDict({"obs": torch.zeros(2, 3),
                                              "next": {"reward": torch.ones(2, 1)}}, [2])
    assert counter.calls == 1
    counter.calls = 0
    store.to_tensordict()
    assert counter.calls == 1


def test_writes(store, server):
    store["new"] = torch.ones(4, 2)
    store["obs"] = torch.zeros(4, 5)
    store["made", "on", "the_way"] = torch.full((4,), 2.0)
    store[1] = TensorDict({"done": torch.tensor(True), "next": {"reward": torch.tensor([9.0])}}, [])
    store[2:] = {"new": torch.full((2, 2), 7.0)}
    store[torch.tensor([3, 0])] = {"new": torch.tensor([[5.0, 5.0], [6.0, 6.0]])}
    del store["half"]
    again = TensorDictStore.from_store(td_id=store._td_id, **server)
    assert again["obs"].shape == (4, 5)
    assert again["made", "on"].batch_size == torch.Size([4])
    assert again["done"].tolist() == [False, True, False, True]
    assert again["next", "reward"][1].item() == 9.0
    assert again["new"][:, 0].tolist() == [6.0, 1.0, 7.0, 5.0]
    assert "half" not in again.keys()


def test_in_place_ops_write_back(store):
    store.del_("done")
    store.del_("env")
    store.del_("cfg")
    store.del_("tags")
    store.zero_()
    store += 2
    store.mul_(3)
    store.update_at_({"obs": torch.ones(3)}, 0)
    assert store["obs"][:, 0].tolist() == [1.0, 6.0, 6.0, 6.0]
    assert store["half"].tolist() == [6.0] * 4


def test_bad_writes_change_nothing(store):
    with pytest.raises(RuntimeError, match="'obs'"):
        store[0] = TensorDict({"done": torch.tensor(True), "obs": torch.ones(5)}, [])
    with pytest.raises(RuntimeError, match=r"batch dimension mismatch.*'obs'"):
        store["obs"] = torch.zeros(3, 3)
    with pytest.raises(TypeError, match="thing"):
        store["thing"] = NonTensorData(object(), batch_size=[4])
    with pytest.raises(ValueError, match="cannot contain"):
        store["a.b"] = torch.zeros(4)
    assert store["done"].tolist() == [False, True, False, True]
    assert torch.equal(store["obs"], sample()["obs"])
    assert "thing" not in store.keys()
    store.lock_()
    with pytest.raises(RuntimeError, match="locked"):
        store["obs"] = torch.zeros(4, 3)
    with pytest.raises(RuntimeError, match="locked.*'nope'"):  # a new entry
        store[0] = TensorDict({"done": torch.tensor(True), "nope": torch.ones(())}, [])
    store.unlock_()
    assert "nope" not in store.keys() and not store["done"][0]


def test_two_processes_see_each_others_writes(store, server):
    ctx = torch.multiprocessing.get_context("spawn")
    writers = [ctx.Process(target=write_row, args=(store, row, 100 + row)) for row in (1, 3)]
    for process in writers:
        process.start()
    for process in writers:
        process.join(60)
        assert process.exitcode == 0
    assert store["obs"][:, 0].tolist() == [0.0, 101.0, 6.0, 103.0]
    store["obs"] = torch.full((4, 3), -1.0)
    with ctx.Pool(1) as pool:
        assert pool.apply(read_obs, (store,))[0] == [-1.0, -1.0, -1.0]


def test_pickled_as_a_location(store):
    clone = pickle.loads(pickle.dumps(store["next"]))
    assert isinstance(clone, TensorDictStore) and clone.batch_size == torch.Size([4])
    assert torch.equal(clone["reward"], sample()["next", "reward"])
    assert len(pickle.dumps(store)) < 1000


def test_closed_and_cleared(store, server):
    td_id = store._td_id
    store.clear_redis()
    assert redis.Redis(**server).keys(f"tensordict:{{{td_id}}}:*") == []
    store.close()
    with pytest.raises(RuntimeError, match="closed"):
        store["obs"]
    with pytest.raises(KeyError, match=f"No TensorDictStore with td_id='{td_id}' found at "
                       f"127.0.0.1:{server['port']} db=0 \\(prefix='tensordict'\\)"):
        TensorDictStore.from_store(td_id=td_id, **server)  # upstream's message
    assert redis.Redis(**server).keys(f"tensordict:{{{td_id}}}:*") == []  # none made


def test_dead_server_fails_fast(redis_port):
    with socket_closed() as port:
        start = time.monotonic()
        with pytest.raises(ConnectionError, match=f"127.0.0.1:{port}"):
            TensorDictStore(host="127.0.0.1", port=port, batch_size=[2], socket_timeout=0.5)
        assert time.monotonic() - start < 10


def test_names():
    assert tensordict.TensorDictStore is TensorDictStore
    assert TensorDict.to_store.__name__ == "to_store"


class socket_closed:
    """A local port nothing listens on."""

    def __enter__(self):
        import socket

        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        sock.close()
        return self.port

    def __exit__(self, *exc):
        return False


def test_from_schema_zeros_made_by_the_server(server):
    schema = {"obs": ([64, 64], torch.uint8), "next": {"reward": ([], torch.float32)}}
    store = TensorDict.from_schema(schema, batch_size=[100], storage="redis", **server)
    assert isinstance(store, TensorDictStore)
    assert store["obs"].shape == (100, 64, 64) and store["obs"].sum() == 0
    store[3] = {"obs": torch.ones(64, 64, dtype=torch.uint8)}
    assert store[2:4]["obs"].sum(dim=(1, 2)).tolist() == [0, 64 * 64]
    direct = TensorDictStore.from_schema({"a": ([2], torch.float64)}, batch_size=[3], **server)
    assert direct["a"].dtype == torch.float64 and direct["a"].shape == (3, 2)
