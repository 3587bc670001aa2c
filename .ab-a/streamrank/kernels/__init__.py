"""CUDA kernel sources (``*.cu``) and their loader."""
