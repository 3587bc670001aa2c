"""Rank updates: Static, ND, DT, DF, DF-P, warm and auto on the CPU and the GPU."""
