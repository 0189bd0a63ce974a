"""The MosaicML Streaming (MDS) dataset format, written without mosaicml-streaming.

A dataset is a folder of shards ``shard.NNNNN.mds`` (``shard.NNNNN.mds.<compression>``
when compressed) and an ``index.json`` that lists them. A shard holds its number of
samples (``uint32``), the ``uint32`` offset of each sample and of its end, its
configuration as JSON, then the samples; a sample is the ``uint32`` size of each
variable-size column, then the encoded value of each column, in the order of the sorted
column names. A new shard starts when the next sample would take a shard over
``size_limit`` bytes. The files are byte for byte those of streaming's ``MDSWriter``.

Example:
    >>> import os, tempfile
    >>> out = os.path.join(tempfile.mkdtemp(), "ds")
    >>> options = MDSOptions.parse(out, keep_local=False, compression=None,
    ...                            hashes=["sha1"], size_limit="1kb", kwargs={})
    >>> columns = MDSColumns.parse({"x": "int", "name": "str"})
    >>> write_dataset(options, columns, columns.encode({"x": [1, 2], "name": ["a", "b"]}))
    >>> sorted(os.listdir(out))
    ['index.json', 'shard.00000.mds']
"""

from __future__ import annotations

import decimal
import hashlib
import importlib
import json
import os
import pickle
import shutil
import urllib.parse
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

#: An encoder: a value to its bytes.
Encoder = Callable[[Any], bytes]

#: The code of each dtype of the ``ndarray`` encoding (written before a dynamic dtype);
#: these are also the names of the scalar encodings.
_DTYPE_CODES: dict[str, int] = {
    "uint8": 8, "int8": 9, "uint16": 16, "int16": 17, "float16": 18, "uint32": 32,
    "int32": 33, "float32": 34, "uint64": 64, "int64": 65, "float64": 66,
}
#: The dtypes of a dynamic ``ndarray`` shape, by code: the first that holds every
#: dimension.
_SHAPE_DTYPES: tuple[tuple[int, str], ...] = (
    (1 << 8, "uint8"), (1 << 16, "uint16"), (1 << 32, "uint32"), (1 << 64, "uint64"))
#: streaming's encodings that need an imaging library.
_IMAGE_ENCODINGS = frozenset(("pil", "jpeg", "png", "jpeg_array", "jpegarray", "list[pil]",
                              "list[jpeg]", "list[png]"))
#: Each compression: its module, the package that installs it, its levels and default
#: level (``None``: no level), and how it is called. bz2 and gzip are in the standard
#: library.
_COMPRESSIONS: dict[str, tuple[str, str, range | None, int | None,
                               Callable[[Any, bytes, Any], bytes]]] = {
    "br": ("brotli", "brotli", range(12), 11,
           lambda module, data, level: module.compress(data, quality=level)),
    "bz2": ("bz2", "", range(1, 10), 9, lambda module, data, level: module.compress(data, level)),
    "gz": ("gzip", "", range(10), 9, lambda module, data, level: module.compress(data, level)),
    "snappy": ("snappy", "python-snappy", None, None,
               lambda module, data, level: module.compress(data)),
    "zstd": ("zstd", "zstd", range(1, 23), 3,
             lambda module, data, level: module.compress(data, level)),
}
#: hashlib's hash algorithms (its named constructors, ``shake_*`` excepted).
_HASHLIB = frozenset(name for name in hashlib.algorithms_available
                     if hasattr(hashlib, name) and not name.startswith("shake_"))
#: The hash algorithms of the ``xxhash`` module.
_XXHASH = frozenset(("xxh32", "xxh64", "xxh128", "xxh3_64", "xxh3_128"))
#: The writer options that change no file: streaming's upload threads, progress bar and
#: retries, and ``exist_ok``.
_KWARGS = frozenset(("progress_bar", "max_workers", "retry", "exist_ok"))
_SIZE_UNITS = {"kb": 1 << 10, "mb": 1 << 20, "gb": 1 << 30, "tb": 1 << 40, "pb": 1 << 50,
               "eb": 1 << 60, "zb": 1 << 70, "yb": 1 << 80}


