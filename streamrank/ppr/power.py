"""Power iteration (pull, synchronous) on the CPU: the exact reference of every method.

The whole loop runs in one compiled call (:func:`streamrank.kernels.cpu.ppr.power_iterate`).
"""

from __future__ import annotations

import numpy as np

from ..kernels.cpu.ppr import power_iterate
from ._graph import GraphArrays


def power_cpu(ga: GraphArrays, pers_dense, *, alpha, dangling, tol, max_iter, leaky=False, dtype="float64"):
    """Iterate ``p <- alpha X p + alpha (d . p) w + (1 - alpha) v`` until the L-infinity change
    is below ``tol``.

    ``w = v`` (``dangling="personalization"``) or ``1/|V|`` (``"uniform"``); ``leaky=True``
    drops the dangling term (the leaky vector used by the uniform split). ``dtype`` is the type
    the iterate is stored in between iterations (float32: the fast approximate mode); the
    result is float64.

    Returns
    -------
    p, iterations, converged, last_change
    """
    pers = np.ascontiguousarray(pers_dense, dtype=np.float64)
    args = (pers, float(alpha), dangling == "personalization", bool(leaky), float(tol), int(max_iter),
            dtype == "float32", int(ga.num_edges))
    if ga.weighted:  # the out-weights divide, the in-edges' weights multiply
        p, it, conv, change = power_iterate(ga.in_offset, ga.in_degree, ga.in_indices, ga.out_weight, *args,
                                            ga.in_weights)
    else:
        p, it, conv, change = power_iterate(ga.in_offset, ga.in_degree, ga.in_indices, ga.out_degree, *args)
    return p, int(it), bool(conv), float(change)
