"""Entry point of tensordict-distributed: the methods it adds to tensor collections.

Importing this module imports nothing else; the implementation is imported the first
time tensordict asks for plugin methods.
"""

from __future__ import annotations

from typing import Any

from tensordict.plugins import hookimpl

#: the versions of the plugin API this plugin works with (checked when it registers)
TENSORDICT_PLUGIN_API = (1,)


@hookimpl
def tensordict_methods() -> dict[str, Any]:
    from tensordict.distributed import _collectives, _p2p

    return {
        "send": _p2p.send,
        "recv": _p2p.recv,
        "isend": _p2p.isend,
        "irecv": _p2p.irecv,
        "asend": _p2p.asend,
        "arecv": _p2p.arecv,
        "init_remote": _p2p.init_remote,
        "from_remote_init": classmethod(_p2p.from_remote_init),
        "broadcast": _collectives.broadcast,
        "all_reduce": _collectives.all_reduce,
        "reduce": _collectives.reduce,
        "all_gather": _collectives.all_gather,
        "gather_and_stack": _collectives.gather_and_stack,
        "scatter": _collectives.scatter,
    }
