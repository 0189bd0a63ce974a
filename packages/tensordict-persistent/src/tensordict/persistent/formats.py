"""What a file-format package (``tensordict-h5``, ``tensordict-zarr``, a third party's)
builds on: the :class:`FileFormat` adapter it implements and registers, the group
attribute that holds a group's metadata, and the JSON text of a non-tensor value.

>>> from tensordict.persistent.formats import META_ATTR, json_text
>>> META_ATTR, json_text({"a": [1, 2]}, "key")
('__tensordict__', '{"a": [1, 2]}')
"""

from tensordict.persistent._formats import (
    META_ATTR,
    FileFormat,
    get_format,
    known_formats,
    register_format,
)
from tensordict.persistent._leaves import json_text

__all__ = ["META_ATTR", "FileFormat", "get_format", "json_text", "known_formats",
           "register_format"]
