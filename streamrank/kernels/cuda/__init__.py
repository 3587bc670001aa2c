"""CUDA kernel sources (``*.cu``, ``*.cuh``), their loader and launch helpers."""