def _typed(kind: type, encode: Encoder) -> Encoder:
    """``encode``, for values of type ``kind`` only."""
    def checked(value: Any) -> bytes:
        if not isinstance(value, kind):
            raise AttributeError(f"data should be of type {kind}, but instead, found as "
                                 f"{type(value)}")
        return encode(value)
    return checked


def _int64(value: int) -> bytes:
    return value.to_bytes(8, "little", signed=True)


def _digits(value: Any) -> bytes:
    return str(value).encode()


def _json(value: Any) -> bytes:
    return json.dumps(value.tolist() if isinstance(value, np.ndarray) else value).encode()


def _scalar(dtype: type) -> Encoder:
    """A ``uint8`` ... ``float64`` encoder: the value as one NumPy number."""
    return lambda value: dtype(value).tobytes()


def _ndarray(dtype: str | None, shape: tuple[int, ...] | None) -> Encoder:
    """The ``ndarray[:dtype[:shape]]`` encoder: the array's values, after its dtype code
    and shape unless the encoding fixes them."""
    def encode(array: np.ndarray) -> bytes:
        code = _DTYPE_CODES.get(array.dtype.name)
        if code is None:
            raise ValueError(f"Unsupported dtype: {array.dtype.name}.")
        if array.size == 0:
            raise ValueError("Attempting to encode a numpy array with 0 elements.")
        head = b""
        if dtype is None:
            head = bytes((code,))
        elif array.dtype.name != dtype:
            raise ValueError(f"Wrong dtype: expected {dtype}, got {array.dtype.name}.")
        if shape is None:
            if not 0 < array.ndim < 64:
                raise ValueError(f"Cannot encode an array with {array.ndim} dimensions with "
                                 "the MDS encoding 'ndarray' (1 to 63; a scalar needs a "
                                 "scalar encoding).")
            largest = max(array.shape)
            code, shape_dtype = next((code, name) for code, (bound, name)
                                     in enumerate(_SHAPE_DTYPES) if largest < bound)
            head += bytes(((array.ndim << 2) | code,))
            head += np.array(array.shape, shape_dtype).tobytes()
        elif array.shape != shape:
            raise ValueError(f"Wrong shape: expected {shape}, got {array.shape}.")
        return head + array.tobytes()
    return encode


#: The encodings without options: the encoder and the fixed size (``None``: variable).
_ENCODINGS: dict[str, tuple[Encoder, int | None]] = {
    "bytes": (_typed(bytes, bytes), None),
    "str": (_typed(str, str.encode), None),
    "int": (_typed(int, _int64), 8),
    "json": (_json, None),
    "pkl": (pickle.dumps, None),
    "str_int": (_typed(int, _digits), None),
    "str_float": (_typed(float, _digits), None),
    "str_decimal": (_typed(decimal.Decimal, _digits), None),
    **{name: (_scalar(np.dtype(name).type), np.dtype(name).itemsize) for name in _DTYPE_CODES},
}


