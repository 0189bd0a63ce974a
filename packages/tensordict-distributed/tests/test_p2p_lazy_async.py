"""Point-to-point transfers of lazy stacks (at the root, nested, of tensorclasses, with
TensorDicts of different shapes) and the coroutine forms ``asend``/``arecv``: two real
processes over a gloo group with a short timeout, so a hang fails fast."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from tensordict import TensorDict, lazy_stack

# Every rank runs this script: it joins a two-rank gloo group through a file store, runs
# the scenario named on the command line and prints its result as the last line (JSON).
_SCRIPT = textwrap.dedent('''
    import asyncio, datetime, json, sys
    import torch
    import torch.distributed as dist
    from tensordict import TensorDict, lazy_stack
    from tensordict.distributed import StructureMismatchError

    scenario, rank, store = sys.argv[1], int(sys.argv[2]), sys.argv[3]


    def step_class():  # tensordict-tensorclass is needed by its scenarios only
        from tensordict import TensorClass

        class Step(TensorClass):
            x: torch.Tensor
            tag: str = "a"

        return Step


    def ragged(fill, tags=("p", "q"), big=False):
        """A lazy stack of TensorDicts whose leaves differ in shape (big: past the header)."""
        n = 3000 if big else 3
        return lazy_stack([
            TensorDict(a=torch.full((n,), fill), n=TensorDict(c=torch.full((2,), fill)),
                       tag=tags[0]),
            TensorDict(a=torch.full((n + 1,), fill + 1), n=TensorDict(c=torch.full((2,), fill)),
                       tag=tags[1]),
        ])


    def nested(fill, tags=("p", "q")):
        return TensorDict(root=torch.full((2,), fill), stack=ragged(fill, tags), batch_size=[2])


    def read(td):
        return {"a": [t["a"].tolist() for t in td.tensordicts], "tags": td["tag"],
                "c": td["n", "c"].tolist()}


    def lazy_root():
        out = {}
        for i, big in enumerate((False, True)):
            if rank == 0:
                ragged(1.0, ("x", "y"), big).send(1, init_tag=10 * i)
            else:
                td = ragged(0.0, big=big)
                td.recv(0, init_tag=10 * i)
                got = read(td)
                out["big" if big else "small"] = [sum(a) for a in got["a"]] + [got["tags"]]
        return out


    def lazy_nested():
        if rank == 0:
            nested(1.0, ("x", "y")).isend(1)
            return None
        td = nested(0.0)
        td.irecv(0)
        return {"root": td["root"].tolist(), **read(td["stack"])}


    def lazy_tensorclass():
        Step = step_class()

        def steps(fill):
            return lazy_stack([Step(x=torch.full((2,), fill)), Step(x=torch.full((3,), fill),
                                                                   tag="b")])
        if rank == 0:
            out = steps(1.0)
            out.tag = ["c", "d"]
            out.send(1)
            return None
        got = steps(0.0)
        got.recv(0)
        return {"x": [t.x.tolist() for t in got.unbind(0)], "tag": got.tag}


    def lazy_mismatch():
        """A stack of another length: the receiver says which keys differ, writes nothing,
        and the pair stays in step."""
        if rank == 0:
            lazy_stack([TensorDict(a=torch.ones(3))] * 3).send(1)
            ragged(5.0).send(1, init_tag=10)
            return None
        td = ragged(0.0)
        try:
            td.recv(0)
            error = "no error"
        except StructureMismatchError as err:
            error = str(err)
        untouched = [t["a"].tolist() for t in td.tensordicts] == [[0.0] * 3, [1.0] * 4]
        td.recv(0, init_tag=10)
        return {"error": error, "untouched": untouched, "next": read(td)["a"][0]}


    def coroutines():
        Step = step_class()

        async def main():
            if rank == 0:
                sent = [await TensorDict(a=torch.ones(3)).asend(1),
                        await ragged(1.0, ("x", "y")).asend(1, init_tag=10),
                        await Step(x=torch.ones(2), tag="z", batch_size=[2]).asend(
                            1, init_tag=20)]
                return sent
            td, stack = TensorDict(a=torch.zeros(3)), ragged(0.0)
            step = Step(x=torch.zeros(2), batch_size=[2])
            returned = [await td.arecv(0) is td, await stack.arecv(0, init_tag=10) is stack,
                        await step.arecv(0, init_tag=20) is step]
            return {"returned": returned, "td": td["a"].tolist(), "stack": read(stack)["tags"],
                    "step": [step.x.tolist(), step.tag]}
        return asyncio.run(main())


    def exchange():
        """Both ranks send and receive at once: one event loop, two transfers."""
        async def main():
            mine = TensorDict(a=torch.full((3,), float(rank + 1)))
            theirs = TensorDict(a=torch.zeros(3))
            await asyncio.gather(mine.asend(1 - rank, init_tag=10 * rank),
                                 theirs.arecv(1 - rank, init_tag=10 * (1 - rank)))
            return theirs["a"].tolist()
        return asyncio.run(main())


    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=2,
                            timeout=datetime.timedelta(seconds=20))
    try:
        result = globals()[scenario]()
    finally:
        dist.destroy_process_group()
    print(json.dumps(result))
''')


def run_pair(tmp_path: Path, scenario: str) -> list:
    """Run ``scenario`` on ranks 0 and 1 (two processes); their results, in rank order."""
    script = tmp_path / "rank.py"
    script.write_text(_SCRIPT)
    store = tmp_path / f"store-{scenario}"
    procs = [subprocess.Popen([sys.executable, str(script), scenario, str(rank), str(store)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for rank in range(2)]
    outputs = []
    try:
        for proc in procs:
            stdout, stderr = proc.communicate(timeout=90)
            assert proc.returncode == 0, stderr
            outputs.append(json.loads(stdout.strip().splitlines()[-1]))
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return outputs


def test_lazy_stack_of_different_shapes_round_trips(tmp_path):
    _, got = run_pair(tmp_path, "lazy_root")
    assert got["small"] == [3.0, 8.0, ["x", "y"]]
    assert got["big"] == [3000.0, 6002.0, ["x", "y"]]


def test_nested_lazy_stack_round_trips(tmp_path):
    _, got = run_pair(tmp_path, "lazy_nested")
    assert got == {"root": [1.0, 1.0], "a": [[1.0] * 3, [2.0] * 4], "tags": ["x", "y"],
                   "c": [[1.0, 1.0], [1.0, 1.0]]}


def test_lazy_stack_of_tensorclasses_round_trips(tmp_path):
    pytest.importorskip("tensordict.tensorclasses")
    _, got = run_pair(tmp_path, "lazy_tensorclass")
    assert got == {"x": [[1.0, 1.0], [1.0, 1.0, 1.0]], "tag": ["c", "d"]}


def test_lazy_stack_mismatch_is_reported_not_hung(tmp_path):
    _, got = run_pair(tmp_path, "lazy_mismatch")
    assert got["error"].startswith("the TensorDict sent by rank 0 does not match"), got["error"]
    assert "'#2', 'a'" in got["error"]
    assert got["untouched"] is True and got["next"] == [5.0] * 3


def test_asend_arecv_move_tensordicts_stacks_and_tensorclasses(tmp_path):
    pytest.importorskip("tensordict.tensorclasses")
    sent, got = run_pair(tmp_path, "coroutines")
    assert sent == [None, None, None]
    assert got == {"returned": [True, True, True], "td": [1.0] * 3, "stack": ["x", "y"],
                   "step": [[1.0, 1.0], "z"]}


def test_asend_arecv_run_concurrently(tmp_path):
    assert run_pair(tmp_path, "exchange") == [[2.0] * 3, [1.0] * 3]


class _Pipe:
    """Stands for upstream's UCXX TensorDictPipe: what asend/arecv delegate to."""

    def __init__(self) -> None:
        self.queue: list[TensorDict] = []

    async def asend(self, td: TensorDict) -> None:
        self.queue.append(td.clone())

    async def arecv(self, td: TensorDict, *, device=None) -> TensorDict:
        return self.queue.pop(0).to(device) if device is not None else self.queue.pop(0)


def test_asend_arecv_delegate_to_a_pipe():
    pipe = _Pipe()
    stack = lazy_stack([TensorDict(a=torch.ones(2)), TensorDict(a=torch.zeros(2))])

    async def main() -> TensorDict:
        assert await stack.asend(pipe) is None
        return await TensorDict().arecv(pipe, device="cpu")

    got = asyncio.run(main())
    assert torch.equal(got["a"], stack["a"]) and not pipe.queue
