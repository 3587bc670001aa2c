"""The fast path of :meth:`streamrank.store.gpu.GpuGraph.apply`: a small batch in three launches
queued back to back.

``kernels/cuda/graph_fast_update.cu`` runs the update of a batch of up to :data:`FAST_MAX_EDGES`
edges: one block collapses, looks up ids, numbers new ones, checks membership and plans; only when
everything fits in the room the host reserved ahead (vertex rows, id map, the tail of each
``idx``), it commits the new ids, and two grid kernels commit the lists (one scans the lists that
lose entries in chunks, one rewrites each touched list with one writer). The first kernel writes
16 counters into pinned host memory (mapped; or the host queues their copy), which the host reads
after its one wait; when the first kernel reports an overflow nothing was written, and the caller
runs the slow path (which re-plans and reserves). The room is re-reserved by the host after every
batch (:meth:`FastUpdate.vertices`, :meth:`FastUpdate.slots`), without a sync, and so is the next
batch's changes buffer (:meth:`FastUpdater.prepare`). A one-wait batch's upkeep also stages the next
host batch's header and looks up its captured graph (:meth:`FastUpdater.arm`): that batch's launch
then copies its edges and replays, with nothing else on the host's critical path
(:meth:`FastUpdater.launch_armed`; taken only while the store is unchanged).

Settings: :class:`FastUpdate` (``GpuGraph(fast_update=FastUpdate(enabled=False))`` always takes
the slow path; ``max_edges`` caps the fast path's batch size).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from ..errors import InvalidArgumentError
from ..kernels.cuda.launch import launch, sm_count
from ..kernels.cuda.loader import get_kernel

#: Largest batch the fused kernel takes (FU_MAX in graph_fast_update.cu).
FAST_MAX_EDGES = 2048
#: Threads of its one block (FU_THREADS).
FAST_THREADS = 1024
#: Bytes of its scratch (at least sizeof(FuWork); the kernel refuses a smaller one).
FAST_WORK_BYTES = 1 << 20
_CU = "graph_fast_update.cu"
_NAMES = ("fast_update", "fast_update_hdr", "fast_update_plan", "fast_update_scan", "fast_update_commit")
#: Threads of a block of the deletion scan (FU_SCAN_THREADS) and of the commit (FU_COMMIT_THREADS).
SCAN_THREADS = 256
COMMIT_THREADS = 256
#: Profiling, set before the fused kernel is first compiled (once per process): TICKS compiles in
#: the per-step device clock (:meth:`FastUpdater.ticks`; benchmarks/profiling/graph_ms_parts.py,
#: graph_update_scale.py), LINEINFO the source lines for Nsight Compute
#: (benchmarks/profiling/update_ncu.sh).
TICKS = False
LINEINFO = False


def _options(weighted: bool = False) -> tuple:
    """Compile options of the fused kernel (:data:`TICKS`, :data:`LINEINFO`; ``weighted``: the
    weighted store's build, whose commit moves each slot's weight with it)."""
    return (f"-DFU_TICKS={int(bool(TICKS))}", *(("-lineinfo",) if LINEINFO else ()),
            *(("-DFU_WEIGHTED=1",) if weighted else ()))


_COUNTERS = 16
#: The fused kernel writes its counters into the pinned host buffer too, through the buffer's
#: device address (mapped host memory), so no device-to-host copy follows the update
#: (False, or a device that gives no address: the copy).
MAPPED_COUNTERS = True
#: The staged batch is read by the kernel from the pinned staging buffer through its device
#: address (mapped host memory), so no host-to-device copy comes before the update
#: (False, or a device that gives no address: the copy).
MAPPED_STAGING = True
#: Bytes of the staged batch's header (fast_update_hdr in graph_fast_update.cu).
_HEADER = 64
#: Counter slots 0-8 (C_* in graph_fast_update.cu; the first four are also read by
#: frontier_loop.cu), as :meth:`FastUpdater.counts` returns them. ``overflow`` is 0 when the batch
#: was applied, else FU_OVER_* bits (then nothing was written).
COUNTERS = ("overflow", "new_vertices", "inserted", "deleted", "duplicate", "present_insertion", "absent_deletion",
            "out_end", "in_end")
#: Overflow bits (FU_OVER_* in the kernel), for messages and tests.
OVERFLOW_REASONS = {1: "vertex room", 2: "out-direction tail", 4: "in-direction tail", 8: "arguments"}


@dataclass(frozen=True)
class FastUpdate:
    """Settings of the fast path.

    Attributes
    ----------
    enabled : bool
        Use the fused kernel for batches of 1..``max_edges`` edges.
    max_edges : int
        Largest batch that takes the fast path (at most :data:`FAST_MAX_EDGES`).
    vertex_room : int or None
        New vertices kept reserved ahead (vertex rows and id map); None: ``2 * max_edges``, what
        one batch can bring.
    slot_room : int or None
        Free slots kept at the end of each direction's ``idx`` for relocated lists (re-reserved
        when under half of it is left); None: ``max(2**18, 64 * max_edges)``.
    """

    enabled: bool = True
    max_edges: int = FAST_MAX_EDGES
    vertex_room: int | None = None
    slot_room: int | None = None

    def __post_init__(self):
        if not 0 <= int(self.max_edges) <= FAST_MAX_EDGES:
            raise InvalidArgumentError(f"max_edges must be in 0..{FAST_MAX_EDGES}, got {self.max_edges}")
        for name in ("vertex_room", "slot_room"):
            v = getattr(self, name)
            if v is not None and int(v) < 0:
                raise InvalidArgumentError(f"{name} must be non-negative, got {v}")

    @property
    def vertices(self) -> int:
        """New vertices to keep reserved."""
        return 2 * int(self.max_edges) if self.vertex_room is None else int(self.vertex_room)

    @property
    def slots(self) -> int:
        """Free tail slots to keep per direction."""
        return max(1 << 18, 64 * int(self.max_edges)) if self.slot_room is None else int(self.slot_room)


_NULL = np.uint64(0)
#: The staged header's first six fields (m, n, room, out end, in end, changes address) in one call.
_pack_header = struct.Struct("<6q").pack_into


def _graph_arrays(ids, out, inn) -> tuple:
    """The arrays whose addresses and sizes the update's captured graph holds, in the order
    :func:`_same_arrays` compares them."""
    return (ids.keys, ids.vals, ids.external_buffer, out.off, out.deg, out.cap, out.idx, inn.off, inn.deg,
            inn.cap, inn.idx)


def _same_arrays(ids, out, inn, held: tuple) -> bool:
    """Whether the store still holds exactly the array objects ``held`` (:func:`_graph_arrays` of an
    earlier call): compared inline, on the host's critical path of every batch."""
    return (ids.keys is held[0] and ids.vals is held[1] and ids.external_buffer is held[2] and out.off is held[3]
            and out.deg is held[4] and out.cap is held[5] and out.idx is held[6] and inn.off is held[7]
            and inn.deg is held[8] and inn.cap is held[9] and inn.idx is held[10])