def encoder(encoding: str) -> tuple[Encoder, int | None]:
    """The encoder of an MDS encoding and its fixed size in bytes (``None``: variable).

    Raises:
        TypeError: not an MDS encoding.
        NotImplementedError: an image encoding (``"jpeg"``...).

    Example:
        >>> encode, size = encoder("ndarray:uint8:2")
        >>> encode(np.array([1, 2], np.uint8)), size
        (b'\\x01\\x02', 2)
    """
    name, _, config = encoding.partition(":")
    if name in _IMAGE_ENCODINGS:
        raise NotImplementedError(f"The MDS encoding {encoding!r} (images) is only written "
                                  "through mosaicml-streaming: pass writer=streaming."
                                  "MDSWriter(...), or write the images as 'ndarray'.")
    if name == "ndarray":
        args = config.split(":") if config else []  # [dtype[, shape]]
        dtype = args[0] if args else None
        dims = args[1].split(",") if len(args) > 1 else []
        if (len(args) <= 2 and (dtype is None or dtype in _DTYPE_CODES)
                and all(dim.isdigit() and int(dim) >= 1 for dim in dims)):
            shape = tuple(map(int, dims)) if len(args) > 1 else None
            size = (None if dtype is None or shape is None
                    else int(np.prod(shape)) * np.dtype(dtype).itemsize)
            return _ndarray(dtype, shape), size
    elif not config and name in _ENCODINGS:
        return _ENCODINGS[name]
    raise TypeError(f"{encoding!r} is not an MDS encoding.")


@dataclass(frozen=True)
class MDSColumns:
    """The columns of a dataset, sorted by name: their encodings, encoders and sizes."""

    names: list[str]
    encodings: list[str]
    encoders: list[Encoder]
    sizes: list[int | None]

    @classmethod
    def parse(cls, columns: dict[str, str]) -> MDSColumns:
        """Check the encodings of ``{name: encoding}``.

        Example:
            >>> MDSColumns.parse({"b": "str", "a": "int"}).sizes
            [8, None]
        """
        names = sorted(columns)
        coders = []
        for name in names:
            try:
                coders.append(encoder(columns[name]))
            except TypeError as err:
                raise TypeError(f"Column {name!r}: {err} The encodings are "
                                f"{sorted({*_ENCODINGS, 'ndarray'})} and 'ndarray:<dtype>"
                                "[:<shape>]'.") from None
        return cls(names, [columns[name] for name in names],
                   [encode for encode, _ in coders], [size for _, size in coders])

    def encode(self, values: dict[str, list]) -> list[bytes]:
        """The encoded samples, from the values of each column (one per sample).

        Example:
            >>> MDSColumns.parse({"s": "str"}).encode({"s": ["ab"]})
            [b'\\x02\\x00\\x00\\x00ab']
        """
        encoded = []
        for name, encoding, encode, size in zip(self.names, self.encodings, self.encoders,
                                                self.sizes, strict=True):
            data = [value if isinstance(value, bytes) else encode(value)
                    for value in values[name]]
            if size is not None and any(len(datum) != size for datum in data):
                raise KeyError(f"Column {name!r}: a value whose size is not the {size} bytes "
                               f"of its encoding, {encoding!r}.")
            encoded.append(data)
        num_samples = len(encoded[0])
        # the size of each variable-size value, one row per sample
        heads = np.array([list(map(len, data)) for data, size in
                          zip(encoded, self.sizes, strict=True) if size is None],
                         np.uint32).reshape(-1, num_samples).T
        return [head.tobytes() + b"".join(sample)
                for head, sample in zip(heads, zip(*encoded, strict=True), strict=True)]


