"""tensordict.distributed: provided by the tensordict-distributed distribution."""

from tensordict.distributed._version import __version__ as __version__
