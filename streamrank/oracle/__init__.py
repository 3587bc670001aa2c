"""Independent static PageRank (SciPy float64, cuGraph) and the error metrics against it."""
