"""The iteration driver of the local methods (push, pull, hybrid), shared by both backends."""

from __future__ import annotations

from ..backend import to_host
from .costmodel import phi, unit_costs


class HybridChooser:
    """Chooses push or pull per iteration with the cost model (see :mod:`.costmodel`).

    The push term ``Phi_rdw`` is taken over the current frontier, which the previous iteration
    produced. The pull terms cannot be known before the pulling set is built, so they are
    predicted from the previous iteration's statistics: ``Phi_rdr`` and ``Phi_sqw`` per unit
    of the frontier's out-edge volume ``S`` as last measured in a pull iteration (before any
    pull: ``Phi_rdr / S`` from the graph's edge-weighted in-degree, ``Phi_sqw / S = 1/lanes``),
    times the current ``S``.
    """

    def __init__(self, xp, ga, *, backend: str, atomics: str):
        self.xp, self.ga = xp, ga
        self.lanes, self.wpb = (32, 8) if backend == "gpu" else (1, 1)
        self.costs = unit_costs(backend, atomics)
        indeg = ga.in_degree.astype(xp.int64)
        num = ((indeg + self.lanes - 1) // self.lanes * indeg).sum()
        self._rho_rdr_dev = num / max(ga.num_edges, 1)  # backend scalar, read in choose()
        self.rho_rdr = None
        self.rho_sqw = 1.0 / self.lanes

    def choose(self, F) -> tuple[str, dict]:
        xp = self.xp
        deg = self.ga.out_degree[F]
        vals = xp.stack([phi(xp, deg, lanes=self.lanes, warps_per_block=self.wpb).astype(xp.float64),
                         deg.astype(xp.int64).sum().astype(xp.float64),
                         xp.asarray(self._rho_rdr_dev, dtype=xp.float64)])
        host = to_host(vals)  # GPU: one sync, 3 scalars
        phi_rdw, S = float(host[0]), float(host[1])
        if self.rho_rdr is None:
            self.rho_rdr = float(host[2])
        phi_rdr = self.rho_rdr * S
        phi_sqw = self.rho_sqw * min(S, self.ga.n)
        c = self.costs
        cost = c["lambda1"] * phi_rdw - c["lambda2"] * phi_rdr - c["lambda3"] * phi_sqw
        choice = "push" if cost < 0 else "pull"
        return choice, {"phi_rdw": phi_rdw, "phi_rdr_est": phi_rdr, "phi_sqw_est": phi_sqw,
                        "cost": cost, "volume": S}

    def observe_pull(self, volume: float, N):
        """Update the per-volume ratios from a pull iteration's pulling set ``N``."""
        if volume <= 0:
            return
        xp = self.xp
        indeg = self.ga.in_degree[N]
        rdr = phi(xp, indeg, lanes=self.lanes, warps_per_block=self.wpb)
        rdr = float(to_host(rdr))  # GPU: sync, one scalar
        self.rho_rdr = rdr / volume
        self.rho_sqw = (-(-int(N.shape[0]) // self.lanes)) / volume
        return rdr


def run_local(state, *, method: str, max_iter: int, chooser: HybridChooser | None = None):
    """Iterate ``state.push`` / ``state.pull`` until the frontier is empty.

    Returns
    -------
    iterations, converged, stats (list of dict per iteration)
    """
    F = state.initial_frontier()
    stats = []
    it = 0
    while int(F.shape[0]) and it < max_iter:
        row = {"iter": it, "frontier": int(F.shape[0])}
        if method == "hybrid":
            choice, info = chooser.choose(F)
            row.update(info)
        else:
            choice = method
        row["choice"] = choice
        if choice == "push":
            F, st = state.push(F)
        else:
            F, st = state.pull(F)
        N = st.pop("_N", None)
        if method == "hybrid" and choice == "pull" and N is not None:
            row["phi_rdr"] = chooser.observe_pull(row["volume"], N)
        row.update(st)
        stats.append(row)
        it += 1
    return it, int(F.shape[0]) == 0, stats
