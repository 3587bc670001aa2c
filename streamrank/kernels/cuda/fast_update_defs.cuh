// The fused small-batch graph update (graph_fast_update.cu): its sizes, counter slots, overflow
// bits, and the scratch layout of one launch (FuDir, FuWork) with the helpers that write it.
#pragma once

#include "common.cuh"

#define FU_THREADS 1024             // the block; the scans below assume exactly 32 warps
#define FU_MAX 2048                 // largest batch (edges); 2 * FU_THREADS
static_assert(FU_MAX == 2 * FU_THREADS, "two entries per thread: step 4's keys and sort");
#define FU_TEMP (4 * FU_MAX)        // slots of the temporary table of unknown ids (load <= 1/2)
#define FU_BIG 2048                 // lists this long are rewritten / moved by the whole block
#define FU_SHORT 64                 // membership: lists this short are scanned by one thread
#ifndef FU_THREAD_LOADS
#define FU_THREAD_LOADS 16          // membership: a thread's loads in flight per round
#endif
#ifndef FU_MPART
#define FU_MPART 1024               // membership: a list longer than this is scanned in parts,
#endif
#define FU_MPARTS 4                 //   at most this many, a warp each (fu_mpart)
// Step 4: batches of more than FU_SPLIT applied changes are planned by two blocks, a direction each;
// smaller ones by one block, both directions in one pass (NVRTC option -DFU_SPLIT=...; any value is
// safe: past FU_MAX / 2 changes fast_update_plan splits anyway)
#ifndef FU_SPLIT
#define FU_SPLIT 256
#endif
#define FU_LOOK 4                   // step 4: positions read ahead for a group's end before a binary search
#define FU_THREAD_INS 16            // commit: insert-only groups this small go to one thread
#define FU_SCAN_THREADS 256         // block of the deletion scan (fast_update_scan)
#define FU_CHUNK (8 * FU_SCAN_THREADS)  // list entries per chunk of the deletion scan
#define FU_COMMIT_THREADS 256       // block of the commit (fast_update_commit)
#define FU_KEY_MAX 0x7fffffffffffffffLL  // the sorts' padding key
#define FU_INS_BIT (1LL << 31)      // step 4's sort keys: set for an insertion
// Profiling: thread 0 writes the device clock (ns) at the end of each step into FuWork::ticks
// (-DFU_TICKS=1, streamrank.store.gpu_fast.TICKS; benchmarks/profiling/graph_ms_parts.py reads them).
#ifndef FU_TICKS
#define FU_TICKS 0
#endif

// Counter slots (int64), one launch's result.
#define C_OVERFLOW 0   // 0: applied; else FU_OVER_* bits, and nothing was written
#define C_NEW 1        // new vertices
#define C_INS 2        // applied insertions
#define C_DEL 3        // applied deletions
#define C_DUP 4        // in-batch duplicates collapsed
#define C_PRESENT 5    // insertions of present edges (dropped)
#define C_ABSENT 6     // deletions of absent edges (dropped)
#define C_OUT_END 7    // used end of the out-direction idx after the batch
#define C_IN_END 8     // used end of the in-direction idx after the batch
#define C_COUNT 16

#define FU_OVER_VERTICES 1   // more new vertices than the room reserved (vertex arrays, id map)
#define FU_OVER_OUT_TAIL 2   // relocated out-lists do not fit in the reserved tail of idx
#define FU_OVER_IN_TAIL 4    // the same for the in-direction
#define FU_OVER_ARGS 8       // batch size, block size or workspace outside what this kernel handles

