"""Compiled CPU kernels (Numba ``njit``): the CPU backend's hot loops.

* :mod:`.rank` — full sweeps (Static, ND, the standard-form "warm" iteration) and the frontier
  loop of DT / DF / DF-P, each running a batch's whole iteration loop in one call;
* :mod:`.marking` — the vertices a batch affects (DF/DF-P initial marking, DT reachability);
* :mod:`.gapped_csr` — the graph store's O(batch) update of its gapped out-/in-CSR;
* :mod:`.ppr` — personalized PageRank: push and pull rounds, the power iteration, Monte Carlo
  walks.

Every kernel is compiled on first use and cached on disk (``cache=True``, next to these
sources in ``__pycache__``). Kernels that use several cores split their work into fixed chunks
of ``CHUNK`` items (``prange`` over chunks) and combine per-chunk partial sums in chunk
order, so a result is bitwise the same for any thread count (``numba.set_num_threads``).
Work below ``PARALLEL_EDGES`` edges per step runs on the calling thread: there a fork/join
costs more than it saves. (Each kernel module defines its constants itself: Numba's cache
does not see a change to a global defined in another file.)
"""
