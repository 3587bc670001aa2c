"""Compiled kernels of both backends: CUDA sources with their loader (:mod:`.cuda`) and the CPU
backend's Numba kernels (:mod:`.cpu`)."""
