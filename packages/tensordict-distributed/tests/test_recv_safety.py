"""Receiving non-tensor data never unpickles what another rank sent unless the receiving
call says ``allow_pickle=True``: two real processes over a gloo group exchange
JSON-encodable values, a payload whose unpickling would create a file, and a forged
raw-pickle payload."""

from __future__ import annotations

import base64
import json
import math
import os
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

# Every rank runs this script: it joins a two-rank gloo group through a file store, runs
# the scenario named on the command line and prints its result as the last line (JSON).
_SCRIPT = textwrap.dedent('''
    import datetime, json, os, sys
    import torch
    import torch.distributed as dist
    from tensordict import NonTensorStack, TensorDict
    from tensordict.distributed import PickledDataError

    scenario, rank, store, folder = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]


    class Evil:
        """Unpickling it opens (so creates) a file: stands for any code a peer may run."""

        def __init__(self, name):
            self.path = os.path.join(folder, name)

        def __reduce__(self):
            return (open, (self.path, "w"))


    def data(value, fill=0.0, big=False):
        shape = (2, 600) if big else (2, 3)  # 600 floats: too big to travel in the header
        td = TensorDict(x=torch.full(shape, fill), batch_size=[2])
        td.set_non_tensor("v", value)
        return td


    def refused(call):
        try:
            call()
        except PickledDataError as err:
            return str(err)
        return "no error"


    def point_to_point():
        out = {}
        values = {"str": "text", "tuple": ("a", 1, (2.5, None)), "dict": {1: [True, b"x"]},
                  "nan": float("nan"), "inf": float("-inf"), "set": {1, 2},
                  "tensors": {"w": torch.ones(1)}}  # (the last two: plain-data pickles)
        for i, (name, value) in enumerate(values.items()):
            if rank == 0:
                data(value, 1.0).send(1, init_tag=10 * i)
            else:
                td = data(None)
                td.recv(0, init_tag=10 * i)
                got = td["v"]
                out[name] = repr(got) if name in ("nan", "inf") else got == value
                out[name + "_tensor"] = bool((td["x"] == 1).all())
        if rank == 0:
            stack = TensorDict(x=torch.ones(2, 3), batch_size=[2])
            stack.set("v", NonTensorStack.from_list([("p", 1), {"q": 2}], [2]))
            stack.send(1, init_tag=100)
        else:
            td = data(None)
            td.recv(0, init_tag=100)
            out["stack"] = td["v"] == [("p", 1), {"q": 2}]
        return out


    def malicious():
        out = {}
        cases = [("small", False, False), ("big", True, False), ("async", False, True)]
        for i, (name, big, use_irecv) in enumerate(cases):
            if rank == 0:
                data(Evil(name), 5.0, big).send(1, init_tag=20 * i)
                data("after", 7.0, big).send(1, init_tag=20 * i + 10)
            else:
                td = data("before", 0.0, big)
                kept = td["x"]
                if use_irecv:
                    out[name] = refused(lambda: td.irecv(0, init_tag=20 * i))
                else:
                    out[name] = refused(lambda: td.recv(0, init_tag=20 * i))
                out[name + "_unchanged"] = td["v"] == "before" and bool((kept == 0).all()) \\
                    and td["x"] is kept
                td.recv(0, init_tag=20 * i + 10)  # the pair is still in step
                out[name + "_next"] = td["v"] == "after" and bool((td["x"] == 7).all())
        return out


    def opt_in():
        if rank == 0:
            data(range(3)).send(1)
            data(Evil("trusted")).send(1, init_tag=10)
            return None
        td = data(None)
        td.recv(0, allow_pickle=True)
        received = td["v"] == range(3)
        td.recv(0, init_tag=10, allow_pickle=True)
        return received


    def forged():
        import pickle
        from tensordict.distributed import _p2p

        if rank == 0:  # a peer that sends raw pickle bytes, or hides its pickle tag
            _p2p.encode_objects = lambda values: (pickle.dumps([Evil("raw")]), False)
            data("x").send(1)
            _p2p.encode_objects = lambda values: (json.dumps(
                [{"$p": ["x", __import__("base64").b64encode(
                    pickle.dumps(Evil("hidden"))).decode()]}]).encode(), False)
            data("x").send(1, init_tag=10)
            return None
        out = {}
        for name, tag in (("raw", 0), ("hidden", 10)):
            try:
                data("x").recv(0, init_tag=tag)
                out[name] = "no error"
            except ValueError as err:
                out[name] = f"{type(err).__name__}: {err}"
        return out


    def collectives():
        out = {}
        mine = data(Evil("gathered") if rank == 1 else "fine")
        out["all_gather"] = refused(lambda: mine.all_gather())
        out["gather_and_stack"] = refused(lambda: mine.gather_and_stack(0)) if rank == 0 \\
            else mine.gather_and_stack(0)
        source = data(Evil("broadcast"), 3.0) if rank == 0 else TensorDict()
        out["broadcast"] = refused(lambda: source.broadcast(0)) if rank == 1 \\
            else source.broadcast(0) is source
        parts = [data("zero"), data(Evil("scattered"))] if rank == 0 else None
        out["scatter"] = refused(lambda: TensorDict().scatter(0, parts))
        part = TensorDict().scatter(0, [data("zero"), data(range(2))] if rank == 0 else None,
                                    allow_pickle=True)
        out["scatter_opt_in"] = part["v"]  == (range(2) if rank == 1 else "zero")
        shared = data(("tuple", 1.5) if rank == 0 else "other")
        out["broadcast_json"] = shared.broadcast(0)["v"] == ("tuple", 1.5)
        return out


    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=2,
                            timeout=datetime.timedelta(seconds=30))
    try:
        result = globals()[scenario]()
    finally:
        dist.destroy_process_group()
    print(json.dumps(result, default=repr))
''')


