"""streamrank: PageRank kept correct over a graph that never stops changing.

The main entry points:

* :class:`Engine` — a graph store plus its ranks, advanced one :class:`EdgeBatch` at a time
  with Dynamic Frontier with Pruning (or Static / ND / DT / DF);
* :class:`RankConfig` — alpha, tolerances, dangling handling;
* the ``streamrank`` command (``replay``, ``bench``, ``serve``, ``query``, ``ppr``,
  ``bench-ppr``).
"""

from .backend import Backend, gpu_available, resolve_backend
from .batch import EdgeBatch
from .store.changes import AppliedChanges
from .config import ALGORITHMS, RankConfig
from .engine import Engine, StepResult
from .errors import (BackendUnavailableError, BatchFormatError, CheckpointError, ConfigError,
                     InvalidArgumentError, KernelError, SourceError, StreamrankError)
from .rank.result import RankResult

__version__ = "0.1.0"

__all__ = [
    "ALGORITHMS", "AppliedChanges", "Backend", "BackendUnavailableError", "BatchFormatError",
    "CheckpointError", "ConfigError", "EdgeBatch", "Engine", "InvalidArgumentError", "KernelError", "RankConfig",
    "RankResult", "SourceError", "StepResult", "StreamrankError", "gpu_available", "resolve_backend",
]
