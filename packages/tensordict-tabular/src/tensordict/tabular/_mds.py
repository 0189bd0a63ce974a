"""MosaicML Streaming datasets: :func:`to_mds` writes a tensordict as MDS shards.

The files are written by :mod:`tensordict.tabular._mds_format`, byte for byte those of
mosaicml-streaming's ``MDSWriter``, which is not needed. Each element of the first batch
dimension is one sample and each top-level entry one column; the encoding of a column is
inferred from its first sample (or given with ``columns=``) and every sample is checked
against it before the first write.

Example:
    >>> import tempfile, torch
    >>> from tensordict import TensorDict
    >>> td = TensorDict(x=torch.arange(3.0), image=torch.zeros(3, 2, 2), batch_size=[3])
    >>> out = tempfile.mkdtemp()
    >>> to_mds(td, out=out)
    >>> sorted(os.listdir(out))
    ['index.json', 'shard.00000.mds']
"""

from __future__ import annotations

import os
import warnings
from typing import Any

import numpy as np
import torch

from tensordict import (
    LazyStackedTensorDict,
    TensorDictBase,
    is_non_tensor,
    is_tensorclass,
)
from tensordict.tabular import _columns
from tensordict.tabular._mds_format import MDSColumns, MDSOptions, write_dataset
from tensordict.utils import acts_as_tensordict

#: The encoding of a tensor whose samples are numbers, by dtype (``bool`` and every
#: integer dtype are written as Python ints).
_SCALAR_ENCODINGS: dict[torch.dtype, str] = {
    torch.float16: "float16", torch.float32: "float32", torch.float64: "float64",
    **dict.fromkeys((torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32,
                     torch.int64, torch.uint16, torch.uint32, torch.uint64), "int"),
}
#: The dtypes of the ``ndarray`` encoding.
_ARRAY_DTYPES = frozenset(("uint8", "int8", "uint16", "int16", "uint32", "int32", "uint64",
                           "int64", "float16", "float32", "float64"))
#: The encoding of a non-tensor column, by the type of its first value (in this order:
#: ``bool`` is an ``int``).
_VALUE_ENCODINGS: tuple[tuple[type, str], ...] = (
    (str, "str"), (int, "int"), (float, "float64"), (bytes, "bytes"), (list, "json"),
    (np.ndarray, "ndarray"),
)
#: What the values of an encoding must be (encodings not listed are not checked).
_ACCEPTS: dict[str, type | tuple[type, ...]] = {
    "str": str, "int": int, "bytes": bytes, "ndarray": np.ndarray,
    **dict.fromkeys(("uint8", "int8", "uint16", "int16", "uint32", "int32", "uint64",
                     "int64"), int),
    **dict.fromkeys(("float16", "float32", "float64"), (int, float)),
}