namespace {

// One direction's applied changes, sorted, and their plan (entries of group leaders only, except
// key which holds every sorted position). A group's kd deletions come first: its insertions are
// the entries from r + kd to gend.
struct FuDir {
  long long key[FU_MAX];    // keys u << 32 | t, sorted by (u, deletion first, t)
  long long noff[FU_MAX];   // leader: offset of the relocated list in the tail, else -1
  int gend[FU_MAX];         // leader: end of its group
  int d0[FU_MAX];           // leader: degree before the batch
  int kd[FU_MAX];           // leader: deletions in the group
  int ki[FU_MAX];           // leader: insertions in the group
  int ncap[FU_MAX];         // leader: capacity of the relocated list
  // Deletions (fast_update_scan, then fast_update_commit): a leader r with kd > 0 owns the slots
  // [r, r + kd) of hole / surv: the positions below d0 - kd holding a deleted target (holes) and
  // the positions from d0 - kd up holding a kept one (survivors), as many of each, counted in
  // hcnt[r] / scnt[r]; the commit moves survivor j into hole j.
  int hole[FU_MAX];
  int surv[FU_MAX];
  int hcnt[FU_MAX];
  int scnt[FU_MAX];
  int dlead[FU_MAX];        // the g-th group with deletions (in sorted order): its leader
  int dchunk[FU_MAX];       //   its first chunk (FU_CHUNK entries of its list each) of the scan
};

// What the first kernel (steps 1-3) hands to fast_update_plan (steps 4-5).
struct FuPlan {
  long long m, n;           // batch size, vertices before the batch
  long long nD, nI;         // surviving deletions and insertions (after the collapse)
  long long nDa, nIa;       // applied ones (after the membership test)
  long long nNew;           // new vertices
  long long out_end, in_end, out_size, in_size;  // used ends and sizes of both idx
  long long* changes;       // 4 m entries: the applied changes, sorted (ins_src, ins_dst, del_src, del_dst)
};

// Scratch of one launch in global memory (the host allocates FAST_WORK_BYTES >= sizeof).
struct FuWork {
  unsigned long long ticks[16];          // FU_TICKS: [0] start, [1..6] after steps 1, 2, 3, 4 (out), 4 (in), 5;
                                         // (one planning pass for both directions: [4] == [5]; two
                                         // planning blocks: [5] the later one's end)
                                         // [7] after step 1's table; step 4 (out): [8] after its sort,
                                         // [9] after its D writes; [10] after step 5's deletion scan
                                         // ([5] of two blocks, [6], [10]: the latest block's clock)
  long long bsrc[FU_MAX], bdst[FU_MAX];  // fast_update_hdr: the batch, copied from the staged header
  unsigned char bins[FU_MAX];            //   (which may be mapped host memory) before the update
  long long isrc[FU_MAX], idst[FU_MAX];  // collapsed insertions (external ids), arrival order
  long long new_ext[2 * FU_MAX];         // external ids of the new vertices, in id order
  unsigned long long tkey[FU_TEMP];      // temporary table: unknown external id (or empty)
  int tmin[FU_TEMP];                     //   its first position in the interleaved sequence
  int tval[FU_TEMP];                     //   its new internal id
  int pslot[2 * FU_MAX];                 // position -> its slot in the temporary table
  int iu[FU_MAX], iv[FU_MAX];            // insertions' internal ids (-1, then new ids)
  int du[FU_MAX], dv[FU_MAX];            // deletions' internal ids (-1: unknown)
  int iok[FU_MAX], dok[FU_MAX];          // applied (insertion absent / deletion present)?
  int ipos[FU_MAX], dpos[FU_MAX];        // index among the applied insertions / deletions, or -1
  int mlist[FU_MPARTS * FU_MAX];         // parts of long scans left to the warps: the query (q as in step 3),
  long long mbase[FU_MPARTS * FU_MAX];   //   the part's offset in idx,
  int mlen[FU_MPARTS * FU_MAX];          //   its length,
  int mwant[FU_MPARTS * FU_MAX];         //   the entry looked for in out(u), or ~u (negative) for u in in(v)
  int tlist[2 * FU_MAX];                 // groups ((dir << 16) | leader) committed by one thread
  int wlist[2 * FU_MAX];                 //   by one warp
  int blist[2 * FU_MAX];                 //   by the whole block
  FuDir dir[2];                          // 0: out (keys src << 32 | dst), 1: in (dst << 32 | src)
  int ndel_groups[2];                    // groups with deletions per direction
  int nchunks[2];                        // chunks of their lists per direction
  int nlist[2][3];                       // lengths of tlist, wlist, blist in each region: block b of
                                         // fast_update_plan appends from b * FU_MAX on (region 1 empty
                                         // when one block plans both directions)
  FuPlan plan;                           // steps 1-3's results for fast_update_plan
  long long plan_tail[2];                // fast_update_plan, two blocks: each direction's tail room
  int plan_over;                         //   the overflow bits of both (atomicOr)
  int plan_done;                         //   blocks done (the second one finishes the update)
};

// Entries per part of a membership scan of d entries (step 3): at least FU_MPART, at most
// FU_MPARTS parts, a multiple of the warp's 256-entry round.
__device__ __forceinline__ int fu_mpart(int d) {
  const int even = (d + FU_MPARTS - 1) / FU_MPARTS;
  const int rounded = (even + 255) & ~255;
  return rounded > FU_MPART ? rounded : FU_MPART;
}

// Thread 0 stamps slot k with the device clock; `latest` (the multi-block kernels, every block
// stamps): the latest clock of the slot.
__device__ __forceinline__ void fu_stamp(FuWork* w, int k, bool latest) {
#if FU_TICKS
  if (threadIdx.x == 0) {
    const unsigned long long t = sr::device_ns();
    if (latest) atomicMax(&w->ticks[k], t); else w->ticks[k] = t;
  }
#else
  (void)w;
  (void)k;
  (void)latest;
#endif
}

__device__ __forceinline__ void fu_tick(FuWork* w, int k) { fu_stamp(w, k, false); }
__device__ __forceinline__ void fu_tick_max(FuWork* w, int k) { fu_stamp(w, k, true); }

// The counters (slots C_*) into `counters` (device memory: the grid kernels and the rank loop read
// them there) and, when `hcounters` is not null, the same into mapped pinned host memory, which the
// host reads after its wait: no device-to-host copy after the update.
__device__ __forceinline__ void write_counters(long long* counters, long long* hcounters, long long overflow,
                                               long long nnew, long long nins, long long ndel, long long dup,
                                               long long present, long long absent, long long out_end,
                                               long long in_end) {
  static_assert(C_OVERFLOW == 0 && C_NEW == 1 && C_INS == 2 && C_DEL == 3 && C_DUP == 4 && C_PRESENT == 5 &&
                    C_ABSENT == 6 && C_OUT_END == 7 && C_IN_END == 8,
                "v lists the counters in slot order");
  const long long v[C_IN_END + 1] = {overflow, nnew, nins, ndel, dup, present, absent, out_end, in_end};
  for (int i = 0; i < C_COUNT; ++i) counters[i] = i <= C_IN_END ? v[i] : 0;
  if (hcounters != nullptr) {
    for (int i = 0; i < C_COUNT; ++i) hcounters[i] = i <= C_IN_END ? v[i] : 0;
  }
}

}  // namespace
