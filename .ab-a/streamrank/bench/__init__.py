"""Benchmarks: ``streamrank bench`` (random batches on R-MAT or a file, against Static, cuSPARSE
and cuGraph; :mod:`.random_batches`) and the published temporal protocol of the DF-P paper
(``--protocol temporal``, against the reference implementation run in the same device call;
:mod:`.temporal`)."""

from .baselines import CusparsePower, gpu_oracle
from .inputs import BatchMaker, load_base_edges, parse_graph_spec
from .random_batches import DEFAULT_FRACTIONS, BenchOptions, run_bench
from .report import format_report, plot_report

__all__ = ["BatchMaker", "BenchOptions", "CusparsePower", "DEFAULT_FRACTIONS", "format_report", "gpu_oracle",
           "load_base_edges", "parse_graph_spec", "plot_report", "run_bench"]
