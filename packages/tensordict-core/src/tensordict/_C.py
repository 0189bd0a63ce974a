"""Upstream's ``tensordict._C`` names, in pure Python (upstream compiles them).

>>> from tensordict._C import unravel_keys
>>> unravel_keys(("a", ("b",)))
('a', 'b')
"""

from tensordict._nested_key import unravel_key, unravel_key_list
from tensordict._nested_key import unravel_key as unravel_keys
from tensordict._nested_key import unravel_key_to_tuple as _unravel_key_to_tuple

__all__ = ["unravel_key", "unravel_key_list", "unravel_keys", "_unravel_key_to_tuple"]
