"""The dynamic graph store: out- and in-CSR kept current under batches (CPU, GPU)."""