@dataclass(frozen=True)
class MDSOptions:
    """Where and how a dataset is written: streaming's ``MDSWriter`` options, checked."""

    local: str
    remote: str | None
    keep_local: bool
    exist_ok: bool
    compression: str | None
    compress: Callable[[bytes], bytes] | None
    hashes: list[str]
    size_limit: int | None

    @classmethod
    def parse(cls, out: str | tuple[str, str], *, keep_local: bool, compression: str | None,
              hashes: list[str] | None, size_limit: int | str | None,
              kwargs: dict[str, Any]) -> MDSOptions:
        """Check the options (with streaming's errors); nothing is written.

        Raises:
            ValueError: an unknown compression, hash, writer option, a bad size limit or
                ``out``.
            NotImplementedError: a compression whose module is not installed, or a remote
                ``out`` (s3://...).
            ImportError: an xxhash hash without the xxhash module.
            FileExistsError: the local folder is not empty (and ``exist_ok`` is not set).

        Example:
            >>> MDSOptions.parse("/tmp/ds", keep_local=False, compression=None,
            ...                  hashes=None, size_limit="2kb", kwargs={}).size_limit
            2048
        """
        compression = compression or None
        compress = None if compression is None else _compressor(compression)
        hashes = list(hashes or [])
        if hashes != sorted(hashes):
            raise ValueError("Hashes must be unique and in sorted order.")
        for algo in hashes:
            _hasher(algo)
        limit = _size_limit(size_limit) if size_limit else None
        invalid = [name for name in kwargs if name not in _KWARGS]
        if invalid:
            raise ValueError(f"Invalid Writer argument(s): {invalid} ")
        if isinstance(out, str):
            local, remote = out, None
        elif len(out) == 2:
            local, remote = out
        else:
            raise ValueError("Invalid `out` argument. It is either a string of local/remote "
                             "directory or a list of two strings with [local, remote].")
        target = out if remote is None else remote
        if urllib.parse.urlparse(target).scheme:
            raise NotImplementedError(f"Uploading an MDS dataset to {target!r} needs "
                                      "mosaicml-streaming: pass writer=streaming.MDSWriter("
                                      "out=..., columns=...), or write to a local folder.")
        exist_ok = bool(kwargs.get("exist_ok", False))
        if os.path.isdir(local) and os.listdir(local) and not exist_ok:
            raise FileExistsError(f"Directory is not empty: {local}")
        return cls(local, remote, keep_local, exist_ok, compression, compress, hashes, limit)


def _compressor(compression: str) -> Callable[[bytes], bytes]:
    """The function that compresses a shard, for ``"name"`` or ``"name:level"``."""
    family, colon, level = compression.partition(":")
    spec = _COMPRESSIONS.get(family)
    levels = () if spec is None or spec[2] is None else spec[2]
    if spec is None or colon and level not in map(str, levels):
        raise ValueError(f"Invalid compression: {compression}.")
    module_name, package, _, default, call = spec
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        raise NotImplementedError(
            f"compression={compression!r} needs the {module_name} module, which is not "
            f"installed: pip install {package}, or use 'bz2' or 'gz'.") from None
    chosen = int(level) if level else default
    return lambda data: call(module, data, chosen)


def _hasher(algo: str) -> Callable[[bytes], Any]:
    """The constructor of the hash algorithm ``algo``."""
    if algo in _HASHLIB:
        return getattr(hashlib, algo)
    if algo in _XXHASH:
        try:
            xxhash = importlib.import_module("xxhash")
        except ImportError:
            raise ImportError(f"The hash {algo!r} needs the xxhash module: pip install "
                              "xxhash.") from None
        return getattr(xxhash, algo)
    raise ValueError(f"Invalid hash: {algo}.")


def _size_limit(size_limit: int | float | str) -> int:
    """The size limit in bytes, from a number or a string such as ``"100kb"``."""
    if isinstance(size_limit, (int, float)):
        limit = int(size_limit)
    else:
        text = size_limit.lower().strip()
        unit = next((unit for unit in _SIZE_UNITS if text.endswith(unit)), None)
        try:
            if unit is not None:
                limit = int(float(text[:-len(unit)]) * _SIZE_UNITS[unit])
            else:
                limit = int(text[:-1] if text.endswith("b") else text)
        except ValueError:
            raise ValueError(f"Unsupported value/suffix {text}. Supported suffix are "
                             f"{['b', *_SIZE_UNITS]}.") from None
    if limit < 0:
        raise ValueError(f"`size_limit` must be greater than zero, instead, found as {limit}.")
    if limit >= 1 << 32:
        raise ValueError(f"`size_limit` must be less than 2**32, instead, found as {limit}. "
                         "This is because sample byte offsets are stored with uint32.")
    return limit


