"""The ``.npz`` container of a full checkpoint: written with a table of its members, read back whole.

Where the content checksum lives
--------------------------------
A checkpoint is a ZIP archive (stored, not compressed) of ``.npy`` members, readable by
``numpy.load``. The ZIP format already keeps a CRC-32 of every member, in the member's local
header and in the central directory; :mod:`zipfile` checks the data against the central
directory's CRC once a member has been read to its end. Two things escape that check alone:
``numpy.load`` stops reading a member where its ``.npy`` header says the array ends (a flipped
shape reads less and is never checked), and a flipped central directory (a renamed member, a
compression method, an offset) fails with whatever exception :mod:`zipfile` or NumPy raises, or,
for a renamed optional member, not at all.

So the writer records a *member table* in ``meta.json`` (the checkpoint's JSON header, itself a
member): for each array member its name, dtype, shape, byte size and the CRC-32 the ZIP computed
for it (``"members"``; reading needs no second pass over the data, and writing none either, since
the CRC is taken from :mod:`zipfile` after the member is written). The reader (:func:`read_npz`)

- reads every member the central directory lists, each to its end, so that :mod:`zipfile` checks
  its bytes against the central directory's CRC, and requires the ``.npy`` header to describe
  exactly the bytes that follow it (no trailing bytes, no short read);
- requires the members to be exactly those of the table, each with the CRC, size, dtype and
  shape the table records.

A flip in ``meta.json`` (the table included) fails the ZIP check of that member; a flip in the
central directory's record of any member either fails the ZIP check or disagrees with the table
(which is protected by the ZIP check); a flip in a member's data or ``.npy`` header fails the
ZIP check. The table lives inside the file rather than in ``MANIFEST.json`` because the manifest
is optional by design: a crash between the checkpoint's rename and the manifest's update leaves a
complete file the manifest does not list, which must verify on its own.

Checkpoints written before the table existed (no ``"members"`` in ``meta.json``) are checked by
the ZIP CRC of every member (read whole) and by their structure only (:mod:`.validate`): the
member names must be known ones, with the expected dtypes and consistent shapes.

Every failure, whatever exception the ZIP or NumPy layer raises, comes out as one
:class:`~streamrank.errors.CheckpointError`, except ``MemoryError``: a member's size is checked
against the file before its array is allocated, so running out of memory is the machine's
condition, not the file's, and must not make a readable checkpoint look damaged.
"""

from __future__ import annotations

import json
import math
import zipfile

import numpy as np

from ..errors import CheckpointError

#: The member holding the JSON header (``.npy`` of its UTF-8 bytes, as ``numpy.savez`` names it).
META = "meta.json"
_NPY = ".npy"
_CHUNK = 16 << 20  # bytes read at a time into an array


