"""Checkpoints: atomic full checkpoints, the batch log between them, and recovery."""
