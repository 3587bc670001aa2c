"""Vertex ids: integer and string ids, their kinds and checks, the id maps (CPU, GPU)."""
