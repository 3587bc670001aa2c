"""Compiled CPU kernels (Numba ``njit``): the CPU backend's hot loops.

* :mod:`.sweeps` — full sweeps (Static, ND, the standard-form "warm" iteration);
* :mod:`.frontier` — the frontier loop of DT / DF / DF-P, with its two steps
  :mod:`.frontier_sparse` (the frontier as a list) and :mod:`.frontier_dense` (one fused pass);
* :mod:`.sweep_order` — the vertex order of the Gauss-Seidel dense passes (the store computes it);
* :mod:`.marking` — the vertices a batch affects (DF/DF-P initial marking, DT reachability);
* :mod:`.workspace` — the per-batch upkeep of the frontier workspace
  (:class:`streamrank.rank.cpu.workspace.FrontierWorkspace`): new vertices, changed out-degrees;
* :mod:`.common` — chunking constants and the per-vertex formulas the rank kernels share;
* :mod:`.gapped_csr` — the graph store's O(batch) update of its gapped out-/in-CSR;
* :mod:`.batch_plan` — the graph store's plan of a small batch (what it changes) in one call;
* :mod:`.ppr` — personalized PageRank: the power iteration, push and pull rounds, Monte Carlo
  walks, the hybrid cost model's micro-kernels.

The rank kernels serve weighted graphs too: their weights are optional last arguments, compiled
away for unweighted calls (:mod:`.common`); :mod:`.weighted_csr` is the weighted store's CSR.

Each rank entry point runs a batch's whole iteration loop in one call. Every kernel is
compiled on first use and cached on disk (``cache=True``, next to these sources in
``__pycache__``). Kernels that use several cores split their work into fixed chunks of
``CHUNK`` items (``prange`` over chunks) and combine per-chunk partial sums in chunk order, so a
result is bitwise the same for any thread count (``numba.set_num_threads``). Work below
``PARALLEL_EDGES`` edges per step runs on the calling thread: there a fork/join costs more than
it saves. Numba's cache keys on each kernel's own source file: after editing :mod:`.common`,
delete the ``*.nbi``/``*.nbc`` files of the modules that import it.
"""