def write_dataset(options: MDSOptions, columns: MDSColumns, samples: list[bytes]) -> None:
    """Write the encoded samples as a dataset: its shards and ``index.json`` go to a new
    folder beside ``options.local``, renamed into place once complete.

    Example:
        >>> import os, tempfile
        >>> out = os.path.join(tempfile.mkdtemp(), "ds")
        >>> options = MDSOptions.parse(out, keep_local=False, compression="bz2",
        ...                            hashes=None, size_limit=None, kwargs={})
        >>> columns = MDSColumns.parse({"x": "int"})
        >>> write_dataset(options, columns, columns.encode({"x": [1, 2]}))
        >>> sorted(os.listdir(out))
        ['index.json', 'shard.00000.mds.bz2']
    """
    config = {"version": 2, "format": "mds", "compression": options.compression,
              "hashes": options.hashes, "size_limit": options.size_limit,
              "column_names": columns.names, "column_encodings": columns.encodings,
              "column_sizes": columns.sizes}
    config_data = json.dumps(config, sort_keys=True).encode()
    local = os.path.abspath(options.local)
    os.makedirs(os.path.dirname(local), exist_ok=True)
    staging = os.path.join(os.path.dirname(local),
                           f".{os.path.basename(local)}.{uuid.uuid4().hex[:12]}.tmp")
    os.mkdir(staging)
    try:
        shards = [{"samples": len(shard), **_write_shard(options, staging, index, shard,
                                                         config_data), **config}
                  for index, shard in enumerate(_split(samples, options.size_limit,
                                                       8 + len(config_data)))]
        with open(os.path.join(staging, "index.json"), "w") as file:
            json.dump({"version": 2, "shards": shards}, file, sort_keys=True)
        if options.exist_ok and os.path.isdir(local):
            shutil.rmtree(local)
        os.replace(staging, local)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    if options.remote is not None:
        os.makedirs(options.remote, exist_ok=True)
        for name in [*((shard["zip_data"] or shard["raw_data"])["basename"]
                       for shard in shards), "index.json"]:
            shutil.copy(os.path.join(local, name), options.remote)
        if not options.keep_local:
            shutil.rmtree(local, ignore_errors=True)


def _split(samples: list[bytes], size_limit: int | None, overhead: int) -> list[list[bytes]]:
    """The samples of each shard: a shard ends when the next sample (and its 4-byte
    offset) would take it over ``size_limit`` (a first shard may then be empty)."""
    shards: list[list[bytes]] = []
    shard: list[bytes] = []
    size = overhead
    for sample in samples:
        sample_size = len(sample) + 4
        if size_limit and size_limit < size + sample_size:
            shards.append(shard)
            shard, size = [], overhead
        shard.append(sample)
        size += sample_size
    if shard:
        shards.append(shard)
    return shards


def _write_shard(options: MDSOptions, folder: str, index: int, samples: list[bytes],
                 config_data: bytes) -> dict[str, Any]:
    """Write shard number ``index``; its ``raw_data`` and ``zip_data`` index entries."""
    sizes = np.array([0, *map(len, samples)], np.int64).cumsum()
    offsets = (sizes + 4 + 4 * len(sizes) + len(config_data)).astype(np.uint32)
    raw = b"".join((np.uint32(len(samples)).tobytes(), offsets.tobytes(), config_data,
                    *samples))
    raw_name = f"shard.{index:05}.mds"
    raw_info = _file_info(options, raw_name, raw)
    if options.compress is None:
        data, name, zip_info = raw, raw_name, None
    else:
        data = options.compress(raw)
        name = f"{raw_name}.{options.compression.partition(':')[0]}"
        zip_info = _file_info(options, name, data)
    with open(os.path.join(folder, name), "wb") as file:
        file.write(data)
    return {"raw_data": raw_info, "zip_data": zip_info}


def _file_info(options: MDSOptions, name: str, data: bytes) -> dict[str, Any]:
    return {"basename": name, "bytes": len(data),
            "hashes": {algo: _hasher(algo)(data).hexdigest() for algo in options.hashes}}