def to_mds(td: Any, *, columns: dict[str, str] | None = None,
           out: str | os.PathLike | tuple[str, str], keep_local: bool = False,
           compression: str | None = None, hashes: list[str] | None = None,
           size_limit: int | str | None = 1 << 26, writer: Any = None,
           finish_writer: bool | None = None, **kwargs: Any) -> None:
    """Write the tensordict as a MosaicML Streaming (MDS) dataset.

    Each element of the first batch dimension is one sample (a tensordict without batch
    dimensions is one sample) and each top-level entry one column. A tensor whose
    samples are numbers is written as Python numbers, encoded ``"int"`` (integer and
    boolean dtypes) or ``"float16"``/``"float32"``/``"float64"``; any other tensor as
    NumPy arrays (``"ndarray"``, jagged lazy stacks included). A non-tensor column takes
    the encoding of its first value: ``str`` ``"str"``, ``int`` ``"int"``, ``float``
    ``"float64"``, ``bytes`` ``"bytes"``, ``list`` ``"json"``, NumPy array ``"ndarray"``.
    Nested tensordicts need ``td.flatten_keys()`` first (then ``unflatten_keys()``
    after reading), or an encoding such as ``"pkl"`` in ``columns`` (each sample is
    then a dict of NumPy arrays). Read the dataset with ``streaming.StreamingDataset``;
    writing it needs no extra dependency: the files are upstream's, byte for byte.

    Every sample is checked and encoded before the first write, and the dataset is
    written to a new folder beside ``out``, renamed into place once complete.

    Args:
        td: the tensordict.
        columns: the MDS encoding of each column to write, e.g. ``{"obs": "ndarray",
            "name": "str"}``; only these columns are written. Default: every entry, with
            the encodings above.
        out: the dataset's folder (empty or absent), or ``(local, remote)``: written to
            ``local``, then copied to the folder ``remote``. Uploads to a remote location
            (``s3://...``) need ``writer=streaming.MDSWriter(...)``.
        keep_local: keep ``local`` after the copy to ``remote``.
        compression: ``"name"`` or ``"name:level"``: ``"bz2"`` and ``"gz"`` (standard
            library), ``"zstd"``, ``"br"`` and ``"snappy"`` when the ``zstd``, ``brotli``
            or ``snappy`` module is installed.
        hashes: hash algorithms to apply to the shard files, sorted: hashlib's
            (``"sha1"``, ``"md5"``...), and xxhash's (``"xxh64"``...) when the ``xxhash``
            module is installed.
        size_limit: the shard size after which a new shard starts, in bytes or as a
            string (``"100kb"``); ``None``: one shard.
        writer: a ``streaming.MDSWriter`` (or any object with its ``columns``,
            ``write(sample)`` and ``finish()``) to write through: its columns are
            written, and ``columns``, ``out`` and the writer options above are ignored.
        finish_writer: finish ``writer`` after writing (which writes the dataset's
            index). Default: leave it open for a tensordict without batch dimensions,
            finish it with a ``FutureWarning`` otherwise (as upstream, whose default
            changes in 0.17). A writer that ``to_mds`` creates is always finished.
        **kwargs: the other options of ``streaming.MDSWriter``: ``exist_ok`` (replace a
            folder that is not empty), and ``progress_bar``, ``max_workers`` and
            ``retry``, which change nothing here.

    Raises:
        ValueError: the tensordict has no sample or no entry, a nested tensordict has
            no encoding, a value's type or an array's dtype cannot be written, or an
            unknown compression, hash or option.
        TypeError: a tensor dtype without a number encoding (``bfloat16``, complex), or
            an encoding of ``columns`` that MDS does not know.
        NotImplementedError: a compression whose module is not installed, an image
            encoding (``"jpeg"``...) or a remote ``out``.
        ImportError: an xxhash hash without the ``xxhash`` module.
        FileExistsError: ``out`` is a folder that is not empty.
        KeyError: a column of ``columns`` (or of ``writer``) is not an entry.
        AttributeError: a value does not match its column's encoding (as streaming's).

    Example:
        >>> import tempfile, torch
        >>> from tensordict import TensorDict
        >>> td = TensorDict(obs=TensorDict(x=torch.arange(2.0), batch_size=[2]),
        ...                 label=["cat", "dog"], batch_size=[2])
        >>> out = tempfile.mkdtemp()
        >>> td.flatten_keys().to_mds(out=out)
        >>> from streaming import StreamingDataset  # doctest: +SKIP
        >>> sample = StreamingDataset(local=out, batch_size=1)[1]  # doctest: +SKIP
        >>> sample["obs.x"], sample["label"]  # doctest: +SKIP
        (np.float32(1.0), 'dog')
    """
    if is_tensorclass(td):
        td = td._tensordict
    batched = td.batch_dims > 0
    num_samples = td.batch_size[0] if batched else 1
    if num_samples == 0:
        raise ValueError(f"Cannot write a tensordict without samples to MDS: batch_size="
                         f"{tuple(td.batch_size)}.")
    if writer is None:
        options = MDSOptions.parse(
            tuple(map(os.fspath, out)) if isinstance(out, tuple) else os.fspath(out),
            keep_local=keep_local, compression=compression, hashes=hashes,
            size_limit=size_limit, kwargs=kwargs)
        data = _data(td, columns, batched)
        mds_columns = MDSColumns.parse({name: encoding for name, (encoding, _) in data.items()})
        samples = mds_columns.encode({name: rows for name, (_, rows) in data.items()})
        write_dataset(options, mds_columns, samples)
        return
    data = _data(td, writer.columns, batched)
    if finish_writer is None and batched:
        warnings.warn("to_mds finished the writer passed to it after writing a tensordict "
                      "with batch dimensions; upstream leaves it open from tensordict 0.17 "
                      "on: pass finish_writer=True or False.", FutureWarning, stacklevel=2)
        finish_writer = True
    names = list(data)
    for row in zip(*(rows for _, rows in data.values()), strict=True):
        writer.write(dict(zip(names, row, strict=True)))
    if finish_writer:
        writer.finish()