def _device_address(cp, host_ptr: int) -> int:
    """The device address of pinned host memory at ``host_ptr`` (with unified addressing the
    same number), or 0 when the runtime gives none (the buffer's contents are then copied)."""
    try:
        return int(cp.cuda.runtime.pointerGetAttributes(host_ptr).devicePointer)
    except Exception:  # noqa: BLE001 - no mapped address here: fall back to the copy
        return 0


class PendingFast(NamedTuple):
    """A fast-path launch whose counters have not been read yet (:meth:`GpuGraph.launch_fast`;
    a named tuple: built once per batch on the host's critical path).

    ``counters_ptr`` is the address of the device counters the kernel fills
    (:attr:`FastUpdater.counters`, int64: [0] overflow bits, [1] new vertices, [2] applied
    insertions, [3] applied deletions, ...): work queued after the launch reads them there.
    ``changes`` holds ins_src, ins_dst, del_src, del_dst at offsets 0, m, 2m, 3m (``m`` =
    ``received``), sorted by source; ``changes_ptr`` is its address.
    """

    num_vertices_before: int
    received: int
    changes: object
    changes_ptr: int
    counters_ptr: int


class FastUpdater:
    """Scratch, counters and pinned memory of the fused kernel (one per graph; ``weighted``: the
    weighted store's, whose commit moves the weights with the slots)."""

    def __init__(self, cp, *, weighted: bool = False):
        self.cp = cp
        self.weighted = bool(weighted)
        opts = _options(self.weighted)
        self.work = cp.empty(FAST_WORK_BYTES, dtype=cp.uint8)
        self.counters = cp.zeros(_COUNTERS, dtype=cp.int64)
        self._pinned = cp.cuda.alloc_pinned_memory(_COUNTERS * 8)
        self.host = np.frombuffer(self._pinned, dtype=np.int64, count=_COUNTERS)
        self.kernel = get_kernel(_CU, "fast_update", _NAMES, opts)  # compiled once per process
        #: The same update reading the batch and its sizes from the staged header (a host batch;
        #: the form a captured CUDA graph replays: streamrank/rank/gpu/capture.py).
        self.kernel_hdr = get_kernel(_CU, "fast_update_hdr", _NAMES, opts)
        #: Steps 4-5 (sort, plan, new ids, counters): two blocks, a direction each for a large batch.
        self.kernel_plan = get_kernel(_CU, "fast_update_plan", _NAMES, opts)
        #: The commit of the lists: the deletion scan and the writers, grids sized by the device
        #: (a fixed size: the work is read on the device, so the launch needs no sync).
        self.kernel_scan = get_kernel(_CU, "fast_update_scan", _NAMES, opts)
        self.kernel_commit = get_kernel(_CU, "fast_update_commit", _NAMES, opts)
        # 4 blocks of 256 per SM: a 1,000-edge batch's 400 or so chunks in one round
        self.scan_blocks, self.commit_blocks = 4 * sm_count(), sm_count()
        # A host batch is staged in pinned memory in a fixed layout (fast_update_hdr), which the
        # kernel reads through its mapped address (or after one asynchronous copy): a header
        # (batch size, vertex count, room, ends of idx, address of the changes buffer), then src
        # and dst (int64) and the insert flags, FAST_MAX_EDGES entries each.
        fm = FAST_MAX_EDGES
        self.stage_bytes = _HEADER + 17 * fm
        self._stage_mem = cp.cuda.alloc_pinned_memory(self.stage_bytes)
        mem = self._stage_mem
        self._header = np.frombuffer(mem, dtype=np.int64, count=8)
        self._src = np.frombuffer(mem, dtype=np.int64, count=fm, offset=_HEADER)
        self._dst = np.frombuffer(mem, dtype=np.int64, count=fm, offset=_HEADER + 8 * fm)
        self._ins = np.frombuffer(mem, dtype=np.uint8, count=fm, offset=_HEADER + 16 * fm)
        # addresses cached: reading them costs about a microsecond each
        self._stage_host_ptr = int(self._header.ctypes.data)
        #: The staging buffer's device address when the kernel reads it there (0: copied into
        #: ``_stage_copy`` before the kernel).
        self.stage_mapped_ptr = _device_address(cp, self._stage_host_ptr) if MAPPED_STAGING else 0
        self._stage_copy = None if self.stage_mapped_ptr else cp.empty(self.stage_bytes, dtype=cp.uint8)
        #: Where the kernel reads the staged batch: the mapped buffer or its device copy.
        self._stage_dev_ptr = self.stage_mapped_ptr or int(self._stage_copy.data.ptr)
        self._stage_arg = np.uint64(self._stage_dev_ptr)
        self.host_ptr = int(self.host.ctypes.data)
        #: The counters' device address (the rank loop queued behind a launch takes it without
        #: asking CuPy on the critical path).
        self.counters_ptr = int(self.counters.data.ptr)
        #: The pinned counters' device address (0: not mapped; the counters are copied instead).
        self.host_dev_ptr = _device_address(cp, self.host_ptr) if MAPPED_COUNTERS else 0
        self._hcounters = np.uint64(self.host_dev_ptr)
        self._keep = None
        #: (arrays, key) of the last staged_key: the arrays held, the key their addresses gave
        self._key = None
        #: The next batch's changes buffer and its address, allocated by :meth:`prepare` between
        #: batches (beside the rank loop), so that a launch allocates nothing. Every batch gets a
        #: buffer of its own: the changes of a batch a caller keeps are never overwritten.
        self._next = None
        self._next_ptr = 0
        #: (graph version, the arrays of the staged key, captured graph) of :meth:`arm`: the next
        #: host batch's header is staged but for its size, and its graph looked up (None: not armed).
        self._armed = None
        #: Host batches launched through :meth:`launch_armed` (the rest went through :meth:`launch`).
        self.armed_launches = 0

    def prepare(self) -> None:
        """Allocate the next batch's changes buffer (4 * FAST_MAX_EDGES entries) unless it is
        there: called between batches, off the host's critical path."""
        if self._next is None:
            self._next = self.cp.empty(4 * FAST_MAX_EDGES, dtype=self.cp.int64)
            self._next_ptr = int(self._next.data.ptr)

    def arm(self, ids, out, inn, n: int, room: int, replay, version: int) -> None:
        """Between batches (beside the rank loop): stage the next host batch's header but for its
        size (vertex count, room, ends of idx, the prepared changes buffer) and look up (or
        capture) the update's graph in ``replay``, so that :meth:`launch_armed` only copies the
        edges and replays. ``version`` is the store's (:attr:`GpuGraph.version`): the armed
        launch is taken only while it, and every array the graph holds, are unchanged."""
        self._armed = None
        if replay is None:
            return
        self.prepare()
        _pack_header(self._header, 0, 0, n, room, out.end, inn.end, self._next_ptr)
        key = self.staged_key(ids, out, inn)
        graph = replay.graph_for("graph", key, lambda: self.queue_staged(ids, out, inn))
        if graph is not None:
            self._armed = (version, self._key[0], graph)  # the arrays staged_key read

    def launch_armed(self, batch, ids, out, inn, version: int, replay):
        """Queue a host batch through the state :meth:`arm` left: its size and edges staged, the
        captured graph replayed. Returns the changes buffer and its address (as :meth:`launch`),
        or None when nothing was armed, the caller replays nothing (``replay`` None), the batch is
        on the device, or the store changed since (its version, or an array the graph holds): then
        nothing was queued and :meth:`launch` takes it."""
        armed = self._armed
        self._armed = None  # one launch per arming
        if armed is None or replay is None or armed[0] != version or isinstance(batch.src, self.cp.ndarray):
            return None
        if not _same_arrays(ids, out, inn, armed[1]):  # the same objects: the same addresses and sizes
            return None
        changes = self._next
        self._next = None
        m = batch.src.shape[0]
        self._header[0] = m  # the rest of the header was staged by arm()
        self._stage_edges(batch, m)
        armed[2].launch()  # the current stream (CUDA graph replay, streamrank/rank/gpu/capture.py)
        self.armed_launches += 1
        return changes, self._next_ptr

    def rehearse(self, batch, ids, out, inn) -> None:
        """Between batches, after the last update has read the staging buffer: re-run the armed
        launch's check of the store's arrays and the staging copies of ``batch``'s edges (a host
        batch; the next launch writes its own over them), and read the counters, without queueing
        anything (:mod:`streamrank.rank.gpu.rehearsal`). ``batch``: one the fast path takes
        (:meth:`GpuGraph.fast_eligible`)."""
        if isinstance(batch.src, self.cp.ndarray):  # a device batch stages nothing
            return
        armed = self._armed
        if armed is not None:
            _same_arrays(ids, out, inn, armed[1])
        self._stage_edges(batch, batch.src.shape[0])
        self.counts()

    def _take_changes(self):
        """The prepared changes buffer and its address (allocated now if none was prepared)."""
        if self._next is None:
            self.prepare()
        changes, ptr = self._next, self._next_ptr
        self._next = None
        return changes, ptr

    def stage(self, batch, n: int, room: int, out_end: int, in_end: int, changes_ptr: int) -> None:
        """Write a host batch (at most FAST_MAX_EDGES edges) and its header into the pinned
        staging buffer (the previous batch's update has read it: every batch ends with a sync);
        :meth:`queue_staged` queues the update (and the copy, where the buffer is not mapped)."""
        m = len(batch)
        _pack_header(self._header, 0, m, n, room, out_end, in_end, changes_ptr)  # one call, not six
        self._stage_edges(batch, m)

    def _stage_edges(self, batch, m: int) -> None:
        """Copy a host batch's m edges into the pinned staging buffer (after its header)."""
        # typed views of the pinned buffer: the assignments convert, no temporary arrays
        self._src[:m] = batch.src
        self._dst[:m] = batch.dst
        self._ins[:m] = batch.insert

    def staged_key(self, ids, out, inn) -> tuple:
        """Every address and size :meth:`queue_staged` passes to the device (a captured copy of
        that work stays valid while this key is the same)."""
        held = self._key
        # the same array objects (held here, so none was freed and its address reused) have the
        # same addresses and sizes: skip reading them again (about 6 us a batch). The price: arrays
        # the store replaced (growth, compaction) are freed one batch later, at the next key.
        if held is not None and _same_arrays(ids, out, inn, held[0]):
            return held[1]
        arrays = _graph_arrays(ids, out, inn)
        key = (*(int(a.data.ptr) for a in arrays), int(ids.mask), int(out.idx.shape[0]), int(inn.idx.shape[0]),
               self._stage_dev_ptr, self.counters_ptr, self.host_ptr)
        self._key = (arrays, key)
        return key

    def queue_staged(self, ids, out, inn) -> None:
        """Queue ``fast_update_hdr`` and its grid kernels (and the copies of the staged batch and of
        the counters where the pinned buffers are not mapped): only fixed addresses, so a CUDA graph
        can capture it (:mod:`streamrank.rank.gpu.capture`)."""
        cp = self.cp
        stream = cp.cuda.get_current_stream()
        if not self.stage_mapped_ptr:
            cp.cuda.runtime.memcpyAsync(self._stage_dev_ptr, self._stage_host_ptr, self.stage_bytes, 1, stream.ptr)
        self._queue_header_update(self._stage_arg, ids, out, inn)
        self._queue_counters(stream)

    def _queue_header_update(self, header, ids, out, inn) -> None:
        """Queue ``fast_update_hdr`` on the staged batch at ``header`` (its layout), then the
        planning and the commit of the lists."""
        launch(self.kernel_hdr, 1, FAST_THREADS,
               (header, ids.keys, ids.vals, ids.mask, ids.external_buffer,
                out.off, out.deg, out.cap, out.idx, np.int64(out.idx.shape[0]),
                inn.off, inn.deg, inn.cap, inn.idx, np.int64(inn.idx.shape[0]),
                self.work, np.int64(self.work.nbytes), self.counters, self._hcounters))
        self._queue_lists(ids, out, inn)

    def _queue_lists(self, ids, out, inn) -> None:
        """Queue the planning (two blocks) and the commit of the lists after the first kernel (fixed
        grids: they read their work from ``self.work`` on the device and return at once after an
        overflow)."""
        launch(self.kernel_plan, 2, FAST_THREADS,
               (out.deg, out.cap, inn.deg, inn.cap, ids.keys, ids.vals, ids.mask, ids.external_buffer,
                self.work, self.counters, self._hcounters))
        launch(self.kernel_scan, self.scan_blocks, SCAN_THREADS,
               (out.off, out.idx, inn.off, inn.idx, self.work, self.counters))
        weights = (out.wt, inn.wt) if self.weighted else (_NULL, _NULL)
        launch(self.kernel_commit, self.commit_blocks, COMMIT_THREADS,
               (out.off, out.deg, out.cap, out.idx, inn.off, inn.deg, inn.cap, inn.idx, self.work, self.counters,
                *weights))

    def _queue_counters(self, stream) -> None:
        if self.host_dev_ptr:
            return  # the kernel wrote them into the pinned buffer (read after the caller's sync)
        self.cp.cuda.runtime.memcpyAsync(self.host_ptr, self.counters_ptr, _COUNTERS * 8,
                                         2, stream.ptr)  # 2: device to host; read after the caller's sync

    def launch(self, batch, ids, out, inn, n: int, room: int, replay=None):
        """Queue the fused kernel, whose counters reach pinned memory (:attr:`host_dev_ptr`, or a
        copy), without waiting; returns the device buffer of the changes (4 * FAST_MAX_EDGES
        entries, sections of stride m) and its address. A host batch is staged
        (:meth:`stage`, :meth:`queue_staged`), replayed from a captured graph when ``replay``
        (:class:`streamrank.rank.gpu.capture.BatchGraphs`) is given; a device batch is passed by
        address. :meth:`counts` reads the counters once the stream has been synchronized (by the
        caller, possibly after more work was queued)."""
        cp = self.cp
        m = int(batch.src.shape[0])
        changes, changes_ptr = self._take_changes()  # prepared between batches: no allocation here
        if not isinstance(batch.src, cp.ndarray):
            self.stage(batch, n, room, out.end, inn.end, changes_ptr)
            queue = lambda: self.queue_staged(ids, out, inn)  # noqa: E731
            if replay is None or not replay.replay("graph", self.staged_key(ids, out, inn), queue):
                queue()
            return changes, changes_ptr
        keep = (cp.ascontiguousarray(batch.src, dtype=cp.int64), cp.ascontiguousarray(batch.dst, dtype=cp.int64),
                cp.ascontiguousarray(batch.insert, dtype=cp.bool_))
        self._keep = keep  # alive until the kernel has read them (the next launch is after a sync)
        args = (
            *keep, np.int32(m),
            ids.keys, ids.vals, ids.mask, ids.external_buffer, np.int32(n), np.int32(room),
            out.off, out.deg, out.cap, out.idx, np.int64(out.end), np.int64(out.idx.shape[0]),
            inn.off, inn.deg, inn.cap, inn.idx, np.int64(inn.end), np.int64(inn.idx.shape[0]),
            self.work, np.int64(self.work.nbytes), changes, self.counters, self._hcounters,
        )
        launch(self.kernel, 1, FAST_THREADS, args)
        self._queue_lists(ids, out, inn)
        self._queue_counters(cp.cuda.get_current_stream())
        return changes, changes_ptr

    def ticks(self):
        """Profiling (:data:`TICKS`): the last update's device clock (ns) at its start,
        after its steps 1, 2, 3, 4 (out), 4 (in) and the commit's end, after step 1's pair table, after
        step 4 (out)'s sort and after its writes, and after the commit's deletion scan, as a host
        array (a device-to-host copy)."""
        return self.work[:88].view(self.cp.uint64).get()

    def counts(self) -> list:
        """The counters of the last launch, as ints in :data:`COUNTERS`' order (the stream must
        have been synchronized since). A plain list: the bookkeeping after the wait reads it on the
        host's critical path."""
        return self.host[:len(COUNTERS)].tolist()
