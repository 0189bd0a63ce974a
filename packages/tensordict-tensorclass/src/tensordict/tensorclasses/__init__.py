"""tensordict.tensorclasses: provided by the tensordict-tensorclass distribution."""

from tensordict.tensorclasses._version import __version__ as __version__
