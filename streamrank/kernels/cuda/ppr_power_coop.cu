// The power iteration's whole dense phase in one cooperative launch (small graphs).
//
// On a small graph one sweep takes a few microseconds, less than launching it and reading its
// convergence test, so the host-driven loop of ppr_power.cu is bound by launches. Here a grid
// that is resident all at once (cooperative launch) runs the iterations itself: each block
// takes virtual blocks of the sweep plan (sweep_block, largest in-lists first), the grid
// synchronizes, and every block reads the iteration's max change and stops at the first one
// below tol, as the host loop does. Iteration j (start < j <= max_iter) reads buffer
// (j - start - 1) % 2 and writes (j - start) % 2; dsum_row[j] and change_row[j] collect d . p
// and the max change of iteration j (zeroed by the caller); *done gets the last iteration.
#include <cooperative_groups.h>

#include "ppr_power.cuh"

namespace cg = cooperative_groups;

template <typename Off, typename Deg, typename T>
__global__ void ppr_power_coop(const int* __restrict__ order, const int* __restrict__ bstart,
                               const int* __restrict__ blk, const Off* __restrict__ in_offset,
                               const Deg* __restrict__ in_degree, const int* __restrict__ in_indices,
                               const Deg* __restrict__ out_degree, T* c0, T* c1, T* p0, T* p1,
                               const double* __restrict__ pers, int mode, double inv_n, double alpha, double tol,
                               int split, const int* __restrict__ split_slot, const int* __restrict__ split_part,
                               double* split_acc, int* split_count, double* dsum_row, double* change_row,
                               int start, int max_iter, int* done) {
    __shared__ double part[32];
    __shared__ int finish;
    cg::grid_group grid = cg::this_grid();
    const int total = blk[PPR_BUCKETS];
    for (int j = start + 1; j <= max_iter; ++j) {
        const bool odd = ((j - start) & 1) != 0;  // writes buffer 1, reads buffer 0
        const T* c = odd ? c0 : c1;
        const T* p = odd ? p0 : p1;
        T* c_new = odd ? c1 : c0;
        T* p_new = odd ? p1 : p0;
        const double dsum = (mode == PPR_MODE_LEAKY) ? 0.0 : dsum_row[j - 1];
        double dm = 0.0, diff = 0.0;
        for (int k = blockIdx.x; k < total; k += gridDim.x)  // uniform over the block
            sweep_block(total - 1 - k, order, bstart, blk, in_offset, in_degree, in_indices, out_degree, c, p,
                        pers, dsum, mode, inv_n, alpha, p_new, c_new, split, split_slot, split_part, split_acc,
                        split_count, part, &finish, dm, diff);
        block_sum_max(dm, diff, dsum_row + j, change_row + j);
        grid.sync();  // every block's sums are in; the next iteration reads this one's buffers
        if (change_row[j] < tol || j == max_iter) {  // the same value in every block
            if (blockIdx.x == 0 && threadIdx.x == 0) *done = j;
            return;
        }
    }
    if (blockIdx.x == 0 && threadIdx.x == 0) *done = start;  // (max_iter <= start: nothing to do)
}