def run_pair(tmp_path: Path, scenario: str) -> list:
    """Run ``scenario`` on ranks 0 and 1 (two processes); their results, in rank order."""
    script = tmp_path / "rank.py"
    script.write_text(_SCRIPT)
    store = tmp_path / f"store-{scenario}"
    procs = [subprocess.Popen([sys.executable, str(script), scenario, str(rank), str(store),
                               str(tmp_path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True)
             for rank in range(2)]
    outputs = []
    try:
        for proc in procs:
            stdout, stderr = proc.communicate(timeout=120)
            assert proc.returncode == 0, stderr
            outputs.append(json.loads(stdout.strip().splitlines()[-1]))
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return outputs


def test_json_values_and_stacks_round_trip(tmp_path):
    _, got = run_pair(tmp_path, "point_to_point")
    assert got.pop("nan") == "nan" and got.pop("inf") == "-inf"
    assert got == dict.fromkeys(
        ["str", "str_tensor", "tuple", "tuple_tensor", "dict", "dict_tensor", "nan_tensor",
         "inf_tensor", "set", "set_tensor", "tensors", "tensors_tensor", "stack"], True)


def test_pickled_payload_is_refused_and_runs_nothing(tmp_path):
    _, got = run_pair(tmp_path, "malicious")
    for name in ("small", "big", "async"):
        assert not (tmp_path / name).exists()
        assert got[name].startswith("the non-tensor entries 'v' (a __main__.Evil)"), got[name]
        assert "allow_pickle=True" in got[name]
        assert got[name + "_unchanged"] is True, name
        assert got[name + "_next"] is True, name


def test_allow_pickle_opts_in(tmp_path):
    _, received = run_pair(tmp_path, "opt_in")
    assert received is True
    # the same kind of payload as above does run once the receiver opts in: the check
    # that refused it is what kept the file from being created
    assert (tmp_path / "trusted").exists()


def test_forged_payloads_are_not_unpickled(tmp_path):
    _, got = run_pair(tmp_path, "forged")
    assert not (tmp_path / "raw").exists() and not (tmp_path / "hidden").exists()
    assert got["raw"].startswith("ValueError: malformed non-tensor data received (not JSON")
    assert got["hidden"].startswith("PickledDataError: the non-tensor entries 'v' (a x)")


def test_collectives_refuse_pickled_values(tmp_path):
    root, other = run_pair(tmp_path, "collectives")
    for name in ("gathered", "broadcast", "scattered"):
        assert not (tmp_path / name).exists()
    assert root["all_gather"].startswith("the non-tensor entries 'v' (a __main__.Evil)")
    assert root["gather_and_stack"].startswith("the non-tensor entries 'v'")
    # a rank's own values are not received: rank 1 reads its own object and rank 0's str
    assert other["all_gather"] == "no error"
    assert other["gather_and_stack"] is None
    assert other["broadcast"].startswith("the non-tensor entries 'v' (a __main__.Evil)")
    assert root["broadcast"] is True
    assert other["scatter"].startswith("the non-tensor entries 'v'")
    assert root["scatter"] == "no error"
    assert root["scatter_opt_in"] is True and other["scatter_opt_in"] is True
    assert root["broadcast_json"] is True and other["broadcast_json"] is True


def test_codec_covers_json_gaps_and_tags_the_rest():
    from tensordict.distributed._wire import PickledDataError, decode_objects, encode_objects

    values = [None, True, 3, "s", [1, (2, b"\x00")], {("k", 1): {"$t": 1}}, float("inf")]
    payload, pickled = encode_objects(values)
    assert not pickled and decode_objects(payload) == values
    nan, _ = encode_objects([float("nan")])
    assert math.isnan(decode_objects(nan)[0])
    payload, pickled = encode_objects([1, range(3)])
    assert pickled
    with pytest.raises(PickledDataError, match=r"entries \('a', 'b'\) \(a builtins.range\)"):
        decode_objects(payload, names=["'x'", "('a', 'b')"])
    assert decode_objects(payload, allow_pickle=True) == [1, range(3)]
    plain = [{3}, 1j, {"w": torch.arange(3.0)}]
    payload, pickled = encode_objects(plain)
    assert not pickled  # plain data: the restricted unpickler rebuilds it
    got = decode_objects(payload)
    assert got[:2] == [{3}, 1j] and torch.equal(got[2]["w"], torch.arange(3.0))


def test_code_hidden_in_a_plain_data_tag_is_refused(tmp_path):
    from tensordict.distributed._wire import PickledDataError, decode_objects

    class Evil:
        def __reduce__(self):
            return (os.mkdir, (str(tmp_path / "ran"),))

    forged = json.dumps([{"$d": base64.b64encode(pickle.dumps(Evil())).decode()}]).encode()
    with pytest.raises(PickledDataError, match=r"entries 'v' \(a posix.mkdir\)"):
        decode_objects(forged, names=["'v'"])
    assert not (tmp_path / "ran").exists()
    with pytest.raises(ValueError, match="unknown tag"):
        decode_objects(b'[{"$zz": 1}]')
