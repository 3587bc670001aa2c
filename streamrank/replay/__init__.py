"""Replay a file of timestamped edges: base graph, then batches, timed and checked."""
