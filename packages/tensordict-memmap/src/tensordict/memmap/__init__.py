"""tensordict.memmap: provided by the tensordict-memmap distribution."""

from tensordict.memmap._version import __version__ as __version__