def _data(td: TensorDictBase, columns: dict[str, str] | None,
          batched: bool) -> dict[str, tuple[str, list]]:
    """The encoding and the values (one per sample) of each column, checked."""
    if columns is None:
        names = list(td.keys())
    else:
        names = list(columns)
        present = set(td.keys())
        for name in names:
            if name not in present:
                raise KeyError(f"Column {name!r} is not an entry of the tensordict (its "
                               f"keys are {sorted(present)}).")
    if not names:
        raise ValueError("Cannot write a tensordict without entries (or an empty `columns`) "
                         "to MDS.")
    # a lazy stack along its first dimension: one sample per stacked tensordict, so that
    # the samples of an entry may have different shapes
    if isinstance(td, LazyStackedTensorDict) and td.stack_dim == 0 and batched:
        sources = [(part, False) for part in td.tensordicts]
    else:
        sources = [(td, batched)]
    data = {}
    for name in names:
        encoding = None if columns is None else columns[name]
        rows: list = []
        for source, source_batched in sources:
            encoding, source_rows = _column(source.get(name), name, encoding, source_batched)
            rows.extend(source_rows)
        data[name] = (encoding, rows)
    return data


def _column(value: Any, name: str, encoding: str | None,
            batched: bool) -> tuple[str, list]:
    """The encoding and the values of the entry ``value`` (its only sample if not
    ``batched``); only the first value of a tensor is checked, the others have its type."""
    if isinstance(value, torch.Tensor):
        scalar = value.dim() == int(batched)
        if not scalar and value.dtype == torch.bfloat16:
            raise TypeError(f"Cannot write the tensor at key {name!r} to MDS: NumPy has no "
                            f"{value.dtype}; cast it, e.g. to torch.float32.")
        if encoding is None:
            encoding = _tensor_encoding(value.dtype, name) if scalar else "ndarray"
        value = value.detach().cpu()
        if scalar:
            rows = value.tolist() if batched else [value.item()]
        else:
            array = value.numpy()
            rows = list(array) if batched else [array]
        _check(name, encoding, rows[:1])
        return encoding, rows
    if is_non_tensor(value):
        rows = _columns.non_tensor_rows(value, value.batch_size[0] if batched else 1)
        encoding = encoding or _value_encoding(rows[0], name)
        _check(name, encoding, rows)
        return encoding, rows
    if acts_as_tensordict(value):
        if encoding is None:
            raise ValueError(f"Cannot infer the MDS encoding of the nested tensordict at key "
                             f"{name!r}: call td.flatten_keys() before to_mds, or give it an "
                             "encoding such as 'pkl' in `columns`.")
        if is_tensorclass(value):
            value = value._tensordict
        rows = list(map(TensorDictBase.numpy, value.unbind(0))) if batched else [value.numpy()]
        _check(name, encoding, rows)
        return encoding, rows
    raise TypeError(f"Cannot write the value at key {name!r} to MDS: "
                    f"{type(value).__name__} is not supported.")


def _tensor_encoding(dtype: torch.dtype, name: str) -> str:
    """The encoding of a tensor whose samples are numbers."""
    encoding = _SCALAR_ENCODINGS.get(dtype)
    if encoding is None:
        raise TypeError(f"Cannot write the tensor at key {name!r} to MDS: no MDS encoding "
                        f"holds {dtype} numbers; cast it, e.g. to torch.float32.")
    return encoding


def _value_encoding(value: Any, name: str) -> str:
    for kind, encoding in _VALUE_ENCODINGS:
        if isinstance(value, kind):
            return encoding
    raise ValueError(f"Cannot infer the MDS encoding of the non-tensor values at key "
                     f"{name!r} from the first one, of type {type(value).__name__}: give "
                     "it in `columns` (e.g. 'pkl').")


def _check(name: str, encoding: str, rows: list) -> None:
    """Raise if a value of ``rows`` cannot be written with ``encoding``."""
    base = encoding.split(":", 1)[0]
    accepts = _ACCEPTS.get(base)
    if accepts is None:
        return
    for index, row in enumerate(rows):
        if not isinstance(row, accepts):
            raise AttributeError(f"Cannot write sample {index} of column {name!r} with the "
                                 f"MDS encoding {encoding!r}: got a {type(row).__name__} "
                                 f"(the encoding of its first sample, or of `columns`).")
        if base == "ndarray" and row.dtype.name not in _ARRAY_DTYPES:
            raise ValueError(f"Cannot write the values at key {name!r} with the MDS "
                             f"encoding {encoding!r}: unsupported dtype {row.dtype.name} "
                             f"(supported: {sorted(_ARRAY_DTYPES)}).")
