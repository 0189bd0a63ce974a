"""tensordict.nn: provided by the tensordict-nn distribution."""

from tensordict.nn._version import __version__ as __version__