def write_npz(fh, arrays: dict, header: dict) -> None:
    """Write ``arrays`` (name -> ndarray) and ``header`` (JSON) as a checkpoint container to ``fh``.

    ``header`` gains the member table ``"members"``; ``meta.json`` is written last, holding it.
    The layout is that of ``numpy.savez`` (stored ZIP64 members ``<name>.npy``).
    """
    table = {}
    with zipfile.ZipFile(fh, mode="w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
        for name, value in arrays.items():
            arr = np.asanyarray(value)
            if arr.dtype.hasobject:
                raise CheckpointError(f"checkpoint member {name!r} holds Python objects")
            with zf.open(name + _NPY, "w", force_zip64=True) as out:
                np.lib.format.write_array(out, arr, allow_pickle=False)
            info = zf.getinfo(name + _NPY)
            table[name] = {"dtype": arr.dtype.str, "shape": list(arr.shape), "bytes": info.file_size,
                           "crc32": info.CRC}
        body = dict(header)
        body["members"] = table
        meta = np.frombuffer(json.dumps(body).encode(), dtype=np.uint8)
        with zf.open(META + _NPY, "w", force_zip64=True) as out:
            np.lib.format.write_array(out, meta, allow_pickle=False)


def read_npz(path: str) -> tuple[dict, dict]:
    """``(arrays, header)`` of the checkpoint container at ``path``, every member read and checked.

    ``header`` is the JSON object of ``meta.json``; ``header.get("members")`` is ``None`` for
    containers written before the member table existed (their arrays are checked by the ZIP's
    CRCs only; the caller checks their structure).

    Raises
    ------
    CheckpointError
        On any failure: missing, truncated, not a ZIP, a member that does not read whole or
        disagrees with the member table, a header that is not a JSON object.
    """
    try:
        return _read(path)
    except (CheckpointError, MemoryError):
        raise  # MemoryError: the machine, not the file (sizes are checked before anything is allocated)
    except Exception as exc:  # noqa: BLE001 - a damaged file may fail anywhere in zipfile or NumPy
        raise CheckpointError(f"cannot read checkpoint {path}: {type(exc).__name__}: {exc}") from exc


def _read(path: str) -> tuple[dict, dict]:
    with zipfile.ZipFile(path) as zf:
        infos = zf.infolist()
        names = [i.filename for i in infos]
        if len(set(names)) != len(names):
            raise CheckpointError(f"checkpoint {path}: duplicate member names")
        bad = [n for n in names if not n.endswith(_NPY)]
        if bad:
            raise CheckpointError(f"checkpoint {path}: unexpected members {bad}")
        if META + _NPY not in names:
            raise CheckpointError(f"checkpoint {path}: no {META} member")
        by_name = {i.filename[:-len(_NPY)]: i for i in infos}
        raw = _read_member(zf, by_name.pop(META), path)
        if raw.dtype != np.uint8 or raw.ndim != 1:
            raise CheckpointError(f"checkpoint {path}: {META} is not a byte array")
        header = json.loads(raw.tobytes().decode("utf-8"))
        if not isinstance(header, dict):
            raise CheckpointError(f"checkpoint {path}: {META} is not a JSON object")
        table = header.get("members")
        if table is not None:
            _check_table(table, by_name, path)
        arrays = {}
        for name, info in by_name.items():
            arr = _read_member(zf, info, path)
            if table is not None:
                want = table[name]
                if arr.dtype.str != want["dtype"] or list(arr.shape) != want["shape"]:
                    raise CheckpointError(f"checkpoint {path}: member {name!r} is {arr.dtype.str} {arr.shape}, "
                                          f"its table says {want['dtype']} {tuple(want['shape'])}")
            arrays[name] = arr
    return arrays, header


def _check_table(table, by_name: dict, path: str) -> None:
    """The central directory agrees with the member table: the same names, CRCs and sizes."""
    if not isinstance(table, dict):
        raise CheckpointError(f"checkpoint {path}: the member table is not an object")
    if set(table) != set(by_name):
        missing, extra = sorted(set(table) - set(by_name)), sorted(set(by_name) - set(table))
        raise CheckpointError(f"checkpoint {path}: members differ from its table (missing {missing}, "
                              f"not in the table {extra})")
    for name, info in by_name.items():
        want = table[name]
        if not isinstance(want, dict) or {"dtype", "shape", "bytes", "crc32"} - set(want):
            raise CheckpointError(f"checkpoint {path}: bad table entry for {name!r}")
        if info.CRC != want["crc32"] or info.file_size != want["bytes"]:
            raise CheckpointError(f"checkpoint {path}: member {name!r} (CRC {info.CRC:08x}, {info.file_size} "
                                  f"bytes) is not the one written (CRC {int(want['crc32']):08x}, "
                                  f"{want['bytes']} bytes)")


def _read_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, path: str) -> np.ndarray:
    """One ``.npy`` member read to its end (so that zipfile checks its CRC) into a new array."""
    with zf.open(info) as fh:
        version = np.lib.format.read_magic(fh)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(fh)
        elif version == (2, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(fh)
        else:
            raise CheckpointError(f"checkpoint {path}: member {info.filename!r} has .npy version {version}")
        if dtype.hasobject:
            raise CheckpointError(f"checkpoint {path}: member {info.filename!r} holds Python objects")
        count = math.prod(shape)
        nbytes = count * dtype.itemsize
        left = info.file_size - fh.tell()
        if nbytes != left:
            raise CheckpointError(f"checkpoint {path}: member {info.filename!r} claims {nbytes} bytes of "
                                  f"data, {left} follow its header")
        flat = np.empty(count, dtype=dtype)
        view = memoryview(flat).cast("B") if nbytes else memoryview(b"")
        at = 0
        while at < nbytes:
            got = fh.readinto(view[at:at + _CHUNK])
            if not got:
                raise CheckpointError(f"checkpoint {path}: member {info.filename!r} ends early")
            at += got
        if fh.read(1):
            raise CheckpointError(f"checkpoint {path}: member {info.filename!r} has bytes after its data")
    if fortran:
        return flat.reshape(shape[::-1]).transpose()
    return flat.reshape(shape)
