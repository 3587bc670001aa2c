"""The per-batch choice behind ``algorithm="auto"``: DF-P, or warm-started standard-form sweeps.

DF-P costs what its frontier costs: tiny on a batch whose effect stays local, more than a few
full sweeps when the frontier floods the graph (on R-MAT a batch reaches the hubs within a hop
or two). Warm sweeps cost a fixed few passes over all edges. The choice, per batch:

- the rank update itself switches within the batch where the backend can tell cheaply (on the
  GPU the frontier loop stops when its frontier grows past a share of the vertices, and warm
  sweeps finish the batch: ``RankResult.algorithm == "dfp>warm"``);
- :class:`AutoPolicy` remembers floods: after one, batches of at least a quarter of the flooding
  batch's size go straight to warm sweeps, and DF-P is tried again every ``probe_every`` batches
  (or on a smaller batch), so that a stream whose batches shrink returns to DF-P;
- a flood called by the estimate below (not by the in-batch switch) is checked by the first warm
  batch it sends to sweeps: when those sweeps updated more vertices than the flooding DF-P batch,
  the call was wrong and the next batch is DF-P's again, so a misjudged flood costs one warm
  batch instead of ``probe_every``. (sx-mathoverflow, uniform mode, on an H200: a DF-P batch of
  434 k vertex updates in 34 iterations was called flooded, and eight warm batches of 75-80
  sweeps, about 1 M updates each, followed.)

On the CPU backend DF-P has no in-batch switch; a DF-P batch counts as flooded when it updated
more vertices than the warm sweeps would have: as many full sweeps as the last warm batch took.
Before any warm batch has run, DF-P's own iteration count stands in for the warm sweeps (the
change decays at the same rate in both), halved because a DF-P vertex update costs 2-4 times a
sweep's (measured on an H100: 2.6 vs 0.6 ns at R-MAT 24, 4.5 vs 2.8 ns on sx-mathoverflow), and
never below ``flood_sweeps``. (A fixed 3 sweeps sent every random batch of sx-mathoverflow to
warm sweeps, 1.7x slower than DF-P there.) From the previous ranks the warm sweeps need
as many iterations as the change takes to decay below ``tol`` (25 on CollegeMsg, 71 on
sx-mathoverflow at 1e-10), so a fixed few sweeps would call floods that DF-P still wins.
"""

from __future__ import annotations

from ..errors import InvalidArgumentError


class AutoPolicy:
    """State of the ``auto`` choice for one stream of batches.

    Parameters
    ----------
    probe_every : int
        After this many warm batches in a row, try DF-P again. Default 8.
    flood_sweeps : float
        Least number of full sweeps a DF-P batch must have updated to count as flooded (where the
        backend did not switch by itself): the bound is ``max(flood_sweeps, s) * num_vertices``
        with ``s`` the sweeps of the last warm batch, or half DF-P's iterations before any warm
        batch has run. Default 3.
    """

    def __init__(self, *, probe_every: int = 8, flood_sweeps: float = 3.0):
        if int(probe_every) < 1:
            raise InvalidArgumentError(f"probe_every must be >= 1, got {probe_every}")
        if not float(flood_sweeps) > 0:
            raise InvalidArgumentError(f"flood_sweeps must be > 0, got {flood_sweeps}")
        self.probe_every = int(probe_every)
        self.flood_sweeps = float(flood_sweeps)
        self.flood_size: int | None = None  # changed edges of the last batch that flooded DF-P
        self.warm_streak = 0
        self.warm_sweeps: int | None = None  # iterations of the last warm batch
        self.flood_updates: int | None = None  # vertex updates of a DF-P batch the estimate called flooded

    def choose(self, changes) -> str:
        """``"warm"`` or ``"auto"`` (DF-P with the backend's in-batch switch) for this batch."""
        size = changes.num_insertions + changes.num_deletions
        if self.flood_size is not None and 4 * size >= self.flood_size and self.warm_streak < self.probe_every:
            return "warm"
        return "auto"

    def dfp_for_any(self, received: int) -> bool:
        """Whether :meth:`choose` gives ``"auto"`` for every batch of at most ``received``
        applied changes (so a batch may start before its applied size is known on the host)."""
        return not (self.flood_size is not None and 4 * int(received) >= self.flood_size
                    and self.warm_streak < self.probe_every)

    def observe(self, result, changes, num_vertices: int) -> None:
        """Learn from the batch's :class:`~streamrank.rank.result.RankResult`."""
        size = changes.num_insertions + changes.num_deletions
        if result.algorithm == "warm":
            self.warm_streak += 1
            self.warm_sweeps = int(result.iterations)
            if self.flood_updates is not None and result.affected_total > self.flood_updates:
                self.flood_size = None  # the sweeps cost more than the DF-P batch: not a flood
            self.flood_updates = None
            return
        est = result.iterations / 2 if self.warm_sweeps is None else self.warm_sweeps
        sweeps = max(self.flood_sweeps, est)
        flooded = result.algorithm == "dfp>warm" or (
            result.algorithm == "dfp" and result.affected_total > sweeps * max(int(num_vertices), 1))
        self.flood_size = size if flooded else None
        # a flood called by the estimate is checked by the next warm batch (the module docstring)
        self.flood_updates = int(result.affected_total) if flooded and result.algorithm == "dfp" else None
        self.warm_streak = 0

    def state(self) -> dict:
        """What the next choices depend on, for the engine's checkpoints (plain ints), so a
        restored engine chooses as the uninterrupted one would."""
        return {"flood_size": -1 if self.flood_size is None else int(self.flood_size),
                "warm_streak": int(self.warm_streak),
                "warm_sweeps": -1 if self.warm_sweeps is None else int(self.warm_sweeps),
                "flood_updates": -1 if self.flood_updates is None else int(self.flood_updates)}

    def load_state(self, state: dict) -> None:
        """Take the choices' memory from :meth:`state`."""
        try:
            flood, streak = int(state["flood_size"]), int(state["warm_streak"])
            sweeps = int(state.get("warm_sweeps", -1))
            updates = int(state.get("flood_updates", -1))  # absent in checkpoints before it
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidArgumentError(f"auto policy state {state!r}: {exc}") from exc
        self.flood_size = None if flood < 0 else flood
        self.warm_streak = max(0, streak)
        self.warm_sweeps = None if sweeps < 0 else sweeps
        self.flood_updates = None if updates < 0 else updates
