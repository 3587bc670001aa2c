"""Structure of a full checkpoint: the members an engine state needs, their dtypes and shapes.

:func:`check_structure` runs on every checkpoint read (:func:`streamrank.checkpoints.full.read_checkpoint`),
after the container checks of :mod:`.container`. For checkpoints written before the member
table existed it is, with the ZIP's CRCs, the whole check; for newer ones it also catches a
writer that saved something an engine cannot be rebuilt from.

Rules: the header holds ``seq`` (an integer, equal to the file name's; the engine's own is
checked when it is rebuilt), ``positions``, ``meta`` and ``engine_plain`` (JSON objects); ``engine/external``,
``engine/src``, ``engine/dst`` and ``engine/x`` are present; every member of a known name has its
dtype and is one-dimensional; the edge endpoints are internal ids of the vertices; a weighted
engine's ``engine/weight`` holds one finite positive weight per edge; string ids
come as offsets and bytes that fit each other; the ranks, when saved, pair ids with values. In a
checkpoint without a member table, every member must have a known name (a renamed member is
damage, not an extension).
"""

from __future__ import annotations

import numpy as np

from ..errors import CheckpointError

#: Members of an engine state (``engine/<key>``) and of the saved ranks, with their dtypes.
ENGINE_MEMBERS = {"external": np.int64, "src": np.int64, "dst": np.int64, "x": np.float64, "weight": np.float64,
                  "sweep_order": np.int32, "sweep_blocks": np.int64, "sweep_end": np.int64, "id_offsets": np.int64,
                  "id_data": np.uint8}
RANK_MEMBERS = {"ids": np.int64, "p": np.float64, "id_offsets": np.int64, "id_data": np.uint8}
REQUIRED = ("external", "src", "dst", "x")


def check_structure(arrays: dict, header: dict, *, path: str, name_seq: int | None) -> None:
    """Raise :class:`CheckpointError` unless ``arrays`` and ``header`` form a checkpoint.

    Parameters
    ----------
    arrays : dict
        Member name (``engine/src``, ``ranks/p``, ...) -> ndarray, ``meta.json`` left out.
    header : dict
        The JSON header.
    path : str
        For messages.
    name_seq : int or None
        The sequence number in the file's name, when it has one.
    """
    def fail(why):
        raise CheckpointError(f"checkpoint {path}: {why}")

    seq = header.get("seq")
    if not isinstance(seq, int) or isinstance(seq, bool) or seq < 0:
        fail(f"bad seq {seq!r}")
    if name_seq is not None and seq != name_seq:
        fail(f"holds seq {seq}, its name says {name_seq}")
    for key in ("positions", "meta", "engine_plain"):
        if not isinstance(header.get(key, {}), dict):
            fail(f"{key} is not a JSON object")
    plain = header.get("engine_plain", {})
    legacy = header.get("members") is None
    engine, ranks = {}, {}
    for name, arr in arrays.items():
        group, _, key = name.partition("/")
        known = ENGINE_MEMBERS if group == "engine" else RANK_MEMBERS if group == "ranks" else None
        if known is None or (key not in known and legacy) or not key:
            fail(f"unknown member {name!r}")
        if key in known:
            if arr.dtype != np.dtype(known[key]) or arr.ndim != 1:
                fail(f"member {name!r} is {arr.dtype} of shape {arr.shape}, expected one-dimensional "
                     f"{np.dtype(known[key])}")
        if key in plain and group == "engine":
            fail(f"engine state {key!r} both as an array and a plain value")
        (engine if group == "engine" else ranks)[key] = arr
    missing = [k for k in REQUIRED if k not in engine]
    if missing:
        fail(f"engine state lacks {missing}")
    n = engine["external"].shape[0]
    if engine["x"].shape[0] != n:
        fail(f"{engine['x'].shape[0]} ranks for {n} vertices")
    if not np.all(np.isfinite(engine["x"])):
        fail("ranks that are not finite")
    src, dst = engine["src"], engine["dst"]
    if src.shape != dst.shape:
        fail("edge sources and destinations differ in length")
    if src.shape[0] and (min(src.min(), dst.min()) < 0 or max(src.max(), dst.max()) >= n):
        fail("edges whose endpoints are not vertices")
    if "weight" in engine:
        w = engine["weight"]
        if w.shape != src.shape:
            fail(f"{w.shape[0]} edge weights for {src.shape[0]} edges")
        if w.size and not bool(np.all((w > 0) & np.isfinite(w))):
            fail("edge weights that are not finite and positive")
    if "sweep_order" in engine and engine["sweep_order"].shape[0] != n:
        fail("a sweep order not of the vertices")
    if "sweep_blocks" in engine and "sweep_order" not in engine:
        fail("sweep blocks without a sweep order")
    if "sweep_end" in engine and ("sweep_order" not in engine or engine["sweep_end"].shape != (1,)
                                  or not 0 <= int(engine["sweep_end"][0]) <= n):
        fail("a sweep end not of the sweep order")
    _check_strings(engine, "engine", fail)
    if ("id_offsets" in engine) != (plain.get("id_type") == "string"):
        fail(f"id_type {plain.get('id_type')!r} does not match the string id members")
    if ranks:
        _check_strings(ranks, "ranks", fail)
        has_ids = ("ids" in ranks) + ("id_offsets" in ranks)
        if has_ids != 1 or "p" not in ranks:
            fail(f"saved ranks with members {sorted(ranks)}")
        count = ranks["ids"].shape[0] if "ids" in ranks else ranks["id_offsets"].shape[0] - 1
        if count != ranks["p"].shape[0]:
            fail(f"saved ranks pair {count} ids with {ranks['p'].shape[0]} values")


def _check_strings(group: dict, label: str, fail) -> None:
    """``id_offsets`` / ``id_data`` come together and fit each other (Arrow large_string layout)."""
    if ("id_offsets" in group) != ("id_data" in group):
        fail(f"{label}: string ids need both id_offsets and id_data")
    if "id_offsets" not in group:
        return
    off, data = group["id_offsets"], group["id_data"]
    if off.shape[0] < 1 or off[0] != 0 or off[-1] != data.shape[0] or np.any(np.diff(off) < 0):
        fail(f"{label}: string id offsets do not fit their {data.shape[0]} bytes")
