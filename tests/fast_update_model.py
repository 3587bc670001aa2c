"""A NumPy model of the host side of the GPU store's fused update (room reserved ahead, ends of
idx, vertex count) around the host emulation of its kernels (tests/cuda_emu): the emulated
tests' shared code (tests/test_fast_update_emulated.py, tests/test_weighted_fast_emulated.py)."""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
_C = ctypes.c_void_p
_LL, _I, _U64 = ctypes.c_longlong, ctypes.c_int, ctypes.c_ulonglong
FAST_MAX = 2048


def build_lib(tmp_path_factory, source: str):
    """The emulated kernels of tests/cuda_emu/``source`` as a loaded shared library (skips the
    test without a C++20 compiler)."""
    cxx = shutil.which("g++")
    if cxx is None:
        pytest.skip("no g++ to build the host emulation of the kernel")
    out = tmp_path_factory.mktemp("cuda_emu") / (Path(source).stem + ".so")
    cmd = [cxx, "-std=c++20", "-O1", "-pthread", "-shared", "-fPIC", "-Wno-unknown-pragmas",
           f"-I{ROOT / 'streamrank' / 'kernels' / 'cuda'}", str(ROOT / "tests" / "cuda_emu" / source),
           "-o", str(out)]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0 and "barrier" in res.stderr:
        pytest.skip("the C++ compiler lacks <barrier> (C++20)")
    assert res.returncode == 0, res.stderr
    return ctypes.CDLL(str(out))


def _p(a):
    assert a.flags.c_contiguous
    return a.ctypes.data_as(_C)


def _slots(count):
    s = 1024
    while s < 2 * count:
        s *= 2
    return s


class _Dir:
    def __init__(self, vcap, size):
        self.off = np.zeros(vcap, np.int64)
        self.deg = np.zeros(vcap, np.int32)
        self.cap = np.zeros(vcap, np.int32)
        self.idx = np.zeros(size, np.int32)
        self.end = 0

    def grow(self, vcap):
        for name in ("off", "deg", "cap"):
            a = getattr(self, name)
            b = np.zeros(vcap, a.dtype)
            b[: a.shape[0]] = a
            setattr(self, name, b)


class _Model:
    """The host side of GpuGraph's fast path, on NumPy arrays."""

    def __init__(self, lib, vertex_room=4096, slot_room=1 << 16, grid=3):
        self.lib, self.rv, self.rs, self.grid = lib, vertex_room, slot_room, grid
        self.n = 0
        self.vcap = vertex_room
        self.ext = np.zeros(vertex_room, np.int64)
        self.keys = np.full(_slots(vertex_room), -1, np.int64)
        self.vals = np.zeros(self.keys.shape[0], np.int32)
        self.dirs = [_Dir(self.vcap, slot_room), _Dir(self.vcap, slot_room)]
        self.work = np.zeros(1 << 20, np.uint8)
        self.counters = np.zeros(16, np.int64)
        #: The kernel's copy of the counters for the host (mapped pinned memory on the GPU)
        self.hcounters = np.zeros(16, np.int64)

    def state(self):
        o, i = self.dirs
        return [a.copy() for a in (self.keys, self.vals, self.ext, o.off, o.deg, o.cap, o.idx,
                                   i.off, i.deg, i.cap, i.idx)]

    def reserve(self):
        n, rv = self.n, self.rv
        if self.ext.shape[0] - n < rv:
            e = np.zeros(n + 2 * rv, np.int64)
            e[:n] = self.ext[:n]
            self.ext = e
        if 2 * (n + rv) > self.keys.shape[0]:
            self.keys = np.full(_slots(2 * (n + rv)), -1, np.int64)
            self.vals = np.zeros(self.keys.shape[0], np.int32)
            self.lib.emu_hash_insert(_p(self.keys), _p(self.vals), _U64(self.keys.shape[0] - 1), _p(self.ext),
                                     _LL(n), _LL(0))
        if self.vcap - n < rv:
            self.vcap = n + 2 * rv
            for d in self.dirs:
                d.grow(self.vcap)
        for d in self.dirs:
            if d.idx.shape[0] - d.end < self.rs // 2 + 1:
                b = np.zeros(d.end + self.rs + 4096, np.int32)
                b[: d.end] = d.idx[: d.end]
                d.idx = b

    def apply(self, s, d, ins, staged=False, claim_m=None):
        """One launch; ``staged``: through fast_update_hdr, the batch in a staged buffer as the
        host stages it (``claim_m``: the size its header claims, default the batch's)."""
        s, d = np.ascontiguousarray(s, np.int64), np.ascontiguousarray(d, np.int64)
        ins = np.ascontiguousarray(ins, np.uint8)
        m = s.shape[0]
        changes = np.zeros(4 * m, np.int64)
        room = min(self.vcap - self.n, self.keys.shape[0] // 2 - self.n, self.ext.shape[0] - self.n)
        o, i = self.dirs
        table = (_p(self.keys), _p(self.vals), _U64(self.keys.shape[0] - 1), _p(self.ext))
        tail = (_p(self.work), _LL(self.work.nbytes))
        if staged:
            buf = np.zeros(64 + 17 * FAST_MAX, np.uint8)  # the layout of FastUpdater's pinned buffer
            hdr = buf[:64].view(np.int64)
            hdr[:6] = (m if claim_m is None else claim_m), self.n, room, o.end, i.end, changes.ctypes.data
            k = min(m, FAST_MAX)
            buf[64: 64 + 8 * k].view(np.int64)[:] = s[:k]
            buf[64 + 8 * FAST_MAX: 64 + 8 * FAST_MAX + 8 * k].view(np.int64)[:] = d[:k]
            buf[64 + 16 * FAST_MAX: 64 + 16 * FAST_MAX + k] = ins[:k]
            self.lib.emu_fast_update_hdr(
                _p(buf), *table, _p(o.off), _p(o.deg), _p(o.cap), _p(o.idx), _LL(o.idx.shape[0]),
                _p(i.off), _p(i.deg), _p(i.cap), _p(i.idx), _LL(i.idx.shape[0]), *tail,
                _p(self.counters), _p(self.hcounters), _I(self.grid))
        else:
            self.lib.emu_fast_update(
                _p(s), _p(d), _p(ins), _I(m), *table, _I(self.n), _I(room),
                _p(o.off), _p(o.deg), _p(o.cap), _p(o.idx), _LL(o.end), _LL(o.idx.shape[0]),
                _p(i.off), _p(i.deg), _p(i.cap), _p(i.idx), _LL(i.end), _LL(i.idx.shape[0]),
                *tail, _p(changes), _p(self.counters), _p(self.hcounters), _I(self.grid))
        # every exit of the kernel (applied, overflow, bad arguments) writes the host's copy too
        assert np.array_equal(self.hcounters, self.counters), (self.hcounters, self.counters)
        self.hcounters[:] = -7  # stale values the next call must overwrite
        c = [int(v) for v in self.counters[:9]]
        if c[0] == 0:
            self.n += c[1]
            o.end, i.end = c[7], c[8]
        return c, changes
